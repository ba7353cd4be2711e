"""Mooncake request traces (JSONL): reading with precise errors, and the shipped sample.

Format, one JSON object per line (the public Mooncake traces):
  {"timestamp": <ms since trace start, int>, "input_length": <tokens>, "output_length": <tokens>,
   "hash_ids": [<block id>, ...]}   # one id per 512-token block of the prompt, prefix order
Rules: every field present; lengths are integers >= 0 (input_length > 0); hash_ids is a list of
ints >= 0 with ceil(input_length / 512) entries at most; timestamps never decrease (a trace out of
order is an error, not silently sorted). Blank lines are errors too: nothing is dropped silently.
Every error names the file, the line and the field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

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


def _int_field(obj: dict, field: str, path: Path, line: int, minimum: int) -> int:
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
    p = Path(path)
    timestamp = _int_field(obj, "timestamp", p, line, 0)
    input_length = _int_field(obj, "input_length", p, line, 1)
    output_length = _int_field(obj, "output_length", p, line, 0)
    if "hash_ids" not in obj:
        raise TraceError(path, line, "hash_ids", "missing")
    ids = obj["hash_ids"]
    if not isinstance(ids, list) or not all(type(i) is int and i >= 0 for i in ids):
        raise TraceError(path, line, "hash_ids", "must be a list of integers >= 0")
    max_blocks = -(-input_length // BLOCK_TOKENS)
    if len(ids) > max_blocks:
        raise TraceError(path, line, "hash_ids",
                         f"{len(ids)} blocks for input_length {input_length} (at most {max_blocks})")
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
                raise TraceError(path, line_no, "timestamp",
                                 f"{req.timestamp_ms} ms is earlier than the previous line's {last_ts} ms "
                                 "(traces must be in time order)")
            last_ts = req.timestamp_ms
            requests.append(req)
    if not requests:
        raise TraceError(path, 0, "<file>", "no requests")
    return requests
