"""`python -m autograder new-exercise exNN_slug [--points P] [--lecture "§x.y"]`: start a new exercise.

Writes the four pieces a maintainer owns, from templates that pass the project's lint and type checks
and grade the answer key at full marks as they stand:
- `solutions/exNN_slug.py`: one function with a `# BEGIN SOLUTION` block, typed, units in its names;
- `solutions/tests/public_exNN.py`: public cases (a value and an invalid input);
- `autograder/tests/exNN_hidden.py`: hidden cases (expected values come from the answer key);
- the manifest entry, appended to `EXERCISES` in autograder/core/manifest.py with `--points P`;
- a wrong fixture of the template (zero time accepted), appended to `FIXTURES` in
  autograder/authoring/wrong_fixtures.py: every exercise has a declared mistake (`make release` grades
  the fixtures that have no stored outcomes yet); replace it with the real exercise's mistakes.
The points then add up to 100 + P: every command stops with a message naming the manifest's file and
line until P points are taken from other entries. Then `make release` derives everything else (the
student release, expected values, hetero's exercise list, the counts in the prose). Replace the
template's function by the real ones, keeping `functions=` in the entry equal to the file's functions.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from autograder.core.manifest import ROOT

SOLUTION = '''"""Exercise {id}: {title} (lecture {lecture}).

Replace this template's function with the exercise's own; keep units in every name (`_bytes`, `_gb`,
`_s`) and say in each docstring what is invalid and which exception it raises.
"""

from __future__ import annotations


def bytes_per_second(size_bytes: float, time_s: float) -> float:
    """Throughput of moving `size_bytes` in `time_s` (lecture {lecture}).

    size_bytes: bytes moved (bytes, >= 0).
    time_s:     time taken (s, > 0).
    Returns:    throughput (float, bytes/s).
    Raises ValueError naming the argument when size_bytes < 0 or time_s <= 0.
    """
    # BEGIN SOLUTION
    if size_bytes < 0:
        raise ValueError(f"size_bytes must be >= 0, got {{size_bytes}}")
    if time_s <= 0:
        raise ValueError(f"time_s must be > 0, got {{time_s}}")
    return float(size_bytes) / float(time_s)
    # END SOLUTION
'''

PUBLIC = '''"""Public cases for {id}: the lecture's own numbers, released to students."""

from hetero.checks import Case

EXACT = "one division of exact inputs: correct code agrees to ~1e-16; 1e-9 allows only float rounding"

CASES = [
    Case(
        "{id}.bytes_per_second.one_gb_in_two_s",
        "bytes_per_second",
        (1e9, 2.0),
        expect=5e8,
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="bytes/s",
        hint="1e9 bytes / 2 s = 5e8 bytes/s; 2e9 means the division is inverted",
    ),
    Case(
        "{id}.bytes_per_second.zero_time",
        "bytes_per_second",
        (1e9, 0.0),
        raises="ValueError",
        hint="time_s = 0 is invalid: raise ValueError naming time_s",
    ),
]
'''

HIDDEN = '''"""Hidden cases for {id}: other sizes and times, and invalid input.

Expected values are computed from the answer key by `python -m autograder expected` (`make release`).
"""

from hetero.checks import Case

EXACT = "one division of exact inputs: correct code agrees to ~1e-16; 1e-9 allows only float rounding"
HINT = "size_bytes / time_s, as a float in bytes/s"

CASES = [
    Case(
        f"{id}.bytes_per_second.{{label}}",
        "bytes_per_second",
        (size, time),
        rel_tol=1e-9,
        tol_note=EXACT,
        unit="bytes/s",
        hint=HINT,
    )
    for label, size, time in [("small", 3.0, 4.0), ("large", 7.5e12, 3.0), ("slow", 1e6, 250.0), ("empty", 0.0, 1.0)]
]
CASES += [
    Case(
        "{id}.bytes_per_second.negative_size",
        "bytes_per_second",
        (-1.0, 1.0),
        raises="ValueError",
        hint="size_bytes = -1 must raise ValueError naming size_bytes",
        points=0.5,
    ),
    Case(
        "{id}.bytes_per_second.no_time",
        "bytes_per_second",
        (5.0, 0.0),
        raises="ValueError",
        hint="time_s = 0 must raise ValueError naming time_s (not ZeroDivisionError)",
        points=0.5,
    ),
]
'''

FIXTURE = """    WrongFixture(
        "{id}_zero_time",
        "{id}",
        "bytes_per_second accepts time_s = 0 (< instead of <=) and divides by zero instead of raising ValueError.",
        (Edit("    if time_s <= 0:\\n", "    if time_s < 0:\\n"),),
    ),
"""

ENTRY = """    Exercise(
        id="{id}",
        module="{module}",
        functions=("bytes_per_second",),
        title="{title}",
        lecture="{lecture}",
        points={points},
        public_share=0.4,
        timeout_s=20,
        cpu_s=20,
        memory_mib=2048,
    ),
"""


def write(module: str, points: float, lecture: str, title: str, root: Path = ROOT) -> list[Path]:
    """Write the three files and append the manifest entry under `root`; returns the files touched."""
    match = re.fullmatch(r"(ex\d\d)_[a-z0-9_]+", module)
    if not match:
        raise ValueError(f"{module!r}: the name must be exNN_slug (lower case, digits, underscores)")
    ex_id = match.group(1)
    values = {"id": ex_id, "module": module, "title": title, "lecture": lecture, "points": f"{points:g}"}
    manifest = root / "autograder" / "core" / "manifest.py"
    text = manifest.read_text(encoding="utf-8")
    if re.search(rf'^\s*id="{ex_id}"', text, re.M):
        raise ValueError(f"{manifest}: {ex_id} is declared already")
    files = {
        root / "solutions" / f"{module}.py": SOLUTION,
        root / "solutions" / "tests" / f"public_{ex_id}.py": PUBLIC,
        root / "autograder" / "tests" / f"{ex_id}_hidden.py": HIDDEN,
    }
    existing = [str(p) for p in files if p.exists()]
    if existing:
        raise ValueError(f"would overwrite {', '.join(existing)}")
    fixtures = root / "autograder" / "authoring" / "wrong_fixtures.py"
    fixture_text = fixtures.read_text(encoding="utf-8") if fixtures.is_file() else ""
    end = text.index("\n)\n", text.index("EXERCISES: tuple[Exercise, ...] = ("))
    for path, template in files.items():
        path.write_text(template.format(**values), encoding="utf-8")
    manifest.write_text(text[: end + 1] + ENTRY.format(**values) + text[end + 1 :], encoding="utf-8")
    touched = [*files, manifest]
    if "FIXTURES: tuple[WrongFixture, ...] = (" in fixture_text:
        close = fixture_text.index("\n)\n", fixture_text.index("FIXTURES: tuple[WrongFixture, ...] = ("))
        fixtures.write_text(
            fixture_text[: close + 1] + FIXTURE.format(**values) + fixture_text[close + 1 :], encoding="utf-8"
        )
        touched.append(fixtures)
    return touched


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder new-exercise", description=__doc__.splitlines()[0])
    parser.add_argument("module", help="exNN_slug: the exercise id and its file's name")
    parser.add_argument("--points", type=float, default=5.0, help="its points (then take them from other entries)")
    parser.add_argument("--lecture", default="§?", help="the lecture section it comes from")
    parser.add_argument("--title", default="TODO: the exercise's title")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        touched = write(args.module, args.points, args.lecture, args.title, args.root)
    except ValueError as exc:
        print(f"new-exercise: {exc}", file=sys.stderr)
        return 1
    for path in touched:
        print(f"wrote {path}")
    print(
        f"The manifest's points now add up to 100 + {args.points:g}: take {args.points:g} points from other entries "
        "in autograder/core/manifest.py, then `make release`."
    )
    return 0
