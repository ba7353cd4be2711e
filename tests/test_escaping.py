"""Everything a student controls is inert where it is shown: feedback.md rendered as Markdown, the terminal.

Student code is hostile: what it prints and raises, its file names and its folder's name reach the
batch's feedback.md / feedback_instructor.md (rendered as HTML by any Markdown viewer), the summary
and messages grade-all prints, and results.json (shown by Gradescope in the format it names). The
feedback files are rendered here with markdown-it-py's CommonMark parser (raw HTML enabled, as in
CommonMark itself) and its GFM-like preset (tables, strikethrough, links): no tag of the student's
may be live, no heading or bold score line may be forged, and the student's text must still be
readable. `markup_everywhere` (autograder/fixtures/adversarial/) is the attack graded for real.
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import unicodedata
import zipfile
from html import unescape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from autograder.batch import cli, lms, outputs, submissions
from autograder.batch.gradebook import Gradebook, Record
from autograder.core import safetext
from autograder.core.manifest import BY_ID, ROOT
from autograder.gradescope.fallback import failure_results
from autograder.runtime import grader

FIXTURE = ROOT / "autograder" / "fixtures" / "adversarial" / "markup_everywhere"
TAG = "<img src=x onerror=alert(1)>"
HOSTILE = "\n".join(
    [
        "<script>alert(1)</script>",
        TAG,
        "# Feedback for someone (student copy)",
        "**Score in the tests shown: 100.00 / 100.00**",
        *("`" * n for n in range(3, 11)),
        "~~~",
        "</code></pre><b>bold</b>",
        "[link](javascript:alert(1)) ![x](x) *em* _em_ | a | b |",
        "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x9b2J",
        "carriage\r# forged after a carriage return",
        "1. item",
        "- item",
        "===",
    ]
)
RENDERERS = {
    "commonmark": MarkdownIt("commonmark"),
    "commonmark+html": MarkdownIt("commonmark", {"html": True}),
    "gfm-like": MarkdownIt("gfm-like"),
}
# the elements feedback.md itself makes (tables in the GFM-like preset): any other is the student's
OWN_TAGS = {"h1", "h2", "p", "strong", "em", "ul", "li", "pre", "code", "table", "thead", "tbody", "tr", "th", "td"}
LIVE_ATTRIBUTE = re.compile(r"<[a-z][^>]*\s(on\w+|href|src)=", re.IGNORECASE)  # onerror=, a link, an image


def hostile_results() -> dict:
    """A results dict whose every student-influenced text is HOSTILE (test names, outputs, the summary)."""
    return {
        "score": 0.0,
        "output": "Score: 0 / 10\n\nex02: what your code printed before the hidden cases:\n" + HOSTILE,
        "output_format": "text",
        "tests": [
            {
                "name": f"ex01 public: {HOSTILE}",
                "score": 0.0,
                "max_score": 5.0,
                "status": "failed",
                "visibility": "visible",
                "output": f"[FAILED] raised {TAG}: {HOSTILE}",
            },
            {
                "name": "other: " + TAG,
                "score": 0.0,
                "max_score": 1.0,
                "status": "failed",
                "visibility": "after_due_date",
                "output": HOSTILE,
            },
        ],
    }


def check_inert(markdown: str, student_heading: str, copy: str) -> None:
    """`markdown` renders, in every renderer, with no live tag, one real heading, one bold score line,
    and the hostile text still readable inside code blocks."""
    for name, md in RENDERERS.items():
        html = md.render(markdown)
        tags = set(re.findall(r"</?([a-zA-Z][\w-]*)", html))
        assert tags <= OWN_TAGS, f"{name}: live elements of the student's: {tags - OWN_TAGS}\n{html}"
        assert not LIVE_ATTRIBUTE.search(html), f"{name}: a live attribute: {LIVE_ATTRIBUTE.search(html)}\n{html}"
        headings = re.findall(r"<h1>(.*?)</h1>", html, flags=re.DOTALL)
        assert headings == [f"Feedback for {student_heading} ({copy})"], f"{name}: forged or broken h1: {headings}"
        bold = re.findall(r"<strong>((?:Score|Total)[^<]*)</strong>", html)
        assert len(bold) == 1, f"{name}: expected one bold score line, found {bold}"
        forged = [h for h in re.findall(r"<h\d>(.*?)</h\d>", html, flags=re.DOTALL) if "someone" in h or "forged" in h]
        assert not forged, f"{name}: forged headings {forged}"
        code = "".join(re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", html, flags=re.DOTALL))
        for text in (
            "&lt;script&gt;alert(1)&lt;/script&gt;",
            "&lt;img src=x onerror=alert(1)&gt;",
            "**Score in the tests shown: 100.00 / 100.00**",
            "`" * 10,
        ):
            assert text in code, f"{name}: the student's text {text!r} must stay readable in a code block"
    assert "\x1b" not in markdown and "\x9b" not in markdown and "\r" not in markdown, "control characters left"


# ---------------------------------------------------------------------------------------------
# The text-safety functions.


def test_markdown_inline_escapes_markup_and_keeps_one_line():
    text = safetext.markdown_inline("# " + HOSTILE)
    assert "\n" not in text and "\r" not in text
    html = MarkdownIt("commonmark").renderInline(text)
    assert "<" not in html.replace("&lt;", ""), f"no tag of the student's may be live: {html}"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "*em* _em_" in html, html
    for block in ("1. item", "- item", "# x", "> x", "+ x", "=== x", "    x"):
        assert MarkdownIt("commonmark").render(safetext.markdown_inline(block)).startswith("<p>"), block
    for plain in ("alice-2bd806c9 grades.csv", "after_due_date", "kv_bytes_per_token"):
        assert safetext.markdown_inline(plain) == plain, "plain text stays as it is"


@pytest.mark.parametrize("text", ["", "plain", "```", "a\n" + "`" * 7 + "\nb", HOSTILE, "x\r```\ry", "`" * 40])
def test_markdown_fence_shows_any_text_verbatim(text):
    block = safetext.markdown_fence(text)
    tokens = MarkdownIt("commonmark").parse(block + "\n\nafter **this**")
    assert tokens[0].type == "fence", f"the block must be one fence: {tokens}"
    # CommonMark reads \r and \r\n as line endings: they come out as \n, everything else verbatim
    assert tokens[0].content == re.sub(r"\r\n?", "\n", text + "\n"), tokens[0].content
    assert tokens[1].type == "paragraph_open", "the fence must close where it ends, not run on"


TEXTS = st.lists(
    st.sampled_from([*"abé1 _*`[]()!<>&#;\\|~-+=.:/\"'\n\r\t", "&amp;", "&#60;", "<img>", "http://x.y", "www.x.y"]),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_markdown_inline_renders_as_the_text_itself(text):
    flat = " ".join(text.splitlines()).strip()
    for name in ("commonmark", "gfm-like"):
        html = RENDERERS[name].render(f"# Feedback for {safetext.markdown_inline(text)} (student copy)")
        heading = re.fullmatch(r"<h1>([^<]*)</h1>\n", html)  # one heading, no element inside
        assert heading and unescape(heading.group(1)) == f"Feedback for {flat} (student copy)", (name, text, html)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_markdown_fence_holds_any_text(text):
    tokens = MarkdownIt("commonmark").parse("- item\n\n" + safetext.markdown_fence(text) + "\n\nafter")
    fences = [t for t in tokens if t.type == "fence"]
    assert [f.content for f in fences] == [re.sub(r"\r\n?", "\n", text + "\n")], (text, tokens)
    assert tokens[-3].type == "paragraph_open", "the text after the fence is a paragraph of its own"


def test_terminal_text_shows_control_characters_escaped():
    text = safetext.terminal_text("a\x1b[2Jb\rc\x9bd\x07e\u202ef\ng\th")
    assert text == "a\\x1b[2Jb\\rc\\x9bd\\x07e\\u202ef\\ng\th", text
    assert safetext.terminal_text("x\ny", lines=True) == "x\ny"
    assert not [c for c in safetext.terminal_text(HOSTILE) if unicodedata.category(c) == "Cc" and c != "\t"]


# ---------------------------------------------------------------------------------------------
# feedback.md and feedback_instructor.md.


@pytest.mark.parametrize("instructor", [False, True])
def test_hostile_results_render_inert(instructor):
    markdown = outputs.feedback_markdown(TAG, hostile_results(), instructor)
    copy = "instructor copy" if instructor else "student copy"
    check_inert(markdown, "&lt;img src=x onerror=alert(1)&gt;", copy)
    assert markdown.startswith("# Feedback for "), markdown[:100]


def test_graded_markup_fixture_feedback_is_inert_and_results_are_text(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "sub")
    data = grader.grade_submission(tmp_path / "sub", tmp_path / "results.json", exercises=["ex02"])
    assert data["score"] == 0, f"markup_everywhere computes nothing: it scored {data['score']}"
    formats = [data.get("output_format")] + [t.get("output_format") for t in data["tests"]]
    assert set(formats) == {"text"}, f"Gradescope must show every output as plain text, not HTML/Markdown: {formats}"
    assert "<script>" in data["output"], "results.json keeps the student's text as it is (shown as text)"
    outputs.write_outputs(tmp_path / "out", "markup_everywhere", data)
    for name, copy in (("feedback.md", "student copy"), ("feedback_instructor.md", "instructor copy")):
        check_inert((tmp_path / "out" / name).read_text(encoding="utf-8"), "markup_everywhere", copy)


def test_fallback_results_are_text_too():
    data = failure_results("<b>reason</b>", "log <script>alert(1)</script>")
    formats = [data.get("output_format")] + [t.get("output_format") for t in data["tests"]]
    assert set(formats) == {"text"}, f"Gradescope must show the fallback's outputs as plain text: {formats}"


def test_a_student_folder_named_like_a_tag_gets_an_inert_heading(tmp_path):
    subs = tmp_path / "subs"
    (subs / TAG).mkdir(parents=True)
    (subs / TAG / "f.py").write_text("x = 1\n")
    found, refused = submissions.discover(subs)
    assert [s.student for s in found] == [TAG] and not refused
    outputs.write_outputs(tmp_path / "out" / found[0].out_folder, found[0].student, hostile_results())
    for name, copy in (("feedback.md", "student copy"), ("feedback_instructor.md", "instructor copy")):
        markdown = (tmp_path / "out" / found[0].out_folder / name).read_text(encoding="utf-8")
        check_inert(markdown, "&lt;img src=x onerror=alert(1)&gt;", copy)


# ---------------------------------------------------------------------------------------------
# The terminal.

NAME = "eve\x1b[2J\x1b]0;owned\x07\r\x9b31mmallory\nforged line"


def _no_controls(text: str) -> list[str]:
    return [c for c in text if unicodedata.category(c) == "Cc" and c not in "\n\t"]


def test_summary_table_prints_no_control_characters():
    records = [Record(NAME, "src", "h", "grader_failed", 0.0, 10.0, 1.0, "now", {"ex01": (0.0, 6.0)})]
    table = outputs.summary_table(records, ["ex01"])
    assert not _no_controls(table), f"control characters in the summary: {_no_controls(table)}"
    assert table.count("\n") == 4, f"a name must not add lines to the summary: {table!r}"
    assert "eve\\x1b[2J" in table, "the name stays recognisable, escaped"


def test_refused_names_reach_the_terminal_and_refused_txt_escaped(tmp_path, capsys):
    subs = tmp_path / "subs"
    (subs / NAME.replace("\n", " ")).mkdir(parents=True)
    (subs / (NAME.replace("\n", " ") + ".zip")).write_bytes(b"PK\x05\x06" + b"\0" * 18)
    assert cli.main([str(subs), "--out", str(tmp_path / "out"), "--no-progress", "--workers", "1"]) == 0
    said = capsys.readouterr()
    assert "refused" in said.out and "refused" in said.err, said
    for text in (said.out, said.err, (tmp_path / "out" / "refused.txt").read_text(encoding="utf-8")):
        assert not _no_controls(text), f"control characters printed: {_no_controls(text)} in {text!r}"


def test_grade_cli_prints_the_students_output_escaped(tmp_path, capsys):
    shutil.copytree(FIXTURE, tmp_path / "sub")
    assert grader.main([str(tmp_path / "sub"), "--out", str(tmp_path / "results.json"), "--exercises", "ex02"]) == 0
    out = capsys.readouterr().out
    assert "<script>" in out and "\\x1b[31m" in out, "the printed output stays readable"
    assert not _no_controls(out), f"control characters printed: {_no_controls(out)}"


def test_no_command_prints_text_that_is_only_clean_text():
    # clean_text makes a text encodable, not safe on a terminal: a print() of a student's name, file or
    # exception must go through terminal_text. Checked over every module of the grader, so a new message
    # cannot bring the mistake back.
    import ast

    offenders = []
    for path in sorted((ROOT / "autograder").rglob("*.py")):
        if "fixtures" in path.relative_to(ROOT).parts:  # student submissions, not the grader
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                for inner in ast.walk(node):
                    if isinstance(inner, ast.Call) and getattr(inner.func, "id", None) == "clean_text":
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, f"print() of clean_text(...) (use safetext.terminal_text): {offenders}"


# ---------------------------------------------------------------------------------------------
# Names inside sentences: the intake's notes, the batch's refusals.

FORGED = "x\n\nScore: 6 / 6\n\r\x1b[8m\x85\u2028\u202e\u2066\tex01_cost_per_gb (1).py"
BIDI = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}  # embeddings, overrides, isolates


def _one_visible_line(text: str) -> list[str]:
    """The characters of `text` that break its line or act instead of showing (controls, bidi controls)."""
    return [c for c in text if unicodedata.category(c) in ("Cc", "Zl", "Zp") or unicodedata.bidirectional(c) in BIDI]


def test_one_line_shows_every_control_and_bidi_character_escaped():
    shown = safetext.one_line(FORGED + "\udcff")
    assert not _one_visible_line(shown), f"one_line left {_one_visible_line(shown)} in {shown!r}"
    expected = "x\\n\\nScore: 6 / 6\\n\\r\\x1b[8m\\x85\\u2028\\u202e\\u2066\\tex01_cost_per_gb (1).py\\udcff"
    assert shown == expected, shown


def test_a_file_name_cannot_forge_lines_under_the_score(tmp_path, capsys):
    # A zip entry (and a folder) whose name holds line breaks, controls and bidi controls: the note naming
    # the near miss it holds is one line, so `grade` prints no second "Score:" line (mk_newline_names.py).
    key = (ROOT / "solutions" / "ex01_cost_per_gb.py").read_bytes()
    with zipfile.ZipFile(tmp_path / "sub.zip", "w") as zf:
        zf.writestr(FORGED.replace("ex01_cost_per_gb (1).py", "") + "/ex01_cost_per_gb (1).py", key)
    (tmp_path / "folder" / FORGED).mkdir(parents=True)  # "6 / 6": two folders, both named in the note
    (tmp_path / "folder" / FORGED / "ex01_cost_per_gb (1).py").write_bytes(key)
    for sub in (tmp_path / "sub.zip", tmp_path / "folder"):
        staging = tmp_path / f"staging-{sub.name}"
        staging.mkdir()
        found, notes = grader.locate(sub, [BY_ID["ex01"]], staging)
        texts = [*notes, found["ex01"].shown, found["ex01"].note]
        assert "Score: 6 / 6" in found["ex01"].note, "the name stays recognisable"
        assert not [t for t in texts if _one_visible_line(t)], f"a name broke its sentence: {texts!r}"
    assert grader.main([str(tmp_path / "sub.zip"), "--out", str(tmp_path / "r.json"), "--exercises", "ex01"]) == 0
    out = capsys.readouterr().out
    scores = [line for line in out.splitlines() if line.lstrip().startswith("Score:")]
    assert scores == ["Score: 6 / 6"], f"the student's name forged a line of its own: {out!r}"
    assert not _no_controls(out), f"control characters printed: {_no_controls(out)}"


def test_refusals_name_the_entries_on_one_line(tmp_path):
    subs, name = tmp_path / "subs", FORGED.replace("/", "of")  # one folder, not nested ones
    (subs / name).mkdir(parents=True)
    (subs / (name + ".zip")).write_bytes(b"PK\x05\x06" + b"\0" * 18)
    found, refused = submissions.discover(subs)
    assert not found and len(refused) == 2, (found, refused)
    for item in refused:
        assert not _one_visible_line(item.entry + item.reason), f"a refusal broke its line: {item!r}"


# ---------------------------------------------------------------------------------------------
# CSV files: grade-all --csv (the gradebook's export) and export-lms.

CSV_NAMES = [
    "evil\n\x1b[2J\x1b[31mSCORE 100\x1b[0m\r",
    "\u202eevil\u202c",
    "\rx",
    "\tx",
    '=HYPERLINK("x","y")',
    "al\x85ice",
]


def test_csv_cells_are_one_visible_line_and_never_formulas(tmp_path):
    graded = tmp_path / "graded"
    graded.mkdir()
    with Gradebook(graded / "gradebook.sqlite") as book:
        for n, name in enumerate(CSV_NAMES):
            book.record(name, "src", f"h{n}", {"score": 1.0, "tests": []}, 1.0, False)
            book.set_identity(name, name, name + "@x.edu")
        book.export_csv(tmp_path / "grades.csv")
    lms.export(graded, "gradescope", tmp_path / "gradescope.csv")
    lms.export(graded, "canvas", tmp_path / "canvas.csv")
    for name in ("grades.csv", "gradescope.csv", "canvas.csv"):
        text = (tmp_path / name).read_bytes().decode("utf-8")  # as written: csv's own CRLF line ends
        lines = text.split("\r\n")
        assert lines[-1] == "" and len(lines) == len(CSV_NAMES) + (2 if name != "canvas.csv" else 3), (name, text)
        assert not [c for line in lines if (c := _one_visible_line(line))], f"{name} obeys a name: {text!r}"
        cells = [row[0] for row in csv.reader(io.StringIO(text))]
        for raw in CSV_NAMES:
            shown = safetext.one_line(raw)
            assert ("'" + shown if raw[0] in "=\r\t" else shown) in cells, (name, raw, cells)


# ---------------------------------------------------------------------------------------------
# Output folder names.


def test_output_folder_names_hold_no_control_or_bidi_character_and_stay_distinct(tmp_path):
    subs = tmp_path / "subs"
    names = [
        "\u202eevil\u202c",
        "_evil_",
        "a\x85b",
        "a\x9bb",
        "a_b",
        "x\u2066y\u2069",
        "l\u200fr\u061c",
        "tab\tnl\u2028",
    ]
    for name in names:
        (subs / name).mkdir(parents=True)
    found, refused = submissions.discover(subs)
    assert sorted(s.student for s in found) == sorted(names) and not refused, (found, refused)
    folders = [s.out_folder for s in found]
    assert not [f for f in folders if _one_visible_line(f)], f"a folder name keeps a control: {folders!r}"
    keys = [submissions._name_keys(f) for f in folders]
    assert all(not (a & b) for i, a in enumerate(keys) for b in keys[i + 1 :]), f"folders collide: {folders}"
    by_student = {s.student: s.out_folder for s in found}
    assert by_student["\u202eevil\u202c"].startswith("_evil_-") and by_student["_evil_"].startswith("_evil_-"), (
        f"two students whose safe names agree both get hashed folders: {by_student}"
    )
    assert by_student["x\u2066y\u2069"] == "x_y_", "a name that collides with no other keeps its safe form"
