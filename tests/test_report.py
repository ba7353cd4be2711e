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

import json
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import textwrap
from html.parser import HTMLParser
from pathlib import Path

import pytest

from autograder.__main__ import main as cli
from autograder.batch import bulk, report
from autograder.batch.gradebook import Gradebook
from autograder.core.manifest import BY_ID
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


def hidden_of(function: str) -> list[str]:
    """ex04's hidden case ids of `function` (at use, not at collection: a renamed function fails the tests
    that need it, with this message, instead of the whole file)."""
    if function not in HIDDEN:
        pytest.fail(
            f"these tests build a class around ex04's hidden cases of {function}, which ex04 no longer has "
            f"(its functions with hidden cases: {sorted(HIDDEN)}); update the names in tests/test_report.py"
        )
    return HIDDEN[function]


XSS = "<img src=x onerror=alert(1)>"


def known(name: str) -> str:
    return f"wrong value (unit: GB/s) (tolerance: exact). Your result matches a known mistake: {MISTAKE[name]}"


WRONG = "wrong value (unit: GB/s) (tolerance: exact). Likely mistake: check the units."
MISSING = "no result: ex04_nic_line_rate.py is not in your submission."


def plan(fails: dict[str, str], secret: bool = True) -> dict:
    """A results.json of ex04 in the grader's format: every case passes (0.1 pt) except `fails` (id -> message)."""
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
    return {"score": round(sum(t["score"] for t in tests), 2), "tests": tests}


@pytest.fixture(scope="module")
def fake_python(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("fake") / "fake_grader.py"
    path.write_text(FAKE_GRADER.format(public_phase=STANDINS.PUBLIC_PHASE, python=sys.executable))
    path.chmod(0o755)
    return str(path)


def submit(subs: Path, student: str, fails: dict[str, str]) -> None:
    folder = subs / student
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plan.json").write_text(json.dumps(plan(fails)))


def _class() -> dict[str, dict[str, str]]:
    """20 students: a common failure (10 of them), known mistakes, rare failures shared or not, two missing."""
    line_rate, efficiency, transfer = (
        hidden_of(f) for f in ("line_rate_gb_per_s", "link_efficiency", "transfer_time_s")
    )
    students = {f"s{i:02d}": {} for i in range(11)}
    for i in range(10):
        students[f"s{i:02d}"][transfer[0]] = WRONG  # common: 10 of 20
    for s in ("s00", "s01", "s02"):
        students[s].update({c: known("ex04_bits_as_bytes") for c in line_rate})
    students["alice"] = {line_rate[0]: known("ex04_bits_as_bytes"), efficiency[3]: WRONG, efficiency[4]: WRONG}
    students["bob"] = {line_rate[0]: known("ex04_bits_as_bytes"), efficiency[3]: WRONG, efficiency[4]: WRONG}
    students["carol"] = {efficiency[5]: known("ex04_percent")}  # rare, alone
    students["dave"] = {efficiency[6]: known("ex04_percent")}  # rare, shared with erin, but erin has more
    students["erin"] = {efficiency[6]: known("ex04_percent"), efficiency[7]: WRONG}
    students[XSS] = {
        transfer[5]: WRONG,
        "ex04.transfer_time_s.single_nic": "expected 1, got '<script>alert(1)</script>'",
    }
    students["frank"] = {transfer[5]: WRONG, "ex04.transfer_time_s.single_nic": "expected 1, got 2"}
    students["ghost1"] = {c: MISSING for c in LAYOUT.case_ids}  # no file: not a shared answer
    students["ghost2"] = {c: MISSING for c in LAYOUT.case_ids}
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
    line_rate = hidden_of("line_rate_gb_per_s")
    assert cases[line_rate[0]]["data-side"] == "hidden" and cases[line_rate[0]]["data-function"] == "line_rate_gb_per_s"
    funcs = {(r["data-function"], r["data-side"]): r for r in tags.of_class("function-rate")}
    assert len(funcs) == 8
    failing_line_rate = sum(any(c in f for c in line_rate) for f in students.values())
    assert funcs[("line_rate_gb_per_s", "hidden")]["data-passed"] == str(20 - failing_line_rate)
    for secret in ("SECRET-INPUT", "SECRET-ENV", "call:", "expected:", "<script"):
        assert secret not in page, f"{secret!r}: the page shows no input, expected value or student output"


def test_known_mistakes_are_ranked_by_students(graded_class):
    _, tags, page = graded_class
    ranked = [(r["data-fixture"], int(r["data-students"]), int(r["data-percent"])) for r in tags.of_class("mistake")]
    assert ranked == [("ex04_bits_as_bytes", 5, 25), ("ex04_percent", 3, 15)], ranked
    assert "25% of the class" in page and html_escaped(MISTAKE["ex04_bits_as_bytes"]) in page


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
    }
    assert not re.search(r"(src|href)=\"(?!data:)", page), "no external resource"


def html_escaped(text: str) -> str:
    import html

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
        "--window-size=1280,2000",
    ]
    done = subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.mark.slow
@pytest.mark.proof("report_browser")
def test_browser_shows_the_gradebooks_numbers(tmp_path, key_submission, stubs_submission):
    from autograder.authoring.wrong_fixtures import materialise

    subs, out = tmp_path / "subs", tmp_path / "graded"
    shutil.copytree(key_submission, subs / "key")
    for student, fixture in (
        ("bits1", "ex04_bits_as_bytes"),
        ("bits2", "ex04_bits_as_bytes"),
        ("pct", "ex04_percent"),
        (XSS, "ex04_percent"),
    ):
        materialise(fixture, subs / student)
    shutil.copytree(stubs_submission, subs / "stubs")
    bulk.grade_all(subs, out, workers=2, progress=False, exercises=["ex04"])
    page = tmp_path / "report.html"
    assert report.main([str(out), "--html", str(page)]) == 0

    dom = _chromium(["--dump-dom", page.as_uri()], tmp_path).stdout
    shot = tmp_path / "report.png"
    _chromium([f"--screenshot={shot}", page.as_uri()], tmp_path)
    print(f"report screenshot: {shot}")
    tags = Tags(dom)
    with Gradebook(out / "gradebook.sqlite", read_only=True) as book:
        records = {r.student: r for r in book.records()}
    assert len(records) == 6 and all(r.status == "graded" for r in records.values())
    ex04 = [r.exercises["ex04"][0] for r in records.values()]
    shown = re.search(r'<tr class="score-row" data-exercise="ex04"[^>]*>(.*?)</tr>', dom, re.S)
    assert shown, "the rendered DOM holds the ex04 score row"
    cells = [float(c) for c in re.findall(r'<td class="n">([\d.]+)</td>', shown.group(1))]
    want = [
        max(r.exercises["ex04"][1] for r in records.values()),
        statistics.fmean(ex04),
        statistics.median(ex04),
        min(ex04),
        max(ex04),
        sum(s <= 1e-9 for s in ex04),
        sum(s >= BY_ID["ex04"].points - 1e-9 for s in ex04),
    ]
    assert cells == pytest.approx(want, abs=0.006), (cells, want)
    print(
        f"ex04 shown: out of {cells[0]:g}, mean {cells[1]:g}, median {cells[2]:g}, min {cells[3]:g}, "
        f"max {cells[4]:g}, {cells[5]:g} at 0, {cells[6]:g} full"
    )
    mistakes = {r["data-fixture"]: int(r["data-students"]) for r in tags.of_class("mistake")}
    assert mistakes.get("ex04_bits_as_bytes") == 2 and mistakes.get("ex04_percent") == 2, mistakes
    assert "33% of the class" in dom, "2 of 6 students, as the page says it"
    hidden = [r for r in tags.of_class("case-rate") if r["data-side"] == "hidden"]
    assert {r["data-case"] for r in hidden} == {i for ids in HIDDEN.values() for i in ids}, (
        "every hidden case of the real grader's feedback is named by its id"
    )
    line_rate = [r for r in hidden if r["data-function"] == "line_rate_gb_per_s"]
    for row in line_rate:  # the two bits-as-bytes students and the stubs fail its valid inputs, the stubs all
        want_passed = "5" if ".invalid_" in row["data-case"] else "3"
        assert (row["data-passed"], row["data-total"]) == (want_passed, "6"), row
    groups = {g["data-students"] for g in tags.of_class("rare-group")}
    assert "bits1 bits2" in groups and f"{XSS} pct" in groups, groups
    assert [t for t, a in tags.tags if "onerror" in a] == [] and html_escaped(XSS) in dom
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000, "a screenshot with the page drawn in it"
    from PIL import Image

    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 200 and any(abs(r - 59) + abs(g - 110) + abs(b - 165) < 12 for _, (r, g, b) in colours), (
        "the histograms and pass-rate bars are drawn (their blue is in the screenshot)"
    )
