"""`nbgrader export` with scores rounded to hundredths (loaded by the nbgrader_config.py that
`python -m autograder export-nbgrader` writes; imports nbgrader, so only nbgrader's process loads it).

nbgrader sums the grade cells' float scores in SQL, so the answer key's total reads 100.00000000000001
in nbgrader's own grades.csv; this plugin writes the same file, then rounds its score columns
(`autograder.exports.export_nbgrader.round_grades_csv`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbgrader.plugins import CsvExportPlugin

from autograder.exports.export_nbgrader import round_grades_csv


class RoundedCsvExportPlugin(CsvExportPlugin):
    """nbgrader's CSV exporter, its raw_score / late_submission_penalty / score / max_score rounded to hundredths."""

    def export(self, gradebook: Any) -> None:
        super().export(gradebook)
        dest = Path(self.to or "grades.csv")
        # nbgrader wrote it in the locale's encoding (open() without one): read and write it back the same way
        dest.write_text(round_grades_csv(dest.read_text()))
