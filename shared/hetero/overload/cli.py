"""Scheduling under overload in a disaggregated cluster (lecture §3, Mooncake §7; experiment 02 part 3).

The command line (the first line above is its description):
    python -m hetero.overload [--seeds 5] [--json] [--plots DIR] [--impl solutions]
    python -m hetero.overload --lag-sweep [--seeds 3] [--json]
    python -m hetero.overload --trace TRACE.jsonl --speedup 2 --prefill-instances 8 \\
        --decode-instances 8 --policy all [--decode-slots N] [--decode-kv-tokens N] [--tbt-slo-s S] \\
        [--no-prefix-reuse] [--json]
    python -m hetero.overload --trace TRACE.jsonl --sweep [--sweep-caps none,32,16,8,4,2] \\
        [--sweep-tbt-slos 0.1,0.05,0.03,0.02,0.015] [--plots DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from hetero.impl import MissingExercise, add_impl_argument, exercise_function, resolve_impl_dir, untrusted_impl
from hetero.overload.config import POLICIES, Policy
from hetero.overload.experiment import LAG_SWEEP_SEEDS, SEEDS, exercise_functions, experiment, lag_sweep
from hetero.overload.report import plot, plot_lag, plot_sweep, render, render_lag, render_sweep, render_trace
from hetero.overload.trace import SWEEP_CAPS, SWEEP_TBT_SLOS_S, TraceCostModel, replay_trace, sweep
from hetero.traces import TraceError, TraceRequest, read_trace

CLI_POLICIES = ("all", "baseline", "early", "predictive", "oversubscribed")


def _caps(text: str) -> list[int | None]:
    out: list[int | None] = []
    for item in text.split(","):
        item = item.strip()
        if item == "none":
            out.append(None)
            continue
        value = int(item)
        if value < 1:
            raise ValueError(f"a batch cap must be >= 1 or 'none', got {value}")
        out.append(value)
    return out


def _slos(text: str) -> list[float]:
    out = [float(x) for x in text.split(",")]
    if any(not (math.isfinite(x) and x > 0) for x in out):
        raise ValueError(f"TBT SLOs must be > 0, got {text}")
    return out


def cli_policies(choice: str, oversubscription: float) -> list[Policy]:
    """The policies `--policy choice` runs; "all" is baseline, early, predictive and predictive x`oversubscription`."""
    over = Policy(f"predictive x{oversubscription:g}", "predictive", oversubscription)
    table = {"baseline": [POLICIES[0]], "early": [POLICIES[1]], "predictive": [POLICIES[2]], "oversubscribed": [over]}
    return [*POLICIES[:3], over] if choice == "all" else table[choice]


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    _check(parser, args)
    if args.trace is None:
        return _simulation_mode(parser, args)
    try:
        requests = read_trace(args.trace)
    except (TraceError, OSError) as exc:
        parser.error(f"--trace: {exc}")
    if not requests:
        parser.error(f"--trace: {args.trace} holds no requests")
    cost = TraceCostModel(
        decode_requests_per_instance=args.decode_slots,
        decode_kv_tokens_per_instance=args.decode_kv_tokens,
        tbt_slo_s=args.tbt_slo_s,
        ttft_slo_s=args.ttft_slo_s,
        prefix_reuse=not args.no_prefix_reuse,
    )
    if args.sweep:
        return _sweep_mode(parser, args, requests, cost)
    return _replay_mode(parser, args, requests, cost)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hetero.overload", description=__doc__.split("\n")[0])
    add_impl_argument(parser, "ex05")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--plots",
        type=Path,
        default=None,
        help="write PNGs into this folder (simulation mode; trace mode with --sweep)",
    )
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
        help="trace mode: the engine's batch cap, requests per decode instance (default: none; HBM and TBT SLO limit it)",
    )
    parser.add_argument(
        "--decode-kv-tokens",
        type=int,
        default=None,
        help="trace mode: KV tokens one decode instance holds (default: its HBM after the weights, 1,370,249)",
    )
    parser.add_argument(
        "--no-prefix-reuse",
        action="store_true",
        help="trace mode: compute every prompt token (default: reuse the prefix already in the global KV pool)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help="trace mode: rejected requests per policy over batch caps x TBT SLOs, beside the paper's",
    )
    parser.add_argument(
        "--sweep-caps",
        default=",".join("none" if c is None else str(c) for c in SWEEP_CAPS),
        help="sweep: batch caps per decode instance ('none' or ints, comma-separated)",
    )
    parser.add_argument(
        "--sweep-tbt-slos",
        default=",".join(f"{x:g}" for x in SWEEP_TBT_SLOS_S),
        help="sweep: TBT SLOs in s (comma-separated)",
    )
    parser.add_argument(
        "--tbt-slo-s", type=float, default=TraceCostModel.tbt_slo_s, help="trace mode: TBT SLO, s per token"
    )
    parser.add_argument("--ttft-slo-s", type=float, default=TraceCostModel.ttft_slo_s)
    parser.add_argument("--policy", default="all", help=f"one of {', '.join(CLI_POLICIES)}")
    parser.add_argument("--oversubscription", type=float, default=1.1, help="threshold factor of 'oversubscribed'")
    return parser


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every option's rule; a broken one stops the command with argparse's usage error."""
    refused = untrusted_impl(args.impl, args.trust_impl)
    if refused:
        parser.error(refused)
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
        ("--decode-kv-tokens", 1 if args.decode_kv_tokens is None else args.decode_kv_tokens),
    ):
        if value < 1:
            parser.error(f"{flag} must be >= 1, got {value}")
    if not (math.isfinite(args.oversubscription) and args.oversubscription >= 1):
        parser.error(f"--oversubscription must be >= 1, got {args.oversubscription:g}")
    if args.trace is None and args.seeds is not None and args.seeds < 2:
        parser.error(f"--seeds must be >= 2 (a spread needs two runs), got {args.seeds}")


def _plots(paths: list[Path]) -> None:
    for path in paths:
        print(f"wrote {path}", file=sys.stderr)


def _simulation_mode(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The lecture's configuration (experiment 02 part overload), or the lag sweep, over seeds."""
    print(f"exercise files: {resolve_impl_dir(args.impl)}", file=sys.stderr)
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
        _plots(plotter(figures, args.plots))
    print(json.dumps(figures, indent=1) if args.json else renderer(figures))
    return 0


def _sweep_mode(
    parser: argparse.ArgumentParser, args: argparse.Namespace, requests: list[TraceRequest], cost: TraceCostModel
) -> int:
    """Trace mode's capacity x TBT SLO sweep: the policies' rejected requests in every cell."""
    try:
        caps, slos = _caps(args.sweep_caps), _slos(args.sweep_tbt_slos)
    except ValueError as exc:
        parser.error(f"--sweep-caps / --sweep-tbt-slos: {exc}")
    print(f"exercise files: {resolve_impl_dir(args.impl)}", file=sys.stderr)
    sweep_predict, sweep_admit = exercise_functions(args.impl)
    try:
        figures = sweep(
            requests,
            sweep_predict,
            sweep_admit,
            cost,
            caps,
            slos,
            args.speedup,
            args.prefill_instances,
            args.decode_instances,
        )
    except ValueError as exc:
        parser.error(str(exc))
    if args.plots is not None:
        _plots(plot_sweep(figures, args.plots))
    print(json.dumps(figures, indent=1) if args.json else render_sweep(figures))
    return 0


def _replay_mode(
    parser: argparse.ArgumentParser, args: argparse.Namespace, requests: list[TraceRequest], cost: TraceCostModel
) -> int:
    """Trace mode: one replay of the trace under each chosen policy (ex05 only for the predictive ones)."""
    policies = cli_policies(args.policy, args.oversubscription)
    needs_ex05 = any(p.kind == "predictive" for p in policies)
    if needs_ex05:
        print(f"exercise files: {resolve_impl_dir(args.impl)}", file=sys.stderr)
    predict, admit = exercise_functions(args.impl) if needs_ex05 else (None, None)
    try:
        out = replay_trace(
            requests, args.speedup, args.prefill_instances, args.decode_instances, policies, predict, admit, cost
        )
    except ValueError as exc:
        parser.error(str(exc))
    print(json.dumps(out, indent=1) if args.json else render_trace(out))
    return 0


def main_or_missing(argv: list[str] | None = None) -> int:
    try:
        return main(argv)
    except MissingExercise as exc:
        print(f"python -m hetero.overload: {exc}", file=sys.stderr)
        return 1
