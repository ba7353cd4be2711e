"""The proof "gradescope_container" (issue 28, item 4): the Gradescope zip, run as Gradescope runs it, in the
emulated Gradescope container (tests/gradescope_container.py: podman + runc on an Ubuntu 22.04 root filesystem
with its python3 3.10, as root, Docker's 14 default capabilities and moby's default seccomp profile, so no
namespaces and no bubblewrap), grades the answer key 100, the stubs 0 and a wrong fixture as the in-repo
grader does, and the attacks get nothing, on the rung the results name.

- The image: the zip (`autograder.packaging.build`) unpacked into a host folder laid out as /autograder
  (source/, submission/, results/, run_autograder beside them) and bound at /autograder; setup.sh runs in the
  container and makes /autograder/venv with the image's python3 from a wheelhouse of Python 3.10 wheels
  (PIP_NO_INDEX, A2_TORCH_INDEX_URL empty: PyPI's Linux torch; the wheelhouse is downloaded from PyPI by the
  image's own pip, once, into .cache/wheelhouse-py310, about 3 GB).
- One fresh container per submission, as on Gradescope: the files copied into submission/, then a driver in
  the container (the image's python3) opens listeners on the container's 127.0.0.1 (a test port, passed as
  A2_TEST_PORT, and for the Dask attack a stand-in scheduler on Dask's port 8786), runs
  /autograder/run_autograder, and reports what the listeners heard, whether the planted paths exist in the
  container, and the container's peak memory; results/results.json is read on the host afterwards, and every
  file under the root is compared with before the run. This machine's sandbox-uid lock folder is bound in
  (A2_UID_LOCK_DIR: graders running here share the container's uids, see `host_uid_locks`).
- In the default container (Landlock allowed, as by Docker 23+ on kernel 5.13+) the rung is "landlock"; with
  landlock=False (an older Docker or kernel: landlock_* answer ENOSYS) it is "seccomp-uid", which holds
  because run_autograder makes source/ private to root.

The attacks are autograder/fixtures/adversarial/: read_hidden (source/ and the stored expected values),
network_probe (the listener), write_outside (results/, source/, the venv, run_autograder, the submission
folder, /tmp/planted ...), background_process (a sleeper in a new session, a late writer of a fake result),
fill_disk (every folder it can name), dask_scheduler (the stand-in scheduler: the Gradescope venv has no dask,
see `test_image_builds_with_setup_sh`) and fork_memory (8 processes of 640 MiB in a container of 5 GiB: the
grader must survive and write results.json), each as ex02's file beside the answer key's other nine files.
After every run the driver lists the container's processes (when run_autograder ends and LINGER_S later) and
the planted paths; `check_root_unchanged` requires none.

Skips only where the harness says it cannot run (not root, no podman and no way to install it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from autograder.authoring.wrong_fixtures import FIXTURES, materialise
from autograder.core.manifest import BY_ID, EXERCISES, ROOT
from autograder.packaging import build
from hetero.impl import load_module_from_path

gc = load_module_from_path(Path(__file__).with_name("gradescope_container.py"), "_a2_gradescope_container")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

SCHEMA = json.loads((ROOT / "autograder" / "schema" / "gradescope_results.schema.json").read_text())
SCORE_TOL = 1e-6  # scores are sums of rounded case points
WHEELHOUSE = ROOT / ".cache" / "wheelhouse-py310"  # shared with tests/test_build.py's gradescope_layout proof
ADVERSARIAL = ROOT / "autograder" / "fixtures" / "adversarial"
ATTACKED = BY_ID["ex02"]  # every attack file is written as ex02's file
STAFF = "grading environment (staff only)"
MEMORY = "5g"  # the container's memory limit for the memory attack (the docs' advice to Gradescope users)
DASK_PORT = 8786  # Dask's default scheduler port
# where the attacks plant files in the container itself (not under the bound /autograder): write_outside's,
# background_process's late fake result, fill_disk's blocks (glob patterns)
UID_LOCKS_IN_CONTAINER = "/run/a2-host"  # A2_UID_LOCK_DIR in the container: see `host_uid_locks`
CONTAINER_PLANTS = ("/tmp/planted", "/var/tmp/a2-planted", "/dev/shm/a2-planted", "/root/a2-planted")
LATE_PLANTS = ("/tmp/results.json", *(f"{folder}/a2-fill-*" for folder in ("/tmp", "/var/tmp", "/dev/shm", "/root")))
LINGER_S = 5  # the driver looks for processes and planted files this long after run_autograder ends

# Runs in the container (the image's python3, as root): listeners on 127.0.0.1, then run_autograder as
# Gradescope runs it, then one JSON line with what happened.
DRIVER = r"""
import glob, json, os, socket, subprocess, sys, threading, time
spec = json.loads(sys.argv[1])
heard, ports = {}, {}
def listen(name, port):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", port))
    server.listen(16)
    heard[name] = []
    def serve():
        while True:
            conn, _ = server.accept()
            conn.settimeout(2)
            try:
                data = conn.recv(200)
            except OSError:
                data = b""
            heard[name].append(data.decode("latin-1") or "<connected, nothing sent>")
            conn.close()
    threading.Thread(target=serve, daemon=True).start()
    ports[name] = server.getsockname()[1]
for name, port in spec["listeners"].items():
    listen(name, port)
env = dict(os.environ, **spec["env"])
if "test" in ports:
    env["A2_TEST_PORT"] = str(ports["test"])
def planted():
    return sorted({p for pattern in spec["watch"] for p in glob.glob(pattern)})
def running():
    # every live process of the container but this driver and PID 1 (the container's init, if any)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in (os.getpid(), 1):
            continue
        try:
            state = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[0]
            uid = next(line.split()[1] for line in open(f"/proc/{entry}/status") if line.startswith("Uid:"))
            cmd = open(f"/proc/{entry}/cmdline", "rb").read().replace(b"\0", b" ").decode("latin-1")[:200]
        except (OSError, IndexError, StopIteration):
            continue
        if state not in "ZX":
            found.append([int(entry), int(uid), cmd])
    return found
before = planted()
start = time.monotonic()
done = subprocess.run(["/autograder/run_autograder"], cwd="/autograder", env=env, capture_output=True, text=True)
seconds = time.monotonic() - start
left_at_end = running()
time.sleep(spec["linger_s"])  # a late connection, a late write, a late process still count
peak = None
for path in ("/sys/fs/cgroup/memory/memory.max_usage_in_bytes", "/sys/fs/cgroup/memory.peak"):
    try:
        peak = int(open(path).read())
        break
    except (OSError, ValueError):
        pass
print(json.dumps({"status": done.returncode, "seconds": seconds, "heard": heard, "ports": ports,
                  "planted_before": before, "planted_after": planted(), "left_at_end": left_at_end,
                  "left_later": running(), "peak_bytes": peak, "stdout": done.stdout[-6000:],
                  "stderr": done.stderr[-3000:]}))
"""


@dataclasses.dataclass(frozen=True)
class Image:
    """The /autograder root after setup.sh, on the host, and what the build printed."""

    root: Path
    setup_seconds: float
    setup_stdout: str
    python: str
    has_distributed: bool
    wheelhouse_seconds: float


@dataclasses.dataclass(frozen=True)
class Graded:
    """One submission graded in its own container."""

    results: dict
    driver: dict  # the driver's report (listeners, planted paths, peak memory, run_autograder's output)
    container_seconds: float
    changed: list[str]  # files under the root created, removed or changed by the run, beyond the grader's own

    @property
    def text(self) -> str:
        return json.dumps(self.results) + self.driver["stdout"] + self.driver["stderr"]


def _gradescope_root(zip_path: Path, root: Path) -> Path:
    """As Gradescope unpacks an autograder: source/ (the zip), submission/, results/, run_autograder beside them."""
    (root / "submission").mkdir(parents=True)
    (root / "results").mkdir()
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
    for entry in ("setup.sh", "run_autograder"):  # zipfile does not restore permissions
        (root / "source" / entry).chmod(0o755)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    return root


def _download_wheelhouse(zip_path: Path, scratch: Path) -> float:
    """Every wheel setup.sh installs, for the image's python3 (3.10), downloaded from PyPI by the image's own
    pip into WHEELHOUSE (files already there are kept); returns the seconds it took."""
    reqs = scratch / "reqs"
    with zipfile.ZipFile(zip_path) as zf:
        for name in ("requirements.txt", "requirements-torch.txt"):
            zf.extract(name, reqs)
    WHEELHOUSE.mkdir(parents=True, exist_ok=True)
    mounts, env = gc.host_pip_settings()
    mounts += [gc.Mount(WHEELHOUSE, "/wheelhouse"), gc.Mount(reqs, "/reqs", read_only=True)]
    pip = ["python3", "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--dest", "/wheelhouse"]
    run = gc.run_in_container(
        [*pip, "-r", "/reqs/requirements.txt", "-r", "/reqs/requirements-torch.txt"],
        mounts=mounts,
        env=env,
        timeout_s=3000,
    )
    assert run.returncode == 0 and not run.timed_out, (
        f"downloading the Python 3.10 wheels in the container failed (exit {run.returncode}):\n"
        f"{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    )
    return run.seconds


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> Iterator[Image]:
    reason = gc.missing_for_container()
    if reason:
        pytest.skip(reason)
    gc.ensure_rootfs()
    scratch = tmp_path_factory.mktemp("gsp")
    zip_path = scratch / "autograder.zip"
    build.build(zip_path)
    wheelhouse_seconds = _download_wheelhouse(zip_path, scratch)
    top = Path(tempfile.mkdtemp(prefix="a2-gradescope-container-"))
    top.chmod(0o755)
    try:
        root = _gradescope_root(zip_path, top / "autograder")
        env = {"A2_TORCH_INDEX_URL": "", "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/wheelhouse"}
        setup = gc.run_in_container(
            ["bash", "/autograder/source/setup.sh"],
            mounts=[gc.Mount(root, "/autograder"), gc.Mount(WHEELHOUSE, "/wheelhouse", read_only=True)],
            env=env,
            workdir="/autograder/source",
            timeout_s=3000,
        )
        assert setup.returncode == 0 and not setup.timed_out, (
            f"setup.sh failed in the container (exit {setup.returncode}):\n{setup.stdout[-4000:]}\n{setup.stderr[-4000:]}"
        )
        probe = gc.run_in_container(
            [
                "/autograder/venv/bin/python",
                "-c",
                "import importlib.util, platform; "
                "print(platform.python_version(), importlib.util.find_spec('distributed') is not None)",
            ],
            mounts=[gc.Mount(root, "/autograder", read_only=True)],
            network=False,
            timeout_s=300,
        )
        assert probe.returncode == 0, f"the venv's python does not start: {probe.stderr[-2000:]}"
        version, distributed = probe.stdout.split()
        yield Image(root, setup.seconds, setup.stdout, version, distributed == "True", wheelhouse_seconds)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def host_uid_locks() -> Path:
    """This machine's sandbox-uid lock folder (made private to root if no grader has made it yet).

    Why the container needs it: it shares this machine's uids (no user namespace, as in Docker), and this
    machine's PID namespace is the parent of the container's, so a grader running here (another test, another
    session) that ends one of its sandbox uids (kill(-1) as that uid) also kills the container's children that
    hold the same uid. Bound in with A2_UID_LOCK_DIR (made for graders in containers on one host), the
    container's grader takes its uids from the same locks as every grader here. On Gradescope a container is
    alone in its PID namespace and needs none of this."""
    from autograder.runtime.sandbox import users

    users.UID_LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    return users.UID_LOCK_DIR


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _snapshot(root: Path) -> dict[str, str]:
    """Every file and link under the root: contents (sha256) outside the venv, size and mtime inside it (5 GB)."""
    state: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                state[rel] = "-> " + os.readlink(path)
            elif rel.startswith("venv/"):
                st = path.stat()
                state[rel] = f"{st.st_size} {st.st_mtime_ns}"
            else:
                state[rel] = _digest(path)
    return state


def _graders_own(root: Path, rel: str) -> bool:
    """What run_autograder itself writes: results.json, grader.log, and bytecode of the source it imports (as
    root: a .pyc owned by uid 0 beside its .py)."""
    if rel in ("results/results.json", "grader.log"):
        return True
    path = root / rel
    if path.parent.name == "__pycache__" and path.suffix == ".pyc" and path.exists():
        module = path.name.split(".", 1)[0]
        return path.stat().st_uid == 0 and (path.parent.parent / f"{module}.py").is_file()
    return False


def grade(
    image: Image,
    files: dict[str, Path],
    *,
    landlock: bool = True,
    listeners: dict[str, int] | None = None,
    env: dict[str, str] | None = None,
    memory: str | None = None,
) -> Graded:
    """`files` graded as Gradescope grades a submission: copied into a fresh submission/, results/ emptied,
    run_autograder in a container of its own (network as on Gradescope), results.json read afterwards."""
    root = image.root
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder)
        (root / folder).mkdir()
    (root / "grader.log").unlink(missing_ok=True)
    for name, src in files.items():
        shutil.copyfile(src, root / "submission" / name)
    before = _snapshot(root)
    spec = {
        "listeners": listeners or {"test": 0},
        "env": env or {},
        "watch": [*CONTAINER_PLANTS, *LATE_PLANTS],
        "linger_s": LINGER_S,
    }
    run = gc.run_in_container(
        ["python3", "-c", DRIVER, json.dumps(spec)],
        mounts=[gc.Mount(root, "/autograder"), gc.Mount(host_uid_locks(), f"{UID_LOCKS_IN_CONTAINER}/a2grader-uids")],
        env={"A2_UID_LOCK_DIR": UID_LOCKS_IN_CONTAINER},
        landlock=landlock,
        memory=memory,
        workdir="/autograder",
        timeout_s=1800,
    )
    lines = run.stdout.strip().splitlines()
    assert run.returncode == 0 and lines, (
        f"the container ended with exit {run.returncode} (137: killed, e.g. by the memory limit) before the "
        f"driver reported:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    )
    driver = json.loads(lines[-1])
    assert driver["status"] == 0, (
        f"run_autograder exited {driver['status']}:\n{driver['stdout'][-3000:]}\n{driver['stderr'][-2000:]}"
    )
    results_path = root / "results" / "results.json"
    assert results_path.is_file(), f"run_autograder wrote no results.json:\n{driver['stdout'][-3000:]}"
    results = json.loads(results_path.read_text())
    jsonschema.validate(results, SCHEMA)
    after = _snapshot(root)
    changed = sorted(
        rel
        for rel in set(before) | set(after)
        if before.get(rel) != after.get(rel) and not (rel in after and _graders_own(root, rel))
    )
    return Graded(results, driver, run.seconds, changed)


def files_of(folder: Path) -> dict[str, Path]:
    return {e.filename: folder / e.filename for e in EXERCISES}


def with_attack(attack: str) -> dict[str, Path]:
    """The answer key with ex02's file replaced by the attack."""
    return {**files_of(ROOT / "solutions"), ATTACKED.filename: ADVERSARIAL / attack / ATTACKED.filename}


def exercise_score(results: dict, ex_id: str) -> float:
    return sum(t["score"] for t in results["tests"] if t["name"].split(" ", 1)[0] == ex_id)


def staff_lines(results: dict) -> list[str]:
    entries = [t["output"] for t in results["tests"] if t["name"] == STAFF]
    assert len(entries) == 1, f"results.json must hold one '{STAFF}' entry (the grader's own), it holds {len(entries)}"
    return entries[0].splitlines()


def check_rung(graded: Graded, rung: str, what: str) -> str:
    """The staff entry names `rung` for every exercise it lists; returns the rung's text and how many of the
    exercises the entry lists (the grader clips the entry at OUTPUT_CHARS, which can drop the last ones)."""
    lines = [line for line in staff_lines(graded.results) if line.split(":", 1)[0] in BY_ID]
    assert lines, f"{what}: the staff entry names no exercise's isolation: {staff_lines(graded.results)}"
    wrong = [line[:120] for line in lines if f"rung: {rung}" not in line]
    assert not wrong, f"{what}: every exercise must have run on the rung '{rung}'; these did not: {wrong}"
    return f"{lines[0].split(': ', 1)[1].split(';', 1)[0]} (named for {len(lines)} of {len(EXERCISES)} exercises)"


def check_no_failure(graded: Graded, what: str) -> None:
    failures = [t["name"] for t in graded.results["tests"] if t["name"].startswith("autograder failed")]
    fallback = [t["name"] for t in graded.results["tests"] if t["name"] == "Autograder log (staff only)"]
    assert not failures and not fallback, (
        f"{what}: the grader failed ({failures or fallback}):\n{graded.results.get('output', '')[-2000:]}\n"
        f"{graded.driver['stdout'][-2000:]}"
    )


def check_attack_scores_nothing(graded: Graded, attack: str) -> None:
    """The attack's exercise scores 0, the nine key files their full points, the grader itself did not fail."""
    check_no_failure(graded, attack)
    assert exercise_score(graded.results, ATTACKED.id) == 0, (
        f"{attack} (as {ATTACKED.id}) must score 0, it scored {exercise_score(graded.results, ATTACKED.id)}"
    )
    want = 100 - ATTACKED.points
    assert abs(graded.results["score"] - want) < SCORE_TOL, (
        f"{attack}: the answer key's other nine files must keep their points ({want:g} in all), "
        f"the total is {graded.results['score']}:\n{graded.results['output'][-2000:]}"
    )


def check_root_unchanged(graded: Graded, attack: str) -> None:
    """Nothing under /autograder changed but the grader's own files, nothing planted in the container's shared
    folders, and no process of the run alive when run_autograder ended nor LINGER_S later."""
    assert graded.changed == [], (
        f"{attack}: files under /autograder were created, removed or changed by the run beyond the grader's "
        f"results.json, grader.log and bytecode: {graded.changed}"
    )
    planted = [p for p in graded.driver["planted_after"] if p not in graded.driver["planted_before"]]
    assert planted == [], f"{attack}: the run left these in the container: {planted}"
    for when in ("left_at_end", "left_later"):
        assert graded.driver[when] == [], (
            f"{attack}: processes (pid, uid, command) still ran in the container "
            f"{'when run_autograder ended' if when == 'left_at_end' else f'{LINGER_S} s after it ended'}: "
            f"{graded.driver[when]}"
        )


def report(label: str, what: str, graded: Graded, extra: str = "") -> None:
    print(
        f"[{label}] {what}: score {graded.results['score']:g}; run_autograder {graded.driver['seconds']:.1f} s "
        f"(container {graded.container_seconds:.1f} s, load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs)" + (f"; {extra}" if extra else "")
    )


LANDLOCK = pytest.mark.parametrize("landlock", [True, False], ids=["landlock", "no-landlock"])


def rung_of(landlock: bool) -> str:
    return "landlock" if landlock else "seccomp-uid"


@pytest.mark.proof("gradescope_container")
def test_image_builds_with_setup_sh(image: Image) -> None:
    """setup.sh made the venv with the image's python3 3.10, torch from the wheelhouse, and named the rung."""
    assert image.python.startswith("3.10."), f"the venv must run the image's Python 3.10, it runs {image.python}"
    out = image.setup_stdout
    assert "from pip's configured index" in out, f"torch must come from the wheelhouse (A2_TORCH_INDEX_URL=''):\n{out}"
    sandbox = [line for line in out.splitlines() if line.startswith("[setup] sandbox")]
    assert sandbox and "rung: landlock" in sandbox[0], (
        f"setup.sh must name the rung the image grades on ('landlock' in Docker's default container): {sandbox}"
    )
    assert not image.has_distributed, (
        "the Gradescope venv now has `distributed`: start a real scheduler (python -m distributed.cli.dask_scheduler) "
        "for test_dask_scheduler_hears_nothing instead of the TCP stand-in"
    )
    torch_line = next((line for line in out.splitlines() if line.startswith("[install_torch] torch==")), "")
    print(
        f"[image] Ubuntu 22.04 rootfs, venv python {image.python}; setup.sh {image.setup_seconds:.0f} s "
        f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
    )
    print(
        f"[image] wheelhouse (pip download in the container, cached in .cache/wheelhouse-py310): "
        f"{image.wheelhouse_seconds:.0f} s"
    )
    print(f"[image] {torch_line}")
    print(f"[image] {sandbox[0][:300]}")
    print(
        "[image] Dask: the venv has no `distributed` (locks/gradescope.txt has no dask): the scheduler is a TCP "
        f"listener on 127.0.0.1:{DASK_PORT} standing in for one"
    )


@pytest.mark.proof("gradescope_container")
@LANDLOCK
def test_key_scores_100_and_stubs_0(image: Image, landlock: bool) -> None:
    label, rung = rung_of(landlock), rung_of(landlock)
    key = grade(image, files_of(ROOT / "solutions"), landlock=landlock)
    check_no_failure(key, "answer key")
    assert abs(key.results["score"] - 100) < SCORE_TOL, (
        f"the answer key must score exactly 100 in the container ({label}), it scored {key.results['score']}:\n"
        f"{key.results['output'][-3000:]}"
    )
    named = check_rung(key, rung, "answer key")
    check_root_unchanged(key, "answer key")
    report(label, "answer key", key, named)
    stubs = grade(image, files_of(ROOT / "assignments"), landlock=landlock)
    check_no_failure(stubs, "stubs")
    assert abs(stubs.results["score"]) < SCORE_TOL, (
        f"the unfilled stubs must score 0, they scored {stubs.results['score']}"
    )
    check_rung(stubs, rung, "stubs")
    report(label, "stubs", stubs)


@pytest.mark.proof("gradescope_container")
def test_wrong_fixture_scores_as_in_repo(image: Image, tmp_path: Path) -> None:
    from autograder.runtime.grader import grade_submission

    fixture = FIXTURES[0]
    files = files_of(ROOT / "solutions")
    files[fixture.filename] = materialise(fixture.name, tmp_path / "wrong")
    graded = grade(image, files)
    check_no_failure(graded, fixture.name)
    check_rung(graded, "landlock", fixture.name)
    local = tmp_path / "in_repo"
    local.mkdir()
    for name, src in files.items():
        shutil.copyfile(src, local / name)
    direct = grade_submission(local)
    assert abs(graded.results["score"] - direct["score"]) < SCORE_TOL, (
        f"{fixture.name}: the container gave {graded.results['score']}, the in-repo grader {direct['score']} on the "
        "same files"
    )
    assert graded.results["score"] < 100, f"{fixture.name} must lose points"
    report("landlock", f"wrong fixture {fixture.name}", graded, f"in-repo grader {direct['score']:g}")


@pytest.mark.proof("gradescope_container")
@LANDLOCK
def test_read_hidden_gets_nothing(image: Image, landlock: bool) -> None:
    graded = grade(image, with_attack("read_hidden"), landlock=landlock)
    check_attack_scores_nothing(graded, "read_hidden")
    check_rung(graded, rung_of(landlock), "read_hidden")
    assert "READ-OK" not in graded.text, f"read_hidden read protected files: {graded.results['output'][-2000:]}"
    output = graded.results["output"]
    for folder in ("autograder", "autograder/tests", "autograder/expected"):
        assert f"READ-DENIED /autograder/source/{folder} PermissionError" in output, (
            f"read_hidden must have tried /autograder/source/{folder} (the grader, the hidden cases, the stored "
            f"expected values) and been refused with PermissionError:\n{output[-2000:]}"
        )
    denied = output.count("READ-DENIED")
    check_root_unchanged(graded, "read_hidden")
    report(rung_of(landlock), "read_hidden", graded, f"{denied} reads refused (source/autograder: PermissionError)")


@pytest.mark.proof("gradescope_container")
@LANDLOCK
def test_network_probe_hears_nothing(image: Image, landlock: bool) -> None:
    graded = grade(image, with_attack("network_probe"), landlock=landlock)
    check_attack_scores_nothing(graded, "network_probe")
    check_rung(graded, rung_of(landlock), "network_probe")
    port = graded.driver["ports"]["test"]
    assert "NET-REACHED []" in graded.text and "NET-DENIED 127.0.0.1" in graded.text, (
        f"network_probe must have tried the listener on 127.0.0.1:{port} and been refused: "
        f"{graded.results['output'][-1500:]}"
    )
    assert graded.driver["heard"]["test"] == [], (
        f"the listener on the container's 127.0.0.1:{port} heard the student's code: {graded.driver['heard']}"
    )
    report(rung_of(landlock), "network_probe", graded, f"listener on 127.0.0.1:{port} heard nothing")


@pytest.mark.proof("gradescope_container")
@LANDLOCK
def test_write_outside_changes_nothing(image: Image, landlock: bool) -> None:
    graded = grade(image, with_attack("write_outside"), landlock=landlock)
    check_attack_scores_nothing(graded, "write_outside")
    check_rung(graded, rung_of(landlock), "write_outside")
    output = graded.results["output"]
    assert "PLANTED" not in graded.text and "A2-PTH-PLANTED-RAN" not in graded.text, (
        f"write_outside wrote outside its work folder: {output[-2000:]}"
    )
    denied = [line for line in output.splitlines() if line.startswith("PLANT-DENIED")]
    site = "/autograder/venv/lib/python3.10/site-packages"
    for target in (
        "/autograder/results/results.json",
        "/autograder/source/autograder/expected/ex02.json",
        f"{site}/a2-planted.pth",
        "/autograder/run_autograder",
        f"/autograder/submission/{ATTACKED.filename}",
        "/tmp/planted",
    ):
        assert any(line.split()[1] == target and line.split()[2] != "ENOENT" for line in denied), (
            f"write_outside must have tried {target} and been refused (not: absent): {output[-2500:]}"
        )
    assert "OWN-WRITE-DENIED" in output, (
        "its own work folder: a grading child on the host writes nothing (Landlock grants no write, seccomp-uid "
        f"refuses every write), so 'OWN-WRITE-DENIED' was expected:\n{output[-1500:]}"
    )
    check_root_unchanged(graded, "write_outside")
    report(
        rung_of(landlock),
        "write_outside",
        graded,
        f"{len(denied)} writes refused, nothing under /autograder or at {', '.join(CONTAINER_PLANTS)} changed",
    )


@pytest.mark.proof("gradescope_container")
@LANDLOCK
def test_background_process_leaves_nothing_running(image: Image, landlock: bool) -> None:
    """background_process starts a sleeper in a new session and a double-forked writer that, 3 s later, writes a
    fake results.json (its folder, /autograder/results, /tmp): none of them outlives ex02, so when
    run_autograder ends and LINGER_S later the container runs nothing of the grading's, and results.json is the
    grader's (check_root_unchanged)."""
    graded = grade(image, with_attack("background_process"), landlock=landlock)
    check_attack_scores_nothing(graded, "background_process")
    check_rung(graded, rung_of(landlock), "background_process")
    check_root_unchanged(graded, "background_process")
    assert graded.results["score"] < 100, "the fake results.json (score 100) must not be the one Gradescope reads"
    report(rung_of(landlock), "background_process", graded, f"no process left at the end nor {LINGER_S} s later")


@pytest.mark.proof("gradescope_container")
@LANDLOCK
def test_fill_disk_writes_nothing(image: Image, landlock: bool) -> None:
    """fill_disk writes 1 MiB blocks (up to 256 MiB per folder) into its working folder, home, TMPDIR and the
    container's /tmp, /var/tmp and /dev/shm: a grading child on the host writes nothing, so every folder gets
    0 bytes and no a2-fill-* file is left (check_root_unchanged)."""
    graded = grade(image, with_attack("fill_disk"), landlock=landlock)
    check_attack_scores_nothing(graded, "fill_disk")
    check_rung(graded, rung_of(landlock), "fill_disk")
    check_root_unchanged(graded, "fill_disk")
    filled = [line.split() for line in graded.results["output"].splitlines() if line.startswith("FILLED ")]
    assert len(filled) >= 4, f"fill_disk must have tried its folders: {graded.results['output'][-2000:]}"
    wrote = [(line[1], line[2]) for line in filled if len(line) < 3 or line[2] != "0"]
    assert wrote == [], f"fill_disk wrote (folder, bytes) {wrote}; a grading child on the host writes nothing"
    report(rung_of(landlock), "fill_disk", graded, f"0 bytes written in each of {len(filled)} folders")


@pytest.mark.proof("gradescope_container")
@LANDLOCK
def test_dask_scheduler_hears_nothing(image: Image, landlock: bool) -> None:
    scheduler = f"tcp://127.0.0.1:{DASK_PORT}"
    graded = grade(
        image,
        with_attack("dask_scheduler"),
        landlock=landlock,
        listeners={"test": 0, "dask": DASK_PORT},
        env={"DASK_SCHEDULER_ADDRESS": scheduler},  # as a grade-all --cluster grader would have it
    )
    check_attack_scores_nothing(graded, "dask_scheduler")
    check_rung(graded, rung_of(landlock), "dask_scheduler")
    assert "DASK-REACHED" not in graded.text and "DASK-RAN-ON-SCHEDULER" not in graded.text, (
        f"the student's code reached the scheduler: {graded.results['output'][-2000:]}"
    )
    assert f"DASK-DENIED {scheduler} tcp" in graded.results["output"], (
        f"dask_scheduler must have tried {scheduler} and been refused: {graded.results['output'][-1500:]}"
    )
    assert graded.driver["heard"] == {"test": [], "dask": []}, (
        f"a listener heard the student's code: {graded.driver['heard']}"
    )
    report(rung_of(landlock), "dask_scheduler", graded, f"stand-in scheduler on {scheduler} heard nothing")


@pytest.mark.proof("gradescope_container")
def test_fork_memory_in_a_5_gib_container(image: Image) -> None:
    """fork_memory in a container of 5 GiB (the memory the docs tell Gradescope users to choose): 8 processes of
    640 MiB each against ex02's cap. The container is not killed, the grader writes its own results.json (every
    other exercise full marks), ex02 is stopped at its memory limit, and the processes' last reported holdings
    stay within the cap plus the watchdog's slack (tests/test_sandbox_ladder.py's 256 MiB)."""
    graded = grade(image, with_attack("fork_memory"), memory=MEMORY)
    check_attack_scores_nothing(graded, "fork_memory")
    check_rung(graded, "landlock", "fork_memory")
    output = graded.results["output"]
    stop = f"the memory limit ({ATTACKED.memory_mib} MiB for all the processes of the exercise) was exceeded"
    assert stop in output, f"ex02 must be stopped at its memory limit: {output[-2000:]}"
    last: dict[str, int] = {}
    for pid, mib in re.findall(r"HOLD (\d+) (\d+)", output):
        last[pid] = int(mib)
    held = sum(last.values())
    assert len(last) >= 2, f"the attack must have forked (HOLD lines of 2+ processes): {output[-2000:]}"
    assert held <= ATTACKED.memory_mib + 256, (
        f"the {len(last)} processes reported holding {held} MiB together, above ex02's cap {ATTACKED.memory_mib} MiB "
        "plus 256 MiB of slack"
    )
    peak = graded.driver["peak_bytes"] or 0
    staff = next((line for line in staff_lines(graded.results) if line.startswith(ATTACKED.id)), "")
    memory_note = next((part.strip() for part in staff.split(";") if part.strip().startswith("memory")), "")
    report(
        "landlock",
        f"fork_memory (8 x 640 MiB against {ATTACKED.id}'s {ATTACKED.memory_mib} MiB, container --memory {MEMORY})",
        graded,
        f"stopped at the cap; {len(last)} processes last reported {held} MiB together; container peak "
        f"{peak / 2**20:.0f} MiB (cgroup v1 max_usage_in_bytes, page cache included); {memory_note}",
    )
