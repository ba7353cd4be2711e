"""What the class report shows, computed from a grade-all gradebook (the page itself: `report.py`).

Everything comes from each student's latest results.json as the gradebook keeps it (opened read-only)
and from the ids and mistake sentences of autograder/expected/exNN.json; the hidden inputs, expected
values, the opt-in entry holding them and the staff-only environment entry are never read.

- **Per case**: the public and hidden feedback lines (a public line names its case; a hidden line says
  "hidden case n of m", the n-th hidden case of that function in the stored file when m matches it).
- **Problems** (`problems`): what kept an exercise (or the whole submission) from being graded in full,
  in the grader's own sentences: the exercise summary lines of results.json's output and their notes
  (missing file, unreadable or untagged notebook, import failure with the exception line from the first
  public test, time limits, output limit, crashes, unreadable files), the notes about the whole
  submission, cases without a result, and the grader's own failure.
- **Known mistakes** (`explained_mistakes`): a student counts for a mistake only when it is the best
  explanation of their failures in its exercise. Mistakes are taken one at a time, the one named on the
  most failed cases not yet explained first (then the one that fits best); a mistake is taken only when
  it explains a failed case that no mistake taken before explains and the cases it is named on outnumber
  the cases where it would have failed but the student's result is something else (a pass or another
  value). Naming a mistake on any single case, as before, counted 9 of the 52 wrong fixtures of 2026-12-02
  for two or three mistakes; this rule counts each for its own one (tests/test_report.py).
- **Hardest cases**: every case ranked by the share of the students with a result on it who pass it.
"""

from __future__ import annotations

import math
import re
import sqlite3
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.batch.gradebook import Gradebook, Record, Version, test_exercise
from autograder.batch.submissions import folder_name
from autograder.core.cases import stored
from autograder.core.manifest import BY_ID, EXERCISES, ROOT
from autograder.core.safetext import clean_text

GRADEBOOK_NAME = "gradebook.sqlite"  # as in autograder.batch.bulk (not imported: bulk pulls in the grader's stack)
RARE_SHARE = 0.10
HARDEST = 15  # cases shown in the ranking of the hardest cases
TEST_NAME = re.compile(r"^(ex\d\d) (.+) \((public|hidden) cases\)$")
PUBLIC_LINE = re.compile(r"^\[(passed|FAILED)\] \([^)]*\) [^:]*: (ex\d\d\.[^:\s]+): (.*)$")
HIDDEN_LINE = re.compile(r"^hidden case (\d+) of (\d+) \([^)]*\): (.*)$")
CLIPPED = re.compile(r"^\.\.\. \(\d+ more characters\)$")  # autograder.runtime.results.clip's last line
SUMMARY_LINE = re.compile(
    r"^(ex\d\d) .*?: (?:autograder failed \(0 / [\d.]+\)|[\d.]+ / [\d.]+ \(public \d+/\d+, hidden \d+/\d+ passed\))$"
)
PRINTED_HEADER = re.compile(r"^ex\d\d: what your code printed before the hidden cases:$")
IMPORT_HEADER = "Your file could not be imported:"
FILE_LINE = re.compile(r'^\s*File "[^"]*", line (\d+)')
KNOWN = "Your result matches a known mistake"
NO_ANSWER = ("no result:", "not implemented yet", "NotImplementedError")  # failures that are not an answer
# (a phrase of the grader's sentence, the kind of problem it says): autograder.runtime.grader._exercise_note,
# runtime.intake (missing, unreadable or too large files, notebooks, zips), sandbox.records (how a child stopped)
PROBLEM_KINDS = (
    ("was not found in your submission", "missing file"),
    ("no exercise cell found", "notebook without a tagged exercise cell"),
    ("could not be read as this exercise's notebook", "unreadable notebook"),
    ("could not be imported", "could not be imported"),
    ("hit the output limit", "output limit"),
    ("the output limit (", "output limit"),
    ("the time limit (", "time limit"),
    ("the CPU-time limit", "CPU-time limit"),
    ("was killed by", "crashed (signal or memory)"),
    ("exited with status", "exited before finishing"),
    ("exited before finishing", "exited before finishing"),
    ("per-case time limit", "per-case time limit"),
    ("is larger than", "file too large"),
    ("is encrypted", "encrypted zip member"),
    ("the zip is damaged", "damaged zip member"),
    ("could not be opened (", "unreadable file"),
    ("could not be read (", "unreadable file"),
    ("is not a regular file", "unreadable file"),
    ("nothing was graded", "submission not readable"),
    ("were not searched", "folders too deep"),
    ("could not be read and were skipped", "unreadable entries"),
    ("Stopped:", "stopped"),
)
SUPERSEDED = {  # a general kind -> the specific kinds that name its cause
    "stopped": {kind for _, kind in PROBLEM_KINDS} - {"stopped", "per-case time limit"},
    "unreadable notebook": {"notebook without a tagged exercise cell"},
    "exited before finishing": {"could not be imported"},  # a file that does not import ends its process
}

Unit = tuple[str, str, str, str]  # (exercise, function label, "public"/"hidden", case id or position)


class ReportError(ValueError):
    """Bad input to the report (missing folder, not a gradebook, bad option): its message says which."""


@dataclass(frozen=True)
class Layout:
    """What the stored expected values of one exercise tell the report: ids and mistake sentences only."""

    hidden: dict[str, list[str]]  # hidden test label -> its case ids in grading order
    case_ids: frozenset[str]
    mistakes: dict[str, str]  # description -> wrong fixture name
    predicts: dict[str, frozenset[str]] = field(default_factory=dict)  # description -> the cases it fails


@dataclass(frozen=True)
class Problem:
    """Why an exercise (or, with exercise "", the whole submission) was not graded in full."""

    exercise: str
    kind: str  # "missing file", "time limit", ... (PROBLEM_KINDS), or "grader failed"
    detail: str  # the grader's own sentence(s)


@dataclass
class Outcomes:
    """What one student's results.json says per test and per case, and what kept it from being complete."""

    tests: dict[tuple[str, str, str], bool] = field(default_factory=dict)  # (exercise, label, side) -> passed
    cases: dict[Unit, tuple[bool, str]] = field(default_factory=dict)  # -> (passed, feedback line)
    problems: list[Problem] = field(default_factory=list)


@dataclass
class ClassData:
    records: list[Record]
    names: dict[str, str]  # student -> display name ("" when unknown)
    outcomes: dict[str, Outcomes]
    histories: dict[str, list[Version]]
    exercises: list[str]  # the exercises the latest gradings hold tests for
    folders: dict[str, str] = field(default_factory=dict)  # student -> output folder under OUT_DIR (when known)


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
        mistakes: dict[str, str] = {}
        predicts: dict[str, set[str]] = defaultdict(set)
        for cid, entry in data["cases"].items():
            for name, (desc, _) in (entry.get("mistakes") or {}).items():
                mistakes[desc] = name
                predicts[desc].add(cid)
        found[ex.id] = Layout(
            hidden, frozenset(data["cases"]), mistakes, {d: frozenset(c) for d, c in predicts.items()}
        )
    return found


def known_mistakes(message: str, layout: Layout) -> list[str]:
    """The known-mistake sentences a feedback line ends with (the grader's, the last one on the line)."""
    at = message.rfind(KNOWN)
    tail = message[at + len(KNOWN) :] if at >= 0 else ""
    one, several = tail.startswith(": "), tail.startswith(", one of: ")
    parts = [tail[2:]] if one else tail[len(", one of: ") :].split(" | ") if several else []
    return parts if all(p in layout.mistakes for p in parts) else []


def no_answer(message: str) -> bool:
    """A failure without an answer to judge (no result, a stub): never a mistake, never a rare failure."""
    return any(w in message for w in NO_ANSWER)


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
    out.problems = problems(results, out)
    return out


def _kinds(sentence: str) -> list[str]:
    """The kinds of problem a grader sentence states, the general ones dropped where a specific one is named."""
    kinds = list(dict.fromkeys(kind for phrase, kind in PROBLEM_KINDS if phrase in sentence))
    for general, specific in SUPERSEDED.items():
        if general in kinds and any(k in specific for k in kinds if k != general):
            kinds.remove(general)
    return kinds


def _import_error(results: dict[str, Any], ex: str) -> str:
    """The exception line (and its line number) of the import failure shown in the first public test of `ex`."""
    for test in results.get("tests", []):
        output = str(test.get("output", ""))
        if test_exercise(test) != ex or not output.startswith(IMPORT_HEADER):
            continue
        block = output[len(IMPORT_HEADER) :].split("\n\n", 1)[0].strip().splitlines()
        lines = [line for line in block if line.strip()]
        where = [m.group(1) for m in map(FILE_LINE.match, lines) if m]
        last = lines[-1].strip() if lines else ""
        return last + (f" (line {where[-1]})" if where and f"line {where[-1]}" not in last else "")
    return ""


def _staff_trace(results: dict[str, Any], what: str) -> str:
    """The last line of the staff-only traceback entry of a grader failure on `what`."""
    for test in results.get("tests", []):
        if str(test.get("name", "")) == f"autograder failed: {what} (traceback, staff only)":
            lines = [line for line in str(test.get("output", "")).splitlines() if line.strip()]
            lines = [line for line in lines if not line.startswith("grading took")]
            return lines[-1].strip() if lines else ""
    return ""


def problems(results: dict[str, Any], parsed: Outcomes | None = None) -> list[Problem]:
    """What kept each exercise, or the whole submission, from being graded in full (module docstring)."""
    found: list[Problem] = []
    tests = results.get("tests", [])
    first = str(tests[0].get("output", "")) if tests else ""
    if first.startswith("The autograder could not grade this submission: "):  # grade-all's own failure
        reason = first[len("The autograder could not grade this submission: ") :].split(". This is not", 1)[0]
        return [Problem("", "grader failed", reason)]
    if any(str(t.get("name", "")) == "autograder failed: this submission" for t in tests):
        return [Problem("", "grader failed", _staff_trace(results, "this submission") or "see the instructor copy")]
    lines = str(results.get("output", "")).splitlines()
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    summary = next((b for b in blocks if b and SUMMARY_LINE.match(b[0])), [])
    notes: dict[str, str] = {}
    current = ""
    for line in summary:
        match = SUMMARY_LINE.match(line)
        if match:
            current = match.group(1)
            if "autograder failed (" in line:
                name = next(
                    (
                        str(t["name"])
                        for t in tests
                        if str(t.get("name", "")).startswith(f"autograder failed: {current} ")
                    ),
                    "",
                )
                what = name[len("autograder failed: ") :].removesuffix(" (traceback, staff only)")
                found.append(
                    Problem(current, "grader failed", _staff_trace(results, what) or "see the instructor copy")
                )
        elif current and line.startswith("     "):
            notes[current] = (notes.get(current, "") + " " + line.strip()).strip()
    for ex, note in notes.items():
        kinds = _kinds(note)
        if not kinds:
            continue
        detail = note
        if "could not be imported" in kinds:
            error = _import_error(results, ex)
            detail = f"{error}. {note}" if error else note
        found.append(Problem(ex, ", ".join(kinds), detail))
    after = blocks[blocks.index(summary) + 1] if summary in blocks and blocks.index(summary) + 1 < len(blocks) else []
    if after and not PRINTED_HEADER.match(after[0]):
        found += [Problem("", ", ".join(_kinds(line)), line) for line in after if _kinds(line)]
    if parsed is not None:
        listed = {p.exercise for p in found}
        missing: dict[str, str] = {}
        for (ex, _, _, _), (passed, message) in parsed.cases.items():
            at = message.find("no result:")
            if not passed and at >= 0 and ex not in listed:
                missing.setdefault(ex, message[at:].rstrip("."))
        found += [Problem(ex, "cases without a result", why) for ex, why in missing.items()]
    order = {e.id: i for i, e in enumerate(EXERCISES)}
    return sorted(found, key=lambda p: (order.get(p.exercise, -1), p.kind))


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
            folders = {r.student: gb.folder(r.student) or folder_name(r.student) for r in records}
    except (sqlite3.DatabaseError, ValueError) as exc:
        raise ReportError(f"OUT_DIR {out_dir}: {GRADEBOOK_NAME} is not a grade-all gradebook ({exc})") from exc
    graded = {test_exercise(t) for res in latest.values() for t in res.get("tests", [])}
    exercises = [e.id for e in EXERCISES if e.id in graded] or [e.id for e in EXERCISES]
    folders = {s: f for s, f in folders.items() if (out_dir / f / "feedback.md").is_file()}
    return ClassData(records, names, {s: outcomes(r, known) for s, r in latest.items()}, histories, exercises, folders)


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


def status(data: ClassData, student: str) -> str:
    """One word on a student's latest grading: "grader failed", "incomplete" (something not graded in full)
    or "graded"."""
    record = next(r for r in data.records if r.student == student)
    if record.status != "graded" or any(p.kind == "grader failed" for p in data.outcomes[student].problems):
        return "grader failed"
    return "incomplete" if data.outcomes[student].problems else "graded"


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


def explained_mistakes(failed: dict[str, set[str]], passed: set[str], predicts: dict[str, frozenset[str]]) -> list[str]:
    """The mistakes that best explain one student's failures in one exercise (rule: module docstring).

    failed: failed case id (with a result) -> the mistakes its line names; passed: the passed case ids;
    predicts: mistake -> the cases where its output differs from the answer key's (it fails them)."""
    unexplained = {c for c, named in failed.items() if named}
    chosen: list[str] = []
    candidates = sorted({m for named in failed.values() for m in named})
    while unexplained:
        best: tuple[tuple[int, int], str, set[str]] | None = None
        for mistake in candidates:
            if mistake in chosen:
                continue
            support = {c for c, named in failed.items() if mistake in named}
            misfit = sum(1 for c in predicts.get(mistake, ()) if c in passed or (c in failed and c not in support))
            key = (len(support & unexplained), len(support) - misfit)
            if key[0] and len(support) > misfit and (best is None or key > best[0]):
                best = (key, mistake, support)
        if best is None:
            break
        chosen.append(best[1])
        unexplained -= best[2]
    return chosen


def student_mistakes(out: Outcomes, known: dict[str, Layout]) -> set[tuple[str, str]]:
    """(exercise, description) of every mistake that best explains the student's failures in its exercise."""
    by_ex: dict[str, tuple[dict[str, set[str]], set[str]]] = defaultdict(lambda: ({}, set()))
    for (ex, _, _, case), (passed, message) in out.cases.items():
        if passed:
            by_ex[ex][1].add(case)
        elif not no_answer(message) and ex in known:
            by_ex[ex][0][case] = set(known_mistakes(message, known[ex]))
    return {
        (ex, m) for ex, (f, p) in by_ex.items() if ex in known for m in explained_mistakes(f, p, known[ex].predicts)
    }


def mistake_ranking(data: ClassData, known: dict[str, Layout]) -> list[tuple[str, str, str, int, list[str]]]:
    """(exercise, fixture name, description, students, the students) for each mistake, most students first."""
    who: dict[tuple[str, str], list[str]] = defaultdict(list)
    for student, out in sorted(data.outcomes.items()):
        for key in student_mistakes(out, known):
            who[key].append(student)
    ranked = sorted(who.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return [
        (ex, known[ex].mistakes.get(desc, "") if ex in known else "", desc, len(students), students)
        for (ex, desc), students in ranked
    ]


def hardest_cases(data: ClassData, known: dict[str, Layout], limit: int = HARDEST) -> list[dict[str, Any]]:
    """The cases with the lowest pass rate among the students with a result on them, across exercises.

    Each: unit, passed, attempted (students with a result), failing (their number) and the known mistake
    the failing students' lines name most often ("" when none); only cases someone failed."""
    passed: Counter[Unit] = Counter()
    attempted: Counter[Unit] = Counter()
    named: dict[Unit, Counter[str]] = defaultdict(Counter)
    for out in data.outcomes.values():
        for unit, (ok, message) in out.cases.items():
            if not ok and no_answer(message):
                continue
            attempted[unit] += 1
            passed[unit] += ok
            if not ok and unit[0] in known:
                named[unit].update(known_mistakes(message, known[unit[0]]))
    floor = 2 if len(data.records) >= 2 else 1
    units = [u for u in attempted if attempted[u] >= floor and passed[u] < attempted[u]]
    units.sort(key=lambda u: (passed[u] / attempted[u], -attempted[u], u))
    return [
        {
            "unit": u,
            "passed": passed[u],
            "attempted": attempted[u],
            "mistake": named[u].most_common(1)[0][0] if named[u] else "",
        }
        for u in units[:limit]
    ]


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
        s: {u: msg for u, (ok, msg) in out.cases.items() if not ok and not no_answer(msg)}
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


def shown_name(student: str, names: dict[str, str]) -> str:
    """The display name when it adds something, as plain text ("" otherwise)."""
    name = clean_text(names.get(student, ""))
    return name if name and name != student else ""
