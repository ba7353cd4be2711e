"""What each computed part of a release depends on, as one digest per part, and where the digests are kept.

Two kinds of part are slow to compute: an exercise's stored expected values (`autograder.authoring.expected`:
the answer key on every case, the wrong fixtures too) and one lecture-driver part's reference figures
(`autograder.authoring.reference_figures`: the MoE part trains a model). The release recomputes a part
only when its digest differs from the recorded one, so one changed hidden case recomputes that exercise's
values and no driver.

A digest is the sha256 over the repository paths and bytes of the part's inputs (BOOKKEEPING aside: the
code that decides when to compute), the lock of third-party versions (locks/instructor.txt) and the
Python (major.minor):
- an exercise: the import closure (`autograder.core.closure`) of its answer key, its public and hidden case
  files and `autograder.authoring.expected`, the harness modules its cases name ("<module>.<function>"),
  and hetero's data files;
- a driver part: the import closure of the module defining the part and of `hetero.reference` (the
  aggregates kept), the answer key of every exercise the part calls (`Part.needs` and its
  `exercise_function` calls), and hetero's data. Not the release's own code: the hidden-value filter runs
  on every release; after changing how figures are kept, `release --recompute` runs every part.

The recorded digests are `autograder/expected/digests.json` (instructor side: neither the zip nor the
student's copy carries it):
    {"expected": {exNN: {"inputs": digest, "stored": sha256 of autograder/expected/exNN.json}},
     "figures": {"<experiment>/<part>": {"inputs": digest, "withheld": [numbers left out of the figures
                 because they are hidden cases' expected values]}}}
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from autograder.core import closure
from autograder.core.hetero_calls import harness_users
from autograder.core.manifest import BY_ID, EXERCISES, ROOT, public_cases_in

RECORD_NAME = "autograder/expected/digests.json"
RECORD = ROOT / RECORD_NAME
DATA = ("shared/hetero/data/*",)
LOCK = "locks/instructor.txt"
CALLS = re.compile(r"""exercise_function\(\s*["'](ex\d+)["']""")
# The bookkeeping that decides when a part is computed, not what it holds: never an input.
BOOKKEEPING = ("autograder/authoring/digests.py", "autograder/core/closure.py", "autograder/core/hetero_calls.py")


def digest(files: Iterable[Path], root: Path = ROOT) -> str:
    """sha256 over the paths and bytes of `files`, the lock and the Python (major.minor)."""
    h = hashlib.sha256(f"python {sys.version_info.major}.{sys.version_info.minor}\0".encode())
    lock = root / LOCK
    skipped = {root / rel for rel in BOOKKEEPING}
    for path in sorted({*files, *([lock] if lock.is_file() else [])} - skipped):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def _with_closure(starts: list[Path], root: Path) -> list[Path]:
    reached = closure.closure([p for p in starts if p.is_file()], root, by_name=False)
    return sorted(set(reached) | set(closure.files_under(root, DATA)))


def exercise_inputs(ex_id: str, root: Path = ROOT) -> list[Path]:
    """The files an exercise's stored expected values are computed from (see the module docstring)."""
    ex = BY_ID[ex_id]
    harness = [name for name, users in harness_users(root, EXERCISES).items() if ex in users]
    starts = [
        root / "solutions" / ex.filename,
        public_cases_in(root / "solutions", ex_id),
        root / "autograder" / "tests" / f"{ex_id}_hidden.py",
        root / "autograder" / "authoring" / "expected.py",
        *(root / "shared" / "hetero" / "harness" / f"{name}.py" for name in harness),
    ]
    return _with_closure(starts, root)


def exercise_digest(ex_id: str, root: Path = ROOT) -> str:
    return digest(exercise_inputs(ex_id, root), root)


def part_inputs(part: Any, root: Path = ROOT) -> list[Path]:
    """The files one driver part's figures are computed from (see the module docstring)."""
    module = importlib.import_module(part.run.__module__)
    starts = [Path(str(module.__file__)), root / "shared" / "hetero" / "reference.py"]
    code = closure.closure(starts, root, by_name=False)
    needs = set(part.needs) | {ex for path in code for ex in CALLS.findall(path.read_text(encoding="utf-8"))}
    keys = [root / "solutions" / BY_ID[ex].filename for ex in sorted(needs) if ex in BY_ID]
    return _with_closure([*code, *keys], root)


def part_digest(part: Any, root: Path = ROOT) -> str:
    return digest(part_inputs(part, root), root)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""


def load(path: Path = RECORD) -> dict[str, dict[str, Any]]:
    """The recorded digests ({"expected": {...}, "figures": {...}}; empty sections when none is recorded)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    return {"expected": dict(data.get("expected", {})), "figures": dict(data.get("figures", {}))}


def render(data: dict[str, dict[str, Any]]) -> str:
    return json.dumps({k: dict(sorted(data[k].items())) for k in ("expected", "figures")}, indent=1) + "\n"


def figures_sha(figures: dict[str, Any]) -> str:
    """The reference file's own record of its inputs: sha256 of the figures section."""
    return hashlib.sha256(json.dumps(figures, sort_keys=True).encode()).hexdigest()
