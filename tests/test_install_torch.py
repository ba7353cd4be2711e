"""shared/hetero/install_torch.py, the one torch installer of the three set-ups (the instructor's and the
student copy's `make setup`, the Gradescope zip's setup.sh): which index it picks per platform, the
A2_TORCH_INDEX_URL override, the index check before pip and the messages when it fails. Fast: no
network (an index is a fake page, a file:// folder, or a refused local port), no real install.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

from autograder.core.manifest import ROOT
from autograder.packaging import build, bundle
from hetero import install_torch as it

INSTALLER = ROOT / "shared" / "hetero" / "install_torch.py"

PIN = "2.13.0"
LINUX_311 = it.Target((3, 11), False, "linux", "x86_64")
WHEELS = [
    "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
    "torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_aarch64.whl",
    "torch-2.13.0-cp313-none-macosx_11_0_arm64.whl",
    "torch-2.13.0+cpu-cp313-cp313t-manylinux_2_28_x86_64.whl",
    "torch-2.12.1+cpu-cp310-cp310-manylinux_2_28_x86_64.whl",
]
PAGE = (
    "<html><body>\n"
    + "".join(f'<a href="/whl/cpu/{w.replace("+", "%2B")}#sha256=00">{w}</a><br/>\n' for w in WHEELS)
    + "</body></html>\n"
)


@pytest.mark.parametrize(
    "platform, environ, index",
    [
        ("linux", {}, it.DEFAULT_INDEX_URL),
        ("darwin", {}, None),
        ("win32", {}, None),
        ("linux", {"A2_TORCH_INDEX_URL": "https://mirror.example/cpu"}, "https://mirror.example/cpu"),
        ("darwin", {"A2_TORCH_INDEX_URL": " https://mirror.example/cpu "}, "https://mirror.example/cpu"),
        ("linux", {"A2_TORCH_INDEX_URL": ""}, None),
        ("win32", {"A2_TORCH_INDEX_URL": ""}, None),
    ],
)
def test_the_index_per_platform_and_the_override(platform, environ, index):
    assert it.DEFAULT_INDEX_URL == "https://download.pytorch.org/whl/cpu"
    assert it.plan(it.Target((3, 12), False, platform, "x86_64"), environ).index_url == index


def test_the_three_pin_files_give_the_pyproject_pin(tmp_path):
    (pinned,) = build.pyproject_pins()["torch"]
    version = pinned.split("==", 1)[1]
    student_pyproject = tmp_path / "pyproject.toml"
    student_pyproject.write_bytes(bundle.render_root_files()["pyproject.toml"])
    requirements_torch = tmp_path / "requirements-torch.txt"
    requirements_torch.write_bytes(build.collect()[0]["requirements-torch.txt"])  # type: ignore[arg-type]
    for path in (ROOT / "locks" / "instructor.txt", ROOT / "pyproject.toml", student_pyproject, requirements_torch):
        assert it.read_pin(path) == version, path
    (tmp_path / "none.txt").write_text("numpy==2.4.6\n# torch==1.0 in a comment is no pin\n")
    (tmp_path / "two.txt").write_text("torch==2.13.0\ntorch==2.12.0; python_version < '3.11'\n")
    for bad in ("none.txt", "two.txt"):
        with pytest.raises(it.SetupError, match="must pin torch exactly once"):
            it.read_pin(tmp_path / bad)


def test_which_wheels_fit_which_python_and_platform():
    found = lambda target: [w for w in WHEELS if it.fits(w, PIN, target)]  # noqa: E731
    assert found(LINUX_311) == [WHEELS[0]]
    assert found(it.Target((3, 12), False, "linux", "aarch64")) == [WHEELS[1]]
    assert found(it.Target((3, 13), False, "darwin", "arm64")) == [WHEELS[2]]
    assert found(it.Target((3, 13), True, "linux", "x86_64")) == [WHEELS[3]], "free-threaded: the cp313t wheel"
    assert found(it.Target((3, 13), False, "linux", "x86_64")) == [], "cp313t does not fit a GIL build"
    assert found(it.Target((3, 10), False, "linux", "x86_64")) == [], "2.12.1 is not the pinned version"
    assert it.satisfies("2.13.0+cpu", "2.13.0") and it.satisfies("2.13.0", "2.13.0")
    assert not it.satisfies("2.13.0+cu130", "2.13.0+cpu") and not it.satisfies("2.13.1", "2.13.0")


def test_the_index_page_is_read_before_pip(monkeypatch):
    asked = []

    def fetcher(url: str) -> str:
        asked.append(url)
        return PAGE

    assert it.check_index("https://mirror.example/cpu/", PIN, LINUX_311, fetcher) == [WHEELS[0]]
    assert asked == ["https://mirror.example/cpu/torch/"], "PEP 503: the project page under the index"
    with pytest.raises(it.NoWheel) as caught:
        it.check_index(it.DEFAULT_INDEX_URL, PIN, it.Target((3, 10), False, "linux", "x86_64"), fetcher)
    assert caught.value.offered == ["cp311", "cp313t"], "the Pythons of this platform's wheels"
    text = it.no_wheel_message(caught.value, PIN, "make setup", "rm -rf .venv && make setup PYTHON=python{v}")
    assert "no torch 2.13.0 wheel for CPython 3.10 on linux x86_64" in text
    assert "rm -rf .venv && make setup PYTHON=python3.11" in text and "A2_TORCH_INDEX_URL= make setup" in text
    assert "set for it, as now" not in text, "no index was named: nothing to keep"
    monkeypatch.setenv("A2_TORCH_INDEX_URL", "file:///srv/torch index")
    text = it.no_wheel_message(caught.value, PIN, "make setup", "rm -rf .venv && make setup PYTHON=python{v}")
    assert "with A2_TORCH_INDEX_URL='file:///srv/torch index' set for it, as now" in text, text


@pytest.mark.parametrize(
    "error, kind, words",
    [
        (urllib.error.URLError("[Errno -2] Name or service not known"), it.Unreachable, "cannot be reached"),
        (ConnectionRefusedError(111, "Connection refused"), it.Unreachable, "cannot be reached"),
        (urllib.error.HTTPError("u", 404, "Not Found", None, None), it.Unusable, "does not serve torch"),  # type: ignore[arg-type]
    ],
)
def test_an_unusable_index_stops_with_what_to_do(monkeypatch, error, kind, words):
    monkeypatch.setattr(it.time, "sleep", lambda s: None)
    calls = []

    def fetcher(url: str) -> str:
        calls.append(url)
        raise error

    with pytest.raises(kind) as caught:
        it.check_index(it.DEFAULT_INDEX_URL, PIN, LINUX_311, fetcher)
    assert len(calls) == (1 if kind is it.Unusable else it.PROBE_ATTEMPTS)
    text = it.unreachable_message(caught.value, PIN, "make setup")
    assert f"torch=={PIN} was NOT installed: PyTorch's CPU index {words}" in text
    for must in (
        "https://download.pytorch.org/whl/cpu",
        "A2_TORCH_INDEX_URL=https://your.mirror/whl/cpu make setup",
        "A2_TORCH_INDEX_URL= make setup",
        "1.4 GB to download and a 5 GB venv",
    ):
        assert must in text, f"the message must say {must!r}:\n{text}"


def _run_script(tmp_path: Path, index: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "A2_TORCH_INDEX_URL": index, "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, str(INSTALLER), "--dry-run", *args, str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_the_script_says_an_unreachable_index_and_never_runs_pip(tmp_path):
    proc = _run_script(tmp_path, "http://127.0.0.1:9/")  # the discard port: connection refused, no network
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the torch index that A2_TORCH_INDEX_URL names cannot be reached" in proc.stderr, proc.stderr
    assert "Connection refused" in proc.stderr and "A2_TORCH_INDEX_URL= make setup" in proc.stderr
    assert "would run" not in proc.stdout, "pip must not run when the index cannot be reached"
    assert "conflict" not in (proc.stdout + proc.stderr).lower()


def test_the_script_on_a_local_file_index(tmp_path):
    """A folder in PEP 503 layout, as file://: a wheel for this Python gives pip's command (torch alone,
    from that index); a wheel for another Python only gives the no-wheel message and no pip."""
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    other = "cp39" if tag != "cp39" else "cp38"
    for name, wheel_tag, ok in (("fits", tag, True), ("other", other, False)):
        page = tmp_path / name / "simple" / "torch"
        page.mkdir(parents=True)
        wheel = f"torch-{PIN}+cpu-{wheel_tag}-{wheel_tag}-manylinux_2_28_x86_64.whl"
        (page / "index.html").write_text(f'<a href="{wheel.replace("+", "%2B")}">{wheel}</a>\n')
        proc = _run_script(
            tmp_path, (tmp_path / name / "simple").as_uri(), "--other-python", "make setup PYTHON=python{v}"
        )
        if not sys.platform.startswith("linux"):
            continue
        if ok:
            assert proc.returncode == 0, proc.stderr
            command = proc.stdout.split("would run: ", 1)[1]
            assert (
                f"-m pip install --no-deps --index-url {(tmp_path / name / 'simple').as_uri()} torch=={PIN}" in command
            )
        else:
            assert proc.returncode == 1 and "would run" not in proc.stdout
            assert f"it offers torch {PIN} for {other} only" in proc.stderr, proc.stderr
            assert f"make setup PYTHON=python3.{other[3:]}" in proc.stderr
            here = f"{sys.version_info.major}.{sys.version_info.minor}"
            assert f"no wheel for this Python ({here}); it has one for Python 3.{other[3:]} only" in proc.stderr


def test_a_folder_that_is_not_an_index_is_named_as_such(tmp_path):
    """Issue 31: A2_TORCH_INDEX_URL=file:///folder (a folder of wheels, not an index) said "cannot be reached"."""
    folder = tmp_path / "wheels"
    folder.mkdir()
    (folder / f"torch-{PIN}+cpu-cp311-cp311-manylinux_2_28_x86_64.whl").write_bytes(b"")
    proc = _run_script(tmp_path, folder.as_uri())
    assert proc.returncode == 1 and "would run" not in proc.stdout
    assert "does not serve torch" in proc.stderr and "cannot be reached" not in proc.stderr, proc.stderr
    assert "is a folder but not a package index: it has no torch/index.html" in proc.stderr
    assert "PIP_FIND_LINKS" in proc.stderr
    missing = _run_script(tmp_path, (tmp_path / "nowhere").as_uri())
    assert missing.returncode == 1 and "cannot be reached" in missing.stderr


def test_main_installs_with_pip_and_reports_a_pip_failure(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(it, "installed_version", lambda: None)
    monkeypatch.setenv("A2_TORCH_INDEX_URL", "")  # pip's configured index: no page to read
    commands: list[list[str]] = []
    assert it.main([str(ROOT / "pyproject.toml")], run=lambda c: commands.append(c) or 0) == 0
    assert commands == [[sys.executable, "-m", "pip", "install", "--no-deps", f"torch=={PIN}"]]
    assert it.main(["--quiet", "--rerun", "bash setup.sh", str(ROOT / "pyproject.toml")], run=lambda c: 1) == 1
    err = capsys.readouterr().err
    assert "pip failed (status 1" in err and "pip's configured index" in err
    assert "A2_TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash setup.sh" in err
    monkeypatch.setenv("A2_TORCH_INDEX_URL", "https://mirror.example/cpu")
    monkeypatch.setattr(it, "fetch", lambda url: PAGE)  # the page lists a wheel for every target below
    monkeypatch.setattr(it.Target, "here", classmethod(lambda cls: LINUX_311))
    assert it.main([str(ROOT / "pyproject.toml")], run=lambda c: commands.append(c) or 2) == 1
    assert commands[-1][-3:] == ["--index-url", "https://mirror.example/cpu", f"torch=={PIN}"]
    err = capsys.readouterr().err
    assert "The index https://mirror.example/cpu lists a wheel" in err and "A2_TORCH_INDEX_URL= make setup" in err
    monkeypatch.setattr(it, "installed_version", lambda: "2.13.0+cpu")
    assert it.main([str(ROOT / "pyproject.toml")], run=lambda c: pytest.fail("pip must not run")) == 0
    assert "already installed: kept" in capsys.readouterr().out


def test_every_set_up_runs_the_one_installer_and_ships_it_unchanged():
    source = INSTALLER.read_bytes()
    recipes = {
        "Makefile": (ROOT / "Makefile").read_text(),
        "student Makefile": (ROOT / "autograder" / "student_bundle" / "Makefile").read_text(),
        "setup.sh": (ROOT / "autograder" / "gradescope" / "setup.sh").read_text(),
    }
    for name, text in recipes.items():
        assert "shared/hetero/install_torch.py" in text, f"{name} must install torch with the installer"
        commands = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
        assert not [c for c in commands if "download.pytorch.org" in c], (
            f"{name}: the index is the installer's to choose"
        )
    members, _ = build.collect()
    shipped = members["shared/hetero/install_torch.py"]
    assert (shipped.read_bytes() if isinstance(shipped, Path) else shipped) == source, "the zip's copy"
    assert INSTALLER in bundle.library_files(ROOT), "the student copy ships shared/hetero/ *.py as they are"


def test_an_unreachable_default_index_falls_back_to_a_local_cpu_wheel_only(tmp_path, monkeypatch):
    """PyTorch's index unreachable, PIP_FIND_LINKS holding torch==pin+cpu for this Python: that wheel is
    installed (the machines without PyTorch's index that carry the wheel); an explicit A2_TORCH_INDEX_URL
    that cannot be reached still stops; a CUDA (non +cpu) wheel there is never taken."""
    target = it.Target.here()
    py = f"cp{target.python[0]}{target.python[1]}"
    links = tmp_path / "wheels"
    links.mkdir()
    plat = {"linux": f"manylinux_2_28_{target.machine}"}.get(target.platform, "any")
    (links / f"torch-2.13.0-{py}-{py}-{plat}.whl").write_bytes(b"")
    env = {"PIP_FIND_LINKS": str(links)}
    assert it.local_cpu_wheel("2.13.0", target, env) is None, "a wheel without +cpu is not taken"
    cpu = links / f"torch-2.13.0+cpu-{py}-{py}-{plat}.whl"
    cpu.write_bytes(b"")
    if target.platform.startswith("linux"):
        assert it.local_cpu_wheel("2.13.0", target, env) == cpu
        assert it.local_cpu_wheel("2.13.1", target, env) is None, "only the pinned version"
    assert it.local_command(cpu, True)[-1] == str(cpu) and "--no-index" in it.local_command(cpu, True)


def test_main_installs_the_local_cpu_wheel_when_pytorchs_index_is_unreachable(tmp_path, monkeypatch, capsys):
    links = tmp_path / "wheels"
    links.mkdir()
    wheel = links / "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.write_bytes(b"")
    pins = tmp_path / "req.txt"
    pins.write_text("torch==2.13.0\n")

    def unreachable(url, pin, target, fetcher=None):
        raise it.Unreachable(url, "name not resolved")

    monkeypatch.setattr(it, "installed_version", lambda: None)
    monkeypatch.setattr(it, "check_index", unreachable)
    monkeypatch.setattr(it.Target, "here", classmethod(lambda cls: it.Target((3, 11), False, "linux", "x86_64")))
    monkeypatch.delenv(it.ENV_VAR, raising=False)
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    ran: list[list[str]] = []
    assert it.main([str(pins)], run=lambda cmd: ran.append(cmd) or 0) == 0
    assert ran and ran[0][-1] == str(wheel) and "--no-index" in ran[0], ran
    assert "using the CPU wheel" in capsys.readouterr().out
    monkeypatch.setenv(it.ENV_VAR, "https://mirror.example/whl/cpu")  # the user's own index: no fallback
    ran.clear()
    assert it.main([str(pins)], run=lambda cmd: ran.append(cmd) or 0) == 1 and not ran
    monkeypatch.delenv(it.ENV_VAR)
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "none"))
    assert it.main([str(pins)], run=lambda cmd: ran.append(cmd) or 0) == 1 and not ran
    assert "cannot be reached" in capsys.readouterr().err
