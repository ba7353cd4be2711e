"""Shared pytest set-up: the wrong submissions of autograder/authoring/wrong_fixtures.py materialised once, the
graded corpus (`graded`: each submission graded once per grader version, tests/graded.py), and the slow
proofs that re-run only when their inputs change (tests/proofs.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest

from autograder.authoring.wrong_fixtures import materialise_all
from autograder.core.manifest import EXERCISES
from hetero.impl import load_module_from_path

proofs = load_module_from_path(Path(__file__).with_name("proofs.py"), "_a2_proofs")
_graded = load_module_from_path(Path(__file__).with_name("graded.py"), "_a2_graded")


@pytest.fixture(scope="session")
def wrong_dir(tmp_path_factory) -> Path:
    """Every wrong fixture written as <wrong_dir>/<name>/<exNN file>.py (a one-exercise submission folder)."""
    folder = tmp_path_factory.mktemp("wrong")
    materialise_all(folder)
    return folder


def _exercise_folder(folder: Path, source: Path) -> Path:
    from autograder.core.manifest import EXERCISES

    folder.mkdir(parents=True)
    for ex in EXERCISES:
        shutil.copyfile(source / ex.filename, folder / ex.filename)
    return folder


@pytest.fixture(scope="session")
def key_submission(tmp_path_factory) -> Path:
    """A submission folder holding the answer key's exercise files (solutions/exNN_*.py) and nothing else."""
    from autograder.core.manifest import ROOT

    return _exercise_folder(tmp_path_factory.mktemp("key") / "key", ROOT / "solutions")


@pytest.fixture(scope="session")
def stubs_submission(tmp_path_factory) -> Path:
    """A submission folder holding the unfilled stubs of the release (assignments/exNN_*.py)."""
    from autograder.core.manifest import ROOT

    return _exercise_folder(tmp_path_factory.mktemp("stubs") / "stubs", ROOT / "assignments")


@pytest.fixture
def page_cache_relay_lock():
    """Held for the whole test (`rungs.EXCLUSIVE_RELAY`): one page-cache relay test at a time on this machine,
    across xdist workers and concurrent test runs (an exclusive flock on one file in the temporary folder)."""
    import fcntl

    lock = Path(tempfile.gettempdir()) / "a2-test-page-cache-relay.lock"
    fd = os.open(lock, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@pytest.fixture(scope="session")
def graded():
    """`graded(folder, exercises=None)`: the results.json dict of grading `folder` with the real grader,
    from the graded-corpus cache when the same files were graded by the same grader before."""
    return _graded.graded


@pytest.fixture(scope="session")
def failed_cases():
    """`failed_cases(folder, ex_id)`: why `folder` lost points on `ex_id`, in the staff's words (case id,
    call, expected, got, verdict; graded again), for the message of a test that expected full marks."""
    return _graded.failed_cases


# ---------------------------------------------------------------------------------------------
# Proofs: `@pytest.mark.proof(name)` tests run when their record is missing or stale (tests/proofs.py).

_STATE = pytest.StashKey[dict]()
_OWN_CACHE = pytest.StashKey[str]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if not _is_worker(config) and not os.environ.get(_graded.CACHE_ENV):
        os.environ[_graded.CACHE_ENV] = tempfile.mkdtemp(prefix="a2-graded-")  # the workers inherit it
        config.stash[_OWN_CACHE] = os.environ[_graded.CACHE_ENV]
    config.addinivalue_line("markers", "proof(name): part of a slow proof with a committed record (tests/proofs.py)")
    for ex in EXERCISES:  # one marker per exercise, from the manifest (no list to keep in step)
        config.addinivalue_line("markers", f"{ex.id}: tests of exercise {ex.id}")
    config.stash[_STATE] = {
        "status": {name: proofs.status(p) for name, p in proofs.PROOFS.items()},
        "tests": defaultdict(dict),  # proof -> nodeid -> {"outcome", "duration_s"}
        "total": {},  # proof -> how many tests it has (sent by the workers that collected them)
        "output": defaultdict(list),
    }


@pytest.hookimpl(tryfirst=True)  # before -m/-k deselect (a proof counts all its tests) and xdist's group ids
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    state = config.stash[_STATE]
    members: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        marker = item.get_closest_marker("proof")
        if marker is None:
            continue
        name = marker.args[0]
        if name not in proofs.PROOFS:
            raise pytest.UsageError(f"{item.nodeid}: proof {name!r} is not declared in tests/proofs.py PROOFS")
        members[name].append(item)
    dropped = []
    for name, group in members.items():
        st = state["status"][name]
        for item in group:
            item.add_marker(pytest.mark.xdist_group(name))  # once xdist groups again: its module fixtures built once
            item.extra_keyword_matches.add(name)  # `-k <proof>` selects the proof's tests
            item.user_properties.append(("a2_proof", (name, len(group))))
        if st.holds:
            dropped += group
    if dropped:
        gone = set(map(id, dropped))
        items[:] = [item for item in items if id(item) not in gone]
        config.hook.pytest_deselected(items=dropped)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    proof = dict(report.user_properties).get("a2_proof")
    if proof is None:
        return
    name, total = proof
    state = _CONFIG.stash[_STATE]
    state["total"][name] = total
    nodeid = report.nodeid.split("@", 1)[0]
    entry = state["tests"][name].setdefault(nodeid, {"outcome": "passed", "duration_s": 0.0})
    entry["duration_s"] = round(entry["duration_s"] + report.duration, 1)
    if report.failed or report.skipped:
        entry["outcome"] = "failed" if report.failed else "skipped"
    if report.when == "call" and report.capstdout.strip():
        state["output"][name] += [line for line in report.capstdout.splitlines() if line.strip()]


_CONFIG: pytest.Config
_LITTER = pytest.StashKey[frozenset[str] | None]()
_LITTERED = pytest.StashKey[list[str]]()
_REPO = Path(__file__).resolve().parents[1]


def _untracked() -> frozenset[str] | None:
    """The checkout's files that git neither tracks nor ignores (None outside a git checkout)."""
    if not (_REPO / ".git").exists() or shutil.which("git") is None:
        return None
    listed = subprocess.run(
        ["git", "-C", str(_REPO), "ls-files", "--others", "--exclude-standard", "-z"], capture_output=True, check=False
    )
    return frozenset(listed.stdout.decode(errors="replace").split("\0")) - {""} if listed.returncode == 0 else None


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    global _CONFIG
    _CONFIG = session.config
    if not _is_worker(session.config):
        session.config.stash[_LITTER] = _untracked()


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if _is_worker(config):
        return
    # A test that writes into the checkout (a path taken by position from argv, a relative default) leaves a
    # file the next commit picks up: the run fails on any file it added that git neither tracks nor ignores.
    before, after = config.stash.get(_LITTER, None), _untracked()
    litter = sorted(after - before) if before is not None and after is not None else []
    config.stash[_LITTERED] = litter
    if litter:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if _OWN_CACHE in config.stash:
        shutil.rmtree(config.stash[_OWN_CACHE], ignore_errors=True)
    state = config.stash[_STATE]
    state["written"], state["not_written"] = [], {}
    by_node_id = [arg for arg in config.args if "::" in arg]
    for name, tests in state["tests"].items():
        st = state["status"][name]
        bad = sorted(n for n, t in tests.items() if t["outcome"] != "passed")
        if by_node_id:  # a node id collects part of a proof: its count of tests says nothing of the rest
            state["not_written"][name] = f"tests chosen by node id ({by_node_id[0]}): run whole files"
        elif bad:
            state["not_written"][name] = f"{len(bad)} not passed: {', '.join(bad[:3])}"
        elif len(tests) != state["total"].get(name):
            state["not_written"][name] = f"only {len(tests)} of its {state['total'].get(name)} tests ran"
        elif not st.holds:
            state["written"].append(proofs.write_record(st, tests, state["output"][name]))


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if _is_worker(config):
        return
    state = config.stash[_STATE]
    tr = terminalreporter
    litter = config.stash.get(_LITTERED, [])
    if litter:
        tr.section("files the tests wrote into the checkout: the run fails", red=True)
        tr.write_line(f"{len(litter)} new, neither tracked nor ignored by git (write under tmp_path): {litter[:5]}")
    tr.section("slow proofs (tests/proofs.py)")
    for name, st in sorted(state["status"].items()):
        if st.holds:
            rec = st.record or {}
            tr.write_line(
                f"{name}: record holds (inputs unchanged since {rec.get('proven_at')}, Python "
                f"{rec.get('ran_on', {}).get('python')}, {rec.get('tests_s')} s of tests): not re-run"
            )
        elif name in state["tests"]:
            tr.write_line(f"{name}: ran ({st.reason})")
        else:
            tr.write_line(f"{name}: DUE, not run in this selection ({st.reason}); `make test` or `make proofs` runs it")
    for path in state.get("written", []):
        tr.write_line(f"record written: {proofs._shown(path)} (commit it)")
    for name, why in state.get("not_written", {}).items():
        tr.write_line(f"record NOT written for {name}: {why}")
