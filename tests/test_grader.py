"""The sandboxed grader: file discovery, exact points, feedback without leaks, results.json, failure paths.

Grading reads each exercise's public cases and its hidden cases stored as data with their expected
values (autograder/expected/); all of them are committed and drift-checked, so the tests grade
against the package itself and fail (never skip) when something is missing.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from autograder.authoring.wrong_fixtures import for_exercise
from autograder.core.cases import expected_values, public_cases
from autograder.core.manifest import BY_ID, ROOT, public_cases_in
from autograder.runtime import grader
from autograder.runtime import results as res
from autograder.runtime.sandbox import isolation, ladder, records, runner, users
from autograder.runtime.sandbox.limits import ChildReport, Limits
from hetero.checks import decode

SOLUTIONS = ROOT / "solutions"
SCORE_TOL = 1e-6  # scores are sums of rounded (1e-6) case points


def has_solution(ex_id: str) -> bool:
    ex = BY_ID[ex_id]
    return (SOLUTIONS / ex.filename).is_file() and public_cases_in(SOLUTIONS, ex_id).is_file()


def real_ready(ex_id: str) -> bool:
    ex = BY_ID[ex_id]
    return (
        has_solution(ex_id)
        and ex.hidden_cases_path.is_file()
        and (ROOT / "autograder" / "expected" / f"{ex_id}.json").is_file()
    )


WITH_SOLUTION = list(BY_ID)  # every exercise has an answer key; test_every_exercise_is_ready says so


def test_every_exercise_is_ready():
    """The answer key, public and hidden cases and stored expected values exist for every exercise."""
    missing = [e for e in BY_ID if not real_ready(e)]
    assert not missing, f"answer key, cases or stored expected values missing for {missing}: run `make release`"


def root_for(base: Path, ex_ids: list[str]) -> Path:
    """Where the cases and expected values live: the package itself (they are committed and drift-checked)."""
    missing = [e for e in ex_ids if not real_ready(e)]
    assert not missing, f"cases or stored expected values missing for {missing}: run `make release`"
    return ROOT


def submission_with(base: Path, ex_ids: list[str], nested: str = "upload/work") -> Path:
    folder = base / "submission"
    (folder / nested).mkdir(parents=True, exist_ok=True)
    for ex_id in ex_ids:
        shutil.copyfile(SOLUTIONS / BY_ID[ex_id].filename, folder / nested / BY_ID[ex_id].filename)
    return folder


def exercise_score(data: dict, ex_id: str) -> tuple[float, float]:
    tests = [t for t in data["tests"] if t["name"].split(" ", 1)[0] == ex_id]
    return sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)


def autograder_failures(data: dict) -> list[str]:
    return [t["name"] for t in data["tests"] if t["name"].startswith("autograder failed")]


_CHECKED_UIDS: set[int] = set()


def sandbox_survivors() -> list[int]:
    """Live processes of the sandbox uids this test process handed out since the previous call.

    Scoped so because other graders may run on the machine: they may hold any uid this process used
    and released earlier, but a uid released a moment ago is the last one a grader takes.
    """
    fresh = users.used_uids() - _CHECKED_UIDS
    _CHECKED_UIDS.update(fresh)
    return users.live_processes(fresh)


def tagged_processes(tag: str) -> list[int]:
    """Live processes (not zombies) whose environment carries A2_TEST_TAG=`tag`: the ones a grader run
    with that tag started, whatever uid they run as."""
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


@pytest.mark.slow  # the whole key graded once for the session (test-fast grades ex01 in the tests below)
@pytest.mark.parametrize("ex_id", WITH_SOLUTION)
def test_answer_key_scores_full_marks(ex_id, tmp_path, graded, key_submission, failed_cases):
    """Each exercise of the whole answer key graded once (the graded corpus), read per exercise; when it
    loses a point, the message names each case, its expected and returned value and the verdict."""
    data = graded(key_submission)
    res.write(data, tmp_path / "results.json")
    score, max_score = exercise_score(data, ex_id)
    assert not autograder_failures(data), data["tests"][-1]["output"]
    assert abs(max_score - BY_ID[ex_id].points) < SCORE_TOL, (
        f"{ex_id}: max score {max_score}, expected the manifest's {BY_ID[ex_id].points} points"
    )
    if abs(score - BY_ID[ex_id].points) >= SCORE_TOL:
        pytest.fail(
            f"the answer key scores {score} of {BY_ID[ex_id].points} on {ex_id} (`make release` should have "
            f"stopped on this: autograder.authoring.expected.key_losses); the cases it loses:\n"
            f"{failed_cases(key_submission, ex_id)}"
        )
    res.validate(json.loads((tmp_path / "results.json").read_text()))


def test_points_are_exact_and_one_entry_per_function_and_side(tmp_path):
    data = grader.grade_submission(submission_with(tmp_path, ["ex01"]), exercises=["ex01"], root=ROOT)
    ex = BY_ID["ex01"]
    public = [t for t in data["tests"] if t["name"].endswith("(public cases)")]
    hidden = [t for t in data["tests"] if t["name"].endswith("(hidden cases)")]
    functions = {c.func for c in public_cases("ex01")}
    assert len(public) == len(hidden) == len(functions), (
        f"expected one public and one hidden entry per function {sorted(functions)}, got {[t['name'] for t in data['tests']]}"
    )
    for test in data["tests"]:
        for key in ("score", "max_score"):
            assert round(test[key], 2) == test[key], f"{test['name']}: {key} {test[key]!r} is not an exact hundredth"
    cents = sum(round(t["max_score"] * 100) for t in public)
    assert cents == round(ex.points * ex.public_share * 100), "public entries must carry points * public_share"
    assert sum(round(t["max_score"] * 100) for t in hidden) == round(ex.points * 100) - cents
    assert data["score"] == ex.points, f"the answer key must score exactly {ex.points}, got {data['score']!r}"
    assert {t["visibility"] for t in public} == {ex.public_visibility}
    assert {t["visibility"] for t in hidden} == {ex.hidden_visibility}
    assert not [t for t in data["tests"] if "hidden cases: inputs" in t["name"]], (
        "by default no entry may show the hidden inputs and expected values"
    )
    assert all(t["number"].startswith(("1.", "2.")) for t in data["tests"]), [t["number"] for t in data["tests"]]
    staff = [t for t in data["tests"] if t["name"].startswith("grading environment")]
    assert len(staff) == 1 and staff[0]["visibility"] == "hidden" and "network" in staff[0]["output"]


def test_hidden_detail_entry_only_when_the_manifest_opts_in(tmp_path, monkeypatch):
    opted = dataclasses.replace(BY_ID["ex01"], hidden_detail_visibility="after_due_date")
    monkeypatch.setitem(grader.BY_ID, "ex01", opted)
    data = grader.grade_submission(submission_with(tmp_path, ["ex01"]), exercises=["ex01"], root=ROOT)
    detail = [t for t in data["tests"] if "hidden cases: inputs" in t["name"]]
    assert len(detail) == 1 and detail[0]["visibility"] == "after_due_date" and detail[0]["max_score"] == 0
    assert "expected:" in detail[0]["output"]


def test_missing_file_scores_zero_and_others_are_graded(tmp_path):
    other = next(e for e in WITH_SOLUTION if e != "ex01")
    root = root_for(tmp_path, ["ex01", other])
    data = grader.grade_submission(submission_with(tmp_path, ["ex01"]), exercises=["ex01", other], root=root)
    assert abs(exercise_score(data, "ex01")[0] - BY_ID["ex01"].points) < SCORE_TOL
    score, max_score = exercise_score(data, other)
    assert score == 0 and abs(max_score - BY_ID[other].points) < SCORE_TOL
    assert f"{BY_ID[other].filename} was not found" in data["output"]
    res.validate(data)


def test_zip_nested_duplicates_macosx_hidden_and_symlinks(tmp_path):
    root = root_for(tmp_path, ["ex01"])
    name = BY_ID["ex01"].filename
    good = (SOLUTIONS / name).read_text()
    archive = tmp_path / "upload.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"__MACOSX/a/{name}", "raise SystemExit('resource fork')")
        zf.writestr(f".hidden/{name}", "raise SystemExit('hidden copy')")
        zf.writestr(f"a/b/c/{name}", "def usd_per_gb(*a):\n    return -1.0\n")
        zf.writestr(f"a/{name}", good)
        zf.writestr("../evil.py", "x = 1")
    data = grader.grade_submission(archive, exercises=["ex01"], root=root)
    assert abs(exercise_score(data, "ex01")[0] - BY_ID["ex01"].points) < SCORE_TOL, (
        "the shallowest copy (the correct one) must be graded"
    )
    assert f"graded a/{name} (the shallowest), ignored a/b/c/{name}" in data["output"]
    link_folder = tmp_path / "linked"
    link_folder.mkdir()
    (link_folder / name).symlink_to(SOLUTIONS / name)
    data = grader.grade_submission(link_folder, exercises=["ex01"], root=root)
    assert exercise_score(data, "ex01")[0] == 0, "a symlink must not smuggle in a file from the grader's disk"


def _hidden_literals(ex_id: str) -> set[str]:
    """Texts that would give a hidden case away: its numeric inputs and expected values, as printed."""
    from autograder.core.cases import hidden_cases

    texts: set[str] = set()

    def walk(value):
        if isinstance(value, (list, tuple)):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif type(value) is float and value == value and not (value.is_integer() and abs(value) <= 100):
            # a small whole float (3.0 prints "3") says no more than a small int: every count in the text has it
            texts.update({repr(value), f"{value:.6g}"})
        elif type(value) is int and abs(value) > 100:
            texts.add(str(value))

    for case in hidden_cases(ex_id):
        walk(case.args)
        walk(dict(case.kwargs))
    for entry in expected_values(ex_id).values():
        walk(decode(entry["expect"]) if entry["expect"] is not None else None)
    return texts


@pytest.mark.slow
def test_wrong_fixture_feedback_names_mistake_and_hidden_entries_do_not_leak(wrong_dir):
    fixtures = [wrong_dir / f.name for f in for_exercise("ex01")]
    assert fixtures, "ex01 needs wrong fixtures"
    secrets = _hidden_literals("ex01")
    from autograder.core.cases import hidden_cases

    units = sorted({c.unit for c in [*public_cases("ex01"), *hidden_cases("ex01")] if c.unit}, key=len, reverse=True)
    named = 0
    for folder in fixtures:
        data = grader.grade_submission(folder, exercises=["ex01"], root=ROOT)
        res.validate(data)
        score, max_score = exercise_score(data, "ex01")
        assert score < max_score, f"wrong fixture {folder.name} got full marks"
        shown = [data["output"]] + [t["output"] for t in data["tests"] if t["visibility"] != "hidden"]
        fixed = [BY_ID["ex01"].title, *(f"hidden case {n} of " for n in range(1, 100)), *units]  # the grader's words
        for text in shown:
            for words in fixed:
                text = text.replace(words, "")
            text = re.sub(r"\(public \d+/\d+, hidden \d+/\d+ passed\)", "", text)
            leaked = sorted(s for s in secrets if re.search(rf"(?<![\d.]){re.escape(s)}(?![\d])", text))
            public_text = "".join(t["output"] for t in data["tests"] if t["name"].endswith("(public cases)"))
            leaked = [s for s in leaked if s not in public_text]  # also a public input: not a leak
            assert not leaked, f"{folder.name}: visible feedback shows hidden inputs or values {leaked[:5]}"
        hidden = [t for t in data["tests"] if t["name"].endswith("(hidden cases)")]
        assert all("got" not in t["output"].split("Likely mistake")[0] for t in hidden)
        named += sum("matches a known mistake" in t["output"] for t in hidden)
    assert named > 0, "no feedback named a known mistake for the ex01 wrong fixtures"


@pytest.mark.slow
def test_same_submission_graded_five_times_scores_identically(tmp_path):
    root = root_for(tmp_path, ["ex01"])
    folder = tmp_path / "partial"
    folder.mkdir()
    text = (
        (SOLUTIONS / BY_ID["ex01"].filename)
        .read_text()
        .replace("return price_usd / capacity_gb", "return price_usd / capacity_gb / 1.073741824")
    )
    (folder / BY_ID["ex01"].filename).write_text(text)
    runs = []
    for _ in range(5):
        data = grader.grade_submission(folder, exercises=["ex01"], root=root)
        runs.append(
            (
                data["score"],
                [
                    (t["name"], t["score"], t["status"], t["output"])
                    for t in data["tests"]
                    if t["name"] != "grading environment (staff only)"
                ],
            )
        )  # holds the child's uid
    assert 0 < runs[0][0] < BY_ID["ex01"].points, f"the partial submission should score partly, got {runs[0][0]}"
    assert all(run == runs[0] for run in runs), "five gradings of one submission differ"


def test_grader_failure_is_reported_and_valid(tmp_path, monkeypatch):
    root = root_for(tmp_path, ["ex01"])

    def broken(*args, **kwargs):
        raise RuntimeError("simulated grader bug")

    monkeypatch.setattr(grader, "grade_exercise", broken)
    data = grader.grade_submission(
        submission_with(tmp_path, ["ex01"]), tmp_path / "r.json", exercises=["ex01"], root=root
    )
    res.validate(json.loads((tmp_path / "r.json").read_text()))
    visible = [t for t in data["tests"] if t["visibility"] == "visible"]
    staff = [t for t in data["tests"] if t["visibility"] == "hidden"]
    assert visible[0]["name"].startswith("autograder failed") and "simulated grader bug" not in visible[0]["output"]
    assert "simulated grader bug" in staff[0]["output"], "the traceback must reach the staff-only entry"
    monkeypatch.setattr(res, "assemble", broken)
    data = grader.grade_submission(
        submission_with(tmp_path, ["ex01"]), tmp_path / "r2.json", exercises=["ex01"], root=root
    )
    res.validate(json.loads((tmp_path / "r2.json").read_text()))
    assert data["score"] == 0 and autograder_failures(data)


def test_cli_writes_results(tmp_path):
    assert real_ready("ex01"), "the CLI grades against the package's own cases: ex01's are missing"
    out = tmp_path / "out" / "results.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(submission_with(tmp_path, ["ex01"])),
            "--out",
            str(out),
            "--exercises",
            "ex01",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(out.read_text())
    res.validate(data)
    assert abs(data["score"] - BY_ID["ex01"].points) < SCORE_TOL


def test_sandbox_isolation_as_seen_from_inside(tmp_path):
    probe = tmp_path / "ex01_cost_per_gb.py"
    probe.write_text(
        "import os, resource\n"
        "print('UID', os.getuid(), os.getgid(), os.getgroups())\n"
        "try:\n"  # /proc/net/dev: no socket needed (the seccomp filter refuses them all but a socket pair)
        "    print('NET', sorted(line.split(':')[0].strip() for line in open('/proc/net/dev').readlines()[2:]))\n"
        "except OSError as exc:\n"
        "    print('NET', type(exc).__name__)\n"
        "print('AS', resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20)\n"
        "print('STDIN', repr(open(0).read()))\n"
        "print('ENV', sorted(os.environ))\n"
    )
    report = runner.run_exercise(probe, "ex01_cost_per_gb", [], 0, Limits(20, 20, 1024))
    out = report.output_all
    assert report.imported is True, out
    assert "AS 1024" in out, f"RLIMIT_AS should be 1024 MiB inside the child: {out}"
    assert "STDIN ''" in out, "student code must not see the control channel on stdin"
    if isolation.is_root():
        uid = int(out.split("UID ")[1].split()[0])
        assert uid in users.SANDBOX_UIDS and "[]" in out.split("UID ")[1].splitlines()[0], out
    if ladder.current().name == "bwrap":
        assert "NET ['lo']" in out, f"the child should only see a loopback device: {out}"
    assert "MAC" not in out and "KEY" not in out.upper().split("ENV")[1], "no secret in the environment"


def test_result_channel_lines_drop_an_oversized_record_once_and_keep_the_rest():
    """records.RecordLines splits the channel's bytes into lines however the pipe cuts them; a line over the
    limit comes out as one None (never held whole), and the lines around it are kept."""
    lines = records.RecordLines(limit_bytes=8)
    assert lines.feed(b"abc") == [], "a line without its newline is held, not returned"
    assert lines.feed(b"de\nfg") == [b"abcde"], "a line cut across two reads comes out whole"
    assert lines.feed(b"h\n123456789\nok\n") == [b"fgh", None, b"ok"], (
        "a 9-byte line with an 8-byte limit must come out as None between the lines around it"
    )
    assert lines.feed(b"x" * 20) == [] and len(lines.buffer) == 0, "an over-long partial line must not be kept"
    assert lines.feed(b"y" * 5) == [] and len(lines.buffer) == 0, "the rest of a dropped line is dropped"
    assert lines.feed(b"yy\nlast\n") == [None, b"last"], "a dropped line counts once, at its newline"
    assert lines.feed(b"\n") == [b""], "an empty line is a line (the channel refuses it as junk)"


def test_result_channel_refuses_forged_duplicate_and_out_of_order_records():
    specs = [
        {"id": f"ex01.f.{i}", "func": "f", "args": {"__tuple__": []}, "kwargs": {"__dict__": {}}, "harness": None}
        for i in range(3)
    ]
    report = ChildReport()
    run = records.Channel(specs, b"k" * 32, 2, report)

    def line(payload: dict, key: bytes = b"k" * 32) -> bytes:
        import hashlib
        import hmac

        data = json.dumps(payload).encode()
        return hmac.new(key, data, hashlib.sha256).hexdigest().encode() + b" " + data

    ok = {"value": 1.0, "error_type": None, "error_message": ""}
    run.record(line({"seq": -1, "kind": "import", "ok": True}))
    run.record(line({"seq": 0, "id": "ex01.f.0", "outcome": ok}, key=b"x" * 32))
    assert report.bad_records == 1 and not report.outcomes, "a record with a wrong MAC must be ignored"
    run.record(b"not even a record")
    run.record(line({"seq": 0, "id": "ex01.f.0", "outcome": ok}))
    assert "ex01.f.0" in report.outcomes and run.sent == 2
    run.record(line({"seq": 0, "id": "ex01.f.0", "outcome": ok}))
    assert "ex01.f.0" not in report.outcomes and "two result records" in report.refused["ex01.f.0"]
    run.record(line({"seq": 2, "id": "ex01.f.2", "outcome": ok}))
    assert "ex01.f.2" not in report.outcomes and "out of order" in report.refused["ex01.f.2"], (
        "a record for a case not yet sent must be refused"
    )
    assert report.bad_records == 2


def test_non_root_path_still_sandboxes(tmp_path, monkeypatch):
    root = root_for(tmp_path, ["ex01"])
    monkeypatch.setattr(isolation, "is_root", lambda: False)
    monkeypatch.setattr(isolation, "unreachable_folders", lambda: pytest.fail("no uid change, no reachability check"))
    data = grader.grade_submission(submission_with(tmp_path, ["ex01"]), exercises=["ex01"], root=root)
    assert abs(exercise_score(data, "ex01")[0] - BY_ID["ex01"].points) < SCORE_TOL, data["output"]
    assert not sandbox_survivors()


def test_results_schema_rejects_malformed_results():
    good = res.grader_failure("trace", 100.0)
    res.validate(good)
    for broken in (
        {**good, "tests": [{**good["tests"][0], "status": "ok"}]},
        {**good, "tests": [{**good["tests"][0], "visibility": "public"}]},
        {**good, "scroe": 1.0},
    ):
        with pytest.raises(jsonschema.ValidationError):
            res.validate(broken)


def test_results_written_atomically_over_a_planted_symlink(tmp_path):
    target = tmp_path / "victim.txt"
    target.write_text("do not touch")
    out = tmp_path / "results.json"
    os.symlink(target, out)
    res.write(res.grader_failure("trace", 100.0), out)
    assert target.read_text() == "do not touch" and not out.is_symlink()
    res.validate(json.loads(out.read_text()))


def test_malformed_notebook_scores_zero_with_a_clear_message(tmp_path):
    folder = submission_with(tmp_path, ["ex01"])
    (folder / "ex02_kv_capacity.ipynb").write_text("{ this is not a notebook", encoding="utf-8")
    data = grader.grade_submission(folder, exercises=["ex01", "ex02"])
    assert abs(exercise_score(data, "ex01")[0] - BY_ID["ex01"].points) < SCORE_TOL
    assert exercise_score(data, "ex02")[0] == 0
    assert "could not be read" in data["output"] and not autograder_failures(data)
    res.validate(data)


def test_too_deep_counts_nesting_and_skips_strings():
    # The result channel refuses records nested deeper than records.MAX_DEPTH before parsing them.
    from autograder.runtime.sandbox.records import MAX_DEPTH, too_deep

    def nested(depth: int) -> bytes:
        return ("[" * depth + "0" + "]" * depth).encode()

    assert not too_deep(nested(MAX_DEPTH)) and too_deep(nested(MAX_DEPTH + 1)), "the limit is inclusive"
    assert not too_deep(json.dumps({"s": "[" * 500, "t": '\\"[[' * 100}).encode()), "brackets in strings count not"
    assert not too_deep(json.dumps([[1.0, 2.0]] * 5000).encode()), "many shallow brackets are fine"
    assert too_deep(json.dumps({"a": [{"b": nested(100).decode()}, json.loads(nested(70))]}).encode())
