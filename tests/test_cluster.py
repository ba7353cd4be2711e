"""`grade-all --cluster`: the batch's grader processes on Dask workers (autograder.batch.cluster).

With a stand-in grader (both phases, driven by the submission's name, logging when each phase starts and
ends and in which process's child it ran) and a LocalCluster of two worker processes:
- the same gradebook, results.json and feedback as the local process pool;
- the batch-wide seal across the cluster: every public phase ends before any hidden phase starts, and the
  sealed state reaches the hidden phase's worker (its score is read from the state);
- a worker killed mid-batch (by the grader it runs, once in a public and once in a hidden phase) costs a
  rerun on a worker, never a grade.
Without a cluster: the state's packing (no path leaves the state), a state that arrives changed is never
graded, the gate that keeps a rerun public phase from running after the barrier, a task that failed on every
worker (the student's grade-all failure, the batch going on), and a worker that cannot grade refusing.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import textwrap
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

pytest.importorskip("distributed")

from autograder.batch import bulk, cluster  # noqa: E402
from autograder.batch.gradebook import Gradebook  # noqa: E402
from autograder.batch.processes import Graded, Job, Sealed  # noqa: E402
from autograder.batch.submissions import Submission  # noqa: E402
from autograder.runtime import phases  # noqa: E402

GRADER = textwrap.dedent('''\
    #!{python}
    """Stand-in for `python -m autograder grade` (both phases, or one with --phase), driven by the name."""
    import hashlib, json, os, signal, sys, time
    argv = sys.argv
    phase = argv[argv.index("--phase") + 1] if "--phase" in argv else "both"
    sub = argv[4]
    name = os.path.basename(sub)
    root = os.path.dirname(os.path.dirname(sub))

    def event(what):
        with open(os.path.join(root, "events.txt"), "a") as fh:
            fh.write(f"{{phase}} {{what}} {{name}} {{time.time():.6f}} {{os.getppid()}}\\n")

    def kill_my_worker_once(tag):
        marker = os.path.join(root, f"killed-{{name}}")
        if tag in name and not os.path.exists(marker):
            open(marker, "w").close()
            os.kill(os.getppid(), signal.SIGKILL)  # the Dask worker that runs this grader
            time.sleep(60)  # this process dies with it (PR_SET_PDEATHSIG)

    event("start")
    print(f"grading {{name}} ({{phase}})")
    n_files = len(os.listdir(sub))
    if phase in ("public", "both"):
        kill_my_worker_once("killpublic")
        if "slow" in name:
            time.sleep(1.0)
        if "crash" in name:
            sys.exit(3)
    if phase == "public":
        state = argv[argv.index("--state") + 1]
        os.makedirs(os.path.join(state, "submission", "deep"), mode=0o700)
        with open(os.path.join(state, "submission", "deep", "f.py"), "w") as fh:
            fh.write("x = 1\\n")
        body = json.dumps({{"name": name, "n_files": n_files}}).encode()
        open(os.path.join(state, "public.json"), "wb").write(body)
        open(os.path.join(state, "seal"), "w").write(hashlib.sha256(body).hexdigest())
    else:
        if phase == "hidden":
            kill_my_worker_once("killhidden")
            state = argv[argv.index("--state") + 1]
            body = open(os.path.join(state, "public.json"), "rb").read()
            assert hashlib.sha256(body).hexdigest() == argv[argv.index("--seal") + 1], "not the sealed state"
            assert os.path.isfile(os.path.join(state, "submission", "deep", "f.py"))
            n_files = json.loads(body)["n_files"]  # the score comes from the state that travelled
        tests = [{{"name": "ex01 public: f", "score": min(n_files, 6), "max_score": 6, "visibility": "visible",
                   "status": "passed" if n_files >= 6 else "failed", "output": f"{{name}} has {{n_files}} files"}}]
        json.dump({{"score": float(min(n_files, 6)), "tests": tests}}, open(argv[argv.index("--out") + 1], "w"))
    event("end")
''')


@pytest.fixture()
def grader_python(tmp_path) -> str:
    path = tmp_path / "cluster_grader.py"
    path.write_text(GRADER.format(python=sys.executable))
    path.chmod(0o755)
    return str(path)


def _batch(root: Path, students: dict[str, int]) -> Path:
    subs = root / "subs"
    for name, n_files in students.items():
        (subs / name).mkdir(parents=True)
        for i in range(n_files):
            (subs / name / f"f{i}.py").write_text(f"x = {i}\n")
    return subs


def _events(subs: Path) -> list[tuple[str, str, str, float, int]]:
    rows = [line.split() for line in (subs.parent / "events.txt").read_text().splitlines()]
    return [(phase, what, name, float(at), int(pid)) for phase, what, name, at, pid in rows]


def _assert_sealed_order(events) -> None:
    public = [at for phase, _, _, at, _ in events if phase == "public"]
    hidden_starts = [at for phase, what, _, at, _ in events if phase == "hidden" and what == "start"]
    assert hidden_starts and max(public) < min(hidden_starts), (
        f"a hidden phase started before a public one ended: {events}"
    )


def _graded(out: Path) -> dict[str, tuple]:
    with Gradebook(out / "gradebook.sqlite") as book:
        return {r.student: (round(r.score, 6), r.status, sorted(r.exercises.items())) for r in book.records()}


STUDENTS = {"a_slow": 6, "b": 2, "c": 4, "d_crash": 3, "e": 0}


def test_the_cluster_grades_as_the_process_pool(tmp_path, grader_python, monkeypatch):
    held = []
    close_public = cluster.Cluster.close_public

    def at_the_barrier(self, timeout_s):
        results = lambda: sorted(str(k) for k in self.client.futures if k != self._specs.key)  # noqa: E731
        deadline = time.monotonic() + 5.0  # the client drops a released future on its event loop, soon after
        while results() and time.monotonic() < deadline:
            time.sleep(0.05)
        held.append(results())
        close_public(self, timeout_s)

    monkeypatch.setattr(cluster.Cluster, "close_public", at_the_barrier)
    pool_subs = _batch(tmp_path / "pool", STUDENTS)
    pool = bulk.grade_all(pool_subs, tmp_path / "pool" / "out", workers=2, progress=False, python=grader_python)
    dask_subs = _batch(tmp_path / "dask", STUDENTS)
    start = time.perf_counter()
    dask = bulk.grade_all(dask_subs, tmp_path / "dask" / "out", progress=False, python=grader_python, cluster="local:2")
    took = time.perf_counter() - start
    assert (dask.graded, dask.failed) == (pool.graded, pool.failed) == (sorted(STUDENTS), ["d_crash"]), dask
    assert _graded(tmp_path / "dask" / "out") == _graded(tmp_path / "pool" / "out")
    for student in STUDENTS:
        for name in ("results.json", "feedback.md", "feedback_instructor.md"):
            local = (tmp_path / "pool" / "out" / student / name).read_text()
            remote = (tmp_path / "dask" / "out" / student / name).read_text()
            if name.endswith(".json"):  # the stand-in writes it in its own layout, the coordinator in the grader's
                local, remote = json.loads(local), json.loads(remote)
            assert remote == local, f"{student}/{name} differs between the pool and the cluster"
        log = (tmp_path / "dask" / "out" / student / "grader.log").read_text()
        assert f"grading {student} (public)" in log, f"the coordinator writes the worker's log: {log!r}"
        if student != "d_crash":
            assert f"grading {student} (hidden)" in log, log
    assert (
        "without writing its sealed public phase"
        in (tmp_path / "dask" / "out" / "d_crash" / "results.json").read_text()
    )
    assert held == [[]], f"the cluster still held results at the barrier (a lost worker would rerun them): {held}"
    events = _events(dask_subs)
    _assert_sealed_order(events)
    ran_in = {pid for *_, pid in events}
    assert os.getpid() not in ran_in and len(ran_in) == 2, f"every grader runs under one of the two workers: {ran_in}"
    print(f"grade-all --cluster local:2, {len(STUDENTS)} students: {took:.1f} s")


def test_a_killed_worker_costs_a_rerun_not_a_grade(tmp_path, grader_python):
    students = {"a_slow": 6, "b_killpublic": 5, "c": 1, "d_killhidden": 4, "e_slow": 2}
    subs = _batch(tmp_path, students)
    out = tmp_path / "out"
    report = bulk.grade_all(subs, out, progress=False, python=grader_python, cluster="local:2", sealed=True)
    assert report.graded == sorted(students) and report.failed == [], report
    scores = {r.student: r.score for r in report.records}
    assert scores == {name: float(min(n, 6)) for name, n in students.items()}, scores
    events = _events(subs)
    _assert_sealed_order(events)
    starts = [(phase, name, pid) for phase, what, name, _, pid in events if what == "start"]
    killed_public = [pid for phase, name, pid in starts if (phase, name) == ("public", "b_killpublic")]
    killed_hidden = [pid for phase, name, pid in starts if (phase, name) == ("hidden", "d_killhidden")]
    assert len(killed_public) == 2 and len(killed_hidden) == 2, f"each killed phase is run once more: {starts}"
    assert len({pid for *_, pid in starts}) >= 3, "the killed workers were replaced by new worker processes"


def test_unsealed_batch_on_the_cluster(tmp_path, grader_python):
    subs = _batch(tmp_path, {"a": 6, "b": 3})
    report = bulk.grade_all(
        subs, tmp_path / "out", progress=False, python=grader_python, cluster="local:1", sealed=False
    )
    assert {r.student: r.score for r in report.records} == {"a": 6.0, "b": 3.0}, report
    assert {phase for phase, *_ in _events(subs)} == {"both"}


# ---------------------------------------------------------------------------------------------
# Without a cluster.


def _sealed_state(state: Path) -> str:
    phases.prepare(state)
    (state / "submission" / "ex01.py").write_text("x = 1\n")
    body = json.dumps({"n": 1}).encode()
    (state / "public.json").write_bytes(body)
    seal = hashlib.sha256(body).hexdigest()
    (state / "seal").write_text(seal)
    return seal


def test_a_state_packs_and_unpacks_whole_and_nothing_leaves_it(tmp_path):
    seal = _sealed_state(tmp_path / "state")
    (tmp_path / "state" / "submission" / "empty").mkdir()
    (tmp_path / "state" / "link").symlink_to("/etc/passwd")
    packed = cluster.pack_state(tmp_path / "state")
    assert "link" not in dict(packed), "links are never packed"
    cluster.unpack_state(packed, tmp_path / "copy")
    assert phases.read_seal(tmp_path / "copy") == seal == phases.state_digest(tmp_path / "copy")
    assert (tmp_path / "copy" / "submission" / "ex01.py").read_text() == "x = 1\n"
    assert (tmp_path / "copy" / "submission" / "empty").is_dir()
    assert (tmp_path / "copy").stat().st_mode & 0o777 == 0o700
    for i, bad in enumerate(("../escape", "/etc/x", "a/../../b", "")):
        with pytest.raises(ValueError):
            cluster.unpack_state(((bad, b"x"),), tmp_path / f"bad{i}")
        assert not (tmp_path / "escape").exists()


def test_a_state_that_arrives_changed_is_never_graded(tmp_path):
    seal = _sealed_state(tmp_path / "state")
    packed = dict(cluster.pack_state(tmp_path / "state"))
    sub = Submission("alice", tmp_path / "alice")
    (tmp_path / "states").mkdir()
    good = cluster.Returned(None, b"log\n", seal, 1.5, tuple(packed.items()))
    first = cluster._received_public(tmp_path / "out", Job(sub, "h", tmp_path / "states" / "s0"), good)
    assert isinstance(first, Sealed) and first.seal == seal and first.state == tmp_path / "states" / "s0"
    assert (tmp_path / "out" / "alice" / "grader.log").read_bytes() == b"log\n"
    packed["public.json"] = b'{"n": 6}'
    changed = cluster.Returned(None, b"", seal, 1.5, tuple(packed.items()))
    second = cluster._received_public(tmp_path / "out", Job(sub, "h", tmp_path / "states" / "s1"), changed)
    assert isinstance(second, Graded) and second.grader_failed
    assert "did not arrive intact" in json.dumps(second.results)


def test_a_public_task_runs_no_grader_once_the_gate_is_closed(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(cluster, "_gate_closed", lambda gate: seen.append(cluster.running_public(gate)) or True)
    monkeypatch.setattr(cluster, "grade_public", lambda *a, **k: pytest.fail("a grader ran after the barrier"))
    sub = Submission("alice", tmp_path)
    assert cluster.public_task((sub, None), "g1", "fp", 10.0, sys.executable, None) is None
    assert seen == [1], "a public task counts itself as running before it reads the gate"
    assert cluster.running_public("g1") == 0


def test_the_barrier_waits_for_public_tasks_still_running(monkeypatch):
    counts = iter([{"w1": 1, "w2": 0}, {"w1": OSError("busy"), "w2": 0}, {"w1": 0, "w2": 0}])
    calls = []

    class FakeClient:
        def run(self, fn, gate, on_error):
            calls.append((fn, gate))
            return next(counts)

    class FakeEvent:
        def __init__(self, name, client):
            self.name = name

        def set(self):
            calls.append(("set", self.name))

    import distributed

    monkeypatch.setattr(distributed, "Event", FakeEvent)
    monkeypatch.setattr(cluster, "GATE_POLL_S", 0.01)
    where = cluster.Cluster(FakeClient())
    where.gate = "g2"
    where.close_public(timeout_s=5.0)
    assert calls[0] == ("set", "g2") and len(calls) == 4, "the gate is closed first, then polled until no task runs"


def test_a_task_lost_on_every_worker_fails_only_its_student(tmp_path):
    """What a Dask future raises once its retries are spent (KilledWorker: the task's workers all died) is
    the student's grade-all failure, graded again by the next run; the other students are graded."""

    class KilledWorker(Exception):
        pass

    class Pool:
        def __init__(self):
            self.shipped = []

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def submit(self, fn, shipped):
            self.shipped.append(shipped)
            future: Future = Future()
            if shipped == "bob":
                future.set_exception(KilledWorker("all 4 workers that ran it died"))
            else:
                future.set_result(fn(shipped))
            return future

    pool = Pool()
    remote = cluster.Remote(lambda: pool, lambda name: f"graded {name}", lambda job: job.sub.student, lambda job, r: r)
    done = {}
    jobs = [Job(Submission(name, tmp_path / name), "digest") for name in ("alice", "bob", "carol")]
    local = lambda job: pytest.fail("a job with a remote runs on the cluster")  # noqa: E731
    batch = bulk.Batch(tmp_path, 1, 60.0, False, sys.executable, None)
    bulk._each_in_pool(jobs, local, lambda job, r: done.update({job.sub.student: r}), "x", batch, remote)
    assert pool.shipped == ["alice", "bob", "carol"]
    assert done["alice"] == "graded alice" and done["carol"] == "graded carol"
    assert isinstance(done["bob"], Graded) and done["bob"].grader_failed
    assert "KilledWorker: all 4 workers that ran it died" in json.dumps(done["bob"].results)


def test_a_worker_that_cannot_grade_refuses(tmp_path, monkeypatch):
    sub = Submission("alice", tmp_path / "nowhere")
    fingerprint = cluster.grader_fingerprint()
    with pytest.raises(FileNotFoundError, match="does not see"):
        cluster._check_worker(sub, sys.executable, fingerprint, needs_submission=True)
    cluster._check_worker(sub, sys.executable, fingerprint, needs_submission=False)  # the hidden phase reads the state
    with pytest.raises(FileNotFoundError, match="no interpreter"):
        cluster._check_worker(sub, str(tmp_path / "python9"), fingerprint, needs_submission=False)
    with pytest.raises(RuntimeError, match="another grader"):
        cluster._check_worker(sub, sys.executable, "not this checkout", needs_submission=False)


def test_local_addresses():
    assert cluster.local_workers("local:3") == 3 and cluster.local_workers("tcp://scheduler.example:8786") is None
    for bad in ("local:0", "local:x", "local:"):
        with pytest.raises(ValueError):
            cluster.local_workers(bad)


@pytest.mark.slow  # the real grader (ex01, ex02), four submissions graded twice: 6.5 s on a quiet machine
def test_the_real_grader_on_the_cluster_grades_as_the_process_pool(tmp_path):
    import shutil

    from autograder.authoring.wrong_fixtures import materialise
    from autograder.core.manifest import BY_ID, ROOT

    exercises = ["ex01", "ex02"]
    subs = tmp_path / "subs"
    for name, source in (("key", "solutions"), ("stubs", "assignments"), ("gib", "solutions"), ("tokens", "solutions")):
        (subs / name).mkdir(parents=True)
        for ex in exercises:
            shutil.copyfile(ROOT / source / BY_ID[ex].filename, subs / name / BY_ID[ex].filename)
    materialise("ex01_gib", subs / "gib")
    materialise("ex02_fractional_tokens", subs / "tokens")
    pool = bulk.grade_all(subs, tmp_path / "pool", workers=2, progress=False, exercises=exercises)
    dask = bulk.grade_all(subs, tmp_path / "dask", progress=False, exercises=exercises, cluster="local:2")
    assert pool.failed == dask.failed == [], (pool.failed, dask.failed)
    assert _graded(tmp_path / "dask") == _graded(tmp_path / "pool")
    scores = {r.student: r.score for r in dask.records}
    points = BY_ID["ex01"].points + BY_ID["ex02"].points
    assert scores["key"] == pytest.approx(points) and scores["stubs"] == pytest.approx(0), scores
    assert 0 < scores["gib"] < points and 0 < scores["tokens"] < points, scores
    for student in ("key", "gib"):
        texts = [(tmp_path / route / student / "feedback.md").read_text() for route in ("pool", "dask")]
        assert texts[0] == texts[1], f"{student}'s feedback differs between the pool and the cluster"


def test_a_barrier_that_cannot_close_fails_each_sealed_student_and_runs_no_hidden_phase(
    tmp_path, grader_python, monkeypatch
):
    """When the cluster cannot confirm that no public task still runs (a hung or unreachable worker), no hidden
    phase starts, and each student sealed so far gets the batch's own failure in a valid results.json instead of
    the batch ending without writing (a red-team pass found the barrier's RuntimeError uncaught)."""

    def hung(self, timeout_s):
        raise RuntimeError("public phases still running on ['tcp://w1']: no hidden phase is started")

    monkeypatch.setattr(cluster.Cluster, "close_public", hung)
    subs = _batch(tmp_path, {"a": 6, "b": 3})
    report = bulk.grade_all(subs, tmp_path / "out", progress=False, python=grader_python, cluster="local:1")
    assert sorted(report.failed) == ["a", "b"], report
    assert {phase for phase, *_ in _events(subs)} == {"public"}, "no hidden phase may run past a failed barrier"
    for student in ("a", "b"):
        results = json.loads((tmp_path / "out" / student / "results.json").read_text())
        assert abs(results["score"]) < 1e-9 and "grade-all itself failed" in json.dumps(results), results
