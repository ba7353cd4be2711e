"""The instructor's view of a class: one self-contained HTML page from a grade-all gradebook.

`python -m autograder report OUT_DIR --html report.html [--rare 0.1]` reads OUT_DIR/gradebook.sqlite
(what `grade-all --out OUT_DIR` keeps; opened read-only, never changed) and writes one HTML file that
needs nothing else (inline CSS, plots as base64 PNG data URIs, no script), from each student's latest
grading:
1. the score distribution per exercise: histograms, and mean, median, min, max, how many at 0 and at
   full marks;
2. the pass rate of each function's public and hidden test, and of each case, listed by case id and
   function, never with an input or an expected value. A public case is named in its feedback line; a
   hidden case's line says only "hidden case n of m", so its id is the n-th hidden case of that
   function in autograder/expected/exNN.json (when m is not the count stored there now, the cases
   changed since that grading and the case is shown by position). The opt-in entry holding the hidden
   inputs and the staff-only environment entry are never read;
3. the known mistakes (the `mistakes` of autograder/expected/exNN.json, named in failed tests' feedback
   as "Your result matches a known mistake: ..."), ranked by how many students matched them;
4. the students whose graded versions differ (the history: versions, score trail, new files or a regrade);
5. groups of two or more students who fail exactly the same rare cases (each failed by at most
   max(2, 10% of the class), --rare sets the share; failures without a result, such as a missing file
   or a stub, are left out): a hint for the instructor to look closer, not a verdict.
Every text a student controls (names, feedback) is HTML-escaped.
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import math
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.batch.gradebook import Gradebook, Record, Version, test_exercise
from autograder.core.cases import stored
from autograder.core.manifest import BY_ID, EXERCISES, ROOT
from autograder.core.safetext import clean_text

GRADEBOOK_NAME = "gradebook.sqlite"  # as in autograder.batch.bulk (not imported: bulk pulls in the grader's stack)
RARE_SHARE = 0.10
TEST_NAME = re.compile(r"^(ex\d\d) (.+) \((public|hidden) cases\)$")
PUBLIC_LINE = re.compile(r"^\[(passed|FAILED)\] \([^)]*\) [^:]*: (ex\d\d\.[^:\s]+): (.*)$")
HIDDEN_LINE = re.compile(r"^hidden case (\d+) of (\d+) \([^)]*\): (.*)$")
CLIPPED = re.compile(r"^\.\.\. \(\d+ more characters\)$")  # autograder.runtime.results.clip's last line
KNOWN = "Your result matches a known mistake"
NO_ANSWER = ("no result:", "not implemented yet", "NotImplementedError")  # failures that are not an answer

Unit = tuple[str, str, str, str]  # (exercise, function label, "public"/"hidden", case id or position)


class ReportError(ValueError):
    """Bad input to the report (missing folder, not a gradebook, bad option): its message says which."""


@dataclass(frozen=True)
class Layout:
    """What the stored expected values of one exercise tell the report: ids and mistake sentences only."""

    hidden: dict[str, list[str]]  # hidden test label -> its case ids in grading order
    case_ids: frozenset[str]
    mistakes: dict[str, str]  # description -> wrong fixture name


@dataclass
class Outcomes:
    """What one student's results.json says per test and per case."""

    tests: dict[tuple[str, str, str], bool] = field(default_factory=dict)  # (exercise, label, side) -> passed
    cases: dict[Unit, tuple[bool, str]] = field(default_factory=dict)  # -> (passed, feedback line)
    mistakes: set[tuple[str, str]] = field(default_factory=set)  # (exercise, description)


@dataclass
class ClassData:
    records: list[Record]
    names: dict[str, str]  # student -> display name ("" when unknown)
    outcomes: dict[str, Outcomes]
    histories: dict[str, list[Version]]
    exercises: list[str]  # the exercises the latest gradings hold tests for


def layouts(root: Path = ROOT) -> dict[str, Layout]:
    found = {}
    for ex in EXERCISES:
        try:
            data = stored(ex.id, root)
        except (OSError, ValueError):
            continue
        hidden: dict[str, list[str]] = {}
        for case in data["hidden"]:
            label = f"simulator {case['harness']}" if case.get("harness") else case["func"]
            hidden.setdefault(label, []).append(case["id"])
        mistakes = {
            desc: name for entry in data["cases"].values() for name, (desc, _) in (entry.get("mistakes") or {}).items()
        }
        found[ex.id] = Layout(hidden, frozenset(data["cases"]), mistakes)
    return found


def known_mistakes(message: str, layout: Layout) -> list[str]:
    """The known-mistake sentences a feedback line ends with (the grader's, the last one on the line)."""
    at = message.rfind(KNOWN)
    tail = message[at + len(KNOWN) :] if at >= 0 else ""
    one, several = tail.startswith(": "), tail.startswith(", one of: ")
    parts = [tail[2:]] if one else tail[len(", one of: ") :].split(" | ") if several else []
    return parts if all(p in layout.mistakes for p in parts) else []


def outcomes(results: dict[str, Any], known: dict[str, Layout]) -> Outcomes:
    """Per-test and per-case outcomes from the feedback lines of the public and hidden test entries."""
    out = Outcomes()
    for test in results.get("tests", []):
        match = TEST_NAME.match(str(test.get("name", "")))
        if not match:
            continue
        ex, label, side = match.groups()
        out.tests[(ex, label, side)] = test.get("status") == "passed"
        layout = known.get(ex, Layout({}, frozenset(), {}))
        lines = str(test.get("output", "")).splitlines()
        if lines and CLIPPED.match(lines[-1]):
            lines = lines[:-2]  # the line before the clip note is cut short
        for line in lines:
            if side == "public":
                pub = PUBLIC_LINE.match(line)
                if pub is None or pub.group(2) not in layout.case_ids:
                    continue
                case, passed, message = pub.group(2), pub.group(1) == "passed", pub.group(3)
            else:
                hid = HIDDEN_LINE.match(line)
                if hid is None:
                    continue
                n, m, message = int(hid.group(1)), int(hid.group(2)), hid.group(3)
                ids = layout.hidden.get(label, [])
                case = ids[n - 1] if len(ids) == m and 1 <= n <= m else f"hidden case {n} of {m}"
                passed = message.startswith("passed.")
            out.cases[(ex, label, side, case)] = (passed, message)
            if not passed:
                out.mistakes.update((ex, desc) for desc in known_mistakes(message, layout))
    return out


def load(out_dir: Path, root: Path = ROOT) -> ClassData:
    """Everything the page shows, from OUT_DIR's gradebook (read-only)."""
    book = out_dir / GRADEBOOK_NAME
    if not out_dir.is_dir():
        raise ReportError(f"OUT_DIR {out_dir} is not a folder (give grade-all's --out folder)")
    if not book.is_file():
        raise ReportError(f"OUT_DIR {out_dir} has no {GRADEBOOK_NAME}: run grade-all with --out {out_dir} first")
    known = layouts(root)
    try:
        with Gradebook(book, read_only=True) as gb:
            records = list(gb.records())
            names = {r.student: gb.identity(r.student)[0] for r in records}
            latest = {r.student: gb.results(r.student) or {} for r in records}
            histories = {r.student: gb.history(r.student) for r in records}
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise ReportError(f"OUT_DIR {out_dir}: {GRADEBOOK_NAME} is not a grade-all gradebook ({exc})") from exc
    graded = {test_exercise(t) for res in latest.values() for t in res.get("tests", [])}
    exercises = [e.id for e in EXERCISES if e.id in graded] or [e.id for e in EXERCISES]
    return ClassData(records, names, {s: outcomes(r, known) for s, r in latest.items()}, histories, exercises)


# ---------------------------------------------------------------------------------------------
# What the page shows


def score_stats(data: ClassData) -> list[dict[str, Any]]:
    """One row per exercise and one for the total: mean, median, min, max, counts at 0 and full marks."""
    rows = []
    for ex in [*data.exercises, "total"]:
        pairs = [
            (r.score, r.max_score) if ex == "total" else r.exercises.get(ex, (0.0, BY_ID[ex].points))
            for r in data.records
        ]
        scores = [s for s, _ in pairs]
        mean, median = (statistics.fmean(scores), statistics.median(scores)) if scores else (0.0, 0.0)
        row = {"exercise": ex, "max_score": max((m for _, m in pairs), default=0.0), "scores": scores}
        row.update(mean=mean, median=median, min=min(scores, default=0.0), max=max(scores, default=0.0))
        row.update(zero=sum(s <= 1e-9 for s in scores), full=sum(s >= m - 1e-9 and m > 0 for s, m in pairs))
        rows.append(row)
    return rows


def pass_rates(data: ClassData) -> tuple[dict[tuple[str, str, str], list[int]], dict[Unit, list[int]]]:
    """[passed, with a result] per test (exercise, label, side) and per case, in grading order."""
    tests: dict[tuple[str, str, str], list[int]] = {}
    cases: dict[Unit, list[int]] = {}
    for out in data.outcomes.values():
        for key, passed in out.tests.items():
            tests.setdefault(key, [0, 0])[0] += passed
            tests[key][1] += 1
        for unit, (passed, _) in out.cases.items():
            cases.setdefault(unit, [0, 0])[0] += passed
            cases[unit][1] += 1
    return tests, cases


def mistake_ranking(data: ClassData, known: dict[str, Layout]) -> list[tuple[str, str, str, int]]:
    """(exercise, fixture name, description, students matching it), most matched first."""
    counts = Counter(m for out in data.outcomes.values() for m in out.mistakes)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(ex, known[ex].mistakes.get(desc, "") if ex in known else "", desc, n) for (ex, desc), n in ranked]


def changes(data: ClassData) -> list[tuple[str, list[Version], str]]:
    """(student, versions, what changed) for students whose graded versions differ in files or score."""
    found = []
    for student, versions in sorted(data.histories.items()):
        if len(versions) < 2:
            continue
        new_files = len({v.content_hash for v in versions}) > 1
        if new_files or len({round(v.score, 6) for v in versions}) > 1:
            found.append((student, versions, "new files" if new_files else "same files, regraded"))
    return found


def rare_groups(data: ClassData, share: float = RARE_SHARE) -> tuple[int, list[tuple[list[str], list[Unit], bool]]]:
    """The rarity limit and the groups (students, their shared rare failed cases, identical feedback on them)."""
    failed = {
        s: {u: msg for u, (ok, msg) in out.cases.items() if not ok and not any(w in msg for w in NO_ANSWER)}
        for s, out in data.outcomes.items()
    }
    counts = Counter(u for units in failed.values() for u in units)
    limit = max(2, math.floor(share * len(data.records)))
    members: dict[frozenset[Unit], list[str]] = defaultdict(list)
    for student, units in failed.items():
        rare = frozenset(u for u in units if counts[u] <= limit)
        if rare:
            members[rare].append(student)
    groups = []
    for rare, students in members.items():
        if len(students) >= 2:
            same = all(failed[s][u] == failed[students[0]][u] for s in students for u in rare)
            groups.append((sorted(students), sorted(rare), same))
    groups.sort(key=lambda g: (-len(g[1]), g[0]))
    return limit, groups


# ---------------------------------------------------------------------------------------------
# HTML


def num(x: float) -> str:
    """A score or share as shown and as put in data- attributes: at most two decimals."""
    return f"{round(x, 2):g}"


def esc(text: Any) -> str:
    return html.escape(clean_text(text), quote=True)


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
td.n { text-align: right; font-variant-numeric: tabular-nums; } .low { color: #b03a2e; font-weight: 600; }
.bar { display: inline-block; height: .8em; background: #3b6ea5; vertical-align: middle; } .note { color: #555; }
.barbox { display: inline-block; width: 100px; background: #e4e4e4; margin-right: .4em; text-align: left; }
.hint { background: #fff8e1; border-left: 4px solid #f0b429; padding: .5em 1em; } summary { color: #3b6ea5; }"""


def _rate(passed: int, total: int) -> str:
    share = passed / total if total else 0.0
    cls = ' class="n low"' if total and share < 0.5 else ' class="n"'
    return (
        f'<td{cls}><span class="barbox"><span class="bar" style="width:{round(100 * share)}px"></span></span>'
        f"{round(100 * share)}% ({passed}/{total})</td>"
    )


def _by_test(units: list[Unit]) -> dict[tuple[str, str, str], list[str]]:
    """Cases grouped by their test, each named without its `exNN.function.` prefix."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for ex, label, side, case in units:
        prefix = f"{ex}.{label}."
        found.setdefault((ex, label, side), []).append(case[len(prefix) :] if case.startswith(prefix) else case)
    return found


def _who(data: ClassData, student: str) -> str:
    name = data.names.get(student, "")
    return esc(student) + (f' <span class="note">({esc(name)})</span>' if name and name != student else "")


def _scores(data: ClassData, n: int) -> list[str]:
    stats = score_stats(data)
    p = ['<h2 id="scores">1. Scores per exercise</h2>']
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
        '<h2 id="cases">2. Pass rates per function and case</h2><p class="note">Share of the students whose '
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


def _mistakes(data: ClassData, n: int, known: dict[str, Layout]) -> list[str]:
    ranked = mistake_ranking(data, known)
    p = [
        '<h2 id="mistakes">3. Known mistakes, by how many students made them</h2><p class="note">A student '
        'counts once per mistake when a failed test\'s feedback names it.</p><ol id="mistake-list">'
    ]
    for ex, name, desc, count in ranked:
        pct = round(100 * count / n) if n else 0
        p.append(
            f'<li class="mistake" data-exercise="{ex}" data-fixture="{esc(name)}" data-students="{count}" '
            f'data-percent="{pct}"><b>{ex}</b>: {esc(desc)} — <b>{pct}% of the class</b> ({count} of {n}) '
            f'<span class="note">{esc(name)}</span></li>'
        )
    return [*p, "</ol>" + ("" if ranked else '<p class="note">No failed test names a known mistake.</p>')]


def _changes(data: ClassData) -> list[str]:
    changed = changes(data)
    p = [
        '<h2 id="changes">4. Submissions that changed between versions</h2><table id="change-table">'
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
        f'<h2 id="rare">5. Identical rare failures</h2><p class="hint">A hint for the instructor, not a verdict: '
        f"these students fail exactly the same rare cases (each failed by at most {limit} of the {n} students; "
        "failures without a result are left out). Shared mistakes happen; look at the code before concluding "
        "anything.</p>"
    ]
    for students, units, same in groups:
        tests = "".join(
            f"<li>{ex} {esc(label)} ({side}, {len(ids)}): {esc(', '.join(ids))}</li>"
            for (ex, label, side), ids in _by_test(units).items()
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


def render(data: ClassData, out_dir: Path, share: float = RARE_SHARE, root: Path = ROOT) -> str:
    """The whole page (see the module docstring)."""
    n = len(data.records)
    failed = [r.student for r in data.records if r.status != "graded"]
    p = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f"<title>A2 class report: {esc(out_dir.name)}</title><style>{CSS}</style></head><body>",
        f'<h1>A2 class report</h1><p class="note">Gradebook {esc(out_dir / GRADEBOOK_NAME)}, '
        f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}: <span id="class-size" data-students="{n}">'
        f"{n} students</span>, each at their latest grading; exercises {esc(', '.join(data.exercises))}.</p>",
    ]
    if failed:
        p.append(
            f'<p class="low" id="grader-failed" data-count="{len(failed)}">The grader failed on {len(failed)} '
            f"latest submission(s), counted with 0 points: {', '.join(_who(data, s) for s in failed)}.</p>"
        )
    p += _scores(data, n) + _rates(data) + _mistakes(data, n, layouts(root)) + _changes(data) + _rare(data, n, share)
    return "\n".join([*p, "</body></html>\n"])


def write_report(out_dir: Path, dest: Path, share: float = RARE_SHARE, root: Path = ROOT) -> ClassData:
    """Write the page for OUT_DIR to `dest` (atomically); return the data it shows."""
    if not 0 < share < 1:
        raise ReportError(f"--rare {share} must lie between 0 and 1 (a share of the class)")
    if dest.is_dir():
        raise ReportError(f"--html {dest} is a folder, not a file to write")
    if dest.resolve() == (out_dir / GRADEBOOK_NAME).resolve():
        raise ReportError(f"--html {dest} is the gradebook itself: give another file name")
    data = load(out_dir, root)
    page = render(data, out_dir, share, root)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".html", dir=dest.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.chmod(tmp, 0o644)
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
    args = parser.parse_args(list(argv))
    try:
        data = write_report(args.out_dir, args.html, args.rare)
    except ReportError as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"report: {args.html} could not be written: {clean_text(exc)}", file=sys.stderr)
        return 1
    print(f"wrote {args.html} ({len(data.records)} students, exercises {', '.join(data.exercises)})")
    return 0
