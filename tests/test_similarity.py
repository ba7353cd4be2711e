"""`python -m autograder similarity SUBMISSIONS --out DIR`: similar code across a class, per exercise.

A small class: the answer key, a disguised copy of it (locals and helpers renamed, functions reordered,
docstrings, comments and layout rewritten: `autograder.selftest.attacks.disguised_copy`), an
independent solution of ex02 written apart from the key (autograder/fixtures/similarity), the unfilled
stubs, a submission whose code would leave a mark if it ever ran, and an earlier term's archive holding
another copy. The copy pairs are flagged, the independent solution and the stubs are not, the pages mark
the shared code and escape every name, and no student code runs.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from autograder.__main__ import main as cli
from autograder.batch import report, similarity
from autograder.core.manifest import BY_ID, ROOT
from autograder.selftest.attacks import disguised_copy

EXERCISES = ["ex02", "ex05"]
XSS = "<img src=x onerror=alert(1)>eve"


def _write(folder: Path, ex_id: str, text: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / BY_ID[ex_id].filename).write_text(text, encoding="utf-8")


def _key(ex_id: str) -> str:
    return (ROOT / "solutions" / BY_ID[ex_id].filename).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def compared(tmp_path_factory) -> tuple[Path, dict, Path]:
    base = tmp_path_factory.mktemp("similarity")
    subs, archive, out = base / "class", base / "term_2025", base / "out"
    marker = base / "RAN"
    for ex in EXERCISES:
        _write(subs / "key", ex, _key(ex))
        _write(subs / XSS, ex, disguised_copy(_key(ex)))
        _write(subs / "stubs", ex, (ROOT / "assignments" / BY_ID[ex].filename).read_text(encoding="utf-8"))
        _write(subs / "stubs_too", ex, (ROOT / "assignments" / BY_ID[ex].filename).read_text(encoding="utf-8"))
    _write(subs / "indep", "ex02", (ROOT / "autograder/fixtures/similarity/ex02_kv_capacity.py").read_text())
    runs = f"open({str(marker)!r}, 'w').write('ran')\nimport sys\nsys.modules['a2_student_ran'] = sys\n"
    _write(subs / "runner", "ex05", runs + (ROOT / "assignments" / BY_ID["ex05"].filename).read_text())
    _write(archive / "old_student", "ex05", disguised_copy(_key("ex05")).replace("v1_", "w1_"))
    summary = similarity.run(subs, out, [archive], exercises=EXERCISES)
    assert not marker.exists() and "a2_student_ran" not in sys.modules, "the similarity step ran student code"
    return out, summary, marker


def _pairs(summary: dict) -> set[tuple[str, frozenset[str]]]:
    return {(p["exercise"], frozenset([p["a"], p["b"]])) for p in summary["pairs"]}


def test_the_disguised_copy_is_flagged_and_the_independent_solution_and_stubs_are_not(compared):
    _, summary, _ = compared
    pairs = _pairs(summary)
    for ex in EXERCISES:
        assert (ex, frozenset(["key", XSS])) in pairs, f"{ex}: the renamed and reordered copy of the key is flagged"
    shares = {(p["exercise"], frozenset([p["a"], p["b"]])): max(p["a_share"], p["b_share"]) for p in summary["pairs"]}
    assert min(shares[(ex, frozenset(["key", XSS]))] for ex in EXERCISES) >= 0.5, shares
    flagged = {s for _, members in pairs for s in members}
    assert "indep" not in flagged, f"the independent ex02 solution is not similar to anyone: {summary['pairs']}"
    assert not flagged & {"stubs", "stubs_too", "runner"}, (
        f"the unfilled stubs share nothing once the starter code is excluded, not even with each other: {pairs}"
    )
    assert summary["students"] == 6 and summary["exercises"] == EXERCISES and summary["tool"] == "copydetect 0.5.0"


def test_independent_solution_shares_little_with_the_key():
    """The margin behind the threshold: the independent ex02 shares under a fifth of its code with the key and
    with its disguised copy, while the copy shares over half."""
    from copydetect import compare_files

    ex = BY_ID["ex02"]
    stub = similarity.stub_hashes(ex)
    prints = {
        name: similarity._fingerprint(text, ex, stub)
        for name, text in {
            "key": _key("ex02"),
            "copy": disguised_copy(_key("ex02")),
            "indep": (ROOT / "autograder/fixtures/similarity/ex02_kv_capacity.py").read_text(),
        }.items()
    }
    for a, b, low, high in (("key", "indep", 0, 0.2), ("copy", "indep", 0, 0.2), ("key", "copy", 0.5, 1)):
        _, shares, _ = compare_files(prints[a], prints[b])
        assert all(low <= s <= high for s in shares), f"{a} vs {b}: shares {shares}, expected in [{low}, {high}]"


def test_an_earlier_terms_copy_is_compared_with_the_current_class_only(compared):
    _, summary, _ = compared
    archived = [p for p in summary["pairs"] if p["b_term"]]
    assert {(p["exercise"], p["b"], p["b_term"]) for p in archived} >= {("ex05", "old_student", "term_2025")}
    assert {p["a"] for p in archived} >= {"key", XSS}, "each current copy of the key meets the archived one"
    assert all(not p["a"].startswith("old") for p in summary["pairs"]), "the archive is never the first of a pair"
    assert summary["archive"] == {"term_2025": 1}


class Marks(HTMLParser):
    def __init__(self, page: str):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.marked: list[str] = []
        self._in = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = self._in or tag == "mark"

    def handle_endtag(self, tag):
        self._in = self._in and tag != "mark"

    def handle_data(self, data):
        if self._in:
            self.marked.append(data)


def test_pages_show_the_shared_code_side_by_side_and_escape_names(compared):
    out, summary, _ = compared
    assert json.loads((out / "similarity.json").read_text()) == summary
    pair = next(p for p in summary["pairs"] if p["exercise"] == "ex02" and {p["a"], p["b"]} == {"key", XSS})
    page = (out / pair["page"]).read_text(encoding="utf-8")
    parsed = Marks(page)
    marked = "".join(parsed.marked)
    assert "return 2.0 * num_layers * num_kv_heads * head_dim * bytes_per_elem" in marked, (
        "the key's formula is marked as shared on the key's side"
    )
    assert XSS not in page and "&lt;img src=x onerror=alert(1)&gt;eve" in page
    assert {t for t, _ in parsed.tags} <= {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "h1",
        "h2",
        "p",
        "div",
        "pre",
        "mark",
    }, "no script, no live tag from a name or the code"
    index = (out / "index.html").read_text(encoding="utf-8")
    assert XSS not in index and index.count('href="pairs/') == len(summary["pairs"])
    assert all((out / p["page"]).is_file() for p in summary["pairs"])


def test_report_lists_the_pairs_with_links(compared, tmp_path):
    out, summary, _ = compared
    data = report.ClassData([], {}, {}, {}, ["ex02"])
    shown = "\n".join(report._similar(data, report.read_similarity(out), out, tmp_path))
    rows = re.findall(r'<tr class="similar-pair" data-exercise="(ex\d\d)" data-a="([^"]*)" data-b="([^"]*)"', shown)
    assert len(rows) == len(summary["pairs"]) and ("ex02", "&lt;img src=x onerror=alert(1)&gt;eve", "key") in rows
    assert "not a verdict" in shown and shown.count(">compare</a>") == len(summary["pairs"])


def test_bad_input_is_refused_naming_it(tmp_path, capsys):
    assert cli(["similarity", str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")]) == 2
    assert "is not a folder of submissions" in capsys.readouterr().err
    (tmp_path / "subs").mkdir()
    assert cli(["similarity", str(tmp_path / "subs"), "--out", str(tmp_path / "o"), "--threshold", "1.5"]) == 2
    assert "--threshold 1.5 must lie in (0, 1]" in capsys.readouterr().err
    assert cli(["similarity", str(tmp_path / "subs"), "--out", str(tmp_path / "o"), "--exercises", "ex99"]) == 2
    assert "unknown ex99" in capsys.readouterr().err
    assert cli(["similarity", str(tmp_path / "subs"), "--out", str(tmp_path / "o")]) == 0
    summary = json.loads((tmp_path / "o" / "similarity.json").read_text())
    assert summary["pairs"] == [] and summary["students"] == 0


def test_a_notebook_submission_is_read_through_its_exercise_cell(tmp_path):
    from autograder.exports import notebooks as nb

    subs = tmp_path / "subs"
    _write(subs / "key", "ex02", _key("ex02"))
    note = nb.fill_exercise_cell(
        nb.student_notebook(nb.load_sources("ex02")), BY_ID["ex02"], disguised_copy(_key("ex02"))
    )
    nb.write_notebook(note, subs / "nb_student" / f"{BY_ID['ex02'].module}.ipynb")
    shutil.copytree(subs / "key", subs / "key2")
    summary = similarity.run(subs, tmp_path / "out", exercises=["ex02"])
    assert ("ex02", frozenset(["key", "nb_student"])) in _pairs(summary), summary["pairs"]


def test_shares_are_copydetects_own(tmp_path):
    """`similarity.share` (numpy over the fingerprints) gives the numbers of copydetect's `compare_files`."""
    from copydetect import compare_files

    from autograder.authoring.wrong_fixtures import FIXTURES, materialise

    for ex_id in ("ex02", "ex05", "ex10"):
        ex = BY_ID[ex_id]
        stub = similarity.stub_hashes(ex)
        texts = [_key(ex_id), disguised_copy(_key(ex_id)), (ROOT / "assignments" / ex.filename).read_text()]
        texts += [materialise(f.name, tmp_path / f.name).read_text() for f in FIXTURES if f.exercise == ex_id][:2]
        if ex_id == "ex02":
            texts.append((ROOT / "autograder/fixtures/similarity/ex02_kv_capacity.py").read_text())
        prints = [similarity.Prepared.of(similarity._fingerprint(t, ex, stub)) for t in texts]
        for a in prints:
            for b in prints:
                if a is b or not a.print.hashes or not b.print.hashes:
                    continue
                _, (want_a, want_b), _ = compare_files(a.print, b.print)
                got = (similarity.share(a, b), similarity.share(b, a))
                assert got == pytest.approx((want_a, want_b), abs=1e-12), (ex_id, got, (want_a, want_b))
