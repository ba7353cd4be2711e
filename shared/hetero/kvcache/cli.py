"""The trace replay CLI: `python -m hetero.kvcache TRACE.jsonl --capacities 1000,5000,10000,20000,50000
[--policy lru|lfu] [--json]` prints how unevenly the trace's blocks are used, and block and token hit
rates per capacity and with an infinite cache.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hetero.kvcache.caches import POLICIES
from hetero.kvcache.replay import block_popularity, capacity_sweep, render_popularity, render_sweep
from hetero.traces import TraceError, read_trace


def _capacities(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"capacities must be comma-separated integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"capacities must be integers >= 1 (blocks), got {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hetero.kvcache", description="Replay a Mooncake trace through a prefix KV cache."
    )
    parser.add_argument("trace", type=Path, help="JSONL trace (timestamp, input_length, output_length, hash_ids)")
    parser.add_argument(
        "--capacities",
        type=_capacities,
        default=[1000, 5000, 10000, 20000, 50000],
        help="cache capacities in 512-token blocks, comma-separated",
    )
    parser.add_argument("--policy", choices=POLICIES, default="lru")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    try:
        requests = read_trace(args.trace)
    except (TraceError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sweep = {
        "trace": str(args.trace),
        "requests": len(requests),
        "popularity": block_popularity(requests),
        **capacity_sweep(requests, args.capacities, (args.policy,)),
    }
    if args.json:
        print(json.dumps(sweep, indent=2))
    else:
        print(f"{args.trace}: {len(requests):,} requests, policy {args.policy.upper()}")
        print(render_popularity(sweep["popularity"]))
        print(render_sweep(sweep))
    return 0
