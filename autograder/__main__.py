"""`python -m autograder <command> ...`: one entry point, each command in its own module."""

from __future__ import annotations

import importlib
import os
import sys

COMMANDS = {
    "release": (
        "autograder.authoring.release",
        "turn solutions/ into the student release assignments/ (--check: drift check)",
    ),
    "new-exercise": (
        "autograder.authoring.new_exercise",
        "start exercise exNN_slug: solution, public and hidden case files from templates, and its manifest entry",
    ),
    "expected": (
        "autograder.authoring.expected",
        "compute hidden-case expected values from solutions/ (--check: freshness)",
    ),
    "grade": ("autograder.runtime.grader", "grade one submission (folder or zip) into results.json"),
    "lecture": (
        "autograder.batch.lecture",
        "run a lecture driver on a student's folder in the grader's sandbox (their figures, safely)",
    ),
    "sandbox": (
        "autograder.runtime.sandbox.ladder",
        "say which isolation rung grading uses on this machine, and why the better ones do not work",
    ),
    "grade-all": (
        "autograder.batch.cli",
        "grade a folder of submissions in parallel into a gradebook + CSV (--dry-run: diff)",
    ),
    "export-lms": ("autograder.batch.lms", "export the gradebook's latest grades as a Canvas or Gradescope CSV"),
    "report": (
        "autograder.batch.report",
        "one HTML page on the class: whom to contact (scores, broken submissions), hardest cases, mistakes, similarity",
    ),
    "similarity": (
        "autograder.batch.similarity",
        "similar code across a class, per exercise (copydetect; stubs excluded, earlier terms with --archive)",
    ),
    "build": ("autograder.packaging.build", "build the Gradescope autograder zip"),
    "lock": ("autograder.packaging.locks", "regenerate the lock files locks/*.txt with uv (--check: freshness)"),
    "pack": (
        "autograder.packaging.pack",
        "zip a student's exercise files for upload (the same tool as python -m hetero.pack)",
    ),
    "student-bundle": (
        "autograder.packaging.bundle",
        "write the student's copy (folder + zip, audited: no answer in it)",
    ),
    "export-nbgrader": ("autograder.exports.export_nbgrader", "write an nbgrader course"),
    "export-otter": ("autograder.exports.export_otter", "write Otter-Grader master notebooks"),
    "wrong-scores": (
        "autograder.authoring.wrong_scores",
        "grade the wrong fixtures (--exercises exNN ...): case outcomes vs the stored ones (--write: store)",
    ),
    "fill-notebooks": (
        "autograder.batch.fill_notebooks",
        "put a folder of .py submissions into the released notebooks for nbgrader (--nbgrader) or Otter (--otter)",
    ),
    "otter-grade": (
        "autograder.batch.otter_grade",
        "the Otter route: assign every master, otter run each notebook in the sandbox, checked against the native grader",
    ),
    "nbgrader-autograde": (
        "autograder.batch.nbgrader_grade",
        "the nbgrader route: nbgrader autograde of each student in the sandbox, checked against the native grader",
    ),
    "demo": (
        "autograder.selftest.demo",
        "grade the answer key, the stubs and the wrong fixtures as a class (make demo)",
    ),
    "mutation": ("autograder.authoring.mutation", "mutate the answer key and report the mutants no case kills"),
}

# The commands that read students' work or write grades: every file and folder they create is the instructor's
# alone (umask 077) unless made otherwise on purpose (a sandboxed child's own folders, `sandbox.launch`). Where
# only file modes keep student code out (the seccomp-uid rung), a gradebook, CSV, report or feedback left
# readable would be read by a later grading's student, who can see every command line, --csv's included.
PRIVATE_OUTPUT = (
    "grade",
    "grade-all",
    "lecture",
    "export-lms",
    "report",
    "similarity",
    "fill-notebooks",
    "otter-grade",
    "nbgrader-autograde",
    "demo",
)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: python -m autograder <command> [options]\n\ncommands:")
        for name, (_, text) in COMMANDS.items():
            print(f"  {name:<16} {text}")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    try:
        module = importlib.import_module(COMMANDS[argv[0]][0])
    except ValueError as exc:
        # A bad manifest stops every command (autograder.core.manifest validates itself when imported),
        # with a message naming its file and line; the class is matched by name since it failed to load.
        if type(exc).__name__ != "ManifestError":
            raise
        print(f"{argv[0]}: {exc}", file=sys.stderr)
        return 2
    before = os.umask(0o077) if argv[0] in PRIVATE_OUTPUT else None
    try:
        return int(module.main(argv[1:]) or 0)
    finally:
        if before is not None:
            os.umask(before)  # a caller in the same process (a test) keeps its own


def _not_from_the_current_folder() -> None:
    """`python -m` put the current folder first on sys.path: run from inside a student's folder, its `hetero/`,
    `numpy.py` or any module there would be imported into this process, with the instructor's rights. This
    package and its libraries come from the venv (the editable install, or the Gradescope zip's .pth file), so
    the current folder is taken off the path (the working folder stays as it is). A student's `autograder/`
    there would still run before this file: never run a command from inside a student's folder, or use
    `python -P -m autograder` (README)."""
    if getattr(sys.flags, "safe_path", False) or not sys.path:
        return  # -P / PYTHONSAFEPATH (3.11+): nothing was put first
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the working folder was deleted: nothing there to import
        return
    if os.path.realpath(sys.path[0] or os.curdir) == here:
        del sys.path[0]  # only the entry `-m` put first: the venv's own entries stay, even for this folder


if __name__ == "__main__":
    _not_from_the_current_folder()
    sys.exit(main(sys.argv[1:]))
