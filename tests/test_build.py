"""The Gradescope autograder zip: contents, the no-solution audit, and a run in Gradescope's layout.

Gradescope unpacks the zip into /autograder/source, runs setup.sh once to build the image, copies
run_autograder to /autograder/run_autograder and runs it with the student's files in
/autograder/submission; it reads /autograder/results/results.json. The slow test reproduces that in
a temporary root (A2_AUTOGRADER_ROOT), with a fresh virtual environment made by setup.sh (torch by
install_torch.py: on this Python from a file index of the local CPU wheel standing in for PyTorch's CPU
index; on Python 3.10, which has no CPU wheel here, by its documented fallback, A2_TORCH_INDEX_URL="",
from the image's own wheels), and grades the answer key, the unfilled stubs and one wrong fixture,
validating every results.json against the schema.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import jsonschema
import pytest

from autograder.authoring.wrong_fixtures import FIXTURES, materialise
from autograder.core.manifest import EXERCISES, ROOT
from autograder.packaging import build
from hetero.impl import load_module_from_path

SCHEMA = json.loads((ROOT / "autograder" / "schema" / "gradescope_results.schema.json").read_text())
SCORE_TOL = 1e-6  # scores are sums of a few dozen floats; anything above rounding is a real difference


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, build.BuildReport]:
    out = tmp_path_factory.mktemp("dist") / "autograder.zip"
    return out, build.build(out)


def _names(zip_path: Path) -> list[str]:
    with zipfile.ZipFile(zip_path) as zf:
        return zf.namelist()


def test_zip_layout(built):
    zip_path, report = built
    names = set(_names(zip_path))
    for required in (
        "setup.sh",
        "run_autograder",
        "fallback.py",
        "requirements.txt",
        "requirements-torch.txt",
        "autograder/__main__.py",
        "autograder/runtime/grader.py",
        "autograder/core/manifest.py",
        "autograder/core/cases.py",
        "autograder/schema/gradescope_results.schema.json",
        "shared/hetero/__init__.py",
        "shared/hetero/checks.py",
        "shared/hetero/harness/__init__.py",
    ):
        assert required in names, f"{required} must be in the zip"
    for e in EXERCISES:
        for rel in (f"assignments/tests/public_{e.id}.py", f"autograder/expected/{e.id}.json"):
            assert rel in names, f"{rel} must be in the zip (the grader reads it)"
    for tool in ("release", "build", "bulk", "pack", "demo", "gradebook", "export_nbgrader", "export_otter"):
        assert f"autograder/{tool}.py" not in names, f"autograder/{tool}.py is not needed for grading"
    assert not [n for n in names if n.startswith("autograder/tests/")], "no hidden case source in the zip"
    assert {f"shared/hetero/data/citymoe-grading-seed{s}.pt" for s in (0, 1)} <= names, (
        "ex10's grading checkpoints must ship"
    )
    with zipfile.ZipFile(zip_path) as zf:
        for entry in ("setup.sh", "run_autograder"):
            mode = zf.getinfo(entry).external_attr >> 16
            assert mode & stat.S_IXUSR, f"{entry} must be executable in the zip (mode {oct(mode)})"
        torch_req = zf.read("requirements-torch.txt").decode()
        reqs = zf.read("requirements.txt").decode()
    assert "torch==2.13.0" in torch_req and "torch" not in reqs.replace("# Generated", "")
    assert "numpy==2.2.6 ; python_full_version < '3.11'" in reqs, "numpy needs a pin for Python 3.10 too"


def test_zip_ships_no_solution_source(built):
    zip_path, _ = built
    solution_bytes = {p.read_bytes() for p in (ROOT / "solutions").glob("*.py")}
    with zipfile.ZipFile(zip_path) as zf:
        for name in zf.namelist():
            assert not name.startswith(("solutions/", "autograder/fixtures/")), name
            data = zf.read(name)
            assert b"BEGIN SOLUTION" not in data, f"{name} contains the answer-key marker"
            assert data not in solution_bytes, f"{name} is a copy of an answer-key file"


def test_audit_refuses_planted_solutions(built, tmp_path):
    zip_path, _ = built
    plants = {
        "solutions/ex01_cost_per_gb.py": b"x = 1\n",
        "autograder/fixtures/wrong_scores.json": b"{}\n",
        "autograder/authoring/wrong_fixtures.py": b"x = 1\n",
        "shared/hetero/leak.py": b"def f():\n    # BEGIN " + b"SOLUTION\n    return 1\n",
        "notes/copy.py": (ROOT / "solutions" / EXERCISES[0].filename).read_bytes(),
    }
    for name, data in plants.items():
        bad = tmp_path / f"bad_{abs(hash(name))}.zip"
        shutil.copyfile(zip_path, bad)
        with zipfile.ZipFile(bad, "a") as zf:
            zf.writestr(name, data)
        with pytest.raises(build.BuildError, match="refusing to ship"):
            build.audit(bad)


def test_build_is_reproducible(built, tmp_path):
    zip_path, _ = built
    again = tmp_path / "again.zip"
    build.build(again)
    assert again.read_bytes() == zip_path.read_bytes(), "the same sources must give the same zip bytes"


def test_requirements_come_from_imports_and_pins():
    pins = build.pyproject_pins()
    assert pins["torch"] == ["torch==2.13.0"]
    reqs, torch = build.requirements_for({"numpy", "torch"}, pins)
    assert torch == ["torch==2.13.0"] and all(r.startswith("numpy==") for r in reqs) and len(reqs) == 2
    with pytest.raises(build.BuildError, match="no pin"):
        build.requirements_for({"requests"}, pins)


PROOFS = load_module_from_path(Path(__file__).with_name("proofs.py"), "_a2_proofs")
PYTHON310 = PROOFS.python310()


def test_shipped_code_compiles_under_python_310(built, tmp_path):
    """Gradescope's image runs Python 3.10: every shipped .py must at least compile there."""
    assert PYTHON310 is not None, "a Python 3.10 interpreter is needed (pyenv install 3.10)"
    zip_path, _ = built
    src = tmp_path / "src"
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(src)
    code = (
        "import pathlib, sys\nbad = []\n"
        "for p in pathlib.Path(sys.argv[1]).rglob('*.py'):\n"
        "    try: compile(p.read_bytes(), str(p), 'exec')\n"
        "    except SyntaxError as e: bad.append(f'{p}: {e}')\n"
        "print('\\n'.join(bad)); sys.exit(1 if bad else 0)\n"
    )
    proc = subprocess.run([PYTHON310, "-c", code, str(src)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"not Python 3.10 syntax:\n{proc.stdout}{proc.stderr}"
    proc = subprocess.run(
        [PYTHON310, str(src / "fallback.py"), "--results", str(tmp_path / "r.json"), "--status", "1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    jsonschema.validate(json.loads((tmp_path / "r.json").read_text()), SCHEMA)


# ---------------------------------------------------------------------------------------------
# Gradescope layout runs.


def _gradescope_root(zip_path: Path, root: Path) -> Path:
    """source/ (the unpacked zip), submission/, results/, and run_autograder copied to the root."""
    (root / "submission").mkdir(parents=True)
    (root / "results").mkdir()
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
    for entry in ("setup.sh", "run_autograder"):  # zipfile does not restore permissions
        (root / "source" / entry).chmod(0o755)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    return root


def _env(root: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    env["A2_AUTOGRADER_ROOT"] = str(root)
    env.update(extra)
    return env


def _run_autograder(root: Path, files: dict[str, Path], env: dict[str, str]) -> dict:
    shutil.rmtree(root / "submission")
    (root / "submission").mkdir()
    for name, src in files.items():
        shutil.copyfile(src, root / "submission" / name)
    results = root / "results" / "results.json"
    results.unlink(missing_ok=True)
    proc = subprocess.run(
        [str(root / "run_autograder")], cwd=str(root), env=env, capture_output=True, text=True, timeout=1200
    )
    assert proc.returncode == 0, f"run_autograder failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    data = json.loads(results.read_text())
    jsonschema.validate(data, SCHEMA)
    return data


def _exercise_files(folder: Path) -> dict[str, Path]:
    return {e.filename: folder / e.filename for e in EXERCISES}


def test_run_autograder_writes_fallback_results_when_the_grader_cannot_start(built, tmp_path):
    zip_path, _ = built
    root = _gradescope_root(zip_path, tmp_path / "gs")
    env = _env(root, A2_VENV=str(tmp_path / "no-such-venv"))
    data = _run_autograder(root, _exercise_files(ROOT / "solutions"), env)
    assert data["score"] == 0
    visible = [t for t in data["tests"] if t.get("visibility") == "visible"]
    assert visible and visible[0]["status"] == "failed" and "could not grade" in visible[0]["output"]


WHEELHOUSE_310 = ROOT / ".cache" / "wheelhouse-py310"  # the image's wheels, downloaded once (gitignored)


def _wheelhouse_310(zip_path: Path, tmp_path: Path) -> Path:
    """Every wheel setup.sh installs on Python 3.10, from PyPI (the CPU index is unreachable here, so
    torch is PyPI's Linux build, CUDA libraries included: ~3 GB, downloaded on the first run only)."""
    src = tmp_path / "reqs"
    with zipfile.ZipFile(zip_path) as zf:
        for name in ("requirements.txt", "requirements-torch.txt"):
            zf.extract(name, src)
    WHEELHOUSE_310.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            PYTHON310,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--only-binary=:all:",
            "-d",
            str(WHEELHOUSE_310),
            "-r",
            str(src / "requirements.txt"),
            "-r",
            str(src / "requirements-torch.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=3000,
    )
    assert done.returncode == 0, f"downloading the Python 3.10 wheels failed:\n{done.stderr[-3000:]}"
    return WHEELHOUSE_310


@pytest.mark.slow
@pytest.mark.proof("gradescope_layout")
@pytest.mark.timeout(3600)  # setup.sh installs torch into a fresh venv: 1-2 min idle, ~9 min on a loaded 2-core box
@pytest.mark.parametrize("python", ["this-python", "python3.10"])
def test_gradescope_layout_end_to_end(built, tmp_path, python):
    """setup.sh and run_autograder as Gradescope runs them. "python3.10": the venv is made by a Python
    3.10 interpreter, as on the Ubuntu 22.04 image, and pip installs from the image's own wheels only."""
    zip_path, _ = built
    if python == "python3.10":
        assert PYTHON310 is not None, "a Python 3.10 interpreter is needed (pyenv install 3.10)"
        extra = {
            "A2_PYTHON": PYTHON310,
            "A2_TORCH_INDEX_URL": "",
            "PIP_NO_INDEX": "1",
            "PIP_FIND_LINKS": str(_wheelhouse_310(zip_path, tmp_path)),
        }
    else:  # torch through the installer's index route: a file index of the local CPU wheel, else the real one
        index = PROOFS.local_torch_index(tmp_path / "torch-index", "2.13.0")
        extra = {"A2_TORCH_INDEX_URL": index} if index else {}
    # Like /autograder, the root must be traversable by the sandbox's unprivileged uids (the grader
    # drops to them when it runs as root); pytest's tmp_path lies under a 0700 folder.
    root = Path(tempfile.mkdtemp(prefix="a2-gradescope-"))
    root.chmod(0o755)
    try:
        _end_to_end(_gradescope_root(zip_path, root / "autograder"), tmp_path, extra, python)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _end_to_end(root: Path, tmp_path: Path, extra: dict[str, str], label: str) -> None:
    from autograder.fixtures import nothing
    from autograder.runtime.grader import grade_submission

    env = _env(root, **extra)
    start = time.monotonic()
    setup = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")],
        cwd=str(root / "source"),
        env=env,
        capture_output=True,
        text=True,
        timeout=3000,
    )
    setup_s = time.monotonic() - start
    assert setup.returncode == 0, f"setup.sh failed:\n{setup.stdout[-4000:]}\n{setup.stderr[-4000:]}"
    version = subprocess.run(
        [str(root / "venv" / "bin" / "python"), "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if label == "python3.10":
        assert version.startswith("3.10."), f"the venv runs Python {version}, not 3.10"
        assert "from pip's configured index" in setup.stdout, setup.stdout[-3000:]
    else:
        assert "[install_torch] the index lists torch-2.13.0+cpu" in setup.stdout, setup.stdout[-3000:]
    torch_line = next(line for line in setup.stdout.splitlines() if line.startswith("[install_torch] torch=="))

    timings = {}
    start = time.monotonic()
    key = _run_autograder(root, _exercise_files(ROOT / "solutions"), env)
    timings["answer key"] = time.monotonic() - start
    assert key["score"] == 100, f"the answer key must score exactly 100, got {key['score']!r}"
    start = time.monotonic()
    stubs = _run_autograder(root, _exercise_files(ROOT / "assignments"), env)
    timings["stubs"] = time.monotonic() - start
    assert stubs["score"] == 0, "the unfilled stubs must score 0"
    assert "expected:" not in json.dumps(stubs) and "hidden cases: inputs" not in json.dumps(stubs), (
        "a stub's results.json must hold no hidden input or expected value"
    )
    for attack in ("public_table_raise", "constant_true"):
        folder = nothing.build(attack, tmp_path / attack)
        data = _run_autograder(root, _exercise_files(folder), env)
        assert data["score"] == 0, f"{attack} computes nothing but scored {data['score']} on Gradescope"

    fixture = FIXTURES[0]
    files = _exercise_files(ROOT / "solutions")
    files[fixture.filename] = materialise(fixture.name, tmp_path / "wrong_fixture")
    start = time.monotonic()
    wrong = _run_autograder(root, files, env)
    timings["wrong fixture"] = time.monotonic() - start
    in_repo_sub = tmp_path / "in_repo"
    in_repo_sub.mkdir()
    for name, src in files.items():
        shutil.copyfile(src, in_repo_sub / name)
    direct = grade_submission(in_repo_sub)
    assert wrong["score"] == direct["score"], (
        f"{fixture.name}: Gradescope run gave {wrong['score']}, in-repo grading {direct['score']}"
    )
    assert wrong["score"] < 100, f"{fixture.name} must lose points"
    print(
        f"\n[{label}] Python {version}: setup.sh {setup_s:.0f} s; run_autograder "
        + ", ".join(f"{k} {v:.1f} s" for k, v in timings.items())
        + f"\n[{label}] {torch_line}"
    )


def test_fallback_keeps_good_results_and_replaces_broken_ones(tmp_path):
    from autograder.gradescope import fallback

    results = tmp_path / "results.json"
    good = {"score": 42.0, "tests": [{"name": "ex01 a", "score": 6.0, "max_score": 6.0}]}
    results.write_text(json.dumps(good))
    assert fallback.ensure_results(results, None, 1) is True
    assert json.loads(results.read_text()) == good, "a readable results.json must be left as the grader wrote it"
    log = tmp_path / "grader.log"
    log.write_text("Traceback ...\nMemoryError\n")
    for broken in ('{"score": 4', "[1, 2]", '{"score": NaN}', '{"tests": "all passed"}', "{}"):
        results.write_text(broken)
        assert fallback.ensure_results(results, log, 124) is False, f"{broken!r} must be replaced"
        data = json.loads(results.read_text())
        jsonschema.validate(data, SCHEMA)
        assert data["score"] == 0 and "time limit" in data["tests"][0]["output"]
        staff = [t for t in data["tests"] if t["visibility"] == "hidden"]
        assert staff and "MemoryError" in staff[0]["output"], "the log tail goes to a staff-only entry"
    results.unlink()
    assert fallback.ensure_results(results, None, 137) is False
    assert "killed" in json.loads(results.read_text())["output"]
