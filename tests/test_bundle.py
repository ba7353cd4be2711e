"""The student's copy (`python -m autograder student-bundle`): no answer in it, same bytes from the same
source, and, from nothing, a set-up that runs its public tests and the lecture drivers on the student's
own files. Also the instructor package itself: a non-editable install and a built wheel carry every
subpackage and data file.

The slow tests build real virtual environments (the student copy's torch through its installer, from a
file index of this machine's local CPU wheel standing in for PyTorch's CPU index); each module-scoped
fixture installs once and the tests after it reuse it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from autograder.authoring.expected import drift
from autograder.authoring.reference_figures import distinctive, numbers
from autograder.authoring.wrong_fixtures import for_exercise, source
from autograder.core.cases import hidden_cases, public_cases
from autograder.core.manifest import EXERCISES, ROOT
from autograder.packaging import bundle
from hetero.impl import load_module_from_path

STUB_RE = re.compile(r'raise NotImplementedError\("ex\d\d: \w+"\)')


@pytest.fixture(scope="module")
def members() -> dict[str, bytes]:
    return bundle.collect()


def _text(members: dict[str, bytes], name: str) -> str:
    return members[name].decode("utf-8")


# ---------------------------------------------------------------------------------------------
# What is in the copy, and the audit


def test_the_copy_passes_its_audit(members):
    problems = bundle.audit(members)
    assert not problems, "the student's copy fails its own audit:\n" + "\n".join(problems)


def test_the_copy_holds_the_students_files_and_nothing_for_grading(members):
    for ex in EXERCISES:
        assert f"assignments/{ex.filename}" in members, f"stub {ex.filename} missing from the copy"
        assert STUB_RE.search(_text(members, f"assignments/{ex.filename}")), f"{ex.filename} is not a stub"
    for name in (
        "README.md",
        "Makefile",
        "pyproject.toml",
        "assignments/README.md",
        "shared/hetero/pack.py",
        "shared/hetero/lecture.py",
        "shared/hetero/data/sample_trace.jsonl",
    ):
        assert name in members, f"{name} missing from the copy"
    assert not [n for n in members if n.startswith("autograder/") or n.startswith("solutions/")], sorted(members)
    # the ex10 grading models are hidden-case inputs; the one checkpoint shipped is the release's own trained model
    assert [n for n in members if n.endswith(".pt")] == ["assignments/reference_moe.pt"]
    shipped = members["assignments/reference_moe.pt"]
    assert all(shipped != p.read_bytes() for p in (ROOT / "shared" / "hetero" / "data").glob("*.pt"))


def test_student_pyproject_pins_exactly_the_students_packages(members):
    text = _text(members, "pyproject.toml")
    deps = re.findall(r'^    "([^"]+)",?$', text, flags=re.M)
    names = {re.split(r"[=<>!~;\[ ]", d, maxsplit=1)[0] for d in deps}
    assert names == set(bundle.STUDENT_DISTRIBUTIONS), (
        f"the student's pyproject must depend on exactly {sorted(bundle.STUDENT_DISTRIBUTIONS)}, got {sorted(names)}"
    )
    root_text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    for dep in deps:
        assert f'"{dep}"' in root_text, f"{dep}: not the root pyproject's pin (markers included)"
    assert "numpy==2.2.6; python_version < '3.11'" in deps, "Python 3.10 needs its own numpy pin"
    assert 'requires-python = ">=3.10"' in text


def test_readme_quick_start_has_exactly_two_commands(members):
    readme = _text(members, "README.md")
    quick = readme.split("## Quick start", 1)[1].split("```")[1]
    commands = [line.split("#")[0].strip() for line in quick.strip().splitlines()]
    assert commands == ["make demo", "make test"], f"Quick start must be `make demo` and `make test`, got {commands}"
    assert "3.10 to 3.13" in readme and "make test PYTHON=python3.12" in readme, "how to choose the Python"
    for words in (
        "https://download.pytorch.org/whl/cpu",
        "A2_TORCH_INDEX_URL=https://",
        "A2_TORCH_INDEX_URL= make",
        "1.4 GB",
        "shared/hetero/install_torch.py",
    ):
        assert words in readme, f"the README must say how torch is installed ({words!r})"
    recipe = _text(members, "Makefile").split("$(STAMP): pyproject.toml", 1)[1].split("\n\n", 1)[0]
    installer, rest = recipe.index("shared/hetero/install_torch.py"), recipe.index("pip install -e .")
    assert installer < rest, "the set-up must install torch with the installer before `pip install -e .`"


def test_handout_states_the_limits_the_types_and_the_differences(members):
    handout = _text(members, "assignments/README.md")
    for words in (
        "10 s; ex05 20 s; ex10 30 s",
        "Gradescope grading",
        "numpy.float32",
        "numpy.float64",
        "Where this package's figures differ",
        "Overload",
        "Small MoE",
        "Recompute",
        "Launch share",
        "_check_cluster",
        "pytest assignments -m ex01",
        "python -m hetero.pack",
    ):
        assert words in handout, f"the handout must say {words!r}"
    assert "python -m autograder" not in handout, "the handout names a grader command the copy does not have"
    assert re.search(r"run `pytest -m ex\d\d`", handout) is None, "`pytest -m exNN` selects nothing from the root"


def _a_solution_line(ex_id: str) -> str:
    lines = bundle.solution_lines()
    for text, where in lines.items():
        if f"/{ex_id}_" in where:
            return text
    raise AssertionError(f"no distinctive solution line found for {ex_id}")


def _planted(members: dict[str, bytes], name: str, extra: str) -> dict[str, bytes]:
    return {**members, name: members.get(name, b"") + extra.encode("utf-8")}


def test_a_planted_solution_line_fails_the_audit(members):
    line = _a_solution_line("ex02")
    stub = "assignments/ex02_kv_capacity.py"
    problems = bundle.audit(_planted(members, stub, f"\n\ndef leaked():\n    {line}\n"))
    assert any(p.startswith(stub) and "solution block" in p for p in problems), (
        f"planting the answer key's line {line!r} in {stub} was not caught: {problems}"
    )


@pytest.mark.parametrize(
    "what, name, extra, words",
    [
        ("a solution marker", "assignments/ex01_cost_per_gb.py", "\n# BEGIN SOLUTION\n", "solution marker"),
        ("a grader import", "shared/hetero/catalog.py", "\nimport autograder.runtime.grader\n", "imports the grader"),
        ("a wrong fixture", "shared/hetero/extra.py", '"""MISTAKE: used GiB."""\n', "not part of"),
        ("a wrong fixture's docstring", "shared/hetero/roofline.py", "", "MISTAKE"),
    ],
)
def test_other_leaks_fail_the_audit(members, what, name, extra, words):
    planted = _planted(members, name, extra)
    if what == "a wrong fixture's docstring":
        planted[name] = b'"""MISTAKE: used GiB where GB is meant."""\n' + members[name]
    problems = bundle.audit(planted)
    assert any(words in p for p in problems), f"{what} in {name} was not caught: {problems}"


def test_hidden_cases_expected_values_and_fixtures_fail_the_audit(members):
    hidden_id = hidden_cases("ex02")[0].id
    problems = bundle.audit(_planted(members, "assignments/tests/public_ex02.py", f"\n# {hidden_id}\n"))
    assert any(hidden_id in p for p in problems), f"the hidden case id {hidden_id} was not caught"
    copied = {
        **members,
        "assignments/tests/exercises.json": (ROOT / "autograder" / "expected" / "ex02.json").read_bytes(),
    }
    problems = bundle.audit(copied)
    assert any("identical to autograder/expected/ex02.json" in p for p in problems), problems
    fixture = source(for_exercise("ex01")[0].name).encode("utf-8")
    copied = {**members, "assignments/ex01_cost_per_gb.py": fixture}
    problems = bundle.audit(copied)
    assert any("identical to the wrong fixture ex01_" in p for p in problems), problems
    assert any("MISTAKE" in p for p in problems), problems
    answer = {**members, "assignments/ex01_cost_per_gb.py": (ROOT / "solutions" / "ex01_cost_per_gb.py").read_bytes()}
    problems = bundle.audit(answer)
    assert any("identical to solutions/ex01_cost_per_gb.py" in p for p in problems), problems


def test_the_reference_figures_ship_and_hold_no_hidden_case(members):
    name = "assignments/reference_figures.json"
    assert name in members and not [p for p in bundle.audit(members) if p.startswith(name)]
    text = _text(members, name)
    for ex in EXERCISES:
        for case in hidden_cases(ex.id):
            assert case.id not in text, f"{name} names the hidden case {case.id}"
    # no stored expected value of a hidden case: every distinctive one (six or more significant digits,
    # not a simple fraction such as 1/3, not also a public case's value) is absent from the reference
    reference = set(numbers(json.loads(text)))
    for ex in EXERCISES:
        stored = json.loads((ROOT / "autograder" / "expected" / f"{ex.id}.json").read_text(encoding="utf-8"))
        hidden_ids = {case["id"] for case in stored["hidden"]}
        public = {x for cid, c in stored["cases"].items() if cid not in hidden_ids for x in numbers(c["expect"])}
        for cid in sorted(hidden_ids):
            for value in numbers(stored["cases"][cid]["expect"]):
                if distinctive(value) and value not in public:
                    assert value not in reference, f"{name} holds {value!r}, the stored expected value of {cid}"
    # and the audit still refuses hidden data planted in it
    hidden_id = hidden_cases("ex05")[0].id
    problems = bundle.audit(_planted(members, name, f"\n{hidden_id}\n"))
    assert any(p.startswith(name) and hidden_id in p for p in problems), problems
    copied = {**members, name: (ROOT / "autograder" / "expected" / "ex05.json").read_bytes()}
    problems = bundle.audit(copied)
    assert any(p.startswith(name) and "identical to autograder/expected/ex05.json" in p for p in problems), problems


def test_build_refuses_to_write_a_copy_that_fails_the_audit(tmp_path, monkeypatch, members):
    leaky = _planted(members, "assignments/ex02_kv_capacity.py", f"\n    {_a_solution_line('ex02')}\n")
    monkeypatch.setattr(bundle, "collect", lambda root=ROOT: leaky)
    out = tmp_path / "student"
    with pytest.raises(bundle.BundleError, match="solution block"):
        bundle.build_bundle(out)
    assert not out.exists() and not out.with_name("student.zip").exists(), "a failing copy was written"


def test_same_source_same_bytes(tmp_path):
    first, second = tmp_path / "a" / "student", tmp_path / "b" / "student"
    bundle.build_bundle(first)
    bundle.build_bundle(second)
    assert (tmp_path / "a" / "student.zip").read_bytes() == (tmp_path / "b" / "student.zip").read_bytes(), (
        "two builds of the same source gave different zips (timestamps or order leak in)"
    )
    with zipfile.ZipFile(tmp_path / "a" / "student.zip") as zf:
        names = zf.namelist()
        assert names == sorted(names) and all(n.startswith("student/") for n in names)
        assert {i.date_time for i in zf.infolist()} == {bundle.ZIP_DATE}
        for name in names:
            assert zf.read(name) == (tmp_path / "a" / name).read_bytes(), f"{name}: zip and folder differ"
    bundle.build_bundle(first)  # a previous copy is replaced in place
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    with pytest.raises(bundle.BundleError, match="not a previous student copy"):
        bundle.build_bundle(tmp_path / "mine")


# ---------------------------------------------------------------------------------------------
# The proof from nothing (slow): a fresh venv from the copy alone


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without any path into this repository (no PYTHONPATH, no venv of ours on PATH)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "A2_CACHE_DIR")}
    ours = str(ROOT)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(ours))
    env["COLUMNS"] = "400"  # wide enough that no summary line is cut
    return {**env, **extra}


def _run(cmd: list[str], cwd: Path, timeout_s: float = 900, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, env=_clean_env(**env))


PROOFS = load_module_from_path(Path(__file__).with_name("proofs.py"), "_a2_proofs")


@pytest.fixture(scope="module")
def student_copy(tmp_path_factory) -> Path:
    """The copy, built into a temporary folder and set up with its own Makefile (`make setup`). torch goes
    through install_torch.py's index route: PyTorch's CPU index, or where this machine holds the CPU wheel
    locally, a file index of it standing in (A2_TORCH_INDEX_URL)."""
    out = tmp_path_factory.mktemp("copy") / "student"
    bundle.build_bundle(out)
    index = PROOFS.local_torch_index(
        tmp_path_factory.mktemp("torch-index"), bundle._torch_version(bundle.student_requirements())
    )
    torch_env = {"A2_TORCH_INDEX_URL": index} if index else {}
    result = _run(
        ["make", "setup", f"PYTHON={shutil.which('python3', path=_clean_env()['PATH']) or 'python3'}"],
        out,
        timeout_s=1800,
        **torch_env,
    )
    assert result.returncode == 0, (
        f"make setup failed in the student's copy:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
    assert "[install_torch] the index lists torch-" in result.stdout, result.stdout[-3000:]
    torch = _run([_vpy(out), "-c", "import torch; print(torch.__version__)"], out).stdout.strip()
    assert torch.endswith("+cpu"), f"the copy's torch is {torch}, not the CPU build"
    print(
        f"\n[student copy] torch {torch} from {index or 'PyTorch CPU index'} ({'local stand-in' if index else 'real'})"
    )
    return out


def _vpy(copy: Path) -> str:
    return str(copy / ".venv" / "bin" / "python")


@pytest.mark.slow
@pytest.mark.proof("student_copy")
def test_copy_imports_its_own_hetero(student_copy):
    result = _run([_vpy(student_copy), "-c", "import hetero, autograder"], student_copy)
    assert "No module named 'autograder'" in result.stderr, "the copy's venv must not see the grader package"
    result = _run([_vpy(student_copy), "-c", "import hetero; print(hetero.__file__)"], student_copy)
    assert Path(result.stdout.strip()).resolve().is_relative_to(student_copy.resolve()), (
        f"the copy's venv imports hetero from {result.stdout.strip()}, not from the copy"
    )


@pytest.mark.slow
@pytest.mark.proof("student_copy")
def test_unfilled_copy_fails_every_public_test_with_not_implemented(student_copy):
    result = _run([_vpy(student_copy), "-m", "pytest", "assignments", "-p", "no:cacheprovider"], student_copy)
    out = result.stdout
    assert result.returncode == 1, out[-3000:]
    first_failure = out.index("FAILURES")
    head = out[:first_failure]
    assert f"exercise files: {(student_copy / 'assignments').resolve()}" in head, head
    assert "still stubs: ex01, ex02" in head and "NotImplementedError" in head, (
        f"the top of the output must say that the stubs fail with NotImplementedError:\n{head}"
    )
    assert "time limit per case: 10 s (ex05 20 s, ex10 30 s)" in head, head
    blocks = re.split(r"\n_{3,} test_public\[[^\]]+\] _{3,}\n", out[first_failure:])[1:]
    n_cases = int(re.search(r"(\d+) failed", out).group(1))
    assert len(blocks) == n_cases and n_cases > 0
    for block in blocks:
        body = block.split("\n=")[0].strip()
        assert body.startswith("NotImplementedError: ex"), f"expected a NotImplementedError block, got:\n{body}"
        assert len(body.splitlines()) == 1, f"one line per unfilled case, no harness source:\n{body}"
    assert "ImportError" not in out and "Traceback" not in out
    summary = out[out.index("per-exercise summary") :]
    assert summary.rstrip().endswith("make up the rest."), "the per-exercise summary must be the last thing printed"
    for ex in EXERCISES:
        assert re.search(rf"^{ex.id}\s+0\s+\d+\s+0 / [\d.]+\s+{ex.points:g}\s+FAILING$", summary, flags=re.M), (
            f"{ex.id}:\n{summary}"
        )


@pytest.mark.slow
@pytest.mark.proof("student_copy")
def test_one_exercise_is_selected_from_the_root_as_the_handout_says(student_copy):
    result = _run(
        [_vpy(student_copy), "-m", "pytest", "assignments", "-m", "ex01", "-p", "no:cacheprovider"], student_copy
    )
    counts = re.search(r"(\d+) failed, (\d+) passed, (\d+) deselected", result.stdout)
    assert counts, f"`pytest assignments -m ex01` selected nothing:\n{result.stdout[-2000:]}"
    failed, passed, _ = map(int, counts.groups())
    assert failed == len(public_cases("ex01")) and passed == 1, (
        f"expected every ex01 public case to fail on the stub and its presence check to pass, got {failed} "
        f"failed, {passed} passed:\n{result.stdout[-2000:]}"
    )


@pytest.mark.slow
@pytest.mark.proof("student_copy")
def test_demo_on_stubs_names_the_missing_exercises(student_copy):
    result = _run(["make", "demo"], student_copy)
    assert result.returncode == 0, result.stderr[-3000:]
    for ex_id in ("ex01", "ex02", "ex03", "ex05", "ex06", "ex09", "ex10"):
        assert f"{ex_id} missing" in result.stdout, f"`make demo` on the stubs must print '{ex_id} missing'"
    assert f"exercise files: {(student_copy / 'assignments').resolve()}" in result.stdout + result.stderr


@pytest.fixture(scope="module")
def filled_copy(student_copy) -> Path:
    """The same copy with the answer key's exercise files in its assignments/ (after the stub tests above)."""
    for ex in EXERCISES:
        shutil.copyfile(ROOT / "solutions" / ex.filename, student_copy / "assignments" / ex.filename)
    return student_copy


@pytest.mark.slow
@pytest.mark.proof("student_copy")
def test_filled_copy_passes_every_public_test(filled_copy):
    result = _run([_vpy(filled_copy), "-m", "pytest", "assignments", "-p", "no:cacheprovider"], filled_copy)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "FAILING" not in result.stdout and "still stubs" not in result.stdout


@pytest.mark.slow
@pytest.mark.proof("student_copy")
def test_filled_copy_drivers_give_the_repositorys_figures(filled_copy):
    copy_run = _run(
        [_vpy(filled_copy), "-m", "hetero.lecture", "all", "--impl", "assignments", "--json"],
        filled_copy,
        timeout_s=1800,
    )
    assert copy_run.returncode == 0, copy_run.stderr[-3000:]
    repo_run = subprocess.run(
        [sys.executable, "-m", "hetero.lecture", "all", "--impl", "solutions", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert repo_run.returncode == 0, repo_run.stderr[-3000:]
    ours, theirs = json.loads(copy_run.stdout), json.loads(repo_run.stdout)
    for exp in (ours, theirs):
        for result in exp.values():
            result.pop("impl"), result.pop("impl_dir")
            result.get("deferral", {}).pop("train_seconds", None)  # a wall-clock measurement, not a figure
            result.get("deferral", {}).pop("model_source", None)  # the same weights: shipped (copy) or cached (here)
    assert all(not r["missing"] for r in ours.values()), {k: r["missing"] for k, r in ours.items()}
    for exp, result in ours.items():  # the answer key's files in the copy match the shipped reference figures
        assert result.pop("gaps") == [] and result.pop("reference"), f"experiment {exp}: gaps against the reference"
        assert result.pop("not_compared", {}) == {}, f"experiment {exp}: figures not compared with the reference"
    differences = drift(ours, theirs)  # floats within 1e-9 relative, everything else exactly
    assert not differences, "the copy's drivers differ from the repository's --impl solutions:\n" + "\n".join(
        differences[:20]
    )


@pytest.mark.slow
@pytest.mark.proof("student_copy")
def test_filled_copy_packs_the_files_the_tests_read(filled_copy, tmp_path):
    result = _run(
        [_vpy(filled_copy), "-m", "hetero.pack", "--out", str(tmp_path / "s.zip")],
        filled_copy / "assignments" / "tests",
    )  # from below assignments/: found upward
    assert result.returncode == 0, result.stderr
    assert f"exercise files: {(filled_copy / 'assignments').resolve()}" in result.stdout
    with zipfile.ZipFile(tmp_path / "s.zip") as zf:
        assert sorted(zf.namelist()) == sorted(ex.filename for ex in EXERCISES)


# ---------------------------------------------------------------------------------------------
# The instructor package: non-editable install and wheel


def _package_files() -> set[str]:
    """Every file of the two packages in this repository, as installed paths ("hetero/data/...")."""
    files = set()
    for package, folder in (("hetero", ROOT / "shared" / "hetero"), ("autograder", ROOT / "autograder")):
        for path in folder.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                files.add(f"{package}/{path.relative_to(folder).as_posix()}")
    return files


def _copy_source(dest: Path) -> None:
    """The repository's sources into `dest`, without venvs, caches, build residue or outputs (what a
    non-editable install and a wheel build start from)."""
    shutil.copytree(
        ROOT,
        dest,
        ignore=shutil.ignore_patterns(
            ".venv",
            ".git",
            ".cache",
            "__pycache__",
            "out",
            "dist",
            "build",
            "*.egg-info",
            ".pytest_cache",
            ".hypothesis",
        ),
    )


@pytest.fixture(scope="module")
def installed_root(tmp_path_factory) -> Path:
    """site-packages of a fresh venv with `pip install .` of this repository (copied first: no editable
    link and no build residue in the working tree)."""
    work = tmp_path_factory.mktemp("root")
    source = work / "src"
    _copy_source(source)
    venv = work / "venv"
    base = shutil.which("python3", path=_clean_env()["PATH"]) or "python3"
    assert _run([base, "-m", "venv", str(venv)], work).returncode == 0
    result = _run([str(venv / "bin" / "python"), "-m", "pip", "install", str(source)], work, timeout_s=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    found = _run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], work
    )
    return Path(found.stdout.strip())


@pytest.mark.slow
@pytest.mark.proof("package_install")
def test_non_editable_install_carries_every_file(installed_root):
    installed = {
        p.relative_to(installed_root).as_posix()
        for pkg in ("hetero", "autograder")
        for p in (installed_root / pkg).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    missing = sorted(_package_files() - installed)
    assert not missing, f"`pip install .` left out {len(missing)} files, e.g. {missing[:10]}"


@pytest.mark.slow
@pytest.mark.proof("package_install")
def test_installed_package_runs_a_driver_on_a_folder(installed_root, tmp_path):
    python = installed_root.parents[2] / "bin" / "python"  # <venv>/lib/pythonX.Y/site-packages
    for ex in EXERCISES:
        (tmp_path / "assignments").mkdir(exist_ok=True)
        shutil.copyfile(ROOT / "solutions" / ex.filename, tmp_path / "assignments" / ex.filename)
    # --trust-impl: the installed grader makes the driver refuse every folder but the course's, and an installed
    # package has no course folder; this one holds the answer key, the test's own
    result = _run([str(python), "-m", "hetero.lecture", "01", "--json", "--trust-impl"], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout)
    assert data["impl_dir"] == str((tmp_path / "assignments").resolve()) and not data["missing"]


@pytest.mark.slow
@pytest.mark.proof("package_install")
def test_built_wheel_carries_every_file(tmp_path):
    source = tmp_path / "src"
    _copy_source(source)
    result = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path / "wheel"), str(source)],
        tmp_path,
        timeout_s=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (wheel,) = (tmp_path / "wheel").glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = {n for n in zf.namelist() if n.split("/", 1)[0] in ("hetero", "autograder")}
    missing = sorted(_package_files() - names)
    assert not missing, f"the wheel left out {len(missing)} files, e.g. {missing[:10]}"


def test_every_library_subpackage_is_installed():
    """A subpackage of shared/hetero missing from pyproject's package list is absent from a non-editable
    install (the Gradescope image, the student's `pip install .`)."""
    import tomllib

    from autograder.packaging.bundle import library_packages

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    missing = set(library_packages(ROOT)) - listed
    assert not missing, f"add {sorted(missing)} to [tool.setuptools] packages in pyproject.toml"
