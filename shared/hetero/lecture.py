"""The lecture's experiments: `python -m hetero.lecture 01|02|03|all [--impl ...] [--json] [--plots DIR]`.

01 hardware accounting (§1.2)           hetero.exp_hardware
02 Mooncake (§2.3, §2.4, §3.2)           hetero.kvcache, hetero.transfer, hetero.overload
03 KTransformers (§4.2-§4.5)             hetero.ktrans, hetero.moe

Each module exposes `PARTS` (see `hetero.parts`). Text mode prints each part's tables. `--json` prints
exactly one JSON object on stdout (progress goes to stderr): {"experiment": "02", "impl": ...,
"parts": [keys in order], "<key>": {figures}, ..., "missing": {"<key>": "exNN is not implemented yet ..."}};
with `all`, one object {"01": {...}, "02": {...}, "03": {...}}. `--impl` names where the exercise
functions come from (solutions, assignments, or a folder); a part whose exercise is still a stub is
reported as missing and the other parts still run. `--plots DIR` writes each part's PNGs into DIR.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

from hetero.impl import MissingExercise, resolve_impl_dir

EXPERIMENTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "01": ("Experiment 01: what each kind of hardware is good at (§1.2)", ("hetero.exp_hardware",)),
    "02": ("Experiment 02: Mooncake, KV cache pool, transfer engine, overload (§2.3, §2.4, §3.2)",
           ("hetero.kvcache", "hetero.transfer", "hetero.overload")),
    "03": ("Experiment 03: KTransformers, placement, decode, AMX, deferral (§4.2-§4.5)",
           ("hetero.ktrans", "hetero.moe")),
}


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_experiment(exp: str, impl: str, plots: Path | None = None) -> dict[str, Any]:
    """Run every part of one experiment; returns the JSON object described in the module docstring."""
    if exp not in EXPERIMENTS:
        raise KeyError(f"unknown experiment {exp!r}; choose one of {', '.join(EXPERIMENTS)} or all")
    impl_dir = str(resolve_impl_dir(impl))
    result: dict[str, Any] = {"experiment": exp, "impl": impl, "parts": [], "missing": {}}
    texts: list[str] = []
    for module_name in EXPERIMENTS[exp][1]:
        module = importlib.import_module(module_name)
        for part in module.PARTS:
            result["parts"].append(part.key)
            _log(f"[{exp}] {part.key}: {part.title} ...")
            start = time.perf_counter()
            try:
                figures = part.run(impl_dir)
            except MissingExercise as exc:
                result["missing"][part.key] = str(exc)
                texts.append(f"== {part.title} ({part.lecture})\n   skipped: {exc}\n")
                _log(f"[{exp}] {part.key}: skipped, {exc}")
                continue
            _log(f"[{exp}] {part.key}: done in {time.perf_counter() - start:.1f} s")
            result[part.key] = figures
            texts.append(f"== {part.title} ({part.lecture})\n{part.render(figures)}\n")
            if plots is not None and part.plot is not None:
                plots.mkdir(parents=True, exist_ok=True)
                for path in part.plot(figures, plots):
                    _log(f"[{exp}] {part.key}: wrote {path}")
    result["_text"] = "\n".join(texts)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hetero.lecture", description=__doc__.split("\n")[0])
    parser.add_argument("experiment", choices=[*EXPERIMENTS, "all"])
    parser.add_argument("--impl", default="solutions",
                        help="where exercise functions come from: solutions, assignments, or a folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object with every figure")
    parser.add_argument("--plots", type=Path, default=None, help="write PNG plots into this folder")
    args = parser.parse_args(argv)
    try:
        resolve_impl_dir(args.impl)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    exps = list(EXPERIMENTS) if args.experiment == "all" else [args.experiment]
    results = {exp: run_experiment(exp, args.impl, args.plots) for exp in exps}
    if args.json:
        clean = {exp: {k: v for k, v in r.items() if k != "_text"} for exp, r in results.items()}
        print(json.dumps(clean if args.experiment == "all" else clean[args.experiment], indent=1))
    else:
        for exp, r in results.items():
            print(f"\n#### {EXPERIMENTS[exp][0]}  [impl: {args.impl}]\n")
            print(r["_text"])
            for key, message in r["missing"].items():
                print(f"missing: part {key!r} needs an exercise you have not implemented yet: {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
