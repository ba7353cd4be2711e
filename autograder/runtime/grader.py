"""`python -m autograder grade SUBMISSION --out results.json`: grade one submission in sandboxed children.

SUBMISSION is a folder or a zip. The exercise files (names from `autograder.core.manifest`) are found by
name anywhere inside it by `autograder.runtime.intake` (near-miss names accepted with a note, hidden folders,
`__MACOSX` and symlinks ignored, the shallowest of several copies graded, caps on extracted bytes,
entries and depth; a damaged zip member or notebook costs only its exercise). A missing file scores 0
for its exercise; the others are graded normally. A notebook `exNN_<name>.ipynb` stands in for a
missing `.py` through `autograder.runtime.notebook_code.extract_code`.

This process never imports student code: the cases run in child processes
(`autograder.runtime.sandbox.runner.run_exercise`) in two phases: first the public cases of every exercise, then the
hidden cases of every exercise in fresh children (`run_public`, `run_hidden`), so nothing shown from
a public phase (printed output, returned values, messages) can depend on any hidden input, through
the children or through state the machine shares. The children send back encoded outcomes, judged here
with `hetero.checks.judge` against the public cases' literal values and the stored answer-key values
(`autograder/expected/exNN.json`). results.json (`autograder.runtime.results`) is always written and valid:
when student code crashes, hangs, exits, forks or floods its output, and when the grader fails.

The two phases can also run in two processes: `--phase public --state DIR` reads the submission,
runs every exercise's public phase and seals what it produced in DIR (grader-only storage, nothing
hidden in it: `autograder.runtime.phases`); `--phase hidden --state DIR --out results.json` checks the seal,
runs the hidden phases in fresh children with the time, CPU and functions the public phase left, and
writes results.json from the sealed public reports and its own. grade-all runs the public phase of
every submission of a batch before any hidden phase (`autograder.batch.bulk`), so that no student's visible
output can depend on a hidden input through state that the graders running side by side share.
Without --phase both run here, one after the other (Gradescope grades one submission per container).

Python API: `grade_submission(submission, out=None) -> dict` (the results.json content);
`grade_public_phase(submission, state) -> seal` and `grade_hidden_phase(state, out=None, seal=...) -> dict`.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from autograder.core import safetext, scoring
from autograder.core.cases import hidden_cases, public_cases, stored
from autograder.core.manifest import BY_ID, EXERCISES, ROOT, Exercise
from autograder.runtime import intake, phases
from autograder.runtime import results as res
from autograder.runtime.feedback import (
    call_text,
    hidden_message,
    judge_case,
    no_result_reason,
    outcome_text,
    process_note,
    short_repr,
    shown_hints,
    stop_words,
)
from autograder.runtime.intake import MAX_FILE_BYTES, Found  # noqa: F401  (part of the grader's API)
from autograder.runtime.sandbox import ladder, runner
from autograder.runtime.sandbox.limits import ChildReport, Limits
from hetero.checks import Case, Outcome, Verdict, decode, encode


class ConfigError(RuntimeError):
    """The grader's own data (cases, expected values) is missing or inconsistent."""


def locate(
    submission: Path, exercises: Sequence[Exercise], staging: Path, *, follow_link: bool = True
) -> tuple[dict[str, Found], list[str]]:
    """Exercise id -> Found, and notes about the submission as a whole (rules in autograder.runtime.intake;
    `follow_link=False` in a batch: a submission that is itself a link is not read)."""
    return intake.locate(submission, exercises, staging, follow_link=follow_link)


_join = intake.join


def call_spec(case: Case) -> dict[str, Any]:
    """What the child is told about a case: never `expect`, `raises`, `hint` or tolerances."""
    return {
        "id": case.id,
        "func": case.func,
        "args": encode(tuple(case.args)),
        "kwargs": encode(dict(case.kwargs)),
        "harness": case.harness,
    }


def limits_for(ex: Exercise, time_scale: float = 1.0) -> Limits:
    return Limits(
        timeout_s=ex.timeout_s * time_scale,
        cpu_s=ex.cpu_s * time_scale,
        memory_mib=ex.memory_mib,
        case_timeout_s=ex.case_timeout_s * time_scale,
    )


def _cases(ex: Exercise, root: Path) -> tuple[list[Case], list[Case], dict[str, Any]]:
    """The exercise's public and hidden cases and its stored data, checked for consistency."""
    public = public_cases(ex.id, root)
    data = stored(ex.id, root)
    hidden = hidden_cases(ex.id, root)
    entries = data["cases"]
    missing = [c.id for c in public + hidden if c.id not in entries or "class" not in entries[c.id]]
    if missing:
        raise ConfigError(f"{ex.id}: no stored expected value for {missing} (run `python -m autograder expected`)")
    if not public or not hidden:
        raise ConfigError(f"{ex.id}: needs public and hidden cases, has {len(public)} and {len(hidden)}")
    return public, hidden, data


def public_specs(ex: Exercise, root: Path = ROOT) -> list[dict[str, Any]]:
    """The call specs of the exercise's public cases, what its public phase sends the child (the cases
    are checked against the stored data first: `_cases`)."""
    public, _, _ = _cases(ex, root)
    return [call_spec(c) for c in public]


def specs_digest(specs: Sequence[dict[str, Any]]) -> str:
    """sha256 of call specs as canonical JSON: the public phase seals it, the hidden phase compares."""
    return hashlib.sha256(json.dumps(list(specs), sort_keys=True).encode("ascii")).hexdigest()


def write_public_specs(path: Path, exercises: Iterable[str] | None = None, root: Path = ROOT) -> None:
    """Write every selected exercise's `public_specs` to `path` (JSON, mode 0600), for `--public-specs`:
    grade-all computes them once per batch, so that no public-phase process loads the case files (ex10's
    import torch: 1.5 s of CPU per process)."""
    data = {"format": 1, "specs": {ex.id: public_specs(ex, root) for ex in _selected(exercises)}}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        json.dump(data, fh)


def read_public_specs(path: Path) -> dict[str, list[dict[str, Any]]]:
    """The specs `write_public_specs` wrote: {exercise id: call specs}."""
    data = json.loads(Path(path).read_text(encoding="ascii"))
    if data.get("format") != 1 or not isinstance(data.get("specs"), dict):
        raise ConfigError(f"{path} does not hold public call specs")
    return {str(k): list(v) for k, v in data["specs"].items()}


def run_public(
    ex: Exercise,
    found: Found | None,
    root: Path = ROOT,
    time_scale: float = 1.0,
    specs: Sequence[dict[str, Any]] | None = None,
) -> ChildReport | None:
    """Phase 1 of an exercise: its public cases alone, in children that are sent no hidden input, so all
    they print, return and raise may be shown. None when there is no file to run. `specs`: the public
    cases' call specs when already computed (`public_specs`)."""
    specs = public_specs(ex, root) if specs is None else list(specs)
    if found is None or found.path is None:
        return None
    return runner.run_exercise(found.path, ex.module, list(specs), len(specs), limits_for(ex, time_scale))


def run_hidden(
    ex: Exercise, found: Found, public_report: ChildReport, root: Path = ROOT, time_scale: float = 1.0
) -> ChildReport:
    """Phase 2: the hidden cases, in fresh children, with the time and CPU the public phase left, skipping
    the functions it stopped at the per-case limit; merged with the public phase's report."""
    public, hidden, _ = _cases(ex, root)
    assert found.path is not None
    limits = limits_for(ex, time_scale)
    left_s, cpu_left_s = limits.timeout_s - public_report.wall_s, limits.cpu_s - public_report.cpu_s
    report = ChildReport()
    if public_report.imported is not True:
        pass  # the import error (or the stop during import) is the public phase's, and it is shown
    elif left_s <= 0 or cpu_left_s <= 0:
        report.refused = {c.id: "not run: the exercise's time limit was spent on its public cases" for c in hidden}
    else:
        stopped = {c.func for c in public if c.id in public_report.stopped_cases}
        report = runner.run_exercise(
            found.path,
            ex.module,
            [call_spec(c) for c in hidden],
            0,
            dataclasses.replace(
                limits,
                timeout_s=left_s,
                cpu_s=cpu_left_s,
                result_bytes=max(0, limits.result_bytes - public_report.result_bytes),  # one allowance per exercise
            ),
            frozenset(stopped),
        )
        if report.imported is not True:  # its error may depend on hidden inputs of earlier exercises
            report.refused = {
                c.id: "your file did not import again for the hidden cases (that error is not shown)"
                for c in hidden
                if c.id not in report.refused
            }
    return _merged(public_report, report)


def _merged(first: ChildReport, second: ChildReport) -> ChildReport:
    """One report of both phases: the public phase's import, output and stop (if it stopped) come first."""
    stop = first if first.ended != "finished" else second
    return ChildReport(
        imported=first.imported,
        import_error=first.import_error,
        outcomes={**second.outcomes, **first.outcomes},  # the public phase's own, never replaced by the second
        refused={**second.refused, **first.refused},
        ended=stop.ended,
        detail=stop.detail,
        returncode=stop.returncode,
        wall_s=first.wall_s + second.wall_s,
        cpu_s=first.cpu_s + second.cpu_s,
        bad_records=first.bad_records + second.bad_records,
        result_bytes=first.result_bytes + second.result_bytes,
        output_public=first.output_public,
        output_all=first.output_all + second.output_all,
        output_bytes=first.output_bytes + second.output_bytes,
        survivors_killed=first.survivors_killed + second.survivors_killed,
        stopped_cases=first.stopped_cases + second.stopped_cases,
        isolation=first.isolation or second.isolation,
    )


def grade_exercise(
    ex: Exercise,
    found: Found | None,
    root: Path = ROOT,
    time_scale: float = 1.0,
    public_report: ChildReport | None = None,
) -> res.ExerciseResult:
    """Grade one exercise. `public_report`: its public phase (`run_public`), run now if not given."""
    public, hidden, data = _cases(ex, root)
    entries = data["cases"]
    report = None
    if found is not None and found.path is not None:
        if public_report is None:
            public_report = run_public(ex, found, root, time_scale)
        assert public_report is not None
        report = run_hidden(ex, found, public_report, root, time_scale)
    outcomes = report.outcomes if report is not None else {}
    judged: dict[str, tuple[Verdict, Outcome | None, str]] = {}
    hidden_ids = {c.id for c in hidden}
    during_hidden = report is not None and all(c.id in outcomes or c.id in report.refused for c in public)
    required = {c.raises for c in public + hidden if c.raises}
    hints = shown_hints(public + hidden)
    for case in public + hidden:
        entry = entries[case.id]
        outcome = outcomes.get(case.id)
        reason = "" if outcome is not None else no_result_reason(found, ex, report, case.id, during_hidden)
        expect = entry.get("expect") if case.id in hidden_ids else None
        if outcome is None:
            verdict = Verdict(False, f"{case.func}: {case.id}: {reason}.")
        else:
            verdict = judge_case(case, outcome, expect, entry.get("mistakes"))
        judged[case.id] = (verdict, outcome, reason)
    passed_map = {cid: j[0].passed for cid, j in judged.items()}
    pay = scoring.payment(ex.points, ex.public_share, public, hidden, data, passed_map)
    cents, pays = pay.shares, pay.pays
    cases = []
    tolerances: set[tuple[str, str]] = set()  # a function's tolerance is stated once (feedback.tolerance_text)
    for case in public + hidden:
        verdict, outcome, reason = judged[case.id]
        passed, message = verdict.passed, verdict.message
        is_hidden = case.id in hidden_ids
        gate = "" if pays[case.id] or not passed else f" {scoring.UNPAID_NOTE}"
        if not is_hidden:
            cases.append(
                res.CaseResult(
                    case.id,
                    case.func,
                    False,
                    cents[case.id],
                    passed,
                    pays[case.id],
                    message + gate,
                    group=scoring.group_key(case),
                )
            )
            continue
        expect = entries[case.id].get("expect")
        expected_text = (
            f"raises {case.raises}"
            if case.raises
            else short_repr(decode(expect)) + (f" {case.unit}" if case.unit else "")
        )
        detail = (
            f"[{'passed' if passed else 'FAILED'}] {case.id}\n  call:     {call_text(case)}\n"
            f"  expected: {expected_text}\n  got:      {outcome_text(outcome, reason)}\n  verdict:  {message}"
        )
        cases.append(
            res.CaseResult(
                case.id,
                case.func,
                True,
                cents[case.id],
                passed,
                pays[case.id],
                hidden_message(
                    case, passed, verdict.known_mistake, outcome, reason, expect, required, hints[case.id], tolerances
                )
                + gate,
                detail,
                group=scoring.group_key(case),
            )
        )
    note = _exercise_note(ex, found, report, during_hidden)
    import_error = report.import_error if report is not None and report.imported is False else ""
    return res.ExerciseResult(
        ex,
        cases,
        note,
        report.output_public if report else "",
        report.output_all if report else "",
        report.wall_s if report else 0.0,
        import_error=import_error,
        isolation=tuple(report.isolation) if report is not None else (),
    )


def _exercise_note(ex: Exercise, found: Found | None, report: ChildReport | None, during_hidden: bool = False) -> str:
    if found is None:
        return f"{ex.filename} was not found in your submission: 0 points for {ex.id}."
    parts = [found.note]
    if report is not None:
        if report.imported is False:
            parts.append(f"{found.shown} could not be imported (see the first test of {ex.id}).")
        if "[Errno 27]" in report.import_error or any(
            "[Errno 27]" in o.error_message for o in report.outcomes.values()
        ):
            parts.append(
                f"Your code hit the output limit: printed output and files are capped at "
                f"{Limits.output_bytes // 2**20} MiB."
            )
        elif report.ended != "finished":
            parts.append(f"Stopped: {stop_words(report, during_hidden)}; cases without a result score 0.")
        if report.stopped_cases:
            parts.append(
                "Cases ran longer than the per-case time limit and were stopped; the later cases of the "
                "same function were not run, the others ran in a fresh process."
            )
        parts.append(process_note(report))
        if report.bad_records:
            parts.append("Lines written to the grader's result channel by your code were ignored.")
        parts += [f"Sandbox: {note}." for note in report.isolation if "not isolated" in note]
    return _join(*parts)


def refusal(submission: Path | None = None, in_a_class: bool = False) -> str:
    """ "" when student code can be isolated here (`ladder.current`), else why grading is refused: the
    grader then writes a results.json that says so (for the staff) and runs no student code. `submission`:
    refused too where other users, a student's code among them, could reach it (`ladder.exposed`); and with
    `in_a_class` (a batch's grader, whose submission lies in the class folder, on this or another machine of a
    cluster) where they could reach the folder holding it, the other students' submissions, and where the
    submission is itself a symbolic link (an entry swapped for a link after the batch listed the class folder
    would have a student graded on whatever it points to)."""
    if submission is not None and in_a_class and os.path.islink(submission):
        return (
            f"grading refused: the submission {safetext.one_line(Path(submission).name)!r} is a symbolic link in "
            "the class folder; a batch grades only the folders and zips themselves"
        )
    try:
        ladder.current()
    except ladder.Refused as exc:
        return f"grading refused: {exc}"
    why = ""
    if submission is not None:
        why = ladder.exposed(submission, "the submission")
        if not why and in_a_class:
            why = ladder.exposed(Path(os.path.realpath(submission)).parent, "the class folder")
    return f"grading refused: {why}" if why else ""


def _selected(exercises: Iterable[str] | None) -> list[Exercise]:
    return [BY_ID[e] for e in exercises] if exercises is not None else list(EXERCISES)


def _public_phases(
    selected: Sequence[Exercise],
    found: dict[str, Found],
    root: Path,
    time_scale: float,
    specs: dict[str, list[dict[str, Any]]] | None = None,
    digests: dict[str, str] | None = None,
) -> dict[str, ChildReport | None | str]:
    """Every exercise's public phase (`run_public`), before any hidden case: what a public phase prints,
    returns or raises is shown, and state the machine shares (the page cache of the venv's files, for
    one) could carry a hidden input from an earlier exercise's children into a later one's. A grader
    error costs only its exercise (its traceback takes the report's place). `specs`: call specs already
    computed, by exercise; `digests` receives the `specs_digest` of those each exercise ran."""
    phase1: dict[str, ChildReport | None | str] = {}
    for ex in selected:
        try:
            mine = specs[ex.id] if specs is not None and ex.id in specs else public_specs(ex, root)
            if digests is not None:
                digests[ex.id] = specs_digest(mine)
            phase1[ex.id] = run_public(ex, found.get(ex.id), root, time_scale, mine)
        except Exception:
            phase1[ex.id] = traceback.format_exc()
    return phase1


def _hidden_phases(
    selected: Sequence[Exercise],
    found: dict[str, Found],
    phase1: dict[str, ChildReport | None | str],
    root: Path,
    time_scale: float,
) -> list[res.ExerciseResult]:
    """Every exercise's hidden phase (`grade_exercise` with its public report), in order."""
    graded = []
    for ex in selected:
        first = phase1[ex.id]
        if isinstance(first, str):
            graded.append(res.ExerciseResult(ex, failure=first))
            continue
        try:
            graded.append(grade_exercise(ex, found.get(ex.id), root, time_scale, first))
        except Exception:
            graded.append(res.ExerciseResult(ex, failure=traceback.format_exc()))
    return graded


def _finish(data: dict[str, Any], out: Path | None) -> dict[str, Any]:
    data = safetext.clean_data(data)  # what is returned is what results.json holds
    if out is not None:
        res.write(data, Path(out))
    return data


def grade_submission(
    submission: Path,
    out: Path | None = None,
    *,
    exercises: Iterable[str] | None = None,
    root: Path = ROOT,
    time_scale: float = 1.0,
    in_a_class: bool = False,
) -> dict[str, Any]:
    """Grade `submission` (folder or zip); write results.json to `out` if given; return its content.

    Both phases in this process, one after the other (`grade_public_phase` and `grade_hidden_phase`
    split them across processes). exercises: ids to grade (default: every exercise of the manifest); root: where the cases
    and expected values live (default: this package); time_scale multiplies the manifest's time limits;
    in_a_class: a batch's grader (`grade --in-class`), whose submission is an entry of a class folder: refused
    as `refusal` says with in_a_class, and never read through a link.
    """
    start = time.monotonic()
    selected = _selected(exercises)
    max_score = sum(ex.points for ex in selected)
    refused = refusal(Path(submission), in_a_class=in_a_class)
    if refused:
        return _finish(res.grader_failure(refused, max_score, time.monotonic() - start), out)
    try:
        staging = Path(tempfile.mkdtemp(prefix="a2submission-"))
        try:
            found, notes = locate(Path(submission), selected, staging, follow_link=not in_a_class)
            phase1 = _public_phases(selected, found, root, time_scale)
            graded = _hidden_phases(selected, found, phase1, root, time_scale)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        data = res.assemble(graded, time.monotonic() - start, notes)
        res.validate(data)
    except Exception:
        data = res.grader_failure(traceback.format_exc(), max_score, time.monotonic() - start)
    return _finish(data, out)


def grade_public_phase(
    submission: Path,
    state: Path,
    *,
    exercises: Iterable[str] | None = None,
    root: Path = ROOT,
    time_scale: float = 1.0,
    specs: dict[str, list[dict[str, Any]]] | None = None,
) -> str:
    """Phase 1 alone: read `submission`, run every exercise's public phase, and seal the result in `state`
    (a new or empty folder, made mode 0700: `autograder.runtime.phases`); return the seal (hex sha256).

    Nothing hidden is sent to a child or written to `state`. A failure of the grader is sealed too (the
    hidden phase then writes the grader-failure results), so a state is always written unless the
    folder itself cannot be. `specs`: the public cases' call specs by exercise (`read_public_specs`),
    else computed here; the digest of those each exercise ran is sealed, and the hidden phase grades
    an exercise only if its own public cases have the same.
    """
    start = time.monotonic()
    selected = _selected(exercises)
    files = phases.prepare(Path(state))
    found: dict[str, Found] = {}
    notes: list[str] = []
    reports: dict[str, ChildReport | None | str] = {}
    digests: dict[str, str] = {}
    failure = refusal(Path(submission), in_a_class=True)
    try:
        if not failure:
            found, notes = locate(Path(submission), selected, files, follow_link=False)
            reports = _public_phases(selected, found, root, time_scale, specs, digests)
    except Exception:
        failure = traceback.format_exc()
    public = phases.PublicState(
        submission=safetext.clean_text(str(submission)),
        exercises=[ex.id for ex in selected],
        time_scale=time_scale,
        elapsed_s=time.monotonic() - start,
        notes=list(notes),
        found=found,
        reports=reports,
        spec_digests=digests,
        failure=failure,
    )
    return phases.write(Path(state), public)


def _same_public_cases(ex: Exercise, root: Path, digests: dict[str, str]) -> bool:
    try:
        return digests.get(ex.id) == specs_digest(public_specs(ex, root))
    except Exception:  # the cases cannot be read: the exercise fails in grade_exercise, with its traceback
        return True


def grade_hidden_phase(
    state: Path,
    out: Path | None = None,
    *,
    seal: str | None = None,
    submission: Path | None = None,
    root: Path = ROOT,
) -> dict[str, Any]:
    """Phase 2 alone: the hidden phases of the public phase sealed in `state`, then results.json (written
    to `out` if given, returned).

    `seal`: the seal the public phase ended with (default: the one in `state`); a state that no longer
    matches it is the grader's failure, never graded. The hidden cases run in fresh children with the
    time and CPU each public phase left, on the files located by the public phase (`run_hidden`); the
    sealed reports are used as they are. `state` is only read. `submission`, when given, must be the one
    the public phase read (a check: it is not read again).
    """
    start = time.monotonic()
    refused = refusal()
    if refused:
        return _finish(res.grader_failure(refused, 0.0, time.monotonic() - start), out)
    try:
        public = phases.read(Path(state), seal)
        if submission is not None and safetext.clean_text(str(submission)) != public.submission:
            raise phases.SealError(f"{state} holds the public phase of {public.submission!r}, not of {submission}")
    except Exception:
        return _finish(res.grader_failure(traceback.format_exc(), 0.0, time.monotonic() - start), out)
    selected = _selected(public.exercises)
    max_score = sum(ex.points for ex in selected)
    try:
        if public.failure:
            raise RuntimeError(f"the public phase failed:\n{public.failure}")
        missing = [ex.id for ex in selected if ex.id not in public.reports]
        if missing:
            raise phases.SealError(f"the sealed state has no public phase for {missing}")
        reports = dict(public.reports)
        for ex in selected:
            if not isinstance(reports[ex.id], str) and not _same_public_cases(ex, root, public.spec_digests):
                reports[ex.id] = f"ConfigError: the public cases of {ex.id} are not the ones its public phase ran"
        graded = _hidden_phases(selected, public.found, reports, root, public.time_scale)
        data = res.assemble(graded, public.elapsed_s + time.monotonic() - start, public.notes)
        res.validate(data)
    except Exception:
        data = res.grader_failure(traceback.format_exc(), max_score, public.elapsed_s + time.monotonic() - start)
    return _finish(data, out)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder grade", description=__doc__.splitlines()[0])
    parser.add_argument("submission", type=Path, help="a folder or a zip holding the exercise files")
    parser.add_argument("--out", type=Path, default=None, help="where to write results.json (default results.json)")
    parser.add_argument("--exercises", nargs="+", choices=list(BY_ID), help="grade only these exercises")
    parser.add_argument("--time-scale", type=float, default=None, help="multiply the manifest's time limits")
    parser.add_argument(
        "--phase",
        choices=["public", "hidden"],
        help="run one phase in this process: public (reads the submission, seals every exercise's public "
        "phase in --state, writes no results) or hidden (the hidden phases of the state sealed there, then "
        "--out); without it, both",
    )
    parser.add_argument("--state", type=Path, help="with --phase: the public phase's sealed state (grader-only folder)")
    parser.add_argument("--in-class", action="store_true", help="a batch's grader: refused on a link or exposed class")
    parser.add_argument(
        "--public-specs",
        type=Path,
        help="with --phase public: the public call specs (write_public_specs), not computed",
    )
    parser.add_argument(
        "--seal", help="with --phase hidden: the seal the public phase ended with (default: the state's)"
    )
    parser.add_argument(
        "--unsafe-no-sandbox",
        action="store_true",
        help="where no isolation layer works, run the submission's code anyway with this user's rights "
        "(only for files you trust: the grader refuses otherwise)",
    )
    args = parser.parse_args(list(argv))
    ladder.allow_unsafe(args.unsafe_no_sandbox)
    if args.phase is not None and args.state is None:
        parser.error("--phase needs --state")
    if args.phase != "hidden" and args.seal is not None:
        parser.error("--seal goes with --phase hidden")
    if args.phase != "public" and args.public_specs is not None:
        parser.error("--public-specs goes with --phase public")
    if args.phase == "public":
        if args.out is not None:
            parser.error("--phase public writes no results: --out goes with the hidden phase")
        seal = grade_public_phase(
            args.submission,
            args.state,
            exercises=args.exercises,
            time_scale=1.0 if args.time_scale is None else args.time_scale,
            specs=None if args.public_specs is None else read_public_specs(args.public_specs),
        )
        print(f"public phase sealed in {args.state}: {seal}")
        refused = refusal(args.submission, in_a_class=True)
        if refused:
            print(refused, file=sys.stderr)
            return 2
        return 0
    out = Path("results.json") if args.out is None else args.out
    if args.phase == "hidden":
        if args.exercises is not None or args.time_scale is not None:
            parser.error("--phase hidden grades the exercises and time scale of its public phase")
        data = grade_hidden_phase(args.state, out, seal=args.seal, submission=args.submission)
    else:
        time_scale = 1.0 if args.time_scale is None else args.time_scale
        data = grade_submission(
            args.submission, out, exercises=args.exercises, time_scale=time_scale, in_a_class=args.in_class
        )
    print(safetext.terminal_text(data["output"], lines=True))
    print(f"\nwrote {out}")
    refused = refusal(args.submission if args.phase is None else None, in_a_class=args.in_class)
    if refused:
        print(refused, file=sys.stderr)
        return 2
    return 0
