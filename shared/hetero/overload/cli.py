"""Scheduling under overload in a disaggregated cluster (lecture §3, Mooncake §7; experiment 02 part 3).

The command line (the first line above is its description):
    python -m hetero.overload [--seeds 5] [--json] [--plots DIR] [--impl solutions]
    python -m hetero.overload --lag-sweep [--seeds 3] [--json]
    python -m hetero.overload --trace TRACE.jsonl --speedup 2 --prefill-instances 8 \\
        --decode-instances 8 --policy all --json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from hetero.impl import MissingExercise, add_impl_argument, exercise_function, resolve_impl_dir
from hetero.overload.config import POLICIES, Policy
from hetero.overload.experiment import LAG_SWEEP_SEEDS, SEEDS, exercise_functions, experiment, lag_sweep
from hetero.overload.report import plot, plot_lag, render, render_lag, render_trace
from hetero.overload.trace import TraceCostModel, replay_trace
from hetero.traces import TraceError, read_trace

CLI_POLICIES = ("all", "baseline", "early", "predictive", "oversubscribed")


def cli_policies(choice: str, oversubscription: float) -> list[Policy]:
    """The policies `--policy choice` runs; "all" is baseline, early, predictive and predictive x`oversubscription`."""
    over = Policy(f"predictive x{oversubscription:g}", "predictive", oversubscription)
    table = {"baseline": [POLICIES[0]], "early": [POLICIES[1]], "predictive": [POLICIES[2]], "oversubscribed": [over]}
    return [*POLICIES[:3], over] if choice == "all" else table[choice]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hetero.overload", description=__doc__.split("\n")[0])
    add_impl_argument(parser, "ex05")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plots", type=Path, default=None, help="simulation mode: write PNGs into this folder")
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help=f"simulation mode: number of seeds (>= 2; default {len(SEEDS)}, lag sweep {len(LAG_SWEEP_SEEDS)})",
    )
    parser.add_argument(
        "--lag-sweep",
        action="store_true",
        help="simulation mode: early vs predictive rejection as the admission-to-decode lag grows",
    )
    parser.add_argument("--trace", type=Path, default=None, help="replay this Mooncake-format JSONL trace")
    parser.add_argument("--speedup", type=float, default=2.0, help="trace mode: replay speed factor (> 0)")
    parser.add_argument("--prefill-instances", type=int, default=8)
    parser.add_argument("--decode-instances", type=int, default=8)
    parser.add_argument(
        "--decode-slots",
        type=int,
        default=None,
        help="trace mode: at most this many requests per decode instance (default: what its KV memory holds)",
    )
    parser.add_argument(
        "--tbt-slo-s", type=float, default=TraceCostModel.tbt_slo_s, help="trace mode: TBT SLO, s per token"
    )
    parser.add_argument("--ttft-slo-s", type=float, default=TraceCostModel.ttft_slo_s)
    parser.add_argument("--policy", default="all", help=f"one of {', '.join(CLI_POLICIES)}")
    parser.add_argument("--oversubscription", type=float, default=1.1, help="threshold factor of 'oversubscribed'")
    args = parser.parse_args(argv)
    if args.policy not in CLI_POLICIES:
        parser.error(f"--policy: unknown policy {args.policy!r}; choose one of {', '.join(CLI_POLICIES)}")
    for flag, value in (
        ("--speedup", args.speedup),
        ("--tbt-slo-s", args.tbt_slo_s),
        ("--ttft-slo-s", args.ttft_slo_s),
    ):
        if not (math.isfinite(value) and value > 0):
            parser.error(f"{flag} must be > 0, got {value:g}")
    for flag, value in (
        ("--prefill-instances", args.prefill_instances),
        ("--decode-instances", args.decode_instances),
        ("--decode-slots", 1 if args.decode_slots is None else args.decode_slots),
    ):
        if value < 1:
            parser.error(f"{flag} must be >= 1, got {value}")
    if not (math.isfinite(args.oversubscription) and args.oversubscription >= 1):
        parser.error(f"--oversubscription must be >= 1, got {args.oversubscription:g}")
    if args.trace is None:
        print(f"exercise files: {resolve_impl_dir(args.impl)}", file=sys.stderr)
        if args.seeds is not None and args.seeds < 2:
            parser.error(f"--seeds must be >= 2 (a spread needs two runs), got {args.seeds}")
        if args.lag_sweep:
            seeds = LAG_SWEEP_SEEDS if args.seeds is None else tuple(range(args.seeds))
            figures = lag_sweep(*exercise_functions(args.impl), seeds=seeds)
            plotter, renderer = plot_lag, render_lag
        else:
            seeds = SEEDS if args.seeds is None else tuple(range(args.seeds))
            figures = experiment(
                *exercise_functions(args.impl),
                exercise_function("ex05", "antiphase_correlation", args.impl),
                exercise_function("ex05", "dominant_period_s", args.impl),
                seeds=seeds,
            )
            plotter, renderer = plot, render
        if args.plots is not None:
            args.plots.mkdir(parents=True, exist_ok=True)
            for path in plotter(figures, args.plots):
                print(f"wrote {path}", file=sys.stderr)
        print(json.dumps(figures, indent=1) if args.json else renderer(figures))
        return 0
    try:
        requests = read_trace(args.trace)
    except (TraceError, OSError) as exc:
        parser.error(f"--trace: {exc}")
    if not requests:
        parser.error(f"--trace: {args.trace} holds no requests")
    policies = cli_policies(args.policy, args.oversubscription)
    needs_ex05 = any(p.kind == "predictive" for p in policies)
    if needs_ex05:
        print(f"exercise files: {resolve_impl_dir(args.impl)}", file=sys.stderr)
    predict, admit = exercise_functions(args.impl) if needs_ex05 else (None, None)
    cost = TraceCostModel(
        decode_requests_per_instance=args.decode_slots, tbt_slo_s=args.tbt_slo_s, ttft_slo_s=args.ttft_slo_s
    )
    out = replay_trace(
        requests, args.speedup, args.prefill_instances, args.decode_instances, policies, predict, admit, cost
    )
    print(json.dumps(out, indent=1) if args.json else render_trace(out))
    return 0


def main_or_missing(argv: list[str] | None = None) -> int:
    try:
        return main(argv)
    except MissingExercise as exc:
        print(f"python -m hetero.overload: {exc}", file=sys.stderr)
        return 1
