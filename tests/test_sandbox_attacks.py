"""The sandbox against a hostile student: processes, files, network, output and result channels, time.

Each test runs one attack from autograder/fixtures/adversarial/ (or a small probe written here) and
checks the score it deserves (named in the fixture's docstring), that results.json validates when the
whole grader runs, and that no process this test started survives. Survivor checks look only at this
test's own processes (its sandbox uids, or an A2_TEST_TAG it put in the environment), because other
graders may be running on the same machine.

Most checks need bubblewrap's allow-list root and namespaces (`isolation.isolation_mode()` is "bwrap");
where it is missing the tests check instead that the grader says so.
"""

from __future__ import annotations

import json
import os
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
from autograder.runtime.sandbox import isolation, runner, users
from autograder.runtime.sandbox.limits import Limits
from hetero.checks import judge
from hetero.impl import load_module_from_path

_helpers = load_module_from_path(Path(__file__).with_name("test_grader.py"), "_a2_grader_test_helpers")
SCORE_TOL, SOLUTIONS = _helpers.SCORE_TOL, _helpers.SOLUTIONS
exercise_score, autograder_failures, sandbox_survivors = (
    _helpers.exercise_score,
    _helpers.autograder_failures,
    _helpers.sandbox_survivors,
)

ADVERSARIAL = ROOT / "autograder" / "fixtures" / "adversarial"
EX01, EX02 = BY_ID["ex01"], BY_ID["ex02"]
NAMESPACES = isolation.isolation_mode()["mode"] == "bwrap"
needs_namespaces = pytest.mark.skipif(
    not NAMESPACES, reason="bubblewrap does not work here: " + "; ".join(isolation.isolation_mode()["failures"])
)
needs_root = pytest.mark.skipif(not isolation.is_root(), reason="sandbox uids exist only when the grader is root")


def specs_for(ex_id: str) -> tuple[list, list[dict], int]:
    cases = public_cases(ex_id) + hidden_cases(ex_id)
    return cases, [grader.call_spec(c) for c in cases], len(public_cases(ex_id))


def run_fixture(attack: str, ex=EX02, limits: Limits | None = None, path: Path | None = None):
    _, specs, hidden_from = specs_for(ex.id)
    path = path or ADVERSARIAL / attack / ex.filename
    return runner.run_exercise(path, ex.module, specs, hidden_from, limits or grader.limits_for(ex))


def tagged_processes(tag: str) -> list[int]:
    """Live processes whose environment carries `tag` (the ones a grader run with A2_TEST_TAG started)."""
    found = []
    needle = f"A2_TEST_TAG={tag}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            if (
                needle in Path(f"/proc/{entry}/environ").read_bytes()
                and Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
            ):
                found.append(int(entry))
        except (OSError, IndexError):
            continue
    return found


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


@needs_namespaces
@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
def test_relay_does_not_outlive_its_exercise(wrapper, tmp_path):
    """The relay (as ex01) re-forks every 3 ms and tries to overwrite ex02, graded next: ex02 keeps full
    marks, ex01 scores 0, and no process of the run is alive when the grader returns."""
    if wrapper == "pid_namespace_init" and shutil.which("unshare") is None:
        pytest.skip("unshare(1) is not installed")
    submission = tmp_path / "submission"
    submission.mkdir()
    shutil.copyfile(ADVERSARIAL / "relay" / EX02.filename, submission / EX01.filename)
    shutil.copyfile(SOLUTIONS / EX02.filename, submission / EX02.filename)
    tag = secrets.token_hex(8)
    out = tmp_path / "results.json"
    cmd = WRAPPERS[wrapper] + [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        str(submission),
        "--out",
        str(out),
        "--exercises",
        "ex01",
        "ex02",
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=240, cwd=ROOT, env={**os.environ, "A2_TEST_TAG": tag}
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    left = tagged_processes(tag)
    time.sleep(0.3)  # a relay caught between two generations would show up now
    left += tagged_processes(tag)
    for pid in set(left):  # do not leave them running if the check fails
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert not left, f"{wrapper}: {len(set(left))} process(es) of the relay outlived the grading"
    data = json.loads(out.read_text())
    res.validate(data)
    assert not autograder_failures(data), data["output"]
    assert "RELAY-STARTED" in json.dumps(data), "the relay should have started (its output is missing)"
    assert exercise_score(data, "ex01")[0] == 0, "the relay's exercise must score 0"
    assert abs(exercise_score(data, "ex02")[0] - EX02.points) < SCORE_TOL, (
        f"{wrapper}: the correct ex02 graded after the relay lost points: {data['output']}"
    )


@needs_namespaces
def test_killing_the_grader_ends_its_sandboxed_children(tmp_path):
    """What grade-all's per-submission timeout does: SIGKILL to the grader's process group while a child
    runs a relay and sleeps in a case. The launcher dies with the grader (PR_SET_PDEATHSIG), the
    namespace's init with the launcher, and every process in the namespace with its init."""
    submission = tmp_path / "submission"
    submission.mkdir()
    relay = (ADVERSARIAL / "relay" / EX02.filename).read_text()
    (submission / EX02.filename).write_text(
        relay.replace(
            "return lambda *args, **kwargs: -12345.678", "return lambda *args, **kwargs: __import__('time').sleep(600)"
        )
    )
    tag = secrets.token_hex(8)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(submission),
            "--out",
            str(tmp_path / "results.json"),
            "--exercises",
            "ex02",
        ],
        cwd=ROOT,
        env={**os.environ, "A2_TEST_TAG": tag},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    # grader, bwrap, init, harness (the relay's generations live 3 ms each: a scan rarely sees one)
    while time.monotonic() < deadline and len(tagged_processes(tag)) < 4:
        time.sleep(0.1)
    time.sleep(1.0)  # the first case sleeps
    running = tagged_processes(tag)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.5)
    left = tagged_processes(tag)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for folder in Path(tempfile.gettempdir()).glob(f"a2grade-{proc.pid}-*"):  # the killed grader left its own
        users.remove_tree(folder)
    assert len(running) >= 4, f"the attack should be running when the grader is killed: {running}"
    assert not left, f"{len(left)} sandboxed process(es) outlived the killed grader"


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


@needs_namespaces
def test_files_left_behind_are_gone_and_not_seen_by_the_next_exercise(tmp_path):
    """leave_files writes into /tmp, /var/tmp, /dev/shm (and tries /run/lock, which its root does not
    have) and makes a SysV segment: none of it exists on the machine afterwards, and the next child sees
    empty temporary folders."""
    report = run_fixture("leave_files")
    assert report.imported is True, report.output_all
    assert all(f"LEFT {d}\n" in report.output_all for d in ("/tmp", "/var/tmp", "/dev/shm")), (
        f"inside its sandbox the attack should have written its files: {report.output_all[:500]}"
    )
    for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
        name = "a2-leftover-" + folder.strip("/").replace("/", "-")
        assert not Path(folder, name).exists(), f"{folder}/{name} outlived the exercise"
    shm = Path("/proc/sysvipc/shm")
    if shm.exists():
        assert str(0x0A2A2A2A) not in shm.read_text().split(), "the student's SysV segment (key 0x0A2A2A2A) survived"
    probe = tmp_path / EX01.filename
    probe.write_text(
        "import os\nfor d in ('/tmp', '/var/tmp', '/dev/shm'):\n"
        "    print('SEES', d, sorted(n for n in os.listdir(d) if n.startswith('a2-')))\n"
    )
    seen = runner.run_exercise(probe, EX01.module, [], 0, Limits(20, 20, 1024)).output_all
    assert "a2-leftover" not in seen and seen.count("SEES") == 3, seen
    assert not sandbox_survivors()


# ---------------------------------------------------------------------------------------------
# 2. Network isolation that says when it is missing


@needs_namespaces
def test_network_probe_reaches_nothing():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    with socket.create_connection(listener.getsockname(), timeout=2):  # control: the listener is reachable
        listener.accept()[0].close()
    listener.setblocking(False)
    os.environ["A2_TEST_PORT"] = str(listener.getsockname()[1])
    try:
        report = run_fixture("network_probe")
    finally:
        del os.environ["A2_TEST_PORT"]
    with pytest.raises(BlockingIOError):
        listener.accept()  # nothing connected to the machine's loopback
    listener.close()
    assert "NET-REACHED []" in report.output_all, report.output_all
    assert "network: none (own network namespace)" in report.isolation


def test_missing_network_isolation_is_said_in_the_results(tmp_path, monkeypatch, caplog):
    """With no namespace (forced by A2_SANDBOX_NAMESPACES=0, grader not root so no uid change), the
    exercise's note in results.json says "network: not isolated" and why, and so does the log."""
    monkeypatch.setenv("A2_SANDBOX_NAMESPACES", "0")
    monkeypatch.setattr(isolation, "_MODE", {})
    monkeypatch.setattr(isolation, "is_root", lambda: False)
    submission = _helpers.submission_with(tmp_path, ["ex01"])
    data = grader.grade_submission(submission, tmp_path / "results.json", exercises=["ex01"])
    res.validate(data)
    assert abs(exercise_score(data, "ex01")[0] - EX01.points) < SCORE_TOL, data["output"]
    text = json.dumps(data)
    assert "network: not isolated (namespaces disabled by A2_SANDBOX_NAMESPACES=0)" in text, data["output"]
    assert "network not isolated" in caplog.text, "the grader's log must say it too"


# ---------------------------------------------------------------------------------------------
# 3. The child reads none of the grader's files; the grader changes none of the instructor's


@needs_namespaces
def test_child_reads_no_gradescope_file_no_hidden_folder_no_other_staging(tmp_path, monkeypatch):
    """read_grader_outputs globs a fake Gradescope root, a grade-all output folder (named to it in
    A2_TEST_READ) and another student's staging folder, all world-readable outside /tmp: it finds nothing."""
    outside = Path(tempfile.mkdtemp(prefix="a2test-", dir="/run" if os.access("/run", os.W_OK) else None))
    other = Path(tempfile.mkdtemp(prefix="a2submission-"))
    try:
        gradescope, gradeall = outside / "gradescope", outside / "gradeall"
        (gradescope / "results").mkdir(parents=True)
        (gradescope / "submission_metadata.json").write_text('{"previous_submissions": "SECRET-META"}')
        (gradescope / "results" / "results.json").write_text('{"SECRET-RESULTS": 1}')
        gradeall.mkdir()
        (gradeall / "gradebook.sqlite").write_text("SECRET-GRADEBOOK")
        (other / EX02.filename).write_text("# SECRET-OTHER-STUDENT\n")
        for path in (outside, *outside.rglob("*"), other, *other.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)  # readable by anyone: only the view hides them
        monkeypatch.setenv("A2_AUTOGRADER_ROOT", str(gradescope))
        monkeypatch.setenv("A2_TEST_READ", str(gradeall))
        attack = ADVERSARIAL / "read_grader_outputs" / EX02.filename
        control = subprocess.run(
            [sys.executable, str(attack)], capture_output=True, text=True, timeout=60, env=dict(os.environ)
        )
        assert control.stdout.count("SECRET-") == 4, f"outside the sandbox the attack finds all four: {control.stdout}"
        folder = tmp_path / "submission"
        folder.mkdir()
        shutil.copyfile(attack, folder / EX02.filename)
        data = grader.grade_submission(folder, tmp_path / "results.json", exercises=["ex02"])
        res.validate(data)
        text = json.dumps(data)
        leaks = [text[max(0, i - 300) : i + 100] for i in (text.find("SECRET-"), text.find("READ-OK")) if i >= 0]
        assert not leaks, f"the child read a protected file: {leaks}"
        assert exercise_score(data, "ex02")[0] == 0
    finally:
        shutil.rmtree(outside, ignore_errors=True)
        shutil.rmtree(other, ignore_errors=True)
    assert not sandbox_survivors()


def _other_clone_parent() -> Path:
    """Where a world-readable copy of the repository goes: outside the checkout and outside /tmp and
    /var/tmp (which every child has of its own anyway), so only the allow-list root keeps it away."""
    for folder in ("/srv", "/opt", "/mnt"):
        if os.path.isdir(folder) and os.access(folder, os.W_OK) and os.stat(folder).st_mode & 0o005 == 0o005:
            return Path(folder)
    return Path(tempfile.gettempdir())


def test_another_checkout_on_the_machine_gives_the_child_nothing(tmp_path, monkeypatch):
    """The red team's attack (other_checkout_key): another clone of this repository, world-readable as
    a default clone is, outside the checkout. The attack, graded as ex01 and ex02, walks the file system
    for it, and would import its answer key and print its hidden cases: it must score 0, print nothing
    of the copy, and the copy must not exist in the child's file system."""
    from autograder.core.cases import hidden_cases

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
        folder = tmp_path / "submission"
        folder.mkdir()
        for ex in (EX01, EX02):  # what it prints at import is its public output, shown in the feedback
            shutil.copyfile(attack, folder / ex.filename)
        data = grader.grade_submission(folder, tmp_path / "results.json", exercises=["ex01", "ex02"])
        res.validate(data)
        assert not autograder_failures(data), data["output"]
        text = json.dumps(data)
        assert "KEY-NOT-FOUND" in text, f"the attack should have run and searched: {data['output'][-2000:]}"
        for marker in ("KEY-FOUND", "HIDDEN-LEAK", "OTHER-CLONE-VISIBLE", str(clone)):
            assert marker not in text, (
                f"the child saw the other checkout ({marker}): "
                f"{text[max(0, text.find(marker) - 300) : text.find(marker) + 300]}"
            )
        assert text.count("OTHER-CLONE-ABSENT") >= 2, "the copy must not exist in the child's file system"
        leaked = [c.id for ex in ("ex01", "ex02") for c in hidden_cases(ex) if c.id in text]
        assert not leaked, f"hidden case ids reached the results: {leaked[:5]}"
        for ex in (EX01, EX02):
            assert exercise_score(data, ex.id)[0] == 0, (ex.id, data["output"][-2000:])
    finally:
        shutil.rmtree(clone, ignore_errors=True)
    assert not sandbox_survivors()


@needs_root
@pytest.mark.slow  # builds the zip and grades every exercise through run_autograder: about a minute
def test_gradescope_layout_hides_metadata_results_and_source(tmp_path):
    """The zip unpacked as Gradescope does (under a world-traversable root, with this machine's venv in
    place of setup.sh's): read_hidden as ex01 and read_grader_outputs as ex02 find nothing of
    submission_metadata.json, results/ or the source tree, and the answer key still scores 100."""
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

        def run(files: dict[str, Path]) -> dict:
            for old in (root / "submission").iterdir():
                old.unlink()
            for name, src in files.items():
                shutil.copyfile(src, root / "submission" / name)
            proc = subprocess.run(
                ["bash", str(root / "source" / "run_autograder")],
                cwd=str(root),
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
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
        assert not leaks, f"student code read the Gradescope root or the source: {leaks}"
        key = run({ex.filename: SOLUTIONS / ex.filename for ex in BY_ID.values()})
        assert abs(key["score"] - 100) < SCORE_TOL, key["output"][:2000]
    finally:
        shutil.rmtree(top, ignore_errors=True)


@needs_namespaces
def test_submission_copy_is_read_only_and_package_root_is_empty(tmp_path):
    probe = tmp_path / EX01.filename
    probe.write_text(
        "import os\n"
        f"print('ROOT', sorted(os.listdir({str(ROOT)!r})))\n"
        "for target in (__file__, os.path.join(os.path.dirname(__file__), 'planted.py')):\n"
        "    try:\n"
        "        open(target, 'a').close()\n"
        "        print('WRITE-OK', target)\n"
        "    except OSError as exc:\n"
        "        print('WRITE-DENIED', exc.errno)\n"
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


@needs_namespaces
def test_child_root_holds_only_the_allow_list(tmp_path, monkeypatch):
    """The child's `/` lists only the allow-list's top-level entries and is read-only; /root, /work, /home,
    /autograder, /srv, /opt and the repository root either do not exist or hold only the folders on the
    way to the interpreter, the venv and `hetero` (bound at their own paths, so on this machine /root holds
    .pyenv and the checkout holds .venv and shared/hetero, nothing else: no other checkout, no answer key);
    /tmp, /var/tmp, /dev/shm and the work folder are tmpfs of TMPFS_BYTES each."""
    binds = [dest for _, dest in isolation.allow_list()]
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
    probe = tmp_path / EX01.filename
    probe.write_text(VIEW_PROBE)
    out = runner.run_exercise(probe, EX01.module, [], 0, Limits(20, 20, 1024)).output_all
    assert "VIEW " in out, out
    view = json.loads(out.split("VIEW ", 1)[1].splitlines()[0])
    system = {name for name in isolation.SYSTEM_LINKS if os.path.lexists("/" + name)}
    top = system | {"usr", "etc", "dev", "proc", "tmp", "var", "sandbox"} | {d.split("/")[1] for d in binds}
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


@needs_namespaces
def test_venv_under_tmp_stays_reachable_and_the_installed_grader_is_covered(tmp_path, monkeypatch):
    """A venv under /tmp (a Gradescope-shaped root in a test, say) is bound on top of the child's private
    /tmp; after a non-editable `pip install .` the grader's package (hidden cases, expected values) lies
    inside that venv: the child finds that folder empty."""
    venv = tmp_path / "venv"
    package = venv / "lib" / "site-packages" / "autograder"
    (package / "expected").mkdir(parents=True)
    (package / "expected" / "ex01.json").write_text('{"SECRET-EXPECTED": 1}')
    (venv / "lib" / "site-packages" / "other.py").write_text("VISIBLE = 1\n")
    for path in (venv, *venv.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    real = isolation.allow_list()
    monkeypatch.setattr(isolation, "allow_list", lambda: [*real, (str(venv), str(venv))])
    monkeypatch.setattr(isolation, "AUTOGRADER_DIR", package)
    probe = tmp_path / EX01.filename
    probe.write_text(
        "import os\n"
        f"site = {str(venv / 'lib' / 'site-packages')!r}\n"
        "print('SITE', sorted(os.listdir(site)))\n"
        "print('PACKAGE', sorted(os.listdir(os.path.join(site, 'autograder'))))\n"
        "print('OTHER', open(os.path.join(site, 'other.py')).read().strip())\n"
    )
    out = runner.run_exercise(probe, EX01.module, [], 0, Limits(20, 20, 1024)).output_all
    assert "SITE ['autograder', 'other.py']" in out and "OTHER VISIBLE = 1" in out, out
    assert "PACKAGE []" in out and "SECRET" not in out, f"the installed grader's package must be empty: {out}"


@needs_namespaces
def test_answer_key_scores_full_marks_in_the_allow_list_root(tmp_path):
    """The CLI grades the answer key of ex01 and ex05 (ex05 imports numpy) inside bubblewrap: full marks,
    and the staff-only entry says how the files were isolated."""
    out = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(SOLUTIONS), "--out", str(out), "--exercises", "ex01", "ex05"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    res.validate(data)
    assert not autograder_failures(data), data["output"]
    for ex_id in ("ex01", "ex05"):
        assert abs(exercise_score(data, ex_id)[0] - BY_ID[ex_id].points) < SCORE_TOL, data["output"]
    environment = "".join(t["output"] for t in data["tests"] if t["name"] == "grading environment (staff only)")
    assert "files: allow-list root (bubblewrap)" in environment, environment


def test_bubblewrap_before_0_8_needs_no_size_option_as_root_and_says_so_without(tmp_path):
    """Ubuntu 22.04 (Gradescope) ships bubblewrap 0.6, without --size: as root the arguments never use it
    (jail.py remounts the tmpfs with their caps); without root they leave it out and the note says the
    temporary folders are not size-capped. From 0.8 on, without root, bwrap caps them itself."""
    base = {"mode": "bwrap", "failures": [], "bwrap": "/usr/bin/bwrap", "version": (0, 6, 1)}
    as_root = isolation.bwrap_args({**base, "user": False, "sized": True}, tmp_path)
    assert "--size" not in as_root and "--unshare-user" not in as_root and "--unshare-all" not in as_root
    setup = isolation._namespace_setup({**base, "user": False, "sized": True}, (63001, 63001))
    assert sorted(r["path"] for r in setup["resize"]) == sorted((*isolation.PRIVATE_FOLDERS, isolation.SANDBOX_WORK))
    assert all(f"size={isolation.TMPFS_BYTES}" in r["data"] for r in setup["resize"]), setup
    old_user = {**base, "user": True, "sized": False}
    assert "--size" not in isolation.bwrap_args(old_user, tmp_path)
    assert (
        "temporary folders: not size-capped (bubblewrap 0.6.1 has no --size and the grader is not root)"
        in isolation._isolation_notes(old_user, None)
    )
    new_user = isolation.bwrap_args({**base, "version": (0, 8, 0), "user": True, "sized": True}, tmp_path)
    assert new_user.count("--size") == len(isolation.PRIVATE_FOLDERS) + 1 and "--cap-drop" in new_user


@pytest.mark.parametrize("bwrap", ["missing", "broken"])
def test_without_working_bubblewrap_the_mode_is_none_and_said(bwrap, tmp_path, monkeypatch, caplog):
    """No `bwrap` on PATH, or one that fails as it does in a container without user namespaces: mode
    "none", and the exercise's note, results.json and the log say the files are not isolated, and why."""
    folder = tmp_path / "bin"
    folder.mkdir()
    if bwrap == "broken":
        fake = folder / "bwrap"
        fake.write_text(
            "#!/bin/sh\n[ \"$1\" = --version ] && echo 'bubblewrap 0.6.1' && exit 0\n"
            "echo 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
        )
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr(isolation, "_MODE", {})
    monkeypatch.setattr(isolation, "is_root", lambda: False)  # no uid change: the interpreter under /root
    mode = isolation.isolation_mode()
    why = {
        "missing": "bubblewrap missing: apt-get install bubblewrap",
        "broken": "bubblewrap 0.6.1 does not work here: bwrap: No permissions to creating new namespace",
    }[bwrap]
    assert mode["mode"] == "none" and mode["failures"] == [why], mode
    data = grader.grade_submission(
        _helpers.submission_with(tmp_path, ["ex01"]), tmp_path / "results.json", exercises=["ex01"]
    )
    res.validate(data)
    assert abs(exercise_score(data, "ex01")[0] - EX01.points) < SCORE_TOL, data["output"]
    assert f"Sandbox: files: not isolated ({why})." in data["output"], data["output"]
    assert "files not isolated" in caplog.text and why in caplog.text, "the grader's log must say it too"


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
def test_grading_as_root_leaves_the_checkout_modes_unchanged(tmp_path):
    before = _modes(ROOT)
    data = grader.grade_submission(_helpers.submission_with(tmp_path, ["ex01"]), exercises=["ex01"])
    after = _modes(ROOT)
    changed = {p: (oct(before[p]), oct(after.get(p, 0))) for p in before if after.get(p) != before[p]}
    assert not changed, f"grading changed the modes of the instructor's files: {changed}"
    assert abs(exercise_score(data, "ex01")[0] - EX01.points) < SCORE_TOL, data["output"]


# ---------------------------------------------------------------------------------------------
# 4. Output through a pipe; the result channel's junk costs little


def test_output_is_a_pipe_and_public_output_is_only_the_public_cases():
    report = run_fixture("rewrite_output")
    n_public = len(public_cases("ex02"))
    assert "SEEK-DENIED" in report.output_all, f"stdout must be a pipe (no seek): {report.output_all[:500]}"
    assert "HIDDEN-TEXT" not in report.output_all
    shown = [line for line in report.output_public.splitlines() if line.startswith("CALL-")]
    assert shown == [f"CALL-{i}-END" for i in range(1, n_public + 1)], (
        f"the public output must hold the {n_public} public calls and nothing later: {shown}"
    )
    assert report.output_bytes >= len(report.output_all.encode()) - 100


def test_a_skipped_first_hidden_case_still_ends_the_public_output(tmp_path):
    """loop_skips_hidden_start: the function of the first hidden case loops on its first public case, so
    the fresh process skips its later cases, the first hidden one too; the others print numbered lines.
    The output shown to the student must end where the hidden cases start, skipped or not."""
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
    report = run_fixture("loop_skips_hidden_start", path=path)
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


def test_page_cache_relay_carries_no_hidden_input_into_visible_text(tmp_path, monkeypatch):
    """page_cache_relay: ex01 spells each call's first argument in the page cache of two venv files,
    ex02 reads it at import and prints it. Every public phase runs before any hidden case, so the
    visible text can hold ex01's public arguments only; the hidden detail shows the channel works."""
    import dataclasses

    folder = tmp_path / "submission"
    folder.mkdir()
    relay = ADVERSARIAL / "page_cache_relay"
    channel = (relay / "channel.py").read_text()
    for ex, part in ((EX01, "sender.py"), (EX02, "receiver.py")):
        (folder / ex.filename).write_text(
            (SOLUTIONS / ex.filename).read_text() + "\n\n" + channel + "\n\n" + (relay / part).read_text()
        )
    monkeypatch.setitem(grader.BY_ID, "ex02", dataclasses.replace(EX02, hidden_detail_visibility="after_due_date"))
    data = grader.grade_submission(folder, tmp_path / "results.json", exercises=["ex01", "ex02"])
    res.validate(data)
    assert not autograder_failures(data), data["output"]
    for ex in (EX01, EX02):
        assert abs(exercise_score(data, ex.id)[0] - ex.points) < SCORE_TOL, (ex.id, data["output"])
    public_args = {float(c.args[0]) for c in public_cases("ex01")}

    def relayed(text: str) -> list[float]:
        return [float(line.split(": ", 1)[1]) for line in text.splitlines() if line.startswith("RELAYED call ")]

    visible = data["output"] + "\n".join(t["output"] for t in data["tests"] if t["visibility"] == "visible")
    detail = "\n".join(t["output"] for t in data["tests"] if t["visibility"] == "after_due_date")
    if not [v for v in relayed(visible + "\n" + detail) if v not in public_args]:
        pytest.skip(
            "the page-cache channel carries nothing on this machine (no RWF_NOWAIT, or the cache "
            f"was disturbed): {detail[-300:]}"
        )
    leaked = [v for v in relayed(visible) if v not in public_args]
    assert not leaked, f"hidden arguments of ex01 reached the visible text through the page cache: {leaked[:5]}"
    assert not sandbox_survivors()


def test_result_channel_junk_stops_the_child_and_costs_little_grader_cpu():
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


def test_forged_huge_records_are_refused_unread_and_cost_little_grader_memory():
    """forged_huge_records: a correctly signed 4 MiB record of empty lists per case. Decoded, each would
    be ~1.4 million Python objects (~90 MB), kept for the whole exercise; the sandbox drops every record
    longer than `record_bytes` unread and refuses its case, and counts the result bytes of the exercise,
    not of one child."""
    import tracemalloc

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
    data = grader.grade_submission(folder, tmp_path / "results.json", exercises=["ex01", "ex02"])
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
