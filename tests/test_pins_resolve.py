"""Every pin installs on the Python of the audience that uses it (autograder.packaging.audiences), by pip's resolver.

For each target (Gradescope's Ubuntu 22.04 with Python 3.10, students' 3.10-3.13, instructors' 3.11+),
pip resolves the audience's requirement set for that Python version and Linux x86_64 from wheels only,
without installing anything (`--dry-run`). Environment markers are evaluated here for the target's
Python (pip evaluates them for the interpreter that runs it), so `numpy==2.2.6; python_version < '3.11'`
is what a 3.10 target asks for. torch is looked up with `pip index versions` instead of resolved: the
resolver would download a 500 MB wheel per target, and the version list is what decides.

These talk to the package index and take about a minute per instructor target: marked slow.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from packaging.requirements import Requirement

from autograder.packaging import audiences

TORCH = "torch"


def for_python(lines: list[str], python: str) -> list[str]:
    """The requirement lines whose markers hold on `python`, markers removed."""
    env = {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    kept = []
    for line in lines:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate(env):
            req.marker = None
            kept.append(str(req))
    return kept


def _platform_args(target: audiences.Target) -> list[str]:
    args = ["--python-version", target.python, "--only-binary=:all:"]
    for platform in target.platforms:
        args += ["--platform", platform]
    return args


def test_markers_pick_the_right_numpy_per_python():
    lines = ["numpy==2.4.6; python_version >= '3.11'", "numpy==2.2.6; python_version < '3.11'"]
    assert for_python(lines, "3.10") == ["numpy==2.2.6"]
    assert for_python(lines, "3.13") == ["numpy==2.4.6"]


def test_every_audience_gets_torch_and_numpy():
    for audience in ("gradescope", "student", "instructor"):
        names = {Requirement(line).name for line in audiences.requirements(audience)}
        assert {TORCH, "numpy"} <= names, f"{audience}: {sorted(names)}"
    student = {Requirement(line).name for line in audiences.requirements("student")}
    assert not student & {"nbgrader", "otter-grader", "mutmut", "hypothesis"}, (
        f"students need no grading tools: {sorted(student)}"
    )


@pytest.mark.slow
@pytest.mark.proof("resolvers")
@pytest.mark.parametrize("target", audiences.TARGETS, ids=[f"{t.audience}-py{t.python}" for t in audiences.TARGETS])
def test_requirements_resolve_for_target(target, tmp_path):
    lines = for_python(audiences.requirements(target.audience), target.python)
    torch = [line for line in lines if Requirement(line).name == TORCH]
    others = [line for line in lines if Requirement(line).name != TORCH]
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("\n".join(others) + "\n")
    report = tmp_path / "report.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--no-input",
            "--report",
            str(report),
            "--target",
            str(tmp_path / "target"),
            *_platform_args(target),
            "-r",
            str(reqs),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    errors = "\n".join(line for line in run.stderr.splitlines() if "Location 'file:" not in line)
    assert run.returncode == 0, (
        f"{target.audience} on Python {target.python}: pip cannot install these pins "
        f"({', '.join(others)}):\n{errors[-3000:]}"
    )
    installed = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    for line in others:
        req = Requirement(line)
        assert installed.get(req.name.lower()) in req.specifier, (
            f"{target.audience} py{target.python}: resolved {req.name} {installed.get(req.name.lower())}, pinned {line}"
        )
    assert len(torch) == 1, f"{target.audience}: expected one torch pin, got {torch}"
    version = str(Requirement(torch[0]).specifier).lstrip("=")
    index = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", TORCH, "--no-input", *_platform_args(target)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    available = re.search(r"Available versions: (.*)", index.stdout)
    assert available, f"pip index versions torch failed for Python {target.python}:\n{index.stderr[-2000:]}"
    versions = {v.strip().split("+")[0] for v in available.group(1).split(",")}
    assert version in versions, (
        f"torch {version} has no wheel for Python {target.python} on Linux x86_64 (available: {sorted(versions)[-8:]})"
    )
