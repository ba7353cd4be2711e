"""Text that can always be written: escaping unencodable characters and neutralising spreadsheet formulas.

Student-controlled text (file names, exception messages, printed output, folder names) reaches
results.json, feedback.md, the CSV export and the SQLite gradebook. Python strings may hold lone
surrogates (`"\\udcff"`, what `os.fsdecode` makes of a file name that is not UTF-8, or what a student
raises on purpose); UTF-8 writers, SQLite and strict JSON readers refuse them. `clean_text` replaces
each such character by its backslash escape, so the text stays readable and every writer accepts it.

A CSV cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage return is read as a formula by
spreadsheet programs (`=HYPERLINK(...)` as a student name); `csv_cell` prefixes such a cell with an
apostrophe, which spreadsheets display as plain text.
"""

from __future__ import annotations

from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def clean_text(text: Any) -> str:
    """`text` as a str that encodes to UTF-8: lone surrogates become `\\udcff`-style escapes."""
    value = text if isinstance(text, str) else str(text)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def clean_data(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, str, numbers) whose strings and keys all encode to UTF-8."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): clean_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_data(v) for v in value]
    return value


def csv_cell(text: Any) -> str:
    """A CSV text cell that no spreadsheet reads as a formula (and that encodes to UTF-8)."""
    value = clean_text(text)
    return "'" + value if value.startswith(FORMULA_STARTS) else value
