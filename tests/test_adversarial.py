"""Grade every submission in autograder/fixtures/adversarial/: each attack scores exactly what it deserves.

Each attack folder holds an attacking `ex02_kv_capacity.py` (most are written against any exercise:
a module `__getattr__` hands out the attacking function for every name the grader asks for). At test
time the submission also gets an untouched copy of the ex01 answer key, which must keep its full
marks; `correct_but_slow` is built here from the ex02 answer key plus `slow_suffix.py`. After each
grading: results.json validates, the grader reported no failure of its own, and no process of a
sandbox uid is left.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from autograder.core.manifest import BY_ID, ROOT
from autograder.runtime import grader
from autograder.runtime import results as res
from autograder.runtime.sandbox import isolation, ladder
from hetero.impl import load_module_from_path as load_file_module

# the helpers live in test_grader.py; pytest's importlib mode does not put tests/ on sys.path
_helpers = load_file_module(Path(__file__).with_name("test_grader.py"), "_a2_grader_test_helpers")
rungs = load_file_module(Path(__file__).with_name("rungs.py"), "_a2_rungs")
matrix = load_file_module(Path(__file__).with_name("matrix.py"), "_a2_matrix")
SCORE_TOL, SOLUTIONS, root_for = _helpers.SCORE_TOL, _helpers.SOLUTIONS, _helpers.root_for
exercise_score, autograder_failures, sandbox_survivors, tagged_processes = (
    _helpers.exercise_score,
    _helpers.autograder_failures,
    _helpers.sandbox_survivors,
    _helpers.tagged_processes,
)

ADVERSARIAL = ROOT / "autograder" / "fixtures" / "adversarial"
ATTACKED, UNTOUCHED = "ex02", "ex01"
SLOW = {"infinite_loop", "correct_but_slow"}  # they run into the (scaled) time limit
TIME_SCALE = {"infinite_loop": 0.25, "correct_but_slow": 0.25}  # 20 s -> 5 s: the limit still decides


def build(attack: str, base: Path) -> Path:
    folder = base / attack
    shutil.copytree(ADVERSARIAL / attack, folder)
    shutil.copyfile(SOLUTIONS / BY_ID[UNTOUCHED].filename, folder / BY_ID[UNTOUCHED].filename)
    if attack == "correct_but_slow":
        key = (SOLUTIONS / BY_ID[ATTACKED].filename).read_text()
        suffix = (folder / "slow_suffix.py").read_text()
        (folder / BY_ID[ATTACKED].filename).write_text(key + "\n\n" + suffix)
    return folder


def check(data: dict, attack: str) -> None:
    res.validate(data)
    assert not autograder_failures(data), f"{attack}: the grader failed: {data['output']}"
    attacked, attacked_max = exercise_score(data, ATTACKED)
    untouched, untouched_max = exercise_score(data, UNTOUCHED)
    assert attacked == 0, f"{attack}: the attacked exercise scored {attacked} / {attacked_max}, expected 0"
    assert abs(attacked_max - BY_ID[ATTACKED].points) < SCORE_TOL
    assert abs(untouched - BY_ID[UNTOUCHED].points) < SCORE_TOL, (
        f"{attack}: the untouched correct exercise scored {untouched} / {untouched_max}: {data['output']}"
    )
    assert not sandbox_survivors(), f"{attack}: sandbox processes survived the grading"


# deserve more than 0: graded in tests/test_sandbox_attacks.py; colluding_pairs and nested_public_state need the
# batch's two phases: tests/test_batch_seal.py; read_classmates needs a batch: tests/test_sandbox_attacks.py;
# lecture_links attacks the lecture command, not the grader: tests/test_tool_routes.py
OWN_TEST = {
    "one_function_loops",
    "loop_skips_hidden_start",
    "page_cache_relay",
    "colluding_pairs",
    "nested_public_state",
    "read_classmates",
    "lecture_links",
}
ATTACKS = sorted(p.name for p in ADVERSARIAL.iterdir() if p.is_dir() and p.name not in OWN_TEST)


# `make test` runs every attack on both rungs, `make test-fast` each attack once (tests/matrix.py)
@pytest.mark.parametrize(("attack", "rung"), matrix.each_row_once(ATTACKS, rungs.in_process_rungs(), SLOW))
def test_attack_scores_what_it_deserves(attack, rung, tmp_path, monkeypatch):
    """Every attack on bubblewrap (this machine, an instructor's) and on Landlock (Gradescope's container),
    emulated here (tests/rungs.py); test_rung_attacks_on_every_rung adds the two other rungs."""
    rungs.use(rung, monkeypatch)
    # opt in to the hidden-detail entry: it carries everything the attack printed, which the checks read
    monkeypatch.setitem(
        grader.BY_ID, ATTACKED, dataclasses.replace(BY_ID[ATTACKED], hidden_detail_visibility="after_due_date")
    )
    root = root_for(tmp_path, [UNTOUCHED, ATTACKED])
    start = time.monotonic()
    data = grader.grade_submission(
        build(attack, tmp_path),
        tmp_path / "results.json",
        exercises=[UNTOUCHED, ATTACKED],
        root=root,
        time_scale=TIME_SCALE.get(attack, 1.0),
    )
    elapsed = time.monotonic() - start
    check(data, attack)
    assert json.loads((tmp_path / "results.json").read_text()) == data
    limit = BY_ID[ATTACKED].timeout_s * TIME_SCALE.get(attack, 1.0) + BY_ID[UNTOUCHED].timeout_s
    assert elapsed < limit, f"{attack}: grading took {elapsed:.1f} s, more than the time limits ({limit:g} s)"
    attack_checks(data, attack, ladder.current())


# Attacks on what differs between rungs (files, network, processes, memory, kernel state, how a child ends).
RUNG_ATTACKS = (
    "background_process",
    "dask_scheduler",
    "deep_tree",
    "exit_at_import",
    "fill_disk",
    "fork_bomb",
    "keyring",
    "leave_files",
    "memory_bomb",
    "network_probe",
    "os_exit_in_function",
    "other_checkout_key",
    "read_grader_outputs",
    "read_hidden",
    "relay",
    "reschedule_others",
    "write_outside",
)


@pytest.mark.parametrize("rung", [r for r in rungs.cli_rungs() if r not in rungs.IN_PROCESS])
# A grader CLI in an emulated view per case: `make test` runs them all, `make test-fast` one per rung.
@pytest.mark.parametrize(
    "attack", [a if a == "read_hidden" else pytest.param(a, marks=pytest.mark.slow) for a in RUNG_ATTACKS]
)
def test_rung_attacks_on_every_rung(attack, rung, tmp_path):
    """The attacks on what differs between rungs, on the two rungs a test process cannot take itself:
    seccomp-uid (a container with neither namespaces nor Landlock: the checkout private but for shared/
    and the venv, as Gradescope's run_autograder leaves source/) and same-uid (a grader that is not root),
    each through the grader's command line in its emulated view (tests/rungs.py)."""
    tag = f"a2adv-{os.getpid()}-{attack}-{rung}"
    data = rungs.grade_cli(
        build(attack, tmp_path), tmp_path / "cli", [UNTOUCHED, ATTACKED], rung, extra_env={"A2_TEST_TAG": tag}
    )
    data.pop("_stderr")
    assert data.pop("_returncode") == 0, f"{attack} on {rung}: the grader CLI did not end with status 0"
    res.validate(data)
    assert not autograder_failures(data), f"{attack} on {rung}: the grader failed: {data['output'][-3000:]}"
    assert exercise_score(data, ATTACKED)[0] == 0, f"{attack} on {rung}: {data['output'][-2000:]}"
    assert abs(exercise_score(data, UNTOUCHED)[0] - BY_ID[UNTOUCHED].points) < SCORE_TOL, data["output"][-2000:]
    environment = [t["output"] for t in data["tests"] if t["name"] == "grading environment (staff only)"]
    assert all(f"rung: {rung}" in e for e in environment), f"the staff entry must name the rung {rung}: {environment}"
    deadline = time.monotonic() + 10
    while tagged_processes(tag) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not tagged_processes(tag), (
        f"{attack} on {rung}: processes of the grading survived it: {tagged_processes(tag)}"
    )
    attack_checks(data, attack, None)


def attack_checks(data: dict, attack: str, rung) -> None:  # type: ignore[no-untyped-def]
    """What each attack must not have achieved, read from every entry of results.json (`rung`: the
    in-process rung, whose filter says what a keyring call must have got)."""
    detail = "\n".join(t["output"] for t in data["tests"] if t["name"].startswith(f"{ATTACKED} "))  # every entry
    if attack == "read_hidden":
        assert "READ-OK" not in detail and "READ-OK" not in data["output"], (
            f"the student's code could read protected files: {detail[-1500:]}"
        )
        if isolation.is_root():
            assert "READ-DENIED" in data["output"]
    if attack == "other_checkout_key":
        everything = json.dumps(data)
        assert "KEY-NOT-FOUND" in everything, f"the attack should have searched the file system: {detail[-1500:]}"
        for marker in ("KEY-FOUND", "HIDDEN-LEAK"):
            assert marker not in everything, f"the child saw another checkout of the repository: {detail[-1500:]}"
    if attack == "keyring":
        assert "KEYRING-OK" not in detail and "KEYRING-OK" not in data["output"], (
            f"the student's code could store or read a key in a kernel keyring: {detail[-1500:]}"
        )
        if rung is None or rung.seccomp:
            for call in ("session", "user", "user-session", "get-persistent(-3)", "get-persistent(-2)", "request_key"):
                assert f"KEYRING-DENIED {call} EPERM" in data["output"], (
                    f"with a seccomp filter here, {call} must fail with EPERM in the sandbox: {data['output'][-1500:]}"
                )
            environment = [t["output"] for t in data["tests"] if t["name"] == "grading environment (staff only)"]
            assert any("system calls: seccomp allow-list" in e for e in environment), (
                f"the staff-only entry must say the system calls were filtered: {environment}"
            )
    if attack == "write_outside":
        # the child's own tmpfs under bubblewrap: a file planted there is gone with the child, not an escape
        private = ("/tmp/", "/var/tmp/", "/dev/shm/") if rung is not None and rung.name == "bwrap" else ()
        lines = [line for line in data["output"].splitlines() if line.startswith(("PLANTED ", "PLANT-DENIED "))]
        escaped = [line for line in lines if line.startswith("PLANTED ") and not line.split()[1].startswith(private)]
        assert lines and not escaped, f"the child wrote outside its work folder: {escaped or data['output'][-1500:]}"
        site = Path(sysconfig.get_paths()["purelib"]) / "a2-planted.pth"
        for path in (
            ROOT / "a2-planted",
            Path("/tmp/planted"),
            Path("/var/tmp/a2-planted"),
            Path("/root/a2-planted"),
            site,
        ):
            assert not (path.is_file() and "a2-planted" in path.read_text(errors="replace")), f"{path} was planted"
        assert "a2-planted" not in (ROOT / "autograder" / "expected" / f"{ATTACKED}.json").read_text(), (
            "the stored expected values were changed"
        )
    if attack == "fill_disk":
        check_fill_disk(data)
    if attack == "reschedule_others":
        tried = [line for line in data["output"].splitlines() if line.startswith(("SCHED-SET", "SCHED-DENIED"))]
        worked = [line for line in data["output"].splitlines() if line.startswith(("SCHED-SET", "SCHED-CHANGED"))]
        assert tried and not worked, (
            f"the child changed how other processes are scheduled (its parent, its uid's: the grader's on "
            f"same-uid): {worked or data['output'][-1500:]}"
        )
        assert "SCHED-SELF-OK" in data["output"], (
            f"the same calls on the child itself must work (nice, affinity, SCHED_BATCH): {data['output'][-1500:]}"
        )
    if attack == "dask_scheduler":
        everything = json.dumps(data)
        assert "DASK-REACHED" not in everything and "DASK-RAN-ON-SCHEDULER" not in everything, (
            f"the child reached a scheduler's port: {data['output'][-1500:]}"
        )
        assert "DASK-DENIED tcp://127.0.0.1:8786 tcp" in data["output"], data["output"][-1500:]
    first = [t for t in data["tests"] if t["name"].startswith(f"{ATTACKED} ")][0]["output"]
    if attack == "syntax_error":
        assert "SyntaxError" in first and "line" in first, f"the syntax error must be shown: {first}"
    if attack == "missing_import":
        assert "numpyy_not_installed" in first, f"the failed import must be named: {first}"
    if attack in ("syntax_error", "missing_import"):
        assert "Stopped:" not in data["output"] and "exited with status" not in data["output"], (
            f"a file that does not import is said to be so, not to have stopped: {data['output'][-1500:]}"
        )
    if attack == "infinite_loop":
        assert "time limit" in data["output"] or "CPU-time limit" in data["output"], data["output"]
    if attack == "stdout_flood":
        assert "output limit" in data["output"], data["output"]


def check_fill_disk(data: dict) -> None:
    """fill_disk wrote at most its own tmpfs's size into any folder on bubblewrap, and nothing at all on the
    other rungs, whose folders lie on the machine's disk (the rung is read from the staff entry); no a2-fill-*
    file is left in the machine's shared temporary folders."""
    environment = " ".join(t["output"] for t in data["tests"] if t["name"] == "grading environment (staff only)")
    on_bwrap = "rung: bwrap" in environment
    filled = [line.split() for line in data["output"].splitlines() if line.startswith("FILLED ")]
    assert len(filled) >= 4, f"fill_disk should have tried its folders and the shared ones: {data['output'][-1500:]}"
    for _, folder, written, *why in filled:
        limit = isolation.TMPFS_BYTES if on_bwrap else 0
        assert int(written) <= limit, (
            f"fill_disk wrote {int(written) / 2**20:.0f} MiB into {folder}, where at most {limit / 2**20:.0f} MiB "
            f"may go ({'its own tmpfs' if on_bwrap else 'a grading child on the host writes nothing'}): {' '.join(why)}"
        )
    for folder in ("/tmp", "/var/tmp", "/dev/shm"):
        left = sorted(p.name for p in Path(folder).glob("a2-fill-*"))
        assert not left, f"fill_disk left {len(left)} files in {folder}: {left[:5]}"


@pytest.mark.slow
def test_fake_results_cannot_replace_the_cli_output(tmp_path):
    """The CLI run lets the attack read --out from the grader's command line; the grader's file wins."""
    root_for(tmp_path, [UNTOUCHED, ATTACKED])  # the CLI grades against the package's own expected values
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # world-writable, like /tmp: the attacker may create files here
    out = shared / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(build("fake_results", tmp_path)),
            "--out",
            str(out),
            "--exercises",
            UNTOUCHED,
            ATTACKED,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    check(data, "fake_results (CLI)")
    assert data["score"] < 100
