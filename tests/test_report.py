"""`python -m autograder report OUT_DIR --html report.html`: the instructor's page on a graded class.

The fast tests grade a class with a stand-in grader (a small script that behaves like `python -m
autograder grade` by copying the submission's `plan.json` to results.json). Each plan is a results.json
in the real grader's format for ex04, built here from the real case ids (`autograder/expected/ex04.json`):
one test per function and side, public lines `[passed] (pt) func: case id: ...`, hidden lines `hidden case
n of m (pt): ...`, known mistakes named with the grader's sentence. The page's numbers (read from the
data- attributes of its rows) are checked against the gradebook and against the plans.

The browser proof grades a small real class (the answer key, wrong fixtures, the stubs) with the real
grader, renders the page in headless Chromium, reads the numbers shown from the rendered DOM and keeps a
screenshot.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import unicodedata
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

import pytest

from autograder.__main__ import main as cli
from autograder.batch import bulk, report, report_data
from autograder.batch.gradebook import Gradebook
from autograder.core import safetext
from autograder.core.manifest import BY_ID, ROOT
from hetero.impl import load_module_from_path

STANDINS = load_module_from_path(Path(__file__).with_name("standins.py"), "_a2_standins")
FAKE_GRADER = textwrap.dedent('''\
    #!{python}
    """Stand-in for `python -m autograder grade SUB --out OUT`: SUB/plan.json is the results.json."""
    import hashlib, os, shutil, sys
    {public_phase}
    shutil.copyfile(sys.argv[4] + "/plan.json", sys.argv[6])
''')

LAYOUT = report.layouts()["ex04"]
MISTAKE = {name: desc for desc, name in LAYOUT.mistakes.items()}  # fixture name -> sentence
HIDDEN = {label: ids for label, ids in LAYOUT.hidden.items()}
PUBLIC = sorted(LAYOUT.case_ids - {i for ids in HIDDEN.values() for i in ids})
LINE_RATE = HIDDEN["line_rate_gb_per_s"]  # 12 hidden cases
EFFICIENCY = HIDDEN["link_efficiency"]
TRANSFER = HIDDEN["transfer_time_s"]
XSS = "<img src=x onerror=alert(1)>"
CONTROL_NAME = "Carol\x1b[2J\x1b]0;owned\x07\r\u202eC.\x9b31m"  # a display name that works a terminal


def known(name: str) -> str:
    return f"wrong value (unit: GB/s) (tolerance: exact). Your result matches a known mistake: {MISTAKE[name]}"


WRONG = "wrong value (unit: GB/s) (tolerance: exact). Likely mistake: check the units."
MISSING = "no result: ex04_nic_line_rate.py is not in your submission."


NOT_FOUND = "ex04_nic_line_rate.py was not found in your submission: 0 points for ex04."
NOT_IMPORTED = "no result: your file could not be imported (the error is shown with the first public case)"
IMPORT_NOTE = "ex04_nic_line_rate.py could not be imported (see the first test of ex04)."
TRACEBACK = (
    'Your file could not be imported:\nTraceback (most recent call last):\n  File "/sandbox/code/'
    'ex04_nic_line_rate.py", line 7\n    def line_rate_gb_per_s(:\n                           ^\n'
    "SyntaxError: invalid syntax\n"
)


def plan(fails: dict[str, str], secret: bool = True, note: str = "", first_lines: str = "") -> dict:
    """A results.json of ex04 in the grader's format: every case passes (0.1 pt) except `fails` (id -> message);
    `note`: the exercise's note in the summary (results.summary_line); `first_lines`: what the first public
    test's output starts with (an import error)."""
    tests = []
    groups = [(f, "public", [c for c in PUBLIC if c.split(".")[1] == f]) for f in HIDDEN]
    groups += [(f, "hidden", ids) for f, ids in HIDDEN.items()]
    for func, side, ids in groups:
        lines = []
        for n, cid in enumerate(ids, start=1):
            bad = fails.get(cid)
            if side == "public":
                lines.append(f"[{'FAILED' if bad else 'passed'}] (0.1 pt) {func}: {cid}: {bad or 'ok'}")
            else:
                lines.append(f"hidden case {n} of {len(ids)} (0.1 pt): {bad or 'passed.'}")
        earned = round(0.1 * sum(c not in fails for c in ids), 2)
        if first_lines and not tests:
            lines = [first_lines, *lines]
        tests.append(
            {
                "name": f"ex04 {func} ({side} cases)",
                "score": earned,
                "max_score": round(0.1 * len(ids), 2),
                "status": "passed" if earned == round(0.1 * len(ids), 2) else "failed",
                "output": "\n".join(lines),
                "visibility": "visible",
            }
        )
    if secret:  # the opt-in entry with hidden inputs, and the staff-only entry: never read by the report
        tests.append(
            {
                "name": "ex04 hidden cases: inputs, expected values and your results",
                "score": 0,
                "max_score": 0,
                "status": "failed",
                "output": "[FAILED] ex04.x\n  call: f(SECRET-INPUT)",
                "visibility": "after_due_date",
            }
        )
        tests.append(
            {
                "name": "grading environment (staff only)",
                "score": 0,
                "max_score": 0,
                "status": "passed",
                "output": "ex04: SECRET-ENV",
                "visibility": "hidden",
            }
        )
    score = round(sum(t["score"] for t in tests), 2)
    public = [c for c in PUBLIC]
    summary = (
        f"ex04 Transfer engine: NIC line rate, efficiency, transfer vs recompute: {score:g} / 6 (public "
        f"{sum(c not in fails for c in public)}/{len(public)}, hidden "
        f"{sum(c not in fails for ids in HIDDEN.values() for c in ids)}/{sum(map(len, HIDDEN.values()))} passed)"
    )
    output = f"Score: {score:g} / 6\n\n{summary}" + (f"\n     {note}" if note else "")
    return {"score": score, "output": output, "tests": tests}


@pytest.fixture(scope="module")
def fake_python(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("fake") / "fake_grader.py"
    path.write_text(FAKE_GRADER.format(public_phase=STANDINS.PUBLIC_PHASE, python=sys.executable))
    path.chmod(0o755)
    return str(path)


def submit(subs: Path, student: str, fails: dict[str, str]) -> None:
    folder = subs / student
    folder.mkdir(parents=True, exist_ok=True)
    extra = {"ghost1": {"note": NOT_FOUND}, "ghost2": {"note": IMPORT_NOTE, "first_lines": TRACEBACK}}
    (folder / "plan.json").write_text(json.dumps(plan(fails, **extra.get(student, {}))))


def _class() -> dict[str, dict[str, str]]:
    """20 students: a common failure (10 of them), known mistakes, rare failures shared or not, two missing."""
    students = {f"s{i:02d}": {} for i in range(11)}
    for i in range(10):
        students[f"s{i:02d}"][TRANSFER[0]] = WRONG  # common: 10 of 20
    for s in ("s00", "s01", "s02"):
        students[s].update({c: known("ex04_bits_as_bytes") for c in LINE_RATE})
    students["alice"] = {LINE_RATE[0]: known("ex04_bits_as_bytes"), EFFICIENCY[3]: WRONG, EFFICIENCY[4]: WRONG}
    students["bob"] = {LINE_RATE[0]: known("ex04_bits_as_bytes"), EFFICIENCY[3]: WRONG, EFFICIENCY[4]: WRONG}
    students["carol"] = {EFFICIENCY[5]: known("ex04_percent")}  # rare, alone
    students["dave"] = {EFFICIENCY[6]: known("ex04_percent")}  # rare, shared with erin, but erin has more
    students["erin"] = {EFFICIENCY[6]: known("ex04_percent"), EFFICIENCY[7]: WRONG}
    students[XSS] = {
        TRANSFER[5]: WRONG,
        "ex04.transfer_time_s.single_nic": "expected 1, got '<script>alert(1)</script>'",
    }
    students["frank"] = {TRANSFER[5]: WRONG, "ex04.transfer_time_s.single_nic": "expected 1, got 2"}
    students["ghost1"] = {c: MISSING for c in LAYOUT.case_ids}  # no file: not a shared answer
    students["ghost2"] = {c: NOT_IMPORTED for c in LAYOUT.case_ids}  # a syntax error: no result either
    return students


class Tags(HTMLParser):
    """Every start tag of a page with its attributes."""

    def __init__(self, page: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def of_class(self, cls: str) -> list[dict[str, str]]:
        return [a for _, a in self.tags if cls in a.get("class", "").split()]


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory, fake_python) -> tuple[Path, Tags, str]:
    """The class graded (twice: s09 and s10 resubmit) and its page: the gradebook, the parsed page, its text."""
    tmp_path = tmp_path_factory.mktemp("class")
    subs, out = tmp_path / "subs", tmp_path / "graded"
    for student, fails in _class().items():
        submit(subs, student, fails)
    bulk.grade_all(subs, out, workers=2, progress=False, python=fake_python)
    submit(subs, "s10", {PUBLIC[0]: WRONG, PUBLIC[1]: WRONG})  # s10 resubmits, worse
    submit(subs, "s09", {})  # s09 fixes the common failure
    bulk.grade_all(subs, out, workers=2, progress=False, python=fake_python)
    with Gradebook(out / "gradebook.sqlite") as book:
        book.set_identity("alice", "<b>Alice</b> A.", "alice@example.edu")
        book.set_identity("carol", CONTROL_NAME, "carol@example.edu")
    page_path = tmp_path / "report.html"
    assert cli(["report", str(out), "--html", str(page_path)]) == 0
    page = page_path.read_text(encoding="utf-8")
    return out, Tags(page), page


def test_score_table_matches_the_gradebook(graded_class):
    out, tags, page = graded_class
    with Gradebook(out / "gradebook.sqlite", read_only=True) as book:
        records = list(book.records())
    rows = {r["data-exercise"]: r for r in tags.of_class("score-row")}
    assert sorted(rows) == ["ex04", "total"], f"only the graded exercise and the total are shown: {sorted(rows)}"
    for ex, row in rows.items():
        scores = [r.score if ex == "total" else r.exercises["ex04"][0] for r in records]
        top = max(r.max_score if ex == "total" else r.exercises["ex04"][1] for r in records)
        want = {
            "mean": statistics.fmean(scores),
            "median": statistics.median(scores),
            "min": min(scores),
            "max": max(scores),
            "max-score": top,
        }
        for key, value in want.items():
            assert float(row[f"data-{key}"]) == pytest.approx(value, abs=0.006), (ex, key, row, value)
        assert int(row["data-zero"]) == sum(s <= 1e-9 for s in scores) == 2, (ex, row)  # the two missing files
        assert int(row["data-full"]) == sum(s >= top - 1e-9 for s in scores) == 1, (ex, row)  # s09 after fixing
    assert tags.of_class("score-row") and any(
        t == "img" and a["src"].startswith("data:image/png;base64,") for t, a in tags.tags
    ), "the histograms are an embedded PNG"
    assert 'id="class-size" data-students="20"' in page


def test_students_table_lists_everyone_with_scores_status_and_feedback_links(graded_class, tmp_path):
    out, tags, page = graded_class
    with Gradebook(out / "gradebook.sqlite", read_only=True) as book:
        records = {r.student: r for r in book.records()}
    rows = {r["data-student"]: r for r in tags.of_class("student")}
    assert set(rows) == set(records) and len(rows) == 20, sorted(rows)
    for student, row in rows.items():
        assert float(row["data-total"]) == pytest.approx(records[student].score, abs=0.006), (student, row)
    states = {s: r["data-status"] for s, r in rows.items()}
    assert {s for s, v in states.items() if v != "graded"} == {"ghost1", "ghost2"}, states
    assert states["ghost1"] == "incomplete", "a missing file: graded, but not in full"
    heads = [a["data-key"] for t, a in tags.tags if t == "th" and "data-key" in a]
    assert heads == ["student", "total", "ex04", "status"], heads
    page_dir = out.parent  # the page was written next to the graded folder
    links = [a["href"] for t, a in tags.tags if t == "a" and a.get("href", "").endswith(".md")]
    assert len(links) == 40, "each student: the student copy and the instructor copy of the feedback"
    from urllib.parse import unquote

    for link in links:
        target = (page_dir / unquote(html.unescape(link))).resolve()
        assert target.is_file() and target.is_relative_to(out.resolve()), (
            f"{link} must open a feedback file under {out}"
        )
    assert any(f"{quote(XSS)}/feedback.md" in html.unescape(link) for link in links), "the odd name is percent-encoded"


def test_problems_name_each_incomplete_submission_and_its_reason(graded_class):
    _, tags, page = graded_class
    rows = {(r["data-student"], r["data-exercise"], r["data-kind"]) for r in tags.of_class("problem")}
    assert rows == {("ghost1", "ex04", "missing file"), ("ghost2", "ex04", "could not be imported")}, rows
    assert "SyntaxError: invalid syntax (line 7)" in page, "the import failure's exception line is shown"
    assert html_escaped(NOT_FOUND) in page, "the grader's own sentence is shown"
    assert "2 students)" in page


def test_hardest_cases_are_ranked_by_pass_rate_among_students_with_a_result(graded_class):
    _, tags, _ = graded_class
    ranked = [(r["data-case"], int(r["data-passed"]), int(r["data-total"])) for r in tags.of_class("hard-case")]
    assert ranked[0] == (TRANSFER[0], 9, 18), (
        f"{TRANSFER[0]} fails for s00-s08 (s09 fixed it, s10 resubmitted without it); the two students without a "
        f"result are left out: 9 of 18. Got {ranked[:3]}"
    )
    rates = [p / t for _, p, t in ranked]
    assert rates == sorted(rates) and 1 <= len(ranked) <= report_data.HARDEST, ranked
    assert all(t == 18 for _, _, t in ranked), "ghosts have no result on any case"


def test_pass_rates_per_function_and_case_use_ids_and_never_inputs(graded_class):
    out, tags, page = graded_class
    students = _class()
    students["s10"] = {PUBLIC[0]: WRONG, PUBLIC[1]: WRONG}
    students["s09"] = {}
    cases = {r["data-case"]: r for r in tags.of_class("case-rate")}
    assert set(cases) == LAYOUT.case_ids, "every public and hidden case of ex04 is listed by its id"
    for cid, row in cases.items():
        failing = sum(cid in fails for fails in students.values())
        assert (int(row["data-passed"]), int(row["data-total"])) == (20 - failing, 20), (cid, row, failing)
    assert cases[LINE_RATE[0]]["data-side"] == "hidden" and cases[LINE_RATE[0]]["data-function"] == "line_rate_gb_per_s"
    funcs = {(r["data-function"], r["data-side"]): r for r in tags.of_class("function-rate")}
    assert len(funcs) == 8
    failing_line_rate = sum(any(c in f for c in LINE_RATE) for f in students.values())
    assert funcs[("line_rate_gb_per_s", "hidden")]["data-passed"] == str(20 - failing_line_rate)
    for secret in ("SECRET-INPUT", "SECRET-ENV", "call:", "expected:", "<script>alert"):
        assert secret not in page, f"{secret!r}: the page shows no input, expected value or student output"


def test_known_mistakes_count_students_whose_failures_they_explain(graded_class):
    """s00-s02 fail every line_rate case with the bits-as-bytes value: it explains their failures. alice and
    bob match it on one case and pass the eleven others where it would fail; carol, dave and erin match the
    percent mistake on one efficiency case and pass the rest: neither is their mistake."""
    _, tags, page = graded_class
    ranked = [
        (r["data-fixture"], int(r["data-students"]), int(r["data-percent"]), r["data-who"])
        for r in tags.of_class("mistake")
    ]
    assert ranked == [("ex04_bits_as_bytes", 3, 15, "s00 s01 s02")], ranked
    assert "15% of the class" in page and html_escaped(MISTAKE["ex04_bits_as_bytes"]) in page
    assert 'id="mistake-rule"' in page and "best explanation of their failures" in page, "the rule is on the page"


def _simulated(fixtures) -> dict[str, set[str]]:
    """{fixture: the mistakes the report counts for a student who is that fixture}, from the stored outputs:
    the fixture fails exactly the cases where its output is stored, each line naming the mistakes whose
    output matches its own there (hetero.checks.known_mistake), and passes the others."""
    from autograder.core.cases import hidden_cases, public_cases, stored
    from hetero.checks import Outcome, known_mistake

    known = report.layouts()
    counted = {}
    for fixture in fixtures:
        data = stored(fixture.exercise)
        cases = {c.id: c for c in [*public_cases(fixture.exercise), *hidden_cases(fixture.exercise)]}
        failed, passed = {}, set()
        for cid, entry in data["cases"].items():
            outputs = {k: tuple(v) for k, v in (entry.get("mistakes") or {}).items()}
            if fixture.name not in outputs:
                passed.add(cid)
                continue
            line = known_mistake(Outcome(outputs[fixture.name][1]), cases[cid], outputs)
            failed[cid] = set(report_data.known_mistakes(line, known[fixture.exercise]))
        counted[fixture.name] = {
            known[fixture.exercise].mistakes[m]
            for m in report_data.explained_mistakes(failed, passed, known[fixture.exercise].predicts)
        }
        counted[fixture.name + " (any case)"] = {
            known[fixture.exercise].mistakes[m] for v in failed.values() for m in v
        }
    return counted


def test_every_wrong_fixture_counts_for_its_own_mistake_only():
    from autograder.authoring.wrong_fixtures import FIXTURES
    from autograder.core.cases import stored

    counted = _simulated(FIXTURES)
    # A mistake the checks see as a changed argument (InputMutated), not as an output, has no stored output to
    # name it by: the report counts such a student for no mistake at all, never for another one.
    by_output = {
        f.name
        for f in FIXTURES
        if any(f.name in (entry.get("mistakes") or {}) for entry in stored(f.exercise)["cases"].values())
    }
    wrong = {
        f.name: counted[f.name] for f in FIXTURES if counted[f.name] != ({f.name} if f.name in by_output else set())
    }
    assert not wrong, f"a student who is a wrong fixture counts for that mistake alone; these did not: {wrong}"
    assert len(by_output) >= len(FIXTURES) - 2, sorted({f.name for f in FIXTURES} - by_output)
    inflated = [f.name for f in FIXTURES if len(counted[f.name + " (any case)"]) > 1]
    assert len(inflated) >= 5, (
        f"the rule is needed: counting every mistake named on any case inflates these fixtures: {inflated}"
    )


def test_changed_submissions_show_their_score_trail(graded_class):
    out, tags, _ = graded_class
    rows = {r["data-student"]: r for r in tags.of_class("change")}
    assert sorted(rows) == ["s09", "s10"], rows
    with Gradebook(out / "gradebook.sqlite", read_only=True) as book:
        for student, row in rows.items():
            versions = book.history(student)
            assert int(row["data-versions"]) == len(versions) == 2
            assert float(row["data-old"]) == pytest.approx(versions[-2].score, abs=0.006)
            assert float(row["data-new"]) == pytest.approx(versions[-1].score, abs=0.006)
    assert float(rows["s10"]["data-new"]) < float(rows["s10"]["data-old"])


def test_identical_rare_failures_are_a_hint(graded_class):
    _, tags, page = graded_class
    groups = {(g["data-students"], int(g["data-cases"]), g["data-same-feedback"]) for g in tags.of_class("rare-group")}
    assert groups == {
        ("alice bob", 2, "true"),  # the same two rare cases (their third failure is common), the same feedback
        (f"{XSS} frank", 2, "false"),  # the same two rare cases, one feedback differs
    }, groups
    assert "not a verdict" in page and "at most 2 of the 20 students" in page
    assert "ghost" not in " ".join(g for g, _, _ in groups), "a missing file is not a shared answer"


def test_student_text_is_escaped(graded_class):
    _, tags, page = graded_class
    assert XSS not in page and "<b>Alice</b>" not in page
    assert html_escaped(XSS) in page and html_escaped("<b>Alice</b> A.") in page
    assert [t for t, a in tags.tags if "onerror" in a] == [], "no live tag from a student's name"
    assert {t for t, _ in tags.tags} <= {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "h1",
        "h2",
        "h3",
        "p",
        "span",
        "img",
        "table",
        "tr",
        "th",
        "td",
        "details",
        "summary",
        "ol",
        "li",
        "b",
        "div",
        "ul",
        "nav",
        "a",
        "thead",
        "tbody",
        "i",
        "code",
        "script",
    }
    assert not re.search(r'src="(?!data:)', page), "no external resource"
    links = [a["href"] for t, a in tags.tags if t == "a"]
    assert all(h.startswith("#") or not re.match(r"^(/|[a-z][a-z0-9+.-]*:)", h, re.I) for h in links), (
        "links are in-page anchors or relative paths to the feedback files"
    )
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert scripts == [report.SORT_SCRIPT], "one script: the sort, the one the page's policy allows"
    digest = base64.b64encode(hashlib.sha256(report.SORT_SCRIPT.encode()).digest()).decode()
    policy = next(
        a["content"] for t, a in tags.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    )
    assert f"script-src 'sha256-{digest}'" in policy and "default-src 'none'" in policy, policy


def test_control_characters_of_names_are_shown_escaped(graded_class):
    _, _, page = graded_class
    raw = [c for c in page if (unicodedata.category(c) == "Cc" and c not in "\n\t") or c in "\u202e\u2066"]
    assert not raw, f"the page holds raw control or bidi characters: {raw}"
    assert html_escaped(safetext.terminal_text(CONTROL_NAME)) in page, "the name stays readable, escaped"
    assert report.esc("a\x1b[2J\rb\u202ec\x9b<i>\n") == "a\\x1b[2J\\rb\\u202ec\\x9b&lt;i&gt;\n"


def html_escaped(text: str) -> str:
    return html.escape(text, quote=True)


def test_missing_or_foreign_out_dir_is_a_clear_error(tmp_path, capsys):
    dest = str(tmp_path / "r.html")
    assert cli(["report", str(tmp_path / "nowhere"), "--html", dest]) == 2
    assert "OUT_DIR" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli(["report", str(tmp_path / "empty"), "--html", dest]) == 2
    assert "has no gradebook.sqlite" in capsys.readouterr().err
    assert not (tmp_path / "empty" / "gradebook.sqlite").exists(), "never created"
    for name, content in (("junk", b"not a database at all, just some bytes" * 40), ("other", None)):
        folder = tmp_path / name
        folder.mkdir()
        book = folder / "gradebook.sqlite"
        if content is None:
            with sqlite3.connect(book) as db:
                db.execute("CREATE TABLE t (x)")
        else:
            book.write_bytes(content)
        before = book.read_bytes()
        assert cli(["report", str(folder), "--html", dest]) == 2
        err = capsys.readouterr().err
        assert f"OUT_DIR {folder}" in err and "is not a grade-all gradebook" in err, err
        assert book.read_bytes() == before
    assert not Path(dest).exists()


def test_help_lists_the_report(capsys):
    assert cli(["--help"]) == 0
    assert "report " in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# The browser proof: a real class, the real grader, the page rendered by headless Chromium


def _chromium(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: `apt-get install chromium` (Debian package; this proof must run)")
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
    ]
    if not any(a.startswith("--window-size") for a in args):
        flags.append("--window-size=1280,2000")
    done = subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


PLANTED = ["ex03", "ex05", "ex08"]  # the exercises whose mistakes the any-case rule inflated
SINGLE = [
    "ex03_ignores_pool",
    "ex03_ignores_queue",
    "ex03_transfer_multiplied",
    "ex03_transfer_free",
    "ex05_current_load",
    "ex05_keeps_finished",
    "ex08_deferred_free",
    "ex08_largest_best",
    "ex08_ignores_min_immediate",
]
DOUBLE = {"two_a": ["ex03_ties_highest", "ex05_admit_le"], "two_b": ["ex08_sum_not_max", "ex03_total_not_distinct"]}
BROKEN = {  # student -> (exercise, the kind of problem the report must name)
    "syntax": ("ex05", "could not be imported"),
    "missing": ("ex08", "missing file"),
    "timeout": ("ex08", "time limit"),
    "bad_nb": ("ex03", "unreadable notebook"),
    "untagged_nb": ("ex05", "notebook without a tagged exercise cell"),
}


def planted_class(subs: Path) -> dict[str, list[str]]:
    """20 students on ex03, ex05 and ex08: the key, the stubs, nine single wrong fixtures, two students with two
    mistakes each, one more (an HTML-tag name), five broken submissions (BROKEN) and a disguised copy of the key.
    Returns {student: the wrong fixtures planted in their files}."""
    from autograder.authoring.wrong_fixtures import materialise
    from autograder.exports import notebooks as nb
    from autograder.selftest.attacks import disguised_copy

    def key(folder: Path, skip: str = "") -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        for ex in PLANTED:
            if ex != skip:
                shutil.copyfile(ROOT / "solutions" / BY_ID[ex].filename, folder / BY_ID[ex].filename)
        return folder

    planted: dict[str, list[str]] = {"key": [], "stubs": [], "copy": [], XSS: ["ex05_end_inclusive"]}
    key(subs / "key")
    (subs / "stubs").mkdir(parents=True)
    for ex in PLANTED:
        shutil.copyfile(ROOT / "assignments" / BY_ID[ex].filename, subs / "stubs" / BY_ID[ex].filename)
        (key(subs / "copy") / BY_ID[ex].filename).write_text(
            disguised_copy((ROOT / "solutions" / BY_ID[ex].filename).read_text())
        )
    for name in SINGLE:
        planted[name] = [name]
    planted.update(DOUBLE)
    for student, fixtures in planted.items():
        if fixtures:
            folder = key(subs / student)
            for fixture in fixtures:
                materialise(fixture, folder)
    syntax = key(subs / "syntax") / BY_ID["ex05"].filename
    syntax.write_text(syntax.read_text() + "\n\ndef admit_later(:\n    return True\n")
    key(subs / "missing", skip="ex08")
    (key(subs / "timeout") / BY_ID["ex08"].filename).write_text("while True:\n    pass\n")
    (key(subs / "bad_nb", skip="ex03") / f"{BY_ID['ex03'].module}.ipynb").write_text('{"cells": [', encoding="utf-8")
    note = nb.fill_exercise_cell(
        nb.student_notebook(nb.load_sources("ex05")),
        BY_ID["ex05"],
        (ROOT / "solutions" / BY_ID["ex05"].filename).read_text(),
    )
    for cell in note["cells"]:  # a front-end that drops tags, and a student who deleted the marker line
        cell.get("metadata", {}).pop("tags", None)
        if cell["cell_type"] == "code" and "".join(cell["source"]).startswith("# a2-exercise"):
            cell["source"] = "".join(cell["source"]).split("\n", 1)[1]
    nb.write_notebook(note, key(subs / "untagged_nb", skip="ex05") / f"{BY_ID['ex05'].module}.ipynb")
    for student in BROKEN:
        planted.setdefault(student, [])
    return planted


@pytest.mark.slow
@pytest.mark.proof("report_browser")
def test_browser_shows_whom_to_contact_for_a_planted_class(tmp_path):
    """A class of 20 graded for real (ex03, ex05, ex08), its similarity computed, the report rendered by
    headless Chromium: the students table (sorted by the page's script), every broken submission with its
    reason, the hardest cases, the planted mistakes counted exactly, the copied pair, the plots."""
    from autograder.authoring.wrong_fixtures import FIXTURES
    from autograder.batch import similarity

    subs, out = tmp_path / "subs", tmp_path / "graded"
    planted = planted_class(subs)
    assert len(planted) == 20, sorted(planted)
    start = time.monotonic()
    bulk.grade_all(subs, out, workers=2, progress=False, exercises=PLANTED)
    graded_s = time.monotonic() - start
    summary = similarity.run(subs, out / "similarity", exercises=PLANTED)
    page = tmp_path / "report.html"
    assert report.main([str(out), "--html", str(page)]) == 0
    print(f"planted class: graded in {graded_s:.0f} s; {len(summary['pairs'])} similar pairs")

    dom = _chromium(["--dump-dom", page.as_uri() + "#sort=total-desc"], tmp_path).stdout
    tags = Tags(dom)
    with Gradebook(out / "gradebook.sqlite", read_only=True) as book:
        records = {r.student: r for r in book.records()}
    assert len(records) == 20 and all(r.status == "graded" for r in records.values()), records

    rows = tags.of_class("student")
    assert [r["data-student"] for r in rows] == [
        s for s, _ in sorted(records.items(), key=lambda kv: -round(kv[1].score, 2))
    ], "the page's script sorted the table by total, highest first"
    assert {r["data-student"]: float(r["data-total"]) for r in rows} == pytest.approx(
        {s: r.score for s, r in records.items()}, abs=0.006
    ), "each student's score as the gradebook holds it"
    assert float(next(r for r in rows if r["data-student"] == "key")["data-total"]) == pytest.approx(
        sum(BY_ID[e].points for e in PLANTED), abs=0.006
    )

    problems = {(r["data-student"], r["data-exercise"], r["data-kind"]) for r in tags.of_class("problem")}
    want = {(s, ex, kind) for s, (ex, kind) in BROKEN.items()}
    assert want <= problems, f"every broken submission with its reason: missing {want - problems}"
    assert {s for s, _, _ in problems} == set(BROKEN), f"only the broken ones are listed: {problems}"
    assert "SyntaxError" in dom, "the syntax error's exception line is shown"

    mistakes = {r["data-fixture"]: r["data-who"] for r in tags.of_class("mistake")}
    want_mistakes = {f: s for s, fixtures in planted.items() for f in fixtures}
    assert mistakes == {f: html.unescape(html_escaped(s)) for f, s in want_mistakes.items()}, (
        f"each planted mistake counted once, for its student, and nothing else: {mistakes}"
    )
    assert len(mistakes) == 14 and all(f in {x.name for x in FIXTURES} for f in mistakes)

    hardest = tags.of_class("hard-case")
    assert len(hardest) == report_data.HARDEST and all(int(r["data-passed"]) < int(r["data-total"]) for r in hardest)

    pairs = {(r["data-exercise"], frozenset([r["data-a"], r["data-b"]])) for r in tags.of_class("similar-pair")}
    assert all((ex, frozenset(["copy", "key"])) in pairs for ex in PLANTED), pairs
    assert not any("stubs" in members for _, members in pairs), "the unfilled stubs are like no one"

    assert [t for t, a in tags.tags if "onerror" in a] == [] and html_escaped(XSS) in dom
    for section in ("students", "problems", "hardest", "mistakes", "similarity", "scores", "cases", "changes", "rare"):
        assert f'id="{section}"' in dom, f"section {section} is on the page"

    shot = tmp_path / "report.png"
    _chromium([f"--screenshot={shot}", "--window-size=1280,2600", page.as_uri() + "#sort=total-desc"], tmp_path)
    shutil.copyfile(shot, Path(tempfile.gettempdir()) / "a2-report-screenshot.png")
    print(f"report screenshot: {shot} (copied to {Path(tempfile.gettempdir()) / 'a2-report-screenshot.png'})")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000, "a screenshot with the page drawn in it"
    from PIL import Image

    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
    drawn = {
        name: any(abs(r - x) + abs(g - y) + abs(b - z) < 20 for _, (r, g, b) in colours)
        for name, (x, y, z) in {"incomplete status": (163, 93, 0), "pass-rate bars": (59, 110, 165)}.items()
    }
    assert len(colours) > 200 and all(drawn.values()), f"the tables are drawn in the screenshot: {drawn}"
