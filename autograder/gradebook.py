"""The instructor's gradebook: one SQLite file holding every graded submission, exportable to CSV.

`python -m autograder grade-all` records each student's latest grading here (embedded database,
default `<out>/gradebook.sqlite`): the submission's content hash (so an unchanged submission is
not graded again), the total and per-exercise scores, whether the grader itself failed, how long it
took, and the full results.json. Only the process that owns the batch writes to it.
"""

from __future__ import annotations

import csv
import json
import re
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from autograder.manifest import EXERCISES

SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    student      TEXT PRIMARY KEY,
    source       TEXT NOT NULL,      -- path of the folder or zip that was graded
    content_hash TEXT NOT NULL,      -- sha256 of the submission's files (see bulk.content_hash)
    status       TEXT NOT NULL,      -- 'graded' or 'grader_failed'
    score        REAL NOT NULL,
    max_score    REAL NOT NULL,
    duration_s   REAL NOT NULL,
    graded_at    TEXT NOT NULL,      -- UTC, ISO 8601
    results_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS exercise_scores (
    student   TEXT NOT NULL REFERENCES submissions(student) ON DELETE CASCADE,
    exercise  TEXT NOT NULL,
    score     REAL NOT NULL,
    max_score REAL NOT NULL,
    PRIMARY KEY (student, exercise)
);
"""

_EXERCISE_RE = re.compile(r"\b(ex\d\d)\b")


@dataclass(frozen=True)
class Record:
    student: str
    source: str
    content_hash: str
    status: str
    score: float
    max_score: float
    duration_s: float
    graded_at: str
    exercises: dict[str, tuple[float, float]]  # exercise id -> (score, max_score)


def test_exercise(test: dict[str, Any]) -> str | None:
    """The exercise a Gradescope test entry belongs to: its `extra_data.exercise`, else an exNN in its name."""
    extra = test.get("extra_data")
    if isinstance(extra, dict) and isinstance(extra.get("exercise"), str):
        return extra["exercise"]
    match = _EXERCISE_RE.search(f"{test.get('number', '')} {test.get('name', '')}")
    return match.group(1) if match else None


def exercise_scores(results: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """{exercise id: (score, max_score)} summed over the results' tests; every manifest exercise present."""
    totals = {e.id: [0.0, 0.0] for e in EXERCISES}
    for test in results.get("tests", []):
        ex_id = test_exercise(test)
        if ex_id in totals:
            totals[ex_id][0] += float(test.get("score") or 0.0)
            totals[ex_id][1] += float(test.get("max_score") or 0.0)
    for e in EXERCISES:  # a failed run has no per-exercise tests: the maximum is still the manifest's
        if totals[e.id][1] <= 0:
            totals[e.id][1] = float(e.points)
    return {k: (v[0], v[1]) for k, v in totals.items()}


def total_score(results: dict[str, Any]) -> tuple[float, float]:
    """(score, max_score): results' own `score` if given, else the sum over tests; max from the tests."""
    tests = results.get("tests", [])
    max_score = sum(float(t.get("max_score") or 0.0) for t in tests) or float(sum(e.points for e in EXERCISES))
    score = results.get("score")
    if score is None:
        score = sum(float(t.get("score") or 0.0) for t in tests)
    return float(score), max_score


class Gradebook:
    """SQLite-backed store of graded submissions (a context manager; commits on each record)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path))
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.executescript(SCHEMA)

    def __enter__(self) -> "Gradebook":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def known_hash(self, student: str) -> str | None:
        row = self._db.execute("SELECT content_hash FROM submissions WHERE student = ?", (student,)).fetchone()
        return row[0] if row else None

    def record(self, student: str, source: str, content_hash: str, results: dict[str, Any],
               duration_s: float, grader_failed: bool) -> Record:
        score, max_score = total_score(results)
        per_ex = exercise_scores(results)
        graded_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = "grader_failed" if grader_failed else "graded"
        with self._db:
            self._db.execute("DELETE FROM submissions WHERE student = ?", (student,))
            self._db.execute(
                "INSERT INTO submissions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (student, source, content_hash, status, score, max_score, duration_s, graded_at,
                 json.dumps(results)))
            self._db.executemany(
                "INSERT INTO exercise_scores VALUES (?, ?, ?, ?)",
                [(student, ex, s, m) for ex, (s, m) in per_ex.items()])
        return Record(student, source, content_hash, status, score, max_score, duration_s, graded_at, per_ex)

    def records(self) -> Iterator[Record]:
        rows = self._db.execute(
            "SELECT student, source, content_hash, status, score, max_score, duration_s, graded_at "
            "FROM submissions ORDER BY student").fetchall()
        per_ex: dict[str, dict[str, tuple[float, float]]] = {}
        for student, ex, s, m in self._db.execute("SELECT student, exercise, score, max_score FROM exercise_scores"):
            per_ex.setdefault(student, {})[ex] = (s, m)
        for row in rows:
            yield Record(*row, exercises=per_ex.get(row[0], {}))

    def results(self, student: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT results_json FROM submissions WHERE student = ?", (student,)).fetchone()
        return json.loads(row[0]) if row else None

    def export_csv(self, path: Path, students: Iterable[str] | None = None) -> int:
        """Write one row per student (total, per-exercise scores, status); return the number of rows."""
        wanted = set(students) if students is not None else None
        ex_ids = [e.id for e in EXERCISES]
        path.parent.mkdir(parents=True, exist_ok=True)
        count = 0
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(["student", "score", "max_score", *ex_ids, "status", "content_hash", "graded_at"])
            for rec in self.records():
                if wanted is not None and rec.student not in wanted:
                    continue
                writer.writerow([rec.student, f"{rec.score:.4g}", f"{rec.max_score:.4g}",
                                 *(f"{rec.exercises.get(ex, (0.0, 0.0))[0]:.4g}" for ex in ex_ids),
                                 rec.status, rec.content_hash, rec.graded_at])
                count += 1
        return count
