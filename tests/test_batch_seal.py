"""The batch-wide seal: grade-all ends every public phase, and fixes what it produced, before any hidden phase.

Three layers:
- the two phases of the grader in separate calls (`grade_public_phase`, `grade_hidden_phase`): the same
  results as one process, a state that no longer matches its seal is never graded;
- grade-all with a stand-in grader that logs when each phase starts and ends: the barrier, a public
  phase that fails (no hidden phase for it), a state changed during the hidden phase, one time limit
  across both phases;
- colluding pairs graded by the real grader (ex01 only, two workers): a writer publishes every argument
  its functions receive through kernel state every sandbox shares, a reader prints, from its import
  (its public phase), what it received (autograder.selftest.attacks.colluding_pair). No hidden ex01 argument may
  reach what the reader sees before the deadline: results.json's top-level output and "visible" tests,
  and feedback.md. Without the seal (grade_all(sealed=False), the one-process graders side by side of
  before) the record-lock pair carries them there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from autograder.batch import bulk, processes
from autograder.core.cases import hidden_cases, public_cases
from autograder.core.manifest import BY_ID, ROOT
from autograder.runtime import grader, phases
from autograder.runtime.sandbox import ladder, turns
from autograder.selftest.attacks import COLLUDING_CHANNELS, colluding_pair

EX01 = BY_ID["ex01"]
SCORE_TOL = 1e-6  # scores are sums of rounded (1e-6) case points
# Open between two sandboxes running side by side: the seal is what keeps hidden inputs off them.
OPEN_CHANNELS = ("fcntl", "ofd", "flock")
# Closed by the sandbox itself, whatever the batch does; each test fails if that isolation regresses
# (on every rung of the ladder; on the "unsafe" one, --unsafe-no-sandbox, the sandbox says so and they are open).
CLOSED_CHANNELS = {
    "abstract_socket": "the seccomp filter refuses every socket but a connected AF_UNIX pair (on bwrap, abstract "
    "names also belong to the child's own network namespace)",
    "posix_shm": "on bwrap each child gets an empty tmpfs of its own at /dev/shm (isolation.PRIVATE_FOLDERS); "
    "elsewhere /dev/shm is outside the Landlock allow-list, or no file can be created (seccomp-uid)",
    "inotify": "the seccomp filter refuses inotify_init (autograder.runtime.sandbox.syscalls.REFUSED)",
}


def _floats(cases) -> set[str]:
    return {repr(float(a)) for c in cases for a in (*c.args, *c.kwargs.values()) if isinstance(a, (int, float))}


PUBLIC_ARGS = _floats(public_cases("ex01"))
HIDDEN_ONLY = _floats(hidden_cases("ex01")) - PUBLIC_ARGS  # what the reader must never show
DISTINCT = {v for v in HIDDEN_ONLY if len(v) >= 8}  # long enough to look for anywhere in the text


def visible_text(student_dir: Path) -> str:
    """What the student sees before the deadline: results.json's output and "visible" tests, feedback.md."""
    data = json.loads((student_dir / "results.json").read_text(encoding="utf-8"))
    shown = [data.get("output", "")]
    shown += [t.get("output", "") for t in data["tests"] if (t.get("visibility") or "visible") == "visible"]
    return "\n".join(shown) + "\n" + (student_dir / "feedback.md").read_text(encoding="utf-8")


def leaked(text: str) -> list[str]:
    """The hidden-only ex01 arguments in `text`: relayed lines (`R <value>`) and long values anywhere."""
    relayed = {line[2:].strip() for line in text.splitlines() if line.startswith("R ")}
    return sorted((relayed & HIDDEN_ONLY) | {v for v in DISTINCT if v in text})


def _beacon_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith("BEACON ")]
    assert lines, f"the reader's import printed nothing: the attack did not run: {text[:1500]}"
    return lines[0]


# ---------------------------------------------------------------------------------------------
# The two phases of one grader.


def _comparable(data: dict) -> dict:
    """results.json without what differs between two gradings of one submission (uids, time taken)."""
    data = json.loads(json.dumps(data))
    for test in data["tests"]:
        if test["name"] == "grading environment (staff only)":
            test["output"] = ""
    return data


def test_nested_results_do_not_blow_up_the_sealed_state(tmp_path):
    # nested_public_state returns a list nested 960 deep (one 64 KiB record) from every function. Read or
    # not depended on the stack of whatever parsed it (bwrap, standalone: read, and written into the sealed
    # state indented, each element costing its depth in spaces: 1.29 GB for ex02's public cases; under
    # pytest: a RecursionError). Records nested deeper than 64 are now refused unread, and the state is
    # written compact: it stays small, and the hidden phase still grades.
    folder = tmp_path / "sub"
    shutil.copytree(ROOT / "autograder" / "fixtures" / "adversarial" / "nested_public_state", folder)
    (folder / EX01.filename).write_bytes((ROOT / "solutions" / EX01.filename).read_bytes())
    state = tmp_path / "state"
    seal = grader.grade_public_phase(folder, state, exercises=["ex01", "ex02"])
    size = (state / phases.STATE_NAME).stat().st_size
    assert size < 2**20, f"public.json is {size / 2**20:.1f} MiB for one 64 KiB record per case"
    report = phases.read(state, seal).reports["ex02"]
    assert report is not None and not isinstance(report, str), report
    assert report.refused and all("more than 64 deep" in why for why in report.refused.values()), report.refused
    data = grader.grade_hidden_phase(state, tmp_path / "results.json", seal=seal, submission=folder)
    scores = {ex: sum(t["score"] for t in data["tests"] if t["name"].split(" ", 1)[0] == ex) for ex in ("ex01", "ex02")}
    assert scores["ex02"] == 0, f"nested zeros compute nothing: {scores}"
    assert abs(scores["ex01"] - EX01.points) < 1e-9, f"the key beside it keeps its marks: {scores}"


def test_two_phases_in_two_calls_grade_as_one(tmp_path):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / EX01.filename).write_bytes((ROOT / "solutions" / EX01.filename).read_bytes())
    (folder / BY_ID["ex02"].filename).write_bytes((ROOT / "assignments" / BY_ID["ex02"].filename).read_bytes())
    alone = grader.grade_submission(folder, exercises=["ex01", "ex02"])
    state = tmp_path / "state"
    seal = grader.grade_public_phase(folder, state, exercises=["ex01", "ex02"])
    assert (state.stat().st_mode & 0o777) == 0o700, "the state is the grader's only"
    assert phases.read_seal(state) == seal == phases.state_digest(state)
    sealed = (state / phases.STATE_NAME).read_bytes()
    split = grader.grade_hidden_phase(state, tmp_path / "results.json", seal=seal, submission=folder)
    assert _comparable(split) == _comparable(alone), "the split phases must grade exactly as one process"
    assert (state / phases.STATE_NAME).read_bytes() == sealed, "the hidden phase must not write into the state"
    assert json.loads((tmp_path / "results.json").read_text()) == split


@pytest.mark.parametrize("change", ["state", "file", "seal", "submission"])
def test_a_state_that_is_not_what_was_sealed_is_never_graded(tmp_path, change):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / EX01.filename).write_bytes((ROOT / "solutions" / EX01.filename).read_bytes())
    state = tmp_path / "state"
    seal = grader.grade_public_phase(folder, state, exercises=["ex01"])
    submission = folder
    if change == "state":  # e.g. a public output rewritten after the seal
        path = state / phases.STATE_NAME
        path.write_text(re.sub(r'"output_public": ?"', '"output_public":"x', path.read_text(), count=1))
    elif change == "file":  # the located file, swapped for another one
        (located,) = (state / phases.FILES_NAME).rglob(EX01.filename)
        located.write_text("def usd_per_gb(price, capacity):\n    return 0.0\n")
    elif change == "seal":
        seal = "0" * 64
    else:
        submission = tmp_path / "another"
    data = grader.grade_hidden_phase(state, seal=seal, submission=submission)
    assert data["score"] == 0 and data["tests"][0]["name"].startswith("autograder failed"), data["output"]
    assert "SealError" in data["tests"][1]["output"], data["tests"][1]["output"][-800:]


def test_public_specs_from_the_batch_are_used_and_checked(tmp_path):
    """grade-all computes the public call specs once (`write_public_specs`); the public phase runs those,
    and the hidden phase grades an exercise only if its own public cases have the same digest."""
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / EX01.filename).write_bytes((ROOT / "solutions" / EX01.filename).read_bytes())
    grader.write_public_specs(tmp_path / "specs.json", ["ex01"])
    specs = grader.read_public_specs(tmp_path / "specs.json")
    assert specs == {"ex01": grader.public_specs(EX01)}
    seal = grader.grade_public_phase(folder, tmp_path / "same", exercises=["ex01"], specs=specs)
    same = grader.grade_hidden_phase(tmp_path / "same", seal=seal)
    assert abs(same["score"] - EX01.points) < SCORE_TOL, same["output"]
    fewer = {"ex01": specs["ex01"][1:]}  # not the cases the hidden phase would judge
    seal = grader.grade_public_phase(folder, tmp_path / "fewer", exercises=["ex01"], specs=fewer)
    data = grader.grade_hidden_phase(tmp_path / "fewer", seal=seal)
    assert data["score"] == 0 and data["tests"][0]["name"].startswith("autograder failed: ex01"), data["output"]
    assert "are not the ones its public phase ran" in data["tests"][1]["output"], data["tests"][1]["output"]


def test_the_cli_runs_each_phase_alone(tmp_path):
    import subprocess

    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / EX01.filename).write_bytes((ROOT / "solutions" / EX01.filename).read_bytes())
    state, out = tmp_path / "state", tmp_path / "results.json"
    cli = [sys.executable, "-m", "autograder", "grade", str(folder)]
    first = subprocess.run(
        [*cli, "--phase", "public", "--state", str(state), "--exercises", "ex01"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert first.returncode == 0 and phases.read_seal(state) in first.stdout, first.stdout + first.stderr
    assert not out.exists()
    refused = subprocess.run(
        [*cli, "--phase", "hidden", "--state", str(state), "--exercises", "ex01"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert refused.returncode == 2 and "grades the exercises" in refused.stderr, refused.stderr
    second = subprocess.run(
        [*cli, "--phase", "hidden", "--state", str(state), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert second.returncode == 0, second.stderr
    data = json.loads(out.read_text())
    assert abs(data["score"] - EX01.points) < SCORE_TOL and "hidden 44/44 passed" in data["output"], data["output"]


# ---------------------------------------------------------------------------------------------
# The batch, with a stand-in grader that logs each phase.

PHASED_GRADER = textwrap.dedent('''\
    #!{python}
    """Stand-in for both phases of `python -m autograder grade`, driven by the submission's name; it
    appends `<phase> start|end <name> <time>` lines to events.txt next to the students' folders."""
    import hashlib, json, os, sys, time
    argv = sys.argv
    phase = argv[argv.index("--phase") + 1]
    state = argv[argv.index("--state") + 1]
    sub = argv[4]
    name = os.path.basename(sub)
    events = os.path.join(os.path.dirname(os.path.dirname(sub)), "events.txt")

    def event(what):
        with open(events, "a") as fh:
            fh.write(f"{{phase}} {{what}} {{name}} {{time.time():.6f}}\\n")

    event("start")
    if phase == "public":
        if "slow" in name:
            time.sleep(1.5)
        if "crash" in name:
            sys.exit(3)
        os.makedirs(state, mode=0o700)
        body = json.dumps({{"name": name}}).encode()
        open(os.path.join(state, "public.json"), "wb").write(body)
        open(os.path.join(state, "seal"), "w").write(hashlib.sha256(body).hexdigest())
    else:
        if "tamper" in name:
            open(os.path.join(state, "public.json"), "ab").write(b" ")
        if "late" in name:
            time.sleep(30)
        out = argv[6]
        tests = [{{"name": "ex01 public", "score": 1, "max_score": 1, "status": "passed", "visibility": "visible"}}]
        json.dump({{"score": 1.0, "tests": tests}}, open(out, "w"))
    event("end")
''')


@pytest.fixture()
def phased_python(tmp_path) -> str:
    path = tmp_path / "phased_grader.py"
    path.write_text(PHASED_GRADER.format(python=sys.executable))
    path.chmod(0o755)
    return str(path)


def _students(subs: Path, *names: str) -> None:
    for name in names:
        (subs / name).mkdir(parents=True)
        (subs / name / "f.py").write_text("x = 1\n")


def _events(subs: Path) -> list[tuple[str, str, str, float]]:
    rows = [line.split() for line in (subs.parent / "events.txt").read_text().splitlines()]
    return [(phase, what, name, float(at)) for phase, what, name, at in rows]


def test_every_public_phase_ends_before_any_hidden_phase_starts(tmp_path, phased_python):
    subs = tmp_path / "subs"
    _students(subs, "a_slow", "b", "c", "d_crash", "e_tamper")
    out = tmp_path / "graded"
    report = bulk.grade_all(subs, out, workers=2, progress=False, python=phased_python)
    events = _events(subs)
    public_ends = [at for phase, what, _, at in events if phase == "public" and what in ("start", "end")]
    hidden_starts = [at for phase, what, _, at in events if phase == "hidden" and what == "start"]
    assert hidden_starts and max(public_ends) < min(hidden_starts), (
        f"a hidden phase started before every public phase had ended: {events}"
    )
    assert sorted(name for phase, what, name, _ in events if phase == "hidden" and what == "start") == [
        "a_slow",
        "b",
        "c",
        "e_tamper",
    ], "a submission whose public phase failed has no hidden phase"
    assert report.failed == ["d_crash", "e_tamper"], report.failed
    crash = json.loads((out / "d_crash" / "results.json").read_text())
    assert "without writing its sealed public phase" in crash["tests"][0]["output"], crash["tests"][0]
    tamper = json.loads((out / "e_tamper" / "results.json").read_text())
    assert "sealed public phase changed during the hidden phase" in tamper["tests"][0]["output"], tamper
    assert {r.student: r.score for r in report.records}["b"] == pytest.approx(1.0)
    assert not [p for p in Path(tempfile.gettempdir()).glob(f"{processes.SCRATCH_PREFIX}{os.getpid()}-*")], (
        "the sealed states and the graders' TMPDIRs must be removed at the end of the batch"
    )


def test_one_time_limit_covers_both_phases(tmp_path, phased_python):
    subs = tmp_path / "subs"
    _students(subs, "slow_late", "b")
    out = tmp_path / "graded"
    start = time.perf_counter()
    report = bulk.grade_all(subs, out, workers=2, timeout_s=3.0, progress=False, python=phased_python)
    assert time.perf_counter() - start < 20, "the hidden phase must get only what the public phase left of 3 s"
    assert report.failed == ["slow_late"], report.failed
    results = json.loads((out / "slow_late" / "results.json").read_text())
    assert "longer than 3 s" in results["tests"][0]["output"], results["tests"][0]
    assert "hidden start slow_late" in " ".join(" ".join(map(str, e[:3])) for e in _events(subs))


# ---------------------------------------------------------------------------------------------
# Colluding pairs, graded by the real grader.


def _grade_pair(tmp_path: Path, channel: str, sealed: bool = True) -> tuple[bulk.BatchReport, Path]:
    subs = tmp_path / "subs"
    colluding_pair(subs, channel)
    out = tmp_path / "graded"
    report = bulk.grade_all(subs, out, workers=2, progress=False, exercises=["ex01"], sealed=sealed)
    assert report.failed == [], f"a colluding pair must not make the grader fail: {report.failed}"
    scores = {r.student: r.score for r in report.records}
    assert abs(scores["writer"] - EX01.points) < SCORE_TOL, f"the writer's functions are the answer key's: {scores}"
    return report, out


def test_the_fixture_knows_the_hidden_arguments():
    assert len(HIDDEN_ONLY) >= 40 and DISTINCT, "ex01's hidden cases must have arguments of their own to look for"


@pytest.mark.slow  # a real batch of two whose reader listens 9 s at each import: about 20 s each
@pytest.mark.parametrize("channel", COLLUDING_CHANNELS)
def test_a_colluding_pair_shows_no_hidden_argument(tmp_path, channel):
    """The reader's visible output holds no hidden ex01 argument, whichever channel the pair uses. For an
    open channel the reader must have received the writer's public-phase beacon or arguments (both
    public phases run side by side: the channel works, the seal is what keeps hidden inputs off it), unless
    the machine's exercises take turns (no cgroup with a CPU part: `turns`), when nothing may cross; for
    a closed one nothing may get through, even from the writer's public phase."""
    _, out = _grade_pair(tmp_path, channel)
    text = visible_text(out / "reader")
    found = leaked(text)
    assert not found, f"{channel}: hidden ex01 arguments reached the reader's visible output: {found[:8]}"
    unopened = [line for line in text.splitlines() if line.startswith(f"CHANNEL {channel} cannot be opened here")]
    beacon = unopened[0] if unopened else _beacon_line(text)  # a channel the sandbox refuses outright
    received = beacon.startswith("BEACON seen") or any(line.startswith("R ") for line in text.splitlines())
    if channel in CLOSED_CHANNELS and ladder.current().name != ladder.UNSAFE:
        assert not received, f"{channel} must be closed ({CLOSED_CHANNELS[channel]}); the reader got: {beacon}"
    elif channel in OPEN_CHANNELS and not turns.side_by_side(ladder.current()):
        assert not received, (
            f"{channel}: exercises take turns here (no cgroup with a CPU part), so the two public phases never "
            f"overlap and nothing may cross them: {beacon}"
        )
    elif channel in OPEN_CHANNELS:
        assert received, (
            f"{channel}: nothing crossed between the two public phases ({beacon}); if the sandbox "
            "now closes this channel, move it to CLOSED_CHANNELS and say why"
        )


@pytest.mark.slow
def test_without_the_seal_the_record_lock_pair_shows_hidden_arguments(tmp_path):
    """What the seal closes: with one grader process per student side by side (grade-all before the seal),
    the writer's hidden phase runs while the reader listens, and the hidden arguments are shown."""
    _, out = _grade_pair(tmp_path, "fcntl", sealed=False)
    text = visible_text(out / "reader")
    found = leaked(text)
    if not found and not _beacon_line(text).startswith("BEACON seen"):
        pytest.skip(f"the record-lock channel carried nothing on this machine: {_beacon_line(text)}")
    assert found, f"the unsealed batch was expected to show hidden arguments: {text[:1500]}"
