"""Text that can always be written and shown: unencodable characters, spreadsheet formulas, Markdown, terminals.

Student-controlled text (file names, exception messages, printed output, folder names) reaches
results.json, feedback.md, the CSV export, the SQLite gradebook and the terminal. Python strings may hold lone
surrogates (`"\\udcff"`, what `os.fsdecode` makes of a file name that is not UTF-8, or what a student
raises on purpose); UTF-8 writers, SQLite and strict JSON readers refuse them. `clean_text` replaces
each such character by its backslash escape, so the text stays readable and every writer accepts it.

A CSV cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage return is read as a formula by
spreadsheet programs (`=HYPERLINK(...)` as a student name); `csv_cell` prefixes such a cell with an
apostrophe, which spreadsheets display as plain text. It also makes the cell one visible line (`one_line`
below): `cat grades.csv` shows a name's ESC sequences, carriage returns and bidi controls as escapes
instead of obeying them.

feedback.md is rendered as HTML by Markdown viewers, so student text must not become markup there.
`markdown_inline` makes a text one inert line of inline Markdown: `&`, `<`, `>` become HTML entities
(no tag or entity of the student's is live); the characters that open or close inline structure are
backslash-escaped (backslash, backtick, `*`, `[`, `]`, `~`, `|`, and `_` unless between letters or
digits, where CommonMark never reads it as emphasis: `kv_bytes` stays as it is), and so are a block
marker at its start (`#`, `+`, `-`, `=`, `1.`) and what would start a bare GFM link (`://`, `www.`);
its line breaks become spaces and its outer spaces are dropped, so it can start no heading, list or
code block. It is meant for short texts inside a line (a name in a heading, a test name in a list
item). `markdown_fence` shows any text verbatim, several lines included, in a fenced code block whose
backtick fence is longer than every backtick run in the text: CommonMark closes a fence of N backticks
only with a line of N or more, so the text cannot close it, and nothing in a code block is markup or
HTML.

A terminal obeys the control characters in what it prints: ESC and CSI start ANSI sequences that
recolour, move the cursor, clear the screen or retitle the window, `\\r` overwrites a line, bidi
controls reorder what follows. `terminal_text` shows each such character as its escape (`\\x1b`,
`\\r`, `\\u202e`; newlines too unless `lines`), so printed student text is seen, never obeyed.

A name the student chose (a file, zip entry or folder name, a student's name) is embedded in sentences:
the intake's notes, the batch's refusals, results.json's output that `grade` prints with its newlines.
`one_line` renders such a name as one line of visible characters: every control character (tab and
newline included), line and paragraph separator and bidi control is shown as its escape, so a name can
neither forge a line under the real score nor reorder or hide the sentence around it.
"""

from __future__ import annotations

import re
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
HTML_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
# open or close code spans, emphasis, links, strikethrough, cells (`_` inside a word does neither: kept),
# or start a bare link (GFM links `scheme://...` and `www.` text)
MARKDOWN_INLINE = re.compile(r"[\\`*\[\]~|]|(?<![^\W_])_|_(?![^\W_])|:(?=//)|(?<=www)\.", re.IGNORECASE)
MARKDOWN_BLOCK_START = re.compile(r"^(?:(\d+)(?=[.)])|(?=[#+=-]))")  # a heading, list item or setext marker
CONTROLS = r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # C0 but \t \n, DEL, C1, bidi
TERMINAL_LINE = re.compile(f"[{CONTROLS}\n]")
TERMINAL_LINES = re.compile(f"[{CONTROLS}]")
UNSHOWN = f"{CONTROLS}\t\n\u2028\u2029"  # every control, line break and bidi control: never shown as it is
ONE_LINE = re.compile(f"[{UNSHOWN}]")


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
    """A CSV text cell that no spreadsheet reads as a formula: one line of visible text (`one_line`), with an
    apostrophe before it when the text starts like a formula (judged before escaping: a leading tab or CR)."""
    value = clean_text(text)
    return "'" + one_line(value) if value.startswith(FORMULA_STARTS) else one_line(value)


def markdown_inline(text: Any) -> str:
    """`text` as one line of inline Markdown that renders as the text itself: no markup, tag or line break."""
    flat = " ".join(clean_text(text).splitlines()).strip().translate(HTML_ENTITIES)
    flat = MARKDOWN_INLINE.sub(lambda m: "\\" + m.group(), flat)
    return MARKDOWN_BLOCK_START.sub(r"\1\\", flat)


def markdown_fence(text: Any, info: str = "text") -> str:
    """A fenced code block (no final newline) showing `text` verbatim: the fence outruns every backtick run in it."""
    value = clean_text(text)
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{value}\n{fence}"


def terminal_text(text: Any, lines: bool = False) -> str:
    """`text` safe to print on a terminal: control and bidi characters shown as escapes (newlines kept if `lines`)."""
    return _shown_escaped(TERMINAL_LINES if lines else TERMINAL_LINE, text)


def one_line(text: Any) -> str:
    """A student-chosen name (file, entry, folder, student) as one line of visible text: every control
    character (tab and newline included), line separator and bidi control shown as its escape."""
    return _shown_escaped(ONE_LINE, text)


def _shown_escaped(unsafe: re.Pattern[str], text: Any) -> str:
    """`text` made encodable (`clean_text`) with each character `unsafe` matches shown as its escape."""
    return unsafe.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), clean_text(text))
