"""The lock files (locks/, autograder.packaging.locks) agree with pyproject.toml's pins and install as they stand.

Fast: every exact pin of an audience's requirement set is in its lock at the same version, nothing of
locks/excludes.txt is, the zip's requirements.txt is the Gradescope lock without torch, and `make setup`
installs the instructor lock. Slow (they ask the package index): uv, recompiling each lock with the current
one as its preference, gets the same file; pip, resolving each lock (torch aside) for the audience's lowest
Python on Linux x86_64, keeps every locked version and adds only what locks/excludes.txt leaves out.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

from autograder.core.manifest import ROOT
from autograder.packaging import audiences, build, locks, pins

IDS = [lock.audience for lock in locks.LOCKS]


@pytest.mark.parametrize("lock", locks.LOCKS, ids=IDS)
def test_lock_agrees_with_the_pins(lock):
    assert lock.path.is_file(), f"{lock.path} is missing: run `make lock`"
    assert locks.problems(lock) == [], "run `make lock`:\n" + "\n".join(locks.problems(lock))


def test_mismatches_name_a_moved_pin_and_an_excluded_entry():
    text = "numpy==2.4.6\nrfc3987-syntax==1.1.0\n"
    found = pins.mismatches(["numpy==2.4.7", "tqdm==4.70.1"], text)
    assert any("numpy==2.4.7" in p for p in found) and any("tqdm==4.70.1" in p for p in found), found
    assert any("rfc3987-syntax" in p for p in found), found
    assert pins.mismatches(["numpy==2.4.6"], "numpy==2.4.6 ; python_full_version >= '3.11'\n") == []


def test_instructor_lock_is_for_this_python_and_has_the_tools():
    (lock,) = [lk for lk in locks.LOCKS if lk.audience == "instructor"]
    assert sys.version_info[:2] >= tuple(map(int, lock.python.split(".")))
    names = {name for name, _, _ in pins.parse(lock.path.read_text(encoding="utf-8"))}
    assert {"torch", "nbgrader", "ruff", "mypy", "uv"} <= names


def test_zip_requirements_are_the_gradescope_lock_without_torch():
    members, _ = build.collect()
    shipped = pins.parse(members["requirements.txt"].decode())
    (lock,) = [lk for lk in locks.LOCKS if lk.audience == "gradescope"]
    locked = pins.parse(lock.path.read_text(encoding="utf-8"))
    assert shipped == [pin for pin in locked if pin[0] != "torch"]
    assert pins.parse(members["requirements-torch.txt"].decode()) == [("torch", "2.13.0", "")]


def test_make_setup_installs_the_instructor_lock():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "LOCK := locks/instructor.txt" in makefile
    assert "pip install --no-deps -r $(LOCK)" in makefile and "pip install --no-deps -e ." in makefile
    assert "uninstall" not in makefile, "the lock leaves rfc3987-syntax out: nothing to uninstall"


@pytest.mark.slow
@pytest.mark.proof("resolvers")
def test_locks_are_up_to_date():
    run = subprocess.run(
        [sys.executable, "-m", "autograder", "lock", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]


def _for_python(text: str, python: str) -> list[str]:
    """The lock's pins whose markers hold on Linux x86_64 with CPython `python`, markers removed."""
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
    return [
        f"{name}=={version}" for name, version, marker in pins.parse(text) if not marker or Marker(marker).evaluate(env)
    ]


@pytest.mark.slow
@pytest.mark.proof("resolvers")
@pytest.mark.parametrize("lock", locks.LOCKS, ids=IDS)
def test_lock_resolves_to_itself(lock, tmp_path):
    locked_pins = [
        p for p in _for_python(lock.path.read_text(encoding="utf-8"), lock.python) if not p.startswith("torch==")
    ]
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("\n".join(locked_pins) + "\n")
    report = tmp_path / "report.json"
    platforms = [arg for platform in audiences.LINUX_X86_64 for arg in ("--platform", platform)]
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
            "--python-version",
            lock.python,
            "--only-binary=:all:",
            *platforms,
            "-r",
            str(reqs),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    errors = "\n".join(line for line in run.stderr.splitlines() if "Location 'file:" not in line)
    assert run.returncode == 0, f"pip cannot install {lock.path.name} on Python {lock.python}:\n{errors[-3000:]}"
    items = json.loads(report.read_text())["install"]
    resolved = {pins.norm(i["metadata"]["name"]): i["metadata"]["version"] for i in items}
    locked = dict(p.split("==") for p in locked_pins)
    assert {n: resolved.get(n) for n in locked} == locked, "pip moved locked versions"
    requires = {
        pins.norm(i["metadata"]["name"]): {
            pins.norm(Requirement(r).name) for r in i["metadata"].get("requires_dist", [])
        }
        for i in items
    }
    allowed = set(pins.excluded())  # with whatever they pull in (any marker: an upper bound)
    while True:
        more = allowed | {dep for name in allowed for dep in requires.get(name, ())}
        if more == allowed:
            break
        allowed = more
    extra = set(resolved) - set(locked) - allowed
    assert not extra, f"{lock.path.name} lacks {sorted(extra)} (pip adds them): run `make lock`"
