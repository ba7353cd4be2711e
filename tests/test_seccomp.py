"""The harness's seccomp filter (`autograder.runtime.sandbox.jail.keyring_filter`): keyrings are not namespaced, so
without it student code could keep hidden inputs in a key of its sandbox uid (the persistent keyring
outlives every process) for a later grading run with the same uid to read back.

Each check that installs a filter runs in a forked child (a filter cannot be removed) and reports
through a pipe: the keyring calls fail with EPERM, ordinary system calls and the answer key's grading
still work, and where the filter cannot be installed the grading goes on and says so.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import selectors
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

from autograder.core.manifest import BY_ID
from autograder.runtime import grader
from autograder.runtime.sandbox import jail
from hetero.impl import load_module_from_path

_helpers = load_module_from_path(Path(__file__).with_name("test_grader.py"), "_a2_grader_test_helpers")
SCORE_TOL, root_for, submission_with = _helpers.SCORE_TOL, _helpers.root_for, _helpers.submission_with
exercise_score, autograder_failures = _helpers.exercise_score, _helpers.autograder_failures

MACHINE = os.uname().machine
# the kernel's numbers, written out here independently of jail.py: add_key, request_key, keyctl, getpid, prctl
NUMBERS = {"x86_64": (248, 249, 250, 39, 157), "aarch64": (217, 218, 219, 172, 167)}
ADD_KEY, REQUEST_KEY, KEYCTL, GETPID, PRCTL = NUMBERS.get(MACHINE, (-1,) * 5)
KEY_SPEC_PROCESS_KEYRING, KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING = -2, -3, -4
KEYCTL_GET_KEYRING_ID, KEYCTL_GET_PERSISTENT = 0, 22
EX = BY_ID["ex01"]

known_arch = pytest.mark.skipif(MACHINE not in NUMBERS, reason=f"no seccomp filter for {MACHINE}")

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def syscall(nr: int, *args) -> list[int]:
    """[result, errno] of a raw system call (errno 0 when it succeeded)."""
    ctypes.set_errno(0)
    result = _libc.syscall(ctypes.c_long(nr), *args)
    return [result, ctypes.get_errno() if result < 0 else 0]


def in_child(work, timeout_s: float = 120.0) -> dict:
    """Run `work()` in a forked child; its JSON answer, or the child's traceback as a test failure."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            answer = {"answer": work()}
        except BaseException:
            answer = {"error": traceback.format_exc()}
        with os.fdopen(write_fd, "wb") as handle:
            handle.write(json.dumps(answer).encode())
        os._exit(0)
    os.close(write_fd)
    data = b""
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(read_fd, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(timeout=deadline - time.monotonic()):
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    break
                data += chunk
        else:
            os.kill(pid, 9)
    os.close(read_fd)
    os.waitpid(pid, 0)
    assert data, f"the forked child answered nothing within {timeout_s:g} s"
    answer = json.loads(data)
    assert "error" not in answer, f"the forked child failed:\n{answer.get('error')}"
    return answer["answer"]


def filtered(work):
    """`work` run after PR_SET_NO_NEW_PRIVS and the keyring filter, as the harness installs them."""

    def run():
        jail.prctl(jail.PR_SET_NO_NEW_PRIVS, 1)
        jail.install_filter(jail.keyring_filter())
        return work()

    return run


# ---------------------------------------------------------------------------------------------
# The program


def run_bpf(program: list[tuple[int, int, int, int]], nr: int, arch: int) -> int:
    """What the classic-BPF `program` returns for a system call `nr` of `arch` (only the opcodes it uses)."""
    pc, acc = 0, 0
    for _ in range(len(program)):  # no backward jumps: one pass at most
        code, jt, jf, k = program[pc]
        if code == 0x20:  # BPF_LD|BPF_W|BPF_ABS
            assert k in (0, 4), f"load at {pc} of offset {k}: only nr (0) and arch (4) expected"
            acc = nr if k == 0 else arch
        elif code in (0x15, 0x35):  # BPF_JEQ, BPF_JGE (BPF_K)
            taken = acc == k if code == 0x15 else acc >= k
            pc += jt if taken else jf
        elif code == 0x06:  # BPF_RET|BPF_K
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x} at {pc}")
        pc += 1
        assert pc < len(program), f"the program runs past its end after {pc - 1}"
    raise AssertionError("the program never returned")


def test_filter_program_is_the_listing_with_every_jump_on_a_return():
    deny, allow = (0x06, 0, 0, 0x00050000 | errno.EPERM), (0x06, 0, 0, 0x7FFF0000)
    expected = {
        "x86_64": [
            (0x20, 0, 0, 4),  # A = seccomp_data.arch
            (0x15, 0, 6, 0xC000003E),  # not AUDIT_ARCH_X86_64: deny (8)
            (0x20, 0, 0, 0),  # A = seccomp_data.nr
            (0x35, 4, 0, 0x40000000),  # x32 numbers: deny
            (0x15, 3, 0, 248),  # add_key
            (0x15, 2, 0, 249),  # request_key
            (0x15, 1, 0, 250),  # keyctl
            allow,
            deny,
        ],
        "aarch64": [
            (0x20, 0, 0, 4),
            (0x15, 0, 5, 0xC00000B7),  # not AUDIT_ARCH_AARCH64: deny (7)
            (0x20, 0, 0, 0),
            (0x15, 3, 0, 217),
            (0x15, 2, 0, 218),
            (0x15, 1, 0, 219),
            allow,
            deny,
        ],
    }
    for machine, listing in expected.items():
        program = jail.keyring_filter(machine)
        assert program == listing, f"{machine}: expected the program\n{listing}\ngot\n{program}"
    arches = {"x86_64": (0xC000003E, (248, 249, 250)), "aarch64": (0xC00000B7, (217, 218, 219))}
    for machine, (arch, keyring) in arches.items():
        program = jail.keyring_filter(machine)
        for nr in (*keyring, 0, 1, 39, 60, 157, 172, 247, 251, 435, 0x40000000, 0x40000000 | 248, 0xFFFFFFFF):
            want = deny[3] if nr in keyring or (machine == "x86_64" and nr >= 0x40000000) else allow[3]
            assert run_bpf(program, nr, arch) == want, f"{machine}: nr {nr:#x}: expected {want:#x}"
        foreign = 0x40000003 if machine == "x86_64" else 0xC000003E  # i386, or x86_64 seen from aarch64
        assert run_bpf(program, 39, foreign) == deny[3], f"{machine}: a foreign arch {foreign:#x} must be denied"
    for machine in ("riscv64", "armv7l", "i686", "ppc64le"):
        assert jail.keyring_filter(machine) is None, (
            f"{machine}: expected no filter, got {jail.keyring_filter(machine)}"
        )


def test_unknown_architecture_is_said_and_nothing_is_installed():
    def work():
        uname = os.uname()
        jail.os.uname = lambda: os.uname_result((*uname[:4], "riscv64"))
        note = jail.install_keyring_filter()
        return {"note": note, "seccomp": Path("/proc/self/status").read_text().split("Seccomp:")[1].split()[0]}

    answer = in_child(work)
    assert answer["note"] == "keyrings: not isolated (no seccomp filter for the riscv64 architecture)", answer
    assert answer["seccomp"] == "0", f"expected no seccomp mode, /proc/self/status says {answer['seccomp']}"


# ---------------------------------------------------------------------------------------------
# Under the filter


@known_arch
def test_keyring_calls_fail_with_eperm_and_ordinary_calls_work():
    def work():
        got = {}
        got["persistent"] = syscall(
            KEYCTL, ctypes.c_long(KEYCTL_GET_PERSISTENT), ctypes.c_long(-1), ctypes.c_long(KEY_SPEC_PROCESS_KEYRING)
        )
        got["add_key session"] = syscall(
            ADD_KEY, b"user", b"a2-seccomp-test", b"x", ctypes.c_size_t(1), ctypes.c_long(KEY_SPEC_SESSION_KEYRING)
        )
        got["add_key user"] = syscall(
            ADD_KEY, b"user", b"a2-seccomp-test", b"x", ctypes.c_size_t(1), ctypes.c_long(KEY_SPEC_USER_KEYRING)
        )
        got["request_key"] = syscall(REQUEST_KEY, b"user", b"a2-seccomp-test", None, ctypes.c_long(0))
        got["keyctl get id"] = syscall(
            KEYCTL, ctypes.c_long(KEYCTL_GET_KEYRING_ID), ctypes.c_long(KEY_SPEC_USER_KEYRING), ctypes.c_long(0)
        )
        if MACHINE == "x86_64":
            got["x32 getpid"] = syscall(0x40000000 | GETPID)
        got["getpid"] = syscall(GETPID) + [os.getpid()]
        got["read"] = Path(__file__).read_text().startswith('"""')
        child = os.fork()
        if child == 0:
            os._exit(7)
        got["fork"] = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
        script = (
            f"import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
            f"r = libc.syscall({KEYCTL}, {KEYCTL_GET_KEYRING_ID}, {KEY_SPEC_USER_KEYRING}, 0); "
            f"print(r, ctypes.get_errno())"
        )
        proc = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
        got["exec keyctl"] = [proc.returncode, proc.stdout.strip(), proc.stderr[-300:]]
        got["seccomp"] = Path("/proc/self/status").read_text().split("Seccomp:")[1].split()[0]
        return got

    control = in_child(
        lambda: syscall(
            KEYCTL, ctypes.c_long(KEYCTL_GET_KEYRING_ID), ctypes.c_long(KEY_SPEC_USER_KEYRING), ctypes.c_long(0)
        )
    )
    assert control[1] != errno.EPERM, f"without the filter keyctl must not fail with EPERM already: {control}"
    got = in_child(filtered(work))
    for call in ("persistent", "add_key session", "add_key user", "request_key", "keyctl get id", "x32 getpid"):
        if call in got:
            assert got[call] == [-1, errno.EPERM], f"{call}: expected [-1, EPERM={errno.EPERM}], got {got[call]}"
    pid, err, real = got["getpid"]
    assert err == 0 and pid == real, f"getpid: expected {real} without an error, got {pid} (errno {err})"
    assert got["read"] is True, "reading a file failed under the filter"
    assert got["fork"] == 7, f"fork: expected the child's exit code 7, got {got['fork']}"
    assert got["exec keyctl"][:2] == [0, f"-1 {errno.EPERM}"], (
        f"a program exec'd under the filter: expected keyctl to print '-1 {errno.EPERM}', got {got['exec keyctl']}"
    )
    assert got["seccomp"] == "2", f"expected seccomp mode 2 (filter), /proc/self/status says {got['seccomp']}"


def _grade_answer_key(tmp_path: Path):
    def work():
        data = grader.grade_submission(
            submission_with(tmp_path, [EX.id]),
            tmp_path / "results.json",
            exercises=[EX.id],
            root=root_for(tmp_path, [EX.id]),
        )
        environment = [t["output"] for t in data["tests"] if t["name"] == "grading environment (staff only)"]
        return {
            "score": exercise_score(data, EX.id),
            "failures": autograder_failures(data),
            "environment": environment,
            "output": data["output"],
        }

    return work


@known_arch
def test_answer_key_scores_full_marks_under_the_filter(tmp_path):
    """The whole grader runs under the filter (the harness installs its own on top): full marks."""
    got = in_child(filtered(_grade_answer_key(tmp_path)), timeout_s=180)
    score, max_score = got["score"]
    assert not got["failures"], f"the grader failed under the filter: {got['output'][-2000:]}"
    assert abs(score - EX.points) < SCORE_TOL and abs(max_score - EX.points) < SCORE_TOL, (
        f"{EX.id}: expected {EX.points} / {EX.points} under the filter, got {score} / {max_score}: {got['output'][-2000:]}"
    )
    assert any("keyrings: denied (seccomp filter" in e for e in got["environment"]), (
        f"expected the staff-only entry to say the keyrings were filtered, got {got['environment']}"
    )


@known_arch
def test_refused_filter_is_said_and_grading_goes_on(tmp_path):
    """A filter that makes prctl(PR_SET_SECCOMP) fail with EINVAL, as on a kernel without seccomp: the
    harness starts anyway, the answer key keeps its marks, and the note says the keyrings are not isolated."""
    arch = jail.SECCOMP_ARCHES[MACHINE][0]
    no_seccomp = [
        (0x20, 0, 0, 4),
        (0x15, 0, 5, arch),
        (0x20, 0, 0, 0),
        (0x15, 0, 3, PRCTL),
        (0x20, 0, 0, 16),  # the low half of args[0] (little-endian)
        (0x15, 0, 1, jail.PR_SET_SECCOMP),
        (0x06, 0, 0, 0x00050000 | errno.EINVAL),
        (0x06, 0, 0, 0x7FFF0000),
    ]

    def run():
        jail.prctl(jail.PR_SET_NO_NEW_PRIVS, 1)
        jail.install_filter(no_seccomp)
        return _grade_answer_key(tmp_path)()

    got = in_child(run, timeout_s=180)
    score, max_score = got["score"]
    assert not got["failures"], f"the grader failed without seccomp: {got['output'][-2000:]}"
    assert abs(score - EX.points) < SCORE_TOL, (
        f"{EX.id}: expected {EX.points} / {EX.points} without seccomp, got {score} / {max_score}: {got['output'][-2000:]}"
    )
    note = "keyrings: not isolated (the seccomp filter was refused: [Errno 22] prctl PR_SET_SECCOMP: Invalid argument)"
    assert any(note in e for e in got["environment"]), f"expected the note {note!r}, got {got['environment']}"
    assert f"Sandbox: {note}." in got["output"], f"expected the exercise's note to say it: {got['output'][-2000:]}"
