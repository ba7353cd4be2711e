"""Mooncake request traces (JSONL): reading with precise errors, and the shipped sample.

`python -m hetero.traces sample [--out PATH]` regenerates `data/sample_trace.jsonl` (seeded; the test
suite checks the shipped file equals a fresh generation); `python -m hetero.traces stats TRACE` prints
the statistics the sample's model was calibrated on.

Format, one JSON object per line (the public Mooncake traces):
  {"timestamp": <ms since trace start, int>, "input_length": <tokens>, "output_length": <tokens>,
   "hash_ids": [<block id>, ...]}   # one id per 512-token block of the prompt, prefix order
Rules: every field present; lengths are integers >= 0 (input_length > 0); hash_ids is a list of
ints >= 0 with ceil(input_length / 512) entries at most; timestamps never decrease (a trace out of
order is an error, not silently sorted). Blank lines are errors too: nothing is dropped silently.
Every error names the file, the line and the field.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BLOCK_TOKENS = 512
SAMPLE_TRACE = Path(__file__).resolve().parent / "data" / "sample_trace.jsonl"


@dataclass(frozen=True)
class TraceRequest:
    timestamp_ms: int
    input_length: int  # tokens
    output_length: int  # tokens
    hash_ids: tuple[int, ...]  # prefix-ordered 512-token block ids


class TraceError(ValueError):
    """A bad trace line: names the file, the 1-based line number and the field."""

    def __init__(self, path: str | Path, line: int, field: str, message: str):
        super().__init__(f"{path}:{line}: field {field!r}: {message}")
        self.path, self.line, self.field = str(path), line, field


def _int_field(obj: dict, field: str, path: str | Path, line: int, minimum: int) -> int:
    if field not in obj:
        raise TraceError(path, line, field, "missing")
    value = obj[field]
    if type(value) is not int:
        raise TraceError(path, line, field, f"must be an integer, got {value!r}")
    if value < minimum:
        raise TraceError(path, line, field, f"must be >= {minimum}, got {value}")
    return value


def parse_line(text: str, path: str | Path = "<string>", line: int = 1) -> TraceRequest:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(path, line, "<line>", f"not valid JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise TraceError(path, line, "<line>", "must be a JSON object")
    timestamp = _int_field(obj, "timestamp", path, line, 0)
    input_length = _int_field(obj, "input_length", path, line, 1)
    output_length = _int_field(obj, "output_length", path, line, 0)
    if "hash_ids" not in obj:
        raise TraceError(path, line, "hash_ids", "missing")
    ids = obj["hash_ids"]
    # Whole-list checks in C (a trace has ~300,000 ids): every id's type is exactly int (not bool), none < 0.
    if not isinstance(ids, list) or (ids and (set(map(type, ids)) != {int} or min(ids) < 0)):
        raise TraceError(path, line, "hash_ids", "must be a list of integers >= 0")
    max_blocks = -(-input_length // BLOCK_TOKENS)
    if len(ids) > max_blocks:
        raise TraceError(
            path, line, "hash_ids", f"{len(ids)} blocks for input_length {input_length} (at most {max_blocks})"
        )
    return TraceRequest(timestamp, input_length, output_length, tuple(ids))


def read_trace(path: str | Path) -> list[TraceRequest]:
    """All requests of a trace file, in file order; raises TraceError on the first bad line."""
    path = Path(path)
    requests: list[TraceRequest] = []
    last_ts = 0
    with path.open(encoding="utf-8") as fh:
        for line_no, text in enumerate(fh, start=1):
            if not text.strip():
                raise TraceError(path, line_no, "<line>", "blank line")
            req = parse_line(text, path, line_no)
            if req.timestamp_ms < last_ts:
                raise TraceError(
                    path,
                    line_no,
                    "timestamp",
                    f"{req.timestamp_ms} ms is earlier than the previous line's {last_ts} ms "
                    "(traces must be in time order)",
                )
            last_ts = req.timestamp_ms
            requests.append(req)
    if not requests:
        raise TraceError(path, 0, "<file>", "no requests")
    return requests


# ---------------------------------------------------------------------------------------------
# The shipped sample trace: a seeded model of a multi-turn chat service.
#
# Model (every constant measured on Mooncake's public conversation trace, 12,031 requests over
# 3,537 s; see docs/figures_kvcache.md for the side-by-side statistics):
# - one shared system prompt of exactly one block (block id 0 starts every request there);
# - a request starts a new session, or continues one of the most recent sessions; a continued
#   prompt is the previous prompt + the previous answer + a new message, so it reuses the previous
#   prompt's *full* blocks (its partial last block gets a new id, as the trace's hashes do);
# - arrivals: a Poisson process whose timestamps are floored to a 3 s tick (the trace's timestamps
#   advance in ~3,000 ms steps with ~10 requests per step);
# - lengths: log-normal user messages, answers roughly normal around the trace's median.


@dataclass(frozen=True)
class SampleTraceConfig:
    num_requests: int = 2000
    rate_per_s: float = 3.4  # trace: 12,031 requests / 3,537 s
    tick_ms: int = 3000  # trace: timestamps advance in 3,000 +- 3 ms steps
    system_tokens: int = BLOCK_TOKENS  # trace: every request starts with block 0
    continue_prob: float = 0.37  # trace: 38.7 % of requests reuse more than the system block
    recent_sessions: int = 40  # a continued session is one of the last this many sessions
    first_msg_log_mean: float = 8.5  # log(tokens) of a session's first message
    first_msg_log_sd: float = 1.3
    next_msg_log_mean: float = 6.0  # log(tokens) of a follow-up message
    next_msg_log_sd: float = 1.4
    output_mean: float = 350.0  # tokens; trace median 350
    output_sd: float = 200.0  # trace: p5 10, p25 156, p75 472, p95 698
    max_input_tokens: int = 131072  # trace maximum 126,195


def generate_sample_trace(
    rng: np.random.Generator, config: SampleTraceConfig = SampleTraceConfig()
) -> list[TraceRequest]:
    """Requests of the sample model (see the comment above), in time order."""
    c = config
    gaps_s = rng.exponential(1.0 / c.rate_per_s, size=c.num_requests)
    times_ms = np.floor(np.cumsum(gaps_s) * 1000.0 / c.tick_ms).astype(np.int64) * c.tick_ms
    next_id = 1  # block id 0 is the shared system prompt
    sessions: list[tuple[int, int, tuple[int, ...]]] = []  # (input tokens, output tokens, hash ids)
    requests: list[TraceRequest] = []
    for i in range(c.num_requests):
        output = int(np.clip(round(rng.normal(c.output_mean, c.output_sd)), 1, 4 * c.output_mean))
        if sessions and rng.random() < c.continue_prob:
            slot = len(sessions) - 1 - int(rng.integers(min(c.recent_sessions, len(sessions))))
            prev_input, prev_output, prev_ids = sessions[slot]
            message = int(math.ceil(rng.lognormal(c.next_msg_log_mean, c.next_msg_log_sd)))
            input_tokens = prev_input + prev_output + message
            kept = prev_ids[: prev_input // BLOCK_TOKENS]  # full blocks only
        else:
            slot = len(sessions)
            sessions.append((0, 0, ()))
            message = int(math.ceil(rng.lognormal(c.first_msg_log_mean, c.first_msg_log_sd)))
            input_tokens = c.system_tokens + message
            kept = (0,)
        if input_tokens > c.max_input_tokens:  # a session that outgrew the context starts over
            message = int(math.ceil(rng.lognormal(c.first_msg_log_mean, c.first_msg_log_sd)))
            input_tokens = min(c.system_tokens + message, c.max_input_tokens)
            kept = (0,)
        num_blocks = -(-input_tokens // BLOCK_TOKENS)
        fresh = tuple(range(next_id, next_id + num_blocks - len(kept)))
        next_id += len(fresh)
        ids = kept + fresh  # (blocks,) prefix order
        sessions[slot] = (input_tokens, output, ids)
        requests.append(TraceRequest(int(times_ms[i]), input_tokens, output, ids))
    return requests


def format_trace(requests: list[TraceRequest]) -> str:
    """JSONL text in the public Mooncake traces' exact layout."""
    lines = [
        json.dumps(
            {
                "timestamp": r.timestamp_ms,
                "input_length": r.input_length,
                "output_length": r.output_length,
                "hash_ids": list(r.hash_ids),
            }
        )
        for r in requests
    ]
    return "\n".join(lines) + "\n"


SAMPLE_SEED = 20240700  # the seed of the shipped sample


def sample_trace_text() -> str:
    """The shipped sample's exact contents, generated afresh."""
    return format_trace(generate_sample_trace(np.random.default_rng(SAMPLE_SEED)))


def trace_stats(requests: list[TraceRequest]) -> dict[str, float]:
    """Length, arrival and prefix-reuse statistics of a trace (plain floats)."""
    inp = np.array([r.input_length for r in requests], dtype=np.float64)  # tokens
    out = np.array([r.output_length for r in requests], dtype=np.float64)  # tokens
    ts = np.array([r.timestamp_ms for r in requests], dtype=np.float64)  # ms
    seen: set[int] = set()
    reused = hit = total = 0
    for r in requests:
        k = 0
        while k < len(r.hash_ids) and r.hash_ids[k] in seen:
            k += 1
        reused += k > 1
        hit += k
        total += len(r.hash_ids)
        seen.update(r.hash_ids)
    duration_s = max(ts[-1] / 1000.0, 1e-9)
    return {
        "requests": float(len(requests)),
        "duration_s": float(ts[-1] / 1000.0),
        "rate_per_s": len(requests) / duration_s,
        "input_mean": float(inp.mean()),
        "input_median": float(np.median(inp)),
        "input_p10": float(np.percentile(inp, 10)),
        "input_p90": float(np.percentile(inp, 90)),
        "output_mean": float(out.mean()),
        "output_median": float(np.median(out)),
        "blocks_per_request": total / len(requests),
        "distinct_blocks": float(len(seen)),
        "frac_reusing_beyond_first_block": reused / len(requests),
        "infinite_cache_block_hit_rate": hit / total,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hetero.traces", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_sample = sub.add_parser("sample", help="regenerate the shipped sample trace")
    p_sample.add_argument("--out", type=Path, default=SAMPLE_TRACE)
    p_stats = sub.add_parser("stats", help="print a trace's statistics")
    p_stats.add_argument("trace", type=Path)
    args = parser.parse_args(argv)
    if args.command == "sample":
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(sample_trace_text(), encoding="utf-8")
        print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
        return 0
    try:
        stats = trace_stats(read_trace(args.trace))
    except TraceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for key, value in stats.items():
        print(f"{key:34s} {value:12.4g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
