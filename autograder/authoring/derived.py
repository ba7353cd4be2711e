"""What the release derives from the manifest into files it does not otherwise own, and checks for drift.

- `shared/hetero/exercises.py`: `hetero`'s exercise list (id -> file stem), which the student's copy
  needs without the grader (`hetero.impl`, `hetero.pack`, the public tests' markers).
- Marked spans in hand-written prose (README.md, solutions/HANDOUT.md, the student copy's README
  template): `<!-- a2:KEY -->...<!-- /a2 -->`, the text between the markers replaced by the manifest's
  value for KEY — `count` ("ten"), `Count` ("Ten"), `files` (`ex01_x.py` … `ex10_y.py`), `range`
  (ex01 … ex10), `hidden_detail` (when a hidden case's inputs and expected values reach the student:
  `hidden_detail_visibility`). A maintainer who adds an exercise edits none of them; `make release` rewrites the spans
  and `release --check` reports a file whose spans are stale.
"""

from __future__ import annotations

import re
from pathlib import Path

from autograder.core.manifest import EXERCISES, ROOT, Exercise

HETERO_LIST = Path("shared") / "hetero" / "exercises.py"
PROSE_FILES = (
    Path("README.md"),
    Path("solutions") / "HANDOUT.md",
    Path("autograder") / "student_bundle" / "README.md.template",
)
SPAN_RE = re.compile(r"<!-- a2:(\w+) -->(.*?)<!-- /a2 -->", re.S)
WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty"
).split()


class DerivedError(ValueError):
    """A marked span names a key the release does not know; the message names the file and line."""


def hetero_list_text(exercises: tuple[Exercise, ...] = EXERCISES) -> str:
    entries = "".join(f'    "{e.id}": "{e.module}",\n' for e in exercises)
    return (
        '"""The exercises: id -> exercise file stem (`ex02` -> `ex02_kv_capacity`), in order.\n\n'
        "Written by `python -m autograder release` from the instructor's manifest "
        "(autograder/core/manifest.py):\ndo not edit; `release --check` reports drift.\n"
        '"""\n\n'
        "EXERCISES: dict[str, str] = {\n" + entries + "}\n"
    )


# When the hidden cases' inputs and expected values are shown, by `Exercise.hidden_detail_visibility`.
HIDDEN_DETAIL_WORDS = {
    None: "are not shown unless your instructor chooses to release them",
    "hidden": "are not shown",
    "after_due_date": "are shown after the due date",
    "after_published": "are shown once the grades are published",
    "visible": "are shown as soon as the submission is graded",
}


def hidden_detail_text(exercises: tuple[Exercise, ...] = EXERCISES) -> str:
    """What the handout says of when a hidden case's inputs and expected values are shown."""
    words = {HIDDEN_DETAIL_WORDS[e.hidden_detail_visibility] for e in exercises}
    if len(words) == 1:
        return f"its inputs and expected values {words.pop()}"
    return "whether and when its inputs and expected values are shown depends on the exercise"


def span_values(exercises: tuple[Exercise, ...] = EXERCISES) -> dict[str, str]:
    n = len(exercises)
    word = WORDS[n] if n < len(WORDS) else str(n)
    first, last = exercises[0], exercises[-1]
    return {
        "count": word,
        "Count": word.capitalize(),
        "files": f"`{first.filename}` … `{last.filename}`",
        "range": f"{first.id} … {last.id}",
        "hidden_detail": hidden_detail_text(exercises),
    }


def fill_spans(text: str, where: str, values: dict[str, str]) -> str:
    def replace(match: re.Match) -> str:
        key = match.group(1)
        if key not in values:
            line = text[: match.start()].count("\n") + 1
            raise DerivedError(f"{where}:{line}: unknown span a2:{key} (known: {', '.join(values)})")
        return f"<!-- a2:{key} -->{values[key]}<!-- /a2 -->"

    return SPAN_RE.sub(replace, text)


def derived_files(root: Path = ROOT, exercises: tuple[Exercise, ...] = EXERCISES) -> dict[Path, str]:
    """{path under root: the text it should hold} for every file with derived content."""
    values = span_values(exercises)
    files = {HETERO_LIST: hetero_list_text(exercises)}
    for rel in PROSE_FILES:
        path = root / rel
        if path.is_file():
            files[rel] = fill_spans(path.read_text(encoding="utf-8"), str(rel), values)
    return files


def drift(root: Path = ROOT) -> list[str]:
    """Files whose derived content is stale (empty: none)."""
    return [
        f"stale derived content: {rel} (run `python -m autograder release`)"
        for rel, text in derived_files(root).items()
        if not (root / rel).is_file() or (root / rel).read_text(encoding="utf-8") != text
    ]
