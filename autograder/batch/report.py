"""The instructor's view of a class: one self-contained HTML page from a grade-all gradebook.

`python -m autograder report OUT_DIR --html report.html [--rare 0.1] [--similarity DIR]` reads
OUT_DIR/gradebook.sqlite (what `grade-all --out OUT_DIR` keeps; opened read-only, never changed) and
writes one HTML file that needs nothing else (inline CSS, plots as base64 PNG data URIs, one inline
script allowed by the page's Content-Security-Policy and no other), from each student's latest grading.
It answers "whom do I contact, and about what" first (what each section computes: `report_data`):
1. the students: total, each exercise, status and links to their feedback files, a table sorted by
   clicking a column's header (the script reads `#sort=<column>[-desc]`; without it the table stays
   sorted by student);
2. the submissions that could not be graded in full, per student and exercise, with the grader's reason
   (missing file, import failure with its exception line, time limits, unreadable or untagged notebook,
   the grader's own failure, ...);
3. the hardest cases across all exercises, ranked by pass rate among the students with a result;
4. the known mistakes, each counted for a student only when it best explains that student's failures
   in its exercise (the rule is stated on the page);
5. similar submissions, from `python -m autograder similarity` (`--similarity DIR`, by default
   OUT_DIR/similarity when it holds similarity.json): the pairs above its threshold, each linked to its
   side-by-side page;
6. the score distribution per exercise (histograms, mean, median, min, max, at 0, at full marks);
7. the pass rate of each function's public and hidden test and of each case, by case id (never an input
   or an expected value; a hidden case is identified by its position in the feedback);
8. the students whose graded versions differ; 9. groups who fail exactly the same rare cases (each failed
   by at most max(2, 10% of the class), --rare sets the share): a hint, not a verdict.
Every text a student controls (names, feedback, file names, exception lines) is HTML-escaped, and links
are percent-encoded relative paths.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import html
import io
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

from autograder.batch.report_data import (
    GRADEBOOK_NAME,
    RARE_SHARE,
    ClassData,
    Layout,
    ReportError,
    changes,
    hardest_cases,
    layouts,
    load,
    mistake_ranking,
    pass_rates,
    rare_groups,
    score_stats,
    shown_name,
    status,
)
from autograder.core.manifest import BY_ID, ROOT
from autograder.core.safetext import clean_text, terminal_text
from autograder.runtime.statedir import created_mode

__all__ = ["ReportError", "layouts", "load", "main", "render", "write_report"]

SIMILARITY_FILE = "similarity.json"  # as autograder.batch.similarity writes it
SORT_SCRIPT = """(() => {
  const table = document.getElementById("student-table");
  const apply = () => {
    const m = /^#sort=([a-z0-9_]+?)(-desc)?$/.exec(window.location.hash);
    if (!table || !m) return;
    const heads = Array.from(table.tHead.rows[0].cells);
    const col = heads.findIndex((h) => h.dataset.key === m[1]);
    if (col < 0) return;
    const down = Boolean(m[2]);
    const numeric = heads[col].dataset.type === "number";
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    const value = (r) => r.cells[col].dataset.v;
    rows.sort((a, b) => {
      const c = numeric ? Number(value(a)) - Number(value(b)) : value(a).localeCompare(value(b));
      return down ? -c : c;
    });
    rows.forEach((r) => body.appendChild(r));
    table.dataset.sortedBy = m[1] + (down ? "-desc" : "");
    heads.forEach((h, i) => {
      h.setAttribute("aria-sort", i === col ? (down ? "descending" : "ascending") : "none");
      const link = h.querySelector("a");
      if (link) link.setAttribute("href", "#sort=" + h.dataset.key + (i === col && !down ? "-desc" : ""));
    });
  };
  window.addEventListener("hashchange", apply);
  apply();
})();"""
SCRIPT_HASH = base64.b64encode(hashlib.sha256(SORT_SCRIPT.encode("utf-8")).digest()).decode("ascii")
CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{SCRIPT_HASH}'; base-uri 'none'; form-action 'none'"
)
MISTAKE_RULE = (
    "A student counts for a mistake only when it is the best explanation of their failures in its exercise: "
    "mistakes are taken one at a time, the one named on the most failed cases not yet explained first; a "
    "mistake is taken only when it explains a failed case that no mistake taken before explains, and the "
    "cases it is named on outnumber the cases where it would have failed but the student's result is "
    "something else (a pass or another value). A mistake named on a few cases of a function whose failures "
    "another mistake explains is not counted."
)


def num(x: float) -> str:
    """A score or share as shown and as put in data- attributes: at most two decimals."""
    return f"{round(x, 2):g}"


def esc(text: Any) -> str:
    """`text` as inert HTML text: markup escaped, control and bidi characters shown as escapes (`terminal_text`)."""
    return html.escape(terminal_text(text, lines=True), quote=True)


def href(target: Path, base: Path) -> str:
    """`target` as a relative, percent-encoded and HTML-escaped link from the folder `base`."""
    return esc(quote(Path(os.path.relpath(target.resolve(), base.resolve())).as_posix(), safe="/"))


def histograms(stats: list[dict[str, Any]]) -> str:
    """One histogram per exercise and one of the totals, as a PNG data URI."""
    from hetero.plotting import pyplot

    plt = pyplot()
    cols = min(4, len(stats))
    rows = math.ceil(len(stats) / cols)
    figure, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.3 * rows), squeeze=False)
    for ax, row in zip(axes.flat, [stats[-1], *stats[:-1]], strict=False):
        top = row["max_score"] or 1.0
        ax.hist(row["scores"], bins=10, range=(0, top), color="#3b6ea5", edgecolor="white")
        ax.axvline(row["mean"], color="#c0392b", linewidth=1.2, label="mean")
        ax.set_title(f"{row['exercise']} (out of {num(top)})", fontsize=10)
        ax.set(xlabel="score", ylabel="students")
        ax.tick_params(labelsize=7)
        ax.yaxis.get_major_locator().set_params(integer=True)
    for ax in list(axes.flat)[len(stats) :]:
        ax.set_visible(False)
    buffer = io.BytesIO()
    figure.tight_layout()
    figure.savefig(buffer, format="png", dpi=96)
    plt.close(figure)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


CSS = """body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; padding: 0 1em; }
h2 { border-bottom: 2px solid #3b6ea5; padding-bottom: .2em; margin-top: 2em; } img { max-width: 100%; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: .92em; } th { background: #eef2f7; }
th, td { border: 1px solid #ccc; padding: .25em .6em; text-align: left; vertical-align: top; }
th a { color: inherit; text-decoration: none; } th[aria-sort=ascending] a::after { content: " ▲"; }
th[aria-sort=descending] a::after { content: " ▼"; } nav a { margin-right: .8em; }
td.n { text-align: right; font-variant-numeric: tabular-nums; } .low { color: #b03a2e; font-weight: 600; }
.bar { display: inline-block; height: .8em; background: #3b6ea5; vertical-align: middle; } .note { color: #555; }
.barbox { display: inline-block; width: 100px; background: #e4e4e4; margin-right: .4em; text-align: left; }
.hint { background: #fff8e1; border-left: 4px solid #f0b429; padding: .5em 1em; } summary { color: #3b6ea5; }
.status-incomplete { color: #a35d00; font-weight: 600; } .status-grader-failed { color: #b03a2e; font-weight: 600; }
.rule { background: #eef2f7; border-left: 4px solid #3b6ea5; padding: .5em 1em; }"""


def _rate(passed: int, total: int) -> str:
    share = passed / total if total else 0.0
    cls = ' class="n low"' if total and share < 0.5 else ' class="n"'
    return (
        f'<td{cls}><span class="barbox"><span class="bar" style="width:{round(100 * share)}px"></span></span>'
        f"{round(100 * share)}% ({passed}/{total})</td>"
    )


def _case_name(ex: str, label: str, case: str) -> str:
    """A case id without its `exNN.` prefix and, when it follows, its function's name."""
    return case.removeprefix(f"{ex}.").removeprefix(f"{label}.")


def _who(data: ClassData, student: str) -> str:
    name = shown_name(student, data.names)
    return esc(student) + (f' <span class="note">({esc(name)})</span>' if name else "")


def _students(data: ClassData, out_dir: Path, base: Path) -> list[str]:
    heads = [("student", "student", "text"), ("total", "total", "number")]
    heads += [(ex, ex, "number") for ex in data.exercises] + [("status", "status", "text")]
    p = [
        '<h2 id="students">1. Students</h2><p class="note">Each student\'s latest grading. Click a column\'s '
        "header to sort by it (again to reverse). Status: <i>incomplete</i> when something could not be graded "
        "in full (section 2), <i>grader failed</i> when the grader itself failed.</p>"
        '<table id="student-table"><thead><tr>'
        + "".join(
            f'<th data-key="{key}" data-type="{kind}" aria-sort="{"ascending" if key == "student" else "none"}">'
            f'<a href="#sort={key}{"-desc" if key == "student" else ""}">{esc(text)}</a></th>'
            for key, text, kind in heads
        )
        + "<th>feedback</th></tr></thead><tbody>"
    ]
    for rec in data.records:
        state = status(data, rec.student)
        cells = [f'<td data-v="{esc(rec.student)}">{_who(data, rec.student)}</td>']
        cells.append(f'<td class="n" data-v="{num(rec.score)}">{num(rec.score)} / {num(rec.max_score)}</td>')
        for ex in data.exercises:
            score, top = rec.exercises.get(ex, (0.0, BY_ID[ex].points))
            cells.append(f'<td class="n" data-v="{num(score)}" data-max="{num(top)}">{num(score)}</td>')
        cells.append(f'<td data-v="{state}" class="status-{state.replace(" ", "-")}">{state}</td>')
        folder = data.folders.get(rec.student)
        links = (
            f'<a href="{href(out_dir / folder / "feedback.md", base)}">student copy</a> · '
            f'<a href="{href(out_dir / folder / "feedback_instructor.md", base)}">instructor copy</a>'
            if folder
            else '<span class="note">no feedback files found</span>'
        )
        p.append(
            f'<tr class="student" data-student="{esc(rec.student)}" data-total="{num(rec.score)}" '
            f'data-status="{state}">{"".join(cells)}<td>{links}</td></tr>'
        )
    return [*p, "</tbody></table>"]


def _count(n: int, noun: str = "student") -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _problems(data: ClassData) -> list[str]:
    rows = [(s, pr) for s in sorted(data.outcomes) for pr in data.outcomes[s].problems]
    p = [
        f'<h2 id="problems">2. Submissions that could not be graded in full ({_count(len({s for s, _ in rows}))})'
        '</h2><p class="note">Whom to contact, and about what: each exercise (or whole submission) the '
        "grader could not grade in full, with its reason in the grader's words. Unfilled stubs are graded "
        "in full (0 points) and are not listed.</p>"
        '<table id="problem-table"><tr><th>student</th><th>exercise</th><th>problem</th><th>the grader says</th></tr>'
    ]
    p += [
        f'<tr class="problem" data-student="{esc(s)}" data-exercise="{pr.exercise or "all"}" '
        f'data-kind="{esc(pr.kind)}"><td>{_who(data, s)}</td><td>{pr.exercise or "whole submission"}</td>'
        f"<td><b>{esc(pr.kind)}</b></td><td>{esc(pr.detail)}</td></tr>"
        for s, pr in rows
    ]
    return [
        *p,
        "</table>" + ("" if rows else '<p class="note" id="no-problems">Every submission was graded in full.</p>'),
    ]


def _hardest(data: ClassData, known: dict[str, Layout]) -> list[str]:
    ranked = hardest_cases(data, known)
    p = [
        '<h2 id="hardest">3. The hardest cases, across exercises</h2><p class="note">Ranked by the share of the '
        "students with a result on the case who pass it (failures without a result, such as a missing file or "
        "a stub, are left out); the mistake is the one the failing students' feedback names most often.</p>"
        '<table id="hardest-table"><tr><th>#</th><th>case</th><th>exercise</th><th>function</th><th>test</th>'
        "<th>pass rate</th><th>most named mistake</th></tr>"
    ]
    for rank, row in enumerate(ranked, start=1):
        ex, label, side, case = row["unit"]
        p.append(
            f'<tr class="hard-case" data-rank="{rank}" data-case="{esc(case)}" data-exercise="{ex}" '
            f'data-passed="{row["passed"]}" data-total="{row["attempted"]}"><td class="n">{rank}</td>'
            f"<td>{esc(_case_name(ex, label, case))}</td><td>{ex}</td><td>{esc(label)}</td><td>{side} cases</td>"
            f"{_rate(row['passed'], row['attempted'])}<td>{esc(row['mistake']) or '—'}</td></tr>"
        )
    return [*p, "</table>" + ("" if ranked else '<p class="note">No case was failed by a student with a result.</p>')]


def _mistakes(data: ClassData, n: int, known: dict[str, Layout]) -> list[str]:
    ranked = mistake_ranking(data, known)
    p = [
        '<h2 id="mistakes">4. Known mistakes, by how many students made them</h2>'
        f'<p class="rule" id="mistake-rule"><b>The rule.</b> {esc(MISTAKE_RULE)}</p><ol id="mistake-list">'
    ]
    for ex, name, desc, count, students in ranked:
        pct = int(100 * count / n + 0.5) if n else 0  # half up: 1 of 8 is 13 %, not round()'s 12 %
        p.append(
            f'<li class="mistake" data-exercise="{ex}" data-fixture="{esc(name)}" data-students="{count}" '
            f'data-percent="{pct}" data-who="{esc(" ".join(students))}"><b>{ex}</b>: {esc(desc)} — '
            f"<b>{pct}% of the class</b> ({count} of {n}) "
            f'<span class="note">{esc(name)}</span><details><summary>who</summary>'
            f"{', '.join(_who(data, s) for s in students)}</details></li>"
        )
    return [*p, "</ol>" + ("" if ranked else '<p class="note">No failed test names a known mistake.</p>')]


def read_similarity(folder: Path) -> dict[str, Any]:
    """The similarity command's summary (`similarity.json` in `folder`); ReportError when unreadable."""
    try:
        data = json.loads((folder / SIMILARITY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportError(f"--similarity {folder}: no readable {SIMILARITY_FILE} ({clean_text(exc)})") from None
    if not isinstance(data, dict) or not isinstance(data.get("pairs"), list):
        raise ReportError(f"--similarity {folder}: {SIMILARITY_FILE} is not the similarity command's summary")
    return data


def _similar(data: ClassData, similarity: dict[str, Any] | None, folder: Path | None, base: Path) -> list[str]:
    p = ['<h2 id="similarity">5. Similar submissions</h2>']
    if similarity is None or folder is None:
        return [
            *p,
            '<p class="note" id="no-similarity">Not computed for this page: run <code>python -m autograder '
            "similarity SUBMISSIONS --out OUT_DIR/similarity</code>, then this report again (or give "
            "<code>--similarity DIR</code>).</p>",
        ]
    pairs = similarity["pairs"]
    p.append(
        f'<p class="hint">A hint for the instructor, not a verdict: pairs of submissions whose code (starter stubs '
        f"excluded, names and literals normalised) overlaps by at least {esc(num(100 * float(similarity.get('threshold', 0))))}% "
        f"of either file ({esc(similarity.get('tool', ''))}, {esc(similarity.get('compared', ''))} pairs compared). "
        "Short exercises converge on similar code; read the pair side by side before concluding anything.</p>"
        '<table id="similar-table"><tr><th>exercise</th><th>student</th><th>student or earlier term</th>'
        "<th>share of the first's code</th><th>share of the second's</th><th>side by side</th></tr>"
    )
    for pair in pairs:
        other = _who(data, str(pair["b"])) + (
            f' <span class="note">(archive: {esc(pair.get("b_term", ""))})</span>' if pair.get("b_term") else ""
        )
        link = f'<a href="{href(folder / str(pair["page"]), base)}">compare</a>' if pair.get("page") else ""
        p.append(
            f'<tr class="similar-pair" data-exercise="{esc(pair["exercise"])}" data-a="{esc(pair["a"])}" '
            f'data-b="{esc(pair["b"])}" data-share="{num(max(pair["a_share"], pair["b_share"]))}">'
            f"<td>{esc(pair['exercise'])}</td><td>{_who(data, str(pair['a']))}</td><td>{other}</td>"
            f'<td class="n">{num(100 * pair["a_share"])}%</td><td class="n">{num(100 * pair["b_share"])}%</td>'
            f"<td>{link}</td></tr>"
        )
    return [*p, "</table>" + ("" if pairs else '<p class="note">No pair is above the threshold.</p>')]


def _scores(data: ClassData, n: int) -> list[str]:
    stats = score_stats(data)
    p = ['<h2 id="scores">6. Scores per exercise</h2>']
    if n:
        p.append(f'<img id="histograms" alt="histograms of the scores" src="{histograms(stats)}">')
        p.append('<p class="note">Students per score band; the red line is the mean.</p>')
    p.append(
        '<table id="score-table"><tr><th>exercise</th><th>out of</th><th>mean</th><th>median</th><th>min</th>'
        "<th>max</th><th>at 0</th><th>full marks</th></tr>"
    )
    for row in stats:
        names = ("max_score", "mean", "median", "min", "max")
        attrs = " ".join(f'data-{k.replace("_", "-")}="{num(row[k])}"' for k in names)
        cells = "".join(f'<td class="n">{num(row[k])}</td>' for k in [*names, "zero", "full"])
        p.append(
            f'<tr class="score-row" data-exercise="{row["exercise"]}" {attrs} data-zero="{row["zero"]}" '
            f'data-full="{row["full"]}"><td>{row["exercise"]}</td>{cells}</tr>'
        )
    return [*p, "</table>"]


def _rates(data: ClassData) -> list[str]:
    tests, cases = pass_rates(data)
    p = [
        '<h2 id="cases">7. Pass rates per function and case</h2><p class="note">Share of the students whose '
        "latest grading has the test or case. Cases are named by id and function only (inputs and expected "
        "values stay in autograder/expected); a hidden case is identified by its position in the feedback.</p>"
    ]
    for ex in data.exercises:
        funcs = [k for k in tests if k[0] == ex]
        units = [u for u in cases if u[0] == ex]
        if not funcs:
            continue
        p.append(
            f'<h3>{ex} {esc(BY_ID[ex].title)}</h3><table class="function-table" data-exercise="{ex}">'
            "<tr><th>function</th><th>test</th><th>students with all its points</th></tr>"
        )
        p += [
            f'<tr class="function-rate" data-exercise="{ex}" data-function="{esc(label)}" data-side="{side}" '
            f'data-passed="{tests[(ex, label, side)][0]}" data-total="{tests[(ex, label, side)][1]}">'
            f"<td>{esc(label)}</td><td>{side} cases</td>{_rate(*tests[(ex, label, side)])}</tr>"
            for ex, label, side in funcs
        ]
        p.append(
            f"</table><details><summary>{ex}: pass rate per case ({len(units)} cases)</summary>"
            '<table class="case-table"><tr><th>case</th><th>function</th><th>test</th><th>pass rate</th></tr>'
        )
        p += [
            f'<tr class="case-rate" data-case="{esc(u[3])}" data-function="{esc(u[1])}" data-side="{u[2]}" '
            f'data-passed="{cases[u][0]}" data-total="{cases[u][1]}"><td>{esc(u[3])}</td><td>{esc(u[1])}</td>'
            f"<td>{u[2]} cases</td>{_rate(*cases[u])}</tr>"
            for u in units
        ]
        p.append("</table></details>")
    return p


def _changes(data: ClassData) -> list[str]:
    changed = changes(data)
    p = [
        '<h2 id="changes">8. Submissions that changed between versions</h2><table id="change-table">'
        "<tr><th>student</th><th>versions</th><th>what changed</th><th>score, oldest → latest</th></tr>"
    ]
    p += [
        f'<tr class="change" data-student="{esc(student)}" data-versions="{len(versions)}" '
        f'data-old="{num(versions[-2].score)}" data-new="{num(versions[-1].score)}"><td>{_who(data, student)}</td>'
        f'<td class="n">{len(versions)}</td><td>{what}</td><td>{" → ".join(num(v.score) for v in versions)}</td></tr>'
        for student, versions, what in changed
    ]
    return [*p, "</table>" + ("" if changed else '<p class="note">No student has two differing versions.</p>')]


def _rare(data: ClassData, n: int, share: float) -> list[str]:
    limit, groups = rare_groups(data, share)
    p = [
        f'<h2 id="rare">9. Identical rare failures</h2><p class="hint">A hint for the instructor, not a verdict: '
        f"these students fail exactly the same rare cases (each failed by at most {limit} of the {n} students; "
        "failures without a result are left out). Shared mistakes happen; look at the code before concluding "
        "anything.</p>"
    ]
    for students, units, same in groups:
        by_test: dict[tuple[str, str, str], list[str]] = {}
        for ex, label, side, case in units:
            by_test.setdefault((ex, label, side), []).append(_case_name(ex, label, case))
        tests = "".join(
            f"<li>{ex} {esc(label)} ({side}, {len(ids)}): {esc(', '.join(ids))}</li>"
            for (ex, label, side), ids in by_test.items()
        )
        p.append(
            f'<div class="rare-group" data-students="{esc(" ".join(students))}" data-cases="{len(units)}" '
            f'data-same-feedback="{str(same).lower()}"><p><b>{len(students)} students</b>: '
            f"{', '.join(_who(data, s) for s in students)}; {len(units)} rare failed case(s), "
            f"{'identical feedback on each' if same else 'feedback differs'}:</p><ul>{tests}</ul></div>"
        )
    if not groups:
        p.append('<p class="note" id="no-rare-groups">No two students share the same rare failures.</p>')
    return p


SECTIONS = [
    ("students", "students"),
    ("problems", "not graded in full"),
    ("hardest", "hardest cases"),
    ("mistakes", "known mistakes"),
    ("similarity", "similar submissions"),
    ("scores", "scores"),
    ("cases", "pass rates"),
    ("changes", "changes"),
    ("rare", "rare failures"),
]


def render(
    data: ClassData,
    out_dir: Path,
    share: float = RARE_SHARE,
    root: Path = ROOT,
    base: Path | None = None,
    similarity: dict[str, Any] | None = None,
    similarity_dir: Path | None = None,
) -> str:
    """The whole page (see the module docstring); links are relative to the folder `base` (the page's)."""
    base = out_dir if base is None else base
    n = len(data.records)
    known = layouts(root)
    failed = [r.student for r in data.records if r.status != "graded"]
    p = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>A2 class report: {esc(out_dir.name)}</title><style>{CSS}</style></head><body>",
        f'<h1>A2 class report</h1><p class="note">Gradebook {esc(out_dir / GRADEBOOK_NAME)}, '
        f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}: <span id="class-size" data-students="{n}">'
        f"{n} students</span>, each at their latest grading; exercises {esc(', '.join(data.exercises))}.</p>",
        "<nav>" + "".join(f'<a href="#{key}">{text}</a>' for key, text in SECTIONS) + "</nav>",
    ]
    if failed:
        p.append(
            f'<p class="low" id="grader-failed" data-count="{len(failed)}">The grader failed on {len(failed)} '
            f"latest submission(s), counted with 0 points: {', '.join(_who(data, s) for s in failed)}.</p>"
        )
    p += _students(data, out_dir, base) + _problems(data) + _hardest(data, known) + _mistakes(data, n, known)
    p += _similar(data, similarity, similarity_dir, base)
    p += _scores(data, n) + _rates(data) + _changes(data) + _rare(data, n, share)
    return "\n".join([*p, f"<script>{SORT_SCRIPT}</script>", "</body></html>\n"])


def write_report(
    out_dir: Path, dest: Path, share: float = RARE_SHARE, root: Path = ROOT, similarity_dir: Path | None = None
) -> ClassData:
    """Write the page for OUT_DIR to `dest` (atomically); return the data it shows. `similarity_dir`: the
    similarity command's --out folder (None: OUT_DIR/similarity when it holds similarity.json)."""
    if not 0 < share < 1:
        raise ReportError(f"--rare {share} must lie between 0 and 1 (a share of the class)")
    if dest.is_dir():
        raise ReportError(f"--html {dest} is a folder, not a file to write")
    if dest.resolve() == (out_dir / GRADEBOOK_NAME).resolve():
        raise ReportError(f"--html {dest} is the gradebook itself: give another file name")
    data = load(out_dir, root)
    if similarity_dir is None and (out_dir / "similarity" / SIMILARITY_FILE).is_file():
        similarity_dir = out_dir / "similarity"
    similarity = read_similarity(similarity_dir) if similarity_dir is not None else None
    dest.parent.mkdir(parents=True, exist_ok=True)
    page = render(data, out_dir, share, root, dest.parent, similarity, similarity_dir)
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=dest.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.chmod(tmp, created_mode())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return data


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder report", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path, help="grade-all's --out folder (holding gradebook.sqlite)")
    parser.add_argument("--html", type=Path, required=True, help="the HTML file to write")
    parser.add_argument(
        "--rare", type=float, default=RARE_SHARE, help="a failure is rare when at most this share fails it (0.1)"
    )
    parser.add_argument(
        "--similarity",
        type=Path,
        help="the `similarity` command's --out folder (default: OUT_DIR/similarity when it holds similarity.json)",
    )
    args = parser.parse_args(list(argv))
    try:
        data = write_report(args.out_dir, args.html, args.rare, similarity_dir=args.similarity)
    except ReportError as exc:
        print(f"report: {terminal_text(exc)}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"report: {args.html} could not be written: {terminal_text(exc)}", file=sys.stderr)
        return 1
    print(f"wrote {args.html} ({len(data.records)} students, exercises {', '.join(data.exercises)})")
    return 0
