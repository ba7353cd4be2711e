"""The instructor's gradebook: one SQLite file holding every graded submission, exportable to CSV.

`python -m autograder grade-all` records each student's gradings here (embedded database, default
`<out>/gradebook.sqlite`). Table `submissions` holds the latest grading of each student, which is
the grade: the submission's content hash (so an unchanged submission is not graded again), the
total and per-exercise scores, whether the grader itself failed, how long it took, and the full
results.json. Table `history` keeps one row per graded version (resubmissions and regrades: hash,
time, status, score, results.json), in the order they were graded. Table `identities` holds a
student's display name and e-mail when the batch knows them (Gradescope's export does). Table `folders`
names each student's output folder under the batch's --out (the report links their feedback there).

Every text stored or exported goes through `autograder.core.safetext.clean_text` (a lone surrogate in a
student's output or name cannot stop the batch), and CSV text cells through `csv_cell` (a name
beginning with `=`, `+`, `-` or `@` is not a spreadsheet formula). Only the process that owns the
batch writes to the file.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.core.manifest import EXERCISES
from autograder.core.safetext import clean_data, clean_text, csv_cell
from autograder.runtime.statedir import created_mode

SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    student      TEXT PRIMARY KEY,
    source       TEXT NOT NULL,      -- path of the folder or zip that was graded
    content_hash TEXT NOT NULL,      -- sha256 of the submission's files (see submissions.content_hash)
    status       TEXT NOT NULL,      -- 'graded' or 'grader_failed'
    score        REAL NOT NULL,
    max_score    REAL NOT NULL,
    duration_s   REAL NOT NULL,
    graded_at    TEXT NOT NULL,      -- UTC, ISO 8601
    results_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS history (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,  -- grading order
    student      TEXT NOT NULL,
    source       TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    status       TEXT NOT NULL,
    score        REAL NOT NULL,
    max_score    REAL NOT NULL,
    duration_s   REAL NOT NULL,
    graded_at    TEXT NOT NULL,
    results_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS history_student ON history(student);
CREATE TABLE IF NOT EXISTS identities (
    student TEXT PRIMARY KEY,
    name    TEXT NOT NULL,
    email   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS graded_with (
    student     TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL        -- the grader's inputs its latest grading used (submissions.grader_fingerprint)
);
CREATE TABLE IF NOT EXISTS folders (
    student TEXT PRIMARY KEY,
    folder  TEXT NOT NULL            -- the student's output folder under --out (submissions.Submission.out_folder)
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
    versions: int = 1  # gradings kept in the history for this student (resubmissions, regrades)


@dataclass(frozen=True)
class Version:
    """One graded version of a student's submission (a row of the history)."""

    student: str
    content_hash: str
    status: str
    score: float
    max_score: float
    graded_at: str


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

    def __init__(self, path: Path, read_only: bool = False):
        """Open (and create) the gradebook at `path`; `read_only`: open an existing file without ever
        writing to it (exports, dry runs; a missing file raises sqlite3.OperationalError)."""
        self.path = Path(path)
        if read_only:
            self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path))
        self._db.execute("PRAGMA foreign_keys = ON")
        self._db.executescript(SCHEMA)

    def __enter__(self) -> Gradebook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    def known_hash(self, student: str) -> str | None:
        row = self._db.execute(
            "SELECT content_hash FROM submissions WHERE student = ?", (clean_text(student),)
        ).fetchone()
        return row[0] if row else None

    def fingerprint(self, student: str) -> str | None:
        """The grader fingerprint of the student's latest grading (None: none recorded)."""
        row = self._db.execute(
            "SELECT fingerprint FROM graded_with WHERE student = ?", (clean_text(student),)
        ).fetchone()
        return row[0] if row else None

    def status(self, student: str) -> str | None:
        row = self._db.execute("SELECT status FROM submissions WHERE student = ?", (clean_text(student),)).fetchone()
        return row[0] if row else None

    def record(
        self,
        student: str,
        source: str,
        content_hash: str,
        results: dict[str, Any],
        duration_s: float,
        grader_failed: bool,
        fingerprint: str = "",
    ) -> Record:
        """Store a grading as the student's latest and append it to the history; `fingerprint`: the
        grader's inputs it was graded with (a later change of them makes it stale)."""
        student, source, results = clean_text(student), clean_text(source), clean_data(results)
        score, max_score = total_score(results)
        per_ex = exercise_scores(results)
        graded_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        status = "grader_failed" if grader_failed else "graded"
        row = (student, source, content_hash, status, score, max_score, duration_s, graded_at, json.dumps(results))
        with self._db:
            self._db.execute("DELETE FROM submissions WHERE student = ?", (student,))
            self._db.execute("INSERT INTO submissions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            self._db.execute(
                "INSERT INTO history (student, source, content_hash, status, score, max_score, duration_s, "
                "graded_at, results_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                row,
            )
            self._db.executemany(
                "INSERT INTO exercise_scores VALUES (?, ?, ?, ?)",
                [(student, ex, s, m) for ex, (s, m) in per_ex.items()],
            )
            self._db.execute("INSERT OR REPLACE INTO graded_with VALUES (?, ?)", (student, fingerprint))
        return Record(
            student,
            source,
            content_hash,
            status,
            score,
            max_score,
            duration_s,
            graded_at,
            per_ex,
            len(self.history(student)),
        )

    def set_identity(self, student: str, name: str, email: str) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO identities VALUES (?, ?, ?)",
                (clean_text(student), clean_text(name), clean_text(email)),
            )

    def identity(self, student: str) -> tuple[str, str]:
        """(name, email) of a student, empty strings when unknown."""
        row = self._db.execute(
            "SELECT name, email FROM identities WHERE student = ?", (clean_text(student),)
        ).fetchone()
        return (row[0], row[1]) if row else ("", "")

    def set_folder(self, student: str, folder: str) -> None:
        """Record the student's output folder under --out (where results.json and the feedback files are)."""
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO folders VALUES (?, ?)", (clean_text(student), clean_text(folder)))

    def folder(self, student: str) -> str | None:
        """The student's output folder under --out; None when not recorded (a gradebook from before the
        table, opened read-only: the table is missing) or never graded."""
        try:
            row = self._db.execute("SELECT folder FROM folders WHERE student = ?", (clean_text(student),)).fetchone()
        except sqlite3.OperationalError:  # no such table: written by an older grade-all
            return None
        return row[0] if row else None

    def history(self, student: str) -> list[Version]:
        """Every graded version of a student's submission, oldest first; the last one is the grade."""
        rows = self._db.execute(
            "SELECT student, content_hash, status, score, max_score, graded_at FROM history "
            "WHERE student = ? ORDER BY id",
            (clean_text(student),),
        ).fetchall()
        return [Version(*row) for row in rows]

    def version_results(self, student: str, index: int = -1) -> dict[str, Any] | None:
        """The results.json of one graded version of a student: `index` into `history` (oldest first;
        -1 the latest, -2 the one before it); None when there is no such version."""
        rows = self._db.execute(
            "SELECT results_json FROM history WHERE student = ? ORDER BY id", (clean_text(student),)
        ).fetchall()
        try:
            return json.loads(rows[index][0])
        except IndexError:
            return None

    def records(self) -> Iterator[Record]:
        rows = self._db.execute(
            "SELECT student, source, content_hash, status, score, max_score, duration_s, graded_at "
            "FROM submissions ORDER BY student"
        ).fetchall()
        per_ex: dict[str, dict[str, tuple[float, float]]] = {}
        for student, ex, s, m in self._db.execute("SELECT student, exercise, score, max_score FROM exercise_scores"):
            per_ex.setdefault(student, {})[ex] = (s, m)
        versions = dict(self._db.execute("SELECT student, COUNT(*) FROM history GROUP BY student").fetchall())
        for student, source, content_hash, status, score, max_score, duration_s, graded_at in rows:
            yield Record(
                student,
                source,
                content_hash,
                status,
                score,
                max_score,
                duration_s,
                graded_at,
                exercises=per_ex.get(student, {}),
                versions=max(1, versions.get(student, 1)),
            )

    def results(self, student: str) -> dict[str, Any] | None:
        row = self._db.execute(
            "SELECT results_json FROM submissions WHERE student = ?", (clean_text(student),)
        ).fetchone()
        return json.loads(row[0]) if row else None

    def export_csv(self, path: Path, students: Iterable[str] | None = None) -> int:
        """Write one row per student (the latest grading: total, per-exercise scores, status, number of
        graded versions); return the number of rows. Text cells are never spreadsheet formulas."""
        wanted = {clean_text(s) for s in students} if students is not None else None
        ex_ids = [e.id for e in EXERCISES]
        path.parent.mkdir(parents=True, exist_ok=True)
        count = 0
        with path.open("w", newline="", encoding="utf-8") as fh:
            os.fchmod(fh.fileno(), created_mode())  # a file written before keeps its mode otherwise
            writer = csv.writer(fh)
            writer.writerow(
                [
                    "student",
                    "name",
                    "email",
                    "score",
                    "max_score",
                    *ex_ids,
                    "status",
                    "versions",
                    "content_hash",
                    "graded_at",
                ]
            )
            for rec in self.records():
                if wanted is not None and rec.student not in wanted:
                    continue
                name, email = self.identity(rec.student)
                writer.writerow(
                    [
                        csv_cell(rec.student),
                        csv_cell(name),
                        csv_cell(email),
                        f"{rec.score:.4g}",
                        f"{rec.max_score:.4g}",
                        *(f"{rec.exercises.get(ex, (0.0, 0.0))[0]:.4g}" for ex in ex_ids),
                        csv_cell(rec.status),
                        rec.versions,
                        csv_cell(rec.content_hash),
                        csv_cell(rec.graded_at),
                    ]
                )
                count += 1
        return count
