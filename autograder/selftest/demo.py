"""The grading half of `make demo`: `python -m autograder.selftest.demo [--out out]`.

1. builds the Gradescope autograder zip (dist/autograder.zip);
2. assembles example submissions under <out>/submissions/, copying files at run time: the answer
   key, the unfilled release stubs, answer key + one materialised wrong fixture of
   `autograder.authoring.wrong_fixtures` (a few different mistakes), a
   partial submission packed as a zip with `autograder pack`, and a damaged zip;
3. grades them all with `grade-all` (parallel, resumable) into <out>/graded/ and <out>/grades.csv;
4. prints the per-exercise summary table.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from autograder.authoring.wrong_fixtures import FIXTURES, WrongFixture, materialise
from autograder.batch import bulk, outputs
from autograder.batch.gradebook import Gradebook
from autograder.core.manifest import EXERCISES, ROOT
from autograder.packaging import build, pack
from autograder.runtime.sandbox import ladder


def copy_exercises(src: Path, dest: Path) -> Path:
    """Copy the exercise files of `src` (solutions/ or assignments/) into a fresh folder `dest`."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    missing = [e.filename for e in EXERCISES if not (src / e.filename).is_file()]
    if missing:
        raise FileNotFoundError(f"{src} lacks {', '.join(missing)}")
    for e in EXERCISES:
        shutil.copyfile(src / e.filename, dest / e.filename)
    return dest


def with_fixture(fixture: WrongFixture, dest: Path) -> Path:
    """The answer key with one exercise file replaced by the wrong fixture's materialised copy."""
    copy_exercises(ROOT / "solutions", dest)
    materialise(fixture.name, dest)
    return dest


def fixture_spread(count: int) -> list[WrongFixture]:
    """`count` wrong fixtures, taken round-robin over exercises so the mistakes differ."""
    by_ex: dict[str, list[WrongFixture]] = {}
    for fixture in FIXTURES:
        by_ex.setdefault(fixture.exercise, []).append(fixture)
    chosen: list[WrongFixture] = []
    rank = 0
    while len(chosen) < count and any(rank < len(v) for v in by_ex.values()):
        for ex_id in sorted(by_ex):
            if rank < len(by_ex[ex_id]) and len(chosen) < count:
                chosen.append(by_ex[ex_id][rank])
        rank += 1
    return chosen


def assemble_examples(dest: Path, n_fixtures: int = 3) -> list[str]:
    """Write example submissions into `dest` (emptied first); return the student names."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    copy_exercises(ROOT / "solutions", dest / "s01_answer_key")
    copy_exercises(ROOT / "assignments", dest / "s02_unfilled_stubs")
    for i, fixture in enumerate(fixture_spread(n_fixtures)):
        with_fixture(fixture, dest / f"s{i + 3:02d}_wrong_{fixture.name}")
    partial = copy_exercises(ROOT / "solutions", dest.parent / "_partial_work")
    last = EXERCISES[-1]
    shutil.copyfile(ROOT / "assignments" / last.filename, partial / last.filename)
    n = n_fixtures + 3
    pack.pack(partial, dest / f"s{n:02d}_packed_without_{last.id}.zip")
    shutil.rmtree(partial)
    (dest / f"s{n + 1:02d}_damaged.zip").write_bytes(b"PK\x03\x04 this upload was cut off")
    return sorted(p.stem if p.suffix == ".zip" else p.name for p in dest.iterdir())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.selftest.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out"), help="where submissions and grades go")
    parser.add_argument("--zip", type=Path, default=Path("dist/autograder.zip"), help="autograder zip to build")
    parser.add_argument("--fixtures", type=int, default=3, help="how many wrong-fixture submissions")
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args(argv)

    report = build.build(args.zip)
    print(f"[1/4] built {report.path} ({report.files} files, {report.size_bytes / 1e6:.2f} MB)")
    students = assemble_examples(args.out / "submissions", args.fixtures)
    print(f"[2/4] assembled {len(students)} example submissions in {args.out / 'submissions'}: {', '.join(students)}")
    try:
        rung = ladder.current()
        print(f"      student code runs on isolation rung {rung.name!r} (python -m autograder sandbox)")
    except ladder.Refused as exc:
        # The demo grades only files this package wrote (the answer key, the stubs, its wrong fixtures):
        # trusted, so it runs them where no isolation layer works, and says so. Real submissions are refused.
        ladder.allow_unsafe(True)
        print(f"      no isolation layer works here; the demo's own trusted files run unisolated:\n{exc}")
    batch = bulk.grade_all(args.out / "submissions", args.out / "graded", args.workers)
    print(
        f"[3/4] graded {len(batch.graded)} (skipped {len(batch.skipped)} unchanged) in {batch.wall_s:.1f} s; "
        f"feedback in {args.out / 'graded'}/<student>/feedback.md"
    )
    with Gradebook(args.out / "graded" / "gradebook.sqlite") as book:
        book.export_csv(args.out / "grades.csv", students)
    print(f"[4/4] summary (gradebook {args.out / 'graded' / 'gradebook.sqlite'}, CSV {args.out / 'grades.csv'}):\n")
    print(outputs.summary_table(batch.records))
    for rec in batch.records:
        print(f"  {rec.student:<40} {rec.score:6.2f} / {rec.max_score:.0f}  {rec.status}")
    by_student = {r.student: r for r in batch.records}
    key, stubs = by_student.get("s01_answer_key"), by_student.get("s02_unfilled_stubs")
    if key is None or abs(key.score - key.max_score) > 1e-6 or stubs is None or abs(stubs.score) > 1e-6:
        print("demo check failed: the answer key must score full marks and the stubs 0", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
