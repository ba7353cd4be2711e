"""Turn the answer key `solutions/` into the student release `assignments/` (and check for drift).

`python -m autograder release` rewrites `assignments/` from scratch:
- each `solutions/exNN_*.py` becomes a stub: every block between a line `# BEGIN SOLUTION` and a line
  `# END SOLUTION` is replaced, at the block's indentation, by
      # TODO(exNN): implement <function>
      raise NotImplementedError("exNN: <function>")
  where <function> is the function the block sits in;
- the public tests (`solutions/tests/`: public_exNN.py, test_public.py, conftest.py) are copied, with
  `tests/exercises.json` (ids, titles, points, the public cases' points and the per-case time limit
  `case_timeout_s` from the manifest), so that the public tests need no grader code, and
  `tests/public_mistakes.json`: the stored known-mistake outputs (`autograder/expected/exNN.json`) of the
  public cases only, so that a failed public case names the same known mistake in `pytest` as in
  grading (`hetero.checks.diagnosis`); no hidden case's id, input or value is in it;
- `reference_figures.json`: the answer key's driver figures (`autograder.authoring.reference_figures`),
  each part recomputed only when what it is computed from changed;
- the handout `solutions/HANDOUT.md` becomes `assignments/README.md`, `<!-- CASE_LIMITS -->` replaced
  by the manifest's per-case time limits and the line `<!-- EXERCISES -->`
  replaced by one section per exercise generated from the solution file's docstrings (signatures,
  units, invalid-input rules), the manifest (points, lecture section, terms) and the public cases.
Hidden tests live in `autograder/tests/` and are never copied.

`python -m autograder release` (`make release`) is atomic and fails fast: what needs no computing is
checked first (`static_checks`); then the expected values of the exercises whose inputs changed
(`autograder.authoring.expected`, `autograder.authoring.digests`), the driver parts whose inputs changed,
the release and the files derived from the manifest (`autograder.authoring.derived`: hetero's exercise
list, counts in the prose) are computed in a temporary tree; only when all of that succeeded is
`assignments/` replaced (by renames) and are the changed files written. An error names the file to edit
and writes nothing. `--recompute` ignores the recorded digests.

`python -m autograder release --check` builds the release in a temporary folder and fails (exit 1,
listing the files) when `assignments/` or a derived file differs from it. Malformed markers (nested, unterminated,
END without BEGIN, a block outside any function, a file without any block) fail loudly with the
file and line.
"""

from __future__ import annotations

import argparse
import ast
import filecmp
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from autograder.authoring import digests, reference_figures
from autograder.authoring.derived import fill_spans, span_values
from autograder.core import scoring
from autograder.core.cases import check_files
from autograder.core.manifest import BEGIN, BY_ID, END, EXERCISES, ROOT, public_cases_in
from hetero.impl import load_module_from_path
from hetero.reference import REFERENCE_FILE

DEF_RE = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)\s*\(")
PUBLIC_TEST_FILES = ("conftest.py", "test_public.py")
HANDOUT = "HANDOUT.md"
EXERCISE_SLOT = "<!-- EXERCISES -->"
LIMITS_SLOT = "<!-- CASE_LIMITS -->"


class MarkerError(ValueError):
    """A malformed solution marker: names the file and line."""


class ReleaseError(RuntimeError):
    """The release cannot be made; nothing was written. The message names the file to edit."""


def strip_solutions(source_text: str, ex_id: str, filename: str = "<source>") -> str:
    """The stub text of one solution file (see the module docstring for the rules)."""
    out: list[str] = []
    open_at: int | None = None  # 1-based line of the open BEGIN marker
    defs: list[tuple[int, str]] = []  # (indent, name) of enclosing defs
    blocks = 0
    for line_no, line in enumerate(source_text.splitlines(keepends=True), start=1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if open_at is None:
            match = DEF_RE.match(line)
            if match:
                while defs and defs[-1][0] >= len(match.group(1)):
                    defs.pop()
                defs.append((len(match.group(1)), match.group(2)))
        if stripped.startswith(BEGIN):
            if open_at is not None:
                raise MarkerError(
                    f"{filename}:{line_no}: nested '{BEGIN}' (the block opened at line {open_at} is not closed)"
                )
            enclosing = [name for def_indent, name in defs if def_indent < indent]
            if not enclosing:
                raise MarkerError(f"{filename}:{line_no}: '{BEGIN}' outside any function")
            open_at = line_no
            func = enclosing[-1]
            pad = line[:indent]
            out.append(f"{pad}# TODO({ex_id}): implement {func}\n")
            out.append(f'{pad}raise NotImplementedError("{ex_id}: {func}")\n')
            blocks += 1
            continue
        if stripped.startswith(END):
            if open_at is None:
                raise MarkerError(f"{filename}:{line_no}: '{END}' without a matching '{BEGIN}'")
            open_at = None
            continue
        if open_at is None:
            out.append(line)
    if open_at is not None:
        raise MarkerError(f"{filename}:{open_at}: unterminated '{BEGIN}' (no '{END}' before the end of the file)")
    if blocks == 0:
        raise MarkerError(f"{filename}: no '{BEGIN}' block: every exercise file needs at least one")
    text = "".join(out)
    try:
        ast.parse(text, filename=filename)
    except SyntaxError as exc:
        raise MarkerError(
            f"{filename}: the stub does not parse after stripping ({exc.msg}, line {exc.lineno})"
        ) from None
    return text


def build_release(
    dest: Path, root: Path = ROOT, reference_text: str | None = None, placeholder: bool = False
) -> list[Path]:
    """Write the complete release into `dest` (created; must be empty or absent). Returns the files written.

    The reference figures are `reference_text`, else the stored ones when their inputs are today's
    (`autograder.authoring.reference_figures`; StaleReference otherwise). `placeholder`: figures that are
    not real (the static checks), so no deferral numbers in the handout and no model shipped."""
    solutions = root / "solutions"
    written: list[Path] = []
    dest.mkdir(parents=True, exist_ok=True)
    for ex in EXERCISES:
        src = solutions / ex.filename
        if not src.is_file():
            raise FileNotFoundError(f"{src}: solution file missing for {ex.id}")
        target = dest / ex.filename
        target.write_text(strip_solutions(src.read_text(encoding="utf-8"), ex.id, str(src)), encoding="utf-8")
        written.append(target)
    tests_dest = dest / "tests"
    tests_dest.mkdir(exist_ok=True)
    public_files = list(PUBLIC_TEST_FILES) + [public_cases_in(solutions, ex.id).name for ex in EXERCISES]
    for name in public_files:
        src = solutions / "tests" / name
        if not src.is_file():
            raise FileNotFoundError(f"{src}: public test file missing")
        text = src.read_text(encoding="utf-8")
        if BEGIN in text or END in text:
            raise MarkerError(f"{src}: public tests must not contain solution markers")
        shutil.copyfile(src, tests_dest / name)
        written.append(tests_dest / name)
    listing = []
    for ex in EXERCISES:
        shares = scoring.case_cents(ex.points, ex.public_share, _public_cases(ex, solutions), [])
        listing.append(
            {
                "id": ex.id,
                "module": ex.module,
                "title": ex.title,
                "lecture": ex.lecture,
                "points": ex.points,
                "public_points": scoring.cents_to_points(sum(shares.values())),
                "public_case_points": {cid: scoring.cents_to_points(c) for cid, c in shares.items()},
                "case_timeout_s": ex.case_timeout_s,
            }
        )
    (tests_dest / "exercises.json").write_text(
        json.dumps(listing, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    written.append(tests_dest / "exercises.json")
    written.append(write_public_mistakes(tests_dest, _stored_texts(root), solutions))
    handout = solutions / HANDOUT
    if not handout.is_file():
        raise FileNotFoundError(f"{handout}: the handout source is missing")
    text = handout.read_text(encoding="utf-8")
    if EXERCISE_SLOT not in text:
        raise MarkerError(f"{handout}: the handout needs the line {EXERCISE_SLOT} where the exercise sections go")
    sections = "\n".join(exercise_section(ex, solutions) for ex in EXERCISES)
    figures = (
        reference_text if reference_text is not None else reference_figures.stored_text(root / "assignments", root)
    )
    text = fill_spans(text, str(handout), span_values())
    text = text.replace(EXERCISE_SLOT, sections).replace(LIMITS_SLOT, case_limits_text())
    deferral = "(the deferral figures)" if placeholder else reference_figures.deferral_text(figures)
    text = text.replace(reference_figures.DEFERRAL_SLOT, deferral)
    training = (
        "(the training run)" if placeholder else reference_figures.training_text(figures, root / "assignments", root)
    )
    text = text.replace(reference_figures.TRAINING_SLOT, training)
    (dest / "README.md").write_text(text, encoding="utf-8")
    written.append(dest / "README.md")
    (dest / REFERENCE_FILE).write_text(figures, encoding="utf-8")
    written.append(dest / REFERENCE_FILE)
    if not placeholder:  # the static checks' release has no figures, so no model to ship
        written.append(reference_figures.write_model(dest, figures, root))
    return written


def _stored_texts(root: Path) -> dict[str, str]:
    """exNN -> the text of its stored expected values, for the exercises that have them."""
    folder = root / "autograder" / "expected"
    return {
        ex.id: (folder / f"{ex.id}.json").read_text(encoding="utf-8")
        for ex in EXERCISES
        if (folder / f"{ex.id}.json").is_file()
    }


def write_public_mistakes(tests_dest: Path, texts: dict[str, str], solutions: Path) -> Path:
    """Write `tests_dest/public_mistakes.json`: {public case id: {mistake: [description, encoded output]}}
    from the expected values' texts `texts` (exNN -> text), public cases only, in case order."""
    mistakes: dict[str, dict] = {}
    for ex in EXERCISES:
        entries = json.loads(texts[ex.id])["cases"] if ex.id in texts else {}
        for case in _public_cases(ex, solutions):
            table = entries.get(case.id, {}).get("mistakes")
            if table:
                mistakes[case.id] = table
    path = tests_dest / "public_mistakes.json"
    path.write_text(json.dumps(mistakes, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def case_limits_text() -> str:
    """The per-case time limits as the handout states them: "10 s; ex05 20 s; ex10 30 s"."""
    usual = max({e.case_timeout_s for e in EXERCISES}, key=lambda t: sum(e.case_timeout_s == t for e in EXERCISES))
    return "; ".join(
        [f"{usual:g} s"] + [f"{e.id} {e.case_timeout_s:g} s" for e in EXERCISES if e.case_timeout_s != usual]
    )


def _public_cases(ex, solutions: Path) -> list:
    return load_module_from_path(public_cases_in(solutions, ex.id), f"_handout_public_{ex.id}").CASES


def _public_case_lines(cases: list) -> list[str]:
    lines = []
    for case in cases:
        what = (
            f"raises `{case.raises}`"
            if case.raises
            else f"expects `{case.expect!r}`" + (f" {case.unit}" if case.unit else "")
        )
        lines.append(f"  - `{case.id}`: `{case.func}` {what}")
    return lines


def exercise_section(ex, solutions: Path) -> str:
    """The handout's section for one exercise, generated from its solution file's docstrings."""
    source = (solutions / ex.filename).read_text(encoding="utf-8")
    tree = ast.parse(source)
    doc = ast.get_docstring(tree) or ""
    lines = [f"### {ex.id} · {ex.title} ({ex.points:g} points; lecture {ex.lecture})", ""]
    if ex.terms:
        lines += [f"Terms: {ex.terms}", ""]
    lines += [doc.strip(), "", f"Implement in `{ex.filename}`:", ""]
    helpers: list[str] = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        body = ast.get_source_segment(source, node) or ""
        if BEGIN not in body:
            continue
        signature = f"def {node.name}({ast.unparse(node.args)})" + (
            f" -> {ast.unparse(node.returns)}" if node.returns else ""
        )
        if node.name.startswith("_"):
            helpers.append(f"`{signature}`")
            continue
        lines += [f"- `{signature}`", "", "  ```text"]
        lines += [f"  {line}" if line else "" for line in (ast.get_docstring(node) or "").splitlines()]
        lines += ["  ```", ""]
    for helper in helpers:
        lines += [
            f"- Helper (optional, not graded on its own): {helper}, a stub for the validation the functions "
            "above share. Fill it and call it from them, or delete it and validate inside each function; "
            "only the functions above are called by the tests.",
            "",
        ]
    cases = _public_cases(ex, solutions)
    public_cents, hidden_cents = scoring.exercise_cents(ex.points, ex.public_share, bool(cases))
    lines += [
        f"Grading: {scoring.points_text(public_cents)} points from the public cases below, "
        f"{scoring.points_text(hidden_cents)} from hidden "
        "cases on inputs you have not seen (other hardware and models, random cases, invalid input). "
        f"Each case may run for at most {ex.case_timeout_s:g} s, here and on Gradescope.",
        "",
        f"Public cases (`{public_cases_in(Path('assignments'), ex.id).as_posix()}`; run `pytest assignments -m {ex.id}`):",
    ]
    lines += _public_case_lines(cases)
    return "\n".join(lines) + "\n"


def _tree(folder: Path) -> set[str]:
    return {
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and ".pytest_cache" not in p.parts
    }


def drift(assignments: Path, root: Path = ROOT) -> list[str]:
    """Differences between `assignments` and a fresh release, as readable lines (empty: no drift)."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "release"
        try:
            build_release(fresh, root, reference_figures.stored_text(assignments, root))
        except reference_figures.StaleReference as exc:
            return [f"stale: {exc}"]
        have, want = _tree(assignments) if assignments.is_dir() else set(), _tree(fresh)
        problems = [f"missing from assignments/: {name}" for name in sorted(want - have)]
        problems += [f"not part of the release: assignments/{name}" for name in sorted(have - want)]
        problems += [
            f"differs from a fresh release: assignments/{name}"
            for name in sorted(want & have)
            if not filecmp.cmp(assignments / name, fresh / name, shallow=False)
        ]
        return problems


def _expected_texts(ids: list[str], jobs: int) -> dict[str, str]:
    """The stored expected values of the exercises `ids`, computed from the answer key (nothing written)."""
    from autograder.authoring import expected

    results = expected.rendered_all(ids, jobs)
    errors = [
        f"{BY_ID[ex_id].hidden_cases_path.relative_to(ROOT)} or solutions/{BY_ID[ex_id].filename}: {error}"
        for ex_id, (_, error) in results.items()
        if error
    ]
    if errors:
        raise ReleaseError("the answer key and the cases disagree:\n  " + "\n  ".join(errors))
    return {ex_id: text for ex_id, (text, _) in results.items()}


def _replace_tree(fresh: Path, out: Path) -> None:
    """Put `fresh` in place of `out` by renames on one file system (pytest's cache in `out` is kept)."""
    staged = out.with_name(f".{out.name}.new")
    old = out.with_name(f".{out.name}.old")
    for leftover in (staged, old):
        if leftover.exists():
            shutil.rmtree(leftover)
    shutil.copytree(fresh, staged)
    if (out / ".pytest_cache").is_dir():
        shutil.copytree(out / ".pytest_cache", staged / ".pytest_cache")
    if out.exists():
        out.rename(old)
    staged.rename(out)
    if old.exists():
        shutil.rmtree(old)


def static_checks() -> None:
    """What needs no computing, before anything is computed: the manifest against the answer key, the case
    files and hetero's calls by name (`check_files`), the solution markers, the public test files and the
    handout (a release built with placeholder figures). ReleaseError or MarkerError naming the file."""
    problems = check_files(ROOT)
    if problems:
        raise ReleaseError("the manifest does not hold:\n  " + "\n  ".join(problems))
    with tempfile.TemporaryDirectory() as tmp:
        build_release(Path(tmp) / "release", reference_text="{}\n", placeholder=True)


def due_exercises(records: dict[str, Any], stored: dict[str, str]) -> list[str]:
    """The exercises whose expected values must be computed again: no stored file, a stored file other
    than the recorded one, or inputs whose digest differs from the record (`autograder.authoring.digests`)."""
    from autograder.authoring import expected

    due = []
    for ex in EXERCISES:
        record = records.get(ex.id, {})
        path = expected.EXPECTED_DIR / f"{ex.id}.json"
        if (
            ex.id not in stored
            or record.get("stored") != digests.file_sha256(path)
            or record.get("inputs") != digests.exercise_digest(ex.id)
        ):
            due.append(ex.id)
    return due


def release(
    out: Path, jobs: int = 2, with_expected: bool = True, recompute: bool = False, *, settled: bool = False
) -> list[str]:
    """Build the whole release and everything derived from the manifest in a temporary tree; replace
    `out`, the stored expected values (where they changed beyond float noise), their digests and the
    derived files only when all of it succeeded. Returns what was written, as lines.

    Fail-fast and incremental: `static_checks` first; then the expected values of the exercises whose
    inputs changed only (`due_exercises`), then the driver parts whose inputs changed only
    (`reference_figures.compute`); `recompute`: every exercise and every part, whatever the records say.
    When the manifest's exercise list changed (a new exercise), hetero's list is written last, after the
    digests that read it: the release then runs once more (`settled`), so that one `make release` leaves
    nothing stale."""
    from autograder.authoring import derived, expected

    static_checks()
    records = {"expected": {}, "figures": {}} if recompute else digests.load()
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "release"
        stored = _stored_texts(ROOT)
        due = due_exercises(records["expected"], stored) if with_expected else []
        texts = _expected_texts(due, jobs) if due else {}
        changed = {
            ex_id: text
            for ex_id, text in texts.items()
            if ex_id not in stored or expected.drift(json.loads(stored[ex_id]), json.loads(text), ex_id)
        }
        current = ROOT / "assignments" / REFERENCE_FILE  # the figures the recorded digests describe
        figures, records["figures"], ran = reference_figures.compute(
            ROOT,
            {**stored, **changed},
            current.read_text(encoding="utf-8") if current.is_file() else None,
            records["figures"],
        )
        files = build_release(fresh, reference_text=figures)
        # the public cases' mistake outputs as the expected files will hold them after this release
        write_public_mistakes(fresh / "tests", {**stored, **changed}, ROOT / "solutions")
        derived_texts = derived.derived_files(ROOT)
        # Everything is computed: from here on only writes.
        _replace_tree(fresh, out)
        written = [f"released {len(files)} files into {out}"]
        if due:
            written.append(f"computed the expected values of {', '.join(due)} (inputs changed)")
        if ran:
            written.append(f"ran the lecture-driver parts {', '.join(ran)} (inputs changed)")
    for ex_id, text in changed.items():
        path = expected.EXPECTED_DIR / f"{ex_id}.json"
        path.write_text(text, encoding="utf-8")
        written.append(f"wrote {path.relative_to(ROOT)}")
    for ex_id in texts:
        records["expected"][ex_id] = {
            "inputs": digests.exercise_digest(ex_id),
            "stored": digests.file_sha256(expected.EXPECTED_DIR / f"{ex_id}.json"),
        }
    text = digests.render(records)
    if not digests.RECORD.is_file() or digests.RECORD.read_text(encoding="utf-8") != text:
        digests.RECORD.write_text(text, encoding="utf-8")
        written.append(f"wrote {digests.RECORD.relative_to(ROOT)}")
    listed_anew = False
    for rel, text in derived_texts.items():
        path = ROOT / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(f"wrote {rel}")
            listed_anew = listed_anew or rel == derived.HETERO_LIST
    if listed_anew and not settled:  # every digest reads hetero's exercise list: compute them from the new one
        written.append(f"{derived.HETERO_LIST} changed: the release runs once more on it")
        return written + release(out, jobs, with_expected, settled=True)
    written += _grade_new_fixtures()
    return written


def _grade_new_fixtures() -> list[str]:
    """Grade the wrong fixtures that have no stored outcomes yet (a new exercise's, a new mistake) and store
    them; changed cases of existing fixtures are `wrong-scores --exercises ... --write`'s (the tests say so)."""
    from autograder.authoring import wrong_scores
    from autograder.authoring.wrong_fixtures import FIXTURES

    try:
        entries = wrong_scores.load()
    except wrong_scores.StaleEntry:
        return ["wrong-fixture outcomes unreadable: run `python -m autograder wrong-scores --write`"]
    new = {f.name: wrong_scores.grade(f.name) for f in FIXTURES if f.name not in entries}
    if not new:
        return []
    wrong_scores.dump({**entries, **new})
    return [f"graded and stored the new wrong fixtures {', '.join(sorted(new))}"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder release", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="fail if assignments/ or a derived file differs from a fresh release"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "assignments", help="release folder (default: assignments/)")
    parser.add_argument("--no-expected", action="store_true", help="leave the stored expected values alone (faster)")
    parser.add_argument("--jobs", type=int, default=2, help="exercises whose expected values are computed at once")
    parser.add_argument(
        "--recompute",
        action="store_true",
        help="compute every exercise's expected values and every driver part again, whatever their recorded digests say",
    )
    args = parser.parse_args(argv)
    try:
        if args.check:
            from autograder.authoring import derived

            problems = drift(args.out) + derived.drift()
            if problems:
                print(
                    "the release has drifted from solutions/ and the manifest; run `python -m autograder release`:",
                    file=sys.stderr,
                )
                for line in problems:
                    print(f"  {line}", file=sys.stderr)
                return 1
            print("assignments/ and the derived files match a fresh release of solutions/")
            return 0
        for line in release(args.out, args.jobs, not args.no_expected, args.recompute):
            print(line)
        return 0
    except (MarkerError, FileNotFoundError, ReleaseError, ValueError) as exc:
        print(f"release failed (nothing was written): {exc}", file=sys.stderr)
        return 1
