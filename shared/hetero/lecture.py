"""The lecture's experiments: `python -m hetero.lecture 01|02|03|all [--impl ...] [--json] [--plots DIR]`.

01 hardware accounting (§1.2)           hetero.exp_hardware
02 Mooncake (§2.3, §2.4, §3.2)           hetero.kvcache, hetero.transfer, hetero.overload
03 KTransformers (§4.2-§4.5)             hetero.ktrans, hetero.moe

Each module exposes `PARTS` (see `hetero.parts`). Text mode prints each part as: its title, the lecture's
figures beside this run's (`hetero.headlines`), the comparison with the answer key, then its tables. `--json` prints
exactly one JSON object on stdout (progress goes to stderr): {"experiment": "02", "impl": ...,
"parts": [keys in order], "<key>": {figures}, ..., "missing": {"<key>": "exNN missing: ..." | "exNN failed: ..."}}; `impl_dir` is the absolute folder used;
with `all`, one object {"01": {...}, "02": {...}, "03": {...}}. `--impl` names where the exercise
functions come from: `assignments` (the default: the `assignments/` folder found from the current
directory upward), `solutions`, or a folder; the absolute folder used is printed first (on stderr).
A part whose exercise is still a stub is reported as "exNN missing"; one whose exercise raises any
other exception (or does not import) is reported with the file:line and the exception; in both cases
only the parts needing that exercise are lost and the others still run. In text mode each part is
printed as soon as it finishes. `--plots DIR` writes the PNGs of every part that ran into DIR (each part
has at least one; a skipped part writes none).

Unless the exercise files are the answer key's (`--impl solutions`), each part's figures are compared
with the answer key's (`hetero.reference`: `reference_figures.json` beside the exercise files, else in
the `assignments/` folder found upward), at the part's tolerance (`hetero.reference`: 1e-6 relative for
the closed-form and seeded figures): text mode prints how many figures agree under each table and
"yours X, reference Y  <- differs from the reference: +7.4%" for every figure off it (`--details`: every
figure); `--json` adds "reference": {"<key>": {reference figures}}, "gaps": [{"part", "path", "yours",
"reference", "gap"}] and "not_compared": {"<key>": why} for figures of another trained model than the
reference's. Without a reference file the driver says so once (on stderr) and goes on.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hetero import headlines
from hetero import reference as ref
from hetero.impl import (
    ExerciseError,
    MissingExercise,
    add_impl_argument,
    find_named_folder,
    resolve_impl_dir,
    untrusted_impl,
)
from hetero.parts import Part

EXPERIMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "01": ("Experiment 01: what each kind of hardware is good at (§1.2)", ("hetero.exp_hardware",)),
    "02": (
        "Experiment 02: Mooncake, KV cache pool, transfer engine, overload (§2.3, §2.4, §3.2)",
        ("hetero.kvcache", "hetero.transfer", "hetero.overload"),
    ),
    "03": (
        "Experiment 03: KTransformers, placement, decode, AMX, deferral (§4.2-§4.5)",
        ("hetero.ktrans", "hetero.moe"),
    ),
}


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _unavailable(part: Part, exc: Exception) -> str:
    """One line saying which exercise a skipped part needs and why it could not run."""
    if isinstance(exc, ExerciseError):
        return str(exc)
    if isinstance(exc, MissingExercise):
        return f"{exc.ex_id} missing: {str(exc).replace(f'{exc.ex_id} is ', '', 1)}"
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
    needs = ", ".join(part.needs)
    return (
        f"{needs} gave a result this part could not use: {type(exc).__name__}{where}: {exc} "
        f"(check the types and units {needs} returns against its docstring)"
    )


def is_answer_key(impl_dir: Path) -> bool:
    """True when `impl_dir` is the `solutions/` folder found from the current directory upward."""
    solutions = find_named_folder("solutions")
    return solutions is not None and solutions.resolve() == impl_dir.resolve()


def _plot(exp: str, part: Part, figures: dict[str, Any], plots: Path) -> None:
    """Write the part's PNGs into `plots`; a figure a student's value cannot draw costs only that plot."""
    plots.mkdir(parents=True, exist_ok=True)
    try:
        paths = part.plot(figures, plots)
    except Exception as exc:  # values from an exercise this part needs; a part needing none is a bug
        if not part.needs:
            raise
        _log(f"[{exp}] {part.key}: no plot, {_unavailable(part, exc)}")
        return
    for path in paths:
        _log(f"[{exp}] {part.key}: wrote {path}")


def _compared(
    part: Part, figures: dict[str, Any], reference: dict[str, Any], result: dict[str, Any], details: bool
) -> str:
    """The comparison's text under the part's table; records it in `result` (reference, gaps, not_compared)."""
    result["reference"][part.key] = reference
    why = part.not_comparable(figures, reference) if part.not_comparable is not None else None
    if why:
        result["not_compared"][part.key] = why
        return f"   vs the reference (answer key): not compared: {why}\n"
    rows = ref.compare(figures, reference, rel_gap=part.rel_gap, abs_gap=part.abs_gap)
    result["gaps"] += [{"part": part.key, **r.as_json()} for r in rows if r.gap]
    return ref.render_rows(rows, part.rel_gap, part.abs_gap, details) + "\n"


def run_experiment(
    exp: str,
    impl: str,
    plots: Path | None = None,
    emit: Callable[[str], None] | None = None,
    reference: dict[str, Any] | None = None,
    details: bool = False,
) -> dict[str, Any]:
    """Run every part of one experiment; returns the JSON object described in the module docstring.

    `emit` receives each part's text as soon as that part finishes (text mode prints it at once).
    `reference` ({part key: figures}, this experiment's part of the reference file) adds the comparison;
    `details` lists every compared figure, not only those off the reference."""
    if exp not in EXPERIMENTS:
        raise KeyError(f"unknown experiment {exp!r}; choose one of {', '.join(EXPERIMENTS)} or all")
    impl_dir = str(resolve_impl_dir(impl))
    result: dict[str, Any] = {"experiment": exp, "impl": impl, "impl_dir": impl_dir, "parts": [], "missing": {}}
    if reference is not None:
        result["reference"], result["gaps"], result["not_compared"] = {}, [], {}
    texts: list[str] = []
    for module_name in EXPERIMENTS[exp][1]:
        module = importlib.import_module(module_name)
        for part in module.PARTS:
            result["parts"].append(part.key)
            _log(f"[{exp}] {part.key}: {part.title} ...")
            start = time.perf_counter()
            try:
                figures = part.run(impl_dir)
            except Exception as exc:  # a student's exercise broke this part only; a part needing none is a bug
                if not part.needs and not isinstance(exc, MissingExercise):
                    raise
                reason = _unavailable(part, exc)
                result["missing"][part.key] = reason
                texts.append(f"== {part.title} ({part.lecture})\n   skipped, {reason}\n")
                _log(f"[{exp}] {part.key}: skipped ({reason.split(':')[0]})")
            else:
                _log(f"[{exp}] {part.key}: done in {time.perf_counter() - start:.1f} s")
                result[part.key] = figures
                compared = ""
                if reference is not None and part.key in reference:
                    compared = _compared(part, figures, reference[part.key], result, details)
                lead = headlines.render(part.key, figures)
                lead = f"{lead}\n" if lead else ""
                texts.append(f"== {part.title} ({part.lecture})\n{lead}{compared}{part.render(figures)}\n")
                if plots is not None:  # every part that ran writes its figures
                    _plot(exp, part, figures, plots)
            if emit is not None:
                emit(texts[-1])
    result["_text"] = "\n".join(texts)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hetero.lecture", description=__doc__.split("\n")[0])
    parser.add_argument("experiment", choices=[*EXPERIMENTS, "all"])
    add_impl_argument(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object with every figure")
    parser.add_argument("--plots", type=Path, default=None, help="write PNG plots into this folder")
    parser.add_argument(
        "--details", action="store_true", help="list every figure compared with the reference, not only those off it"
    )
    args = parser.parse_args(argv)
    refused = untrusted_impl(args.impl, args.trust_impl) if hasattr(args, "impl") else None
    if refused:
        parser.error(refused)
    try:
        impl_dir = resolve_impl_dir(args.impl)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    _log(f"exercise files: {impl_dir}")
    exps = list(EXPERIMENTS) if args.experiment == "all" else [args.experiment]
    refs: dict[str, Any] = {}
    if not is_answer_key(impl_dir):
        found = ref.reference_path(impl_dir)
        if found is None:
            _log(
                f"no {ref.REFERENCE_FILE} beside the exercise files or in assignments/: figures shown without the reference"
            )
        else:
            _log(f"reference figures (answer key): {found}")
            refs = ref.load_reference(impl_dir) or {}
    if args.json:
        results = {exp: run_experiment(exp, args.impl, args.plots, reference=refs.get(exp)) for exp in exps}
        clean = {exp: {k: v for k, v in r.items() if k != "_text"} for exp, r in results.items()}
        print(json.dumps(clean if args.experiment == "all" else clean[args.experiment], indent=1))
        return 0
    for exp in exps:
        print(f"\n#### {EXPERIMENTS[exp][0]}  [exercise files: {impl_dir}]\n", flush=True)
        r = run_experiment(
            exp,
            args.impl,
            args.plots,
            emit=lambda text: print(text, flush=True),
            reference=refs.get(exp),
            details=args.details,
        )
        for key, reason in r["missing"].items():
            print(f"skipped part {key!r}: {reason.split(':')[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
