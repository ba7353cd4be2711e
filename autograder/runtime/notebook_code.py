"""Read a notebook submission back into the exercise file it holds (what the grader runs on a .ipynb).

The rule (`extract_code`): the exercise code is the concatenation, in notebook order and separated by a
blank line, of every code cell that carries the tag `a2-exercise`, or, when no cell carries the tag
(some front-ends drop cell tags), of every code cell whose first line is the marker
`# a2-exercise exNN...`. The marker line itself is dropped, and the lines IPython runs as magics or
shell commands (`%magic`, `%%cell-magic`, `!shell` at the start of a line that begins a statement) are
turned into comments; a line starting with `%` or `!` inside a string, brackets or after a backslash is
code, kept as it is, as IPython (Otter's and nbgrader's kernel) keeps it (`_ipython_lines`). Outputs, markdown cells and any other cell are
ignored; malformed metadata (tags that are not a list of strings, metadata that is not an object)
counts as none, and a malformed cell outside the exercise cells is ignored too. The resulting text is
graded exactly like the `.py` file. A file that is not a version-4 notebook, a notebook without any
exercise cell, or exercise cells of another exercise raise `NotebookError` with a sentence saying what
is wrong. The student notebooks, nbgrader and Otter exports (`autograder.exports`) write notebooks this
rule reads.
"""

from __future__ import annotations

import json
import re
import tokenize
from pathlib import Path
from typing import Any

from autograder.core.manifest import BY_ID

EXERCISE_TAG = "a2-exercise"
MARKER_RE = re.compile(r"^# a2-exercise (ex\d\d)\b")


class NotebookError(ValueError):
    """A notebook submission that cannot be read as an exercise file."""


def _source_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise NotebookError("a cell's source is neither text nor a list of lines")


def _metadata(node: dict[str, Any]) -> dict[str, Any]:
    """A notebook's or cell's metadata; anything but a JSON object counts as none."""
    meta = node.get("metadata")
    return meta if isinstance(meta, dict) else {}


def cell_tags(cell: dict[str, Any]) -> list[str]:
    """A cell's tags; malformed tags (`"tags": 5`, a string, non-text items) count as none."""
    tags = _metadata(cell).get("tags")
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def _has_marker(cell: dict[str, Any]) -> re.Match | None:
    """The marker match of a code cell's first line; a cell whose source is malformed has none."""
    try:
        return MARKER_RE.match(_source_text(cell))
    except NotebookError:
        return None


def _ipython_lines(lines: list[str]) -> set[int]:
    """The indices of the lines of one cell that IPython runs as magics or shell commands: those starting
    with `%` or `!`, after any indentation, that begin a statement (not inside a string, brackets or a
    backslash continuation): `    !pip install x` under an `except ImportError:` is one.

    The cell is tokenized line by line with the standard tokenizer (IPython itself is not needed); a
    magic line found is read by it as a blank line (an indented one as `pass` at its indentation, as
    `extract_code` writes it), so a shell command's quote (`!echo don't`) starts no string. Where the code cannot be tokenized further (it cannot compile either), every later line
    starting with `%` or `!` counts, as every such line did before.
    """
    found: set[int] = set()
    last: tokenize.TokenInfo | None = None  # the last token the tokenizer produced
    depth = 0  # open brackets
    read = 0  # lines handed to the tokenizer
    broken = False

    def begins_statement() -> bool:
        # the previous line (row `read`) ended a statement or was blank, outside brackets
        if read == 0:
            return True
        return (
            depth == 0 and last is not None and last.type in (tokenize.NEWLINE, tokenize.NL) and last.start[0] == read
        )

    def readline() -> str:
        nonlocal read
        if read >= len(lines):
            return ""
        line = lines[read]
        body = line.lstrip(" \t")
        magic = body.startswith(("%", "!")) and (broken or begins_statement())
        if magic:
            found.add(read)
        read += 1
        return (line[: len(line) - len(body)] + "pass\n" if len(body) < len(line) else "\n") if magic else line + "\n"

    try:
        for token in tokenize.generate_tokens(readline):
            if token.type == tokenize.OP and token.string in ("(", "[", "{"):
                depth += 1
            elif token.type == tokenize.OP and token.string in (")", "]", "}"):
                depth = max(depth - 1, 0)
            last = token
    except Exception:  # TokenError, SyntaxError (IndentationError) and what a hostile cell may provoke besides
        broken = True
        while readline():
            pass
    return found


def _commented(line: str) -> str:
    """A magic or shell line as Python: a comment, after `pass` where it is indented (a block it alone
    filled, `except ImportError:` over `!pip install x`, stays a block)."""
    body = line.lstrip(" \t")
    indent = line[: len(line) - len(body)]
    return f"{indent}pass  # (notebook only) {body}" if indent else f"# (notebook only) {line}"


def _read_notebook(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise NotebookError(f"{path.name}: not a notebook (the file is not UTF-8 text)") from None
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"{path.name}: not a notebook (invalid JSON at line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise NotebookError(f"{path.name}: not a notebook (JSON nested too deeply)") from None
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise NotebookError(f"{path.name}: not a Jupyter notebook (no list of cells)")
    if notebook.get("nbformat") != 4:
        raise NotebookError(
            f"{path.name}: notebook format {notebook.get('nbformat')!r} is not supported; "
            "save it as a version-4 notebook (any current Jupyter does)"
        )
    if not all(isinstance(c, dict) for c in notebook["cells"]):
        raise NotebookError(f"{path.name}: a cell is not a JSON object")
    return notebook


def notebook_exercise_id(ipynb_path: str | Path) -> str | None:
    """The exercise a notebook belongs to (metadata `a2.exercise` or the exercise cells' marker)."""
    path = Path(ipynb_path)
    notebook = _read_notebook(path)
    meta = _metadata(notebook)
    declared = meta.get("a2", {}).get("exercise") if isinstance(meta.get("a2"), dict) else None
    if isinstance(declared, str) and declared in BY_ID:
        return declared
    for cell in notebook["cells"]:
        if cell.get("cell_type") == "code":
            match = _has_marker(cell)
            if match and match.group(1) in BY_ID:
                return match.group(1)
    return None


def extract_code(ipynb_path: str | Path, ex_id: str | None = None) -> str:
    """The exercise file a notebook submission holds (rule in the module docstring).

    `ex_id`, when given, must match the exercise the notebook's exercise cells belong to.
    Raises NotebookError for a malformed notebook or one without an exercise cell.
    """
    path = Path(ipynb_path)
    notebook = _read_notebook(path)
    code_cells = [c for c in notebook["cells"] if c.get("cell_type") == "code"]
    tagged = [c for c in code_cells if EXERCISE_TAG in cell_tags(c)]
    chosen = tagged or [c for c in code_cells if _has_marker(c)]
    if not chosen:
        raise NotebookError(
            f"{path.name}: no exercise cell found; the graded cell carries the tag "
            f"'{EXERCISE_TAG}' and starts with '# a2-exercise exNN' (download a fresh "
            "notebook and copy your code into its exercise cell)"
        )
    parts: list[str] = []
    for cell in chosen:
        lines = _source_text(cell).splitlines()
        if lines:
            match = MARKER_RE.match(lines[0])
            if match:
                if ex_id is not None and match.group(1) != ex_id:
                    raise NotebookError(
                        f"{path.name}: the exercise cell belongs to {match.group(1)}, "
                        f"but this submission is graded as {ex_id}"
                    )
                lines = lines[1:]
        magic = _ipython_lines(lines)
        lines = [_commented(line) if n in magic else line for n, line in enumerate(lines)]
        parts.append("\n".join(lines).strip("\n"))
    declared = notebook_exercise_id(path)
    if ex_id is not None and declared is not None and declared != ex_id:
        raise NotebookError(f"{path.name}: this notebook is {declared}'s, but it is graded as {ex_id}")
    return "\n\n".join(p for p in parts if p) + "\n"
