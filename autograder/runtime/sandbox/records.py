"""The result channel of one child: its records parsed in linear time and MAC-checked, in order, each case
at most once, and the call specs sent one case at a time (case n+1 only after case n's record).

The guarantees (and what they do not cover) are in `autograder.runtime.sandbox.runner`'s docstring.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import signal
import time
from array import array
from collections.abc import Callable
from itertools import accumulate

from autograder.runtime.sandbox.limits import ChildReport, Limits
from hetero.checks import Outcome


def describe_exit(returncode: int, cpu_used: float, limits: Limits) -> tuple[str, str]:
    if returncode < 0:
        sig = -returncode
        name = signal.Signals(sig).name if sig in signal.valid_signals() else str(sig)
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and cpu_used >= limits.cpu_s):
            return "cpu", f"the CPU-time limit ({limits.cpu_s:g} s) was exceeded"
        if sig == signal.SIGXFSZ:
            return "output", (
                f"the output limit ({limits.output_bytes // 2**20} MiB for printed output and files) was exceeded"
            )
        return "signal", f"the process was killed by signal {name} (crash, or memory exhausted)"
    return "exited", (
        f"the process exited with status {returncode} before finishing "
        "(sys.exit, os._exit or a fatal error in your code?)"
    )


MAX_DEPTH = 64  # arrays, lists and dicts nested deeper than this in one record: no answer here is
# (an encoded answer is a few levels deep); refused before parsing, so neither the recursion limit of whatever
# stack reads a record nor the size of anything written from it (the sealed public state) depends on it
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')  # a JSON string: its brackets are text, not nesting
_SIGNS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")  # as signed bytes: an opener +1, a closer -1
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def too_deep(payload: bytes | bytearray, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON text `payload` nests arrays and objects more than `limit` deep. Strings are skipped, so
    brackets inside them do not count; the rest is done in C (the greatest running sum of +1 per opener and -1
    per closer): about 1.3 ms for a 64 KiB record of brackets. Most records have fewer brackets than the limit."""
    if payload.count(b"[") + payload.count(b"{") <= limit:
        return False
    signs = array("b", _STRING.sub(b"", payload).translate(_SIGNS, _NOT_BRACKETS))
    return max(accumulate(signs), default=0) > limit


class RecordLines:
    """The result channel's bytes split into lines of at most `limit_bytes` bytes, in linear time: a longer
    line is dropped unread up to its newline (never held whole) and stands in the output as None."""

    def __init__(self, limit_bytes: int):
        self.limit_bytes = limit_bytes
        self.buffer = bytearray()
        self.skipping = False  # inside a line longer than the limit: dropped up to its newline

    def feed(self, chunk: bytes) -> list[bytes | bytearray | None]:
        """The lines `chunk` completes, in order; None for each one over the limit."""
        lines: list[bytes | bytearray | None] = []
        if self.skipping:
            end = chunk.find(b"\n")
            if end < 0:
                return lines
            chunk, self.skipping = chunk[end + 1 :], False
            lines.append(None)
        self.buffer += chunk
        if b"\n" in chunk:
            *complete, rest = self.buffer.split(b"\n")
            self.buffer = bytearray(rest)
            lines += [line if len(line) <= self.limit_bytes else None for line in complete]
        if len(self.buffer) > self.limit_bytes:
            self.buffer.clear()
            self.skipping = True
        return lines


class Channel:
    """State of one child: the record parser and the case-by-case sending of call specs.

    `first` is the index of the first case this child is sent (a restarted child skips the cases its
    predecessors ran); `on_hidden` is called before every hidden case is queued or skipped (it must act
    only the first time: the output printed up to then is the public output); the cases
    of `skipped_funcs` (functions already stopped at the per-case limit) are not sent at all.
    """

    def __init__(
        self,
        specs: list[dict],
        key: bytes,
        hidden_from: int,
        report: ChildReport,
        first: int = 0,
        on_hidden: Callable[[], None] = lambda: None,
        skipped_funcs: frozenset[str] = frozenset(),
    ):
        self.specs = specs
        self.skipped_funcs = skipped_funcs
        self.key = key
        self.hidden_from = hidden_from
        self.report = report
        self.on_hidden = on_hidden
        self.next_seq = first  # the record expected next
        self.sent = first  # call specs sent so far
        self.imported: bool | None = None
        self.ended_input = False
        self.pending = bytearray()
        self.sent_at = 0.0  # when the outstanding case was queued (monotonic)

    def queue(self, message: dict) -> None:
        self.pending += json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"

    def outstanding(self) -> int | None:
        """The index of the case sent and not yet answered, if any."""
        return self.next_seq if self.next_seq < self.sent else None

    def send_next(self) -> None:
        while self.sent < len(self.specs) and self.specs[self.sent]["func"] in self.skipped_funcs:
            if self.sent >= self.hidden_from:  # skipping a hidden case also ends the public output
                self.on_hidden()
            case_id = self.specs[self.sent]["id"]
            self.report.refused[case_id] = (
                f"not run: {self.specs[self.sent]['func']} already ran longer than "
                "the per-case time limit on an earlier case"
            )
            self.sent += 1
            self.next_seq = self.sent
        if self.sent < len(self.specs):
            if self.sent >= self.hidden_from:  # on_hidden acts once: the first hidden case sent or skipped
                self.on_hidden()
            self.queue({"seq": self.sent, "case": self.specs[self.sent]})
            self.sent += 1
            self.sent_at = time.monotonic()
        elif not self.ended_input:
            self.queue({"end": True})
            self.ended_input = True

    def refuse_oversized(self, limit_bytes: int) -> None:
        """A record longer than `limit_bytes` was dropped unread: it counts as the waiting case's result."""
        self.refuse_waiting(
            f"its result record was larger than {limit_bytes // 2**10} KiB (no answer here is that large), "
            "so it was not read"
        )

    def refuse_waiting(self, why: str) -> None:
        """A record that was not read counts as the waiting case's result (refused, saying `why`)."""
        waiting = self.outstanding()
        if waiting is None:
            self.report.bad_records += 1
            return
        self.report.refused[self.specs[waiting]["id"]] = why
        self.next_seq = waiting + 1
        self.send_next()

    def record(self, line: bytes | bytearray) -> None:
        mac, _, payload = line.partition(b" ")
        if len(mac) != 64:  # cheap refusal of junk before any HMAC is computed
            self.report.bad_records += 1
            return
        expected = hmac.new(self.key, payload, hashlib.sha256).hexdigest().encode("ascii")
        if not hmac.compare_digest(mac, expected):
            self.report.bad_records += 1
            return
        if too_deep(payload):
            self.refuse_waiting(
                f"its result record nested lists or dicts more than {MAX_DEPTH} deep (no answer here does), so it was not read"
            )
            return
        try:
            data = json.loads(payload)
            seq = data["seq"]
        except (ValueError, KeyError, TypeError, RecursionError):
            self.report.bad_records += 1
            return
        if seq == -1 and data.get("kind") == "import":
            if self.imported is None:
                self.imported = bool(data.get("ok"))
                if self.report.imported is None:
                    self.report.imported = self.imported
                    self.report.import_error = str(data.get("error", ""))[:8000]
                if self.imported:
                    self.send_next()
            else:
                self.report.bad_records += 1
            return
        if type(seq) is not int or not 0 <= seq < len(self.specs):
            self.report.bad_records += 1
            return
        case_id = self.specs[seq]["id"]
        if seq < self.next_seq:
            self.report.outcomes.pop(case_id, None)
            self.report.refused[case_id] = "two result records arrived for this case"
            return
        if seq > self.next_seq or data.get("id") != case_id or seq >= self.sent:
            self.report.refused[case_id] = "its result record arrived out of order"
            self.next_seq = max(self.next_seq, seq + 1)
            return
        try:
            outcome = Outcome.from_json(data["outcome"])
            if outcome.error_type is not None and type(outcome.error_type) is not str:
                raise TypeError("error_type")
        except (KeyError, TypeError, AttributeError):
            self.report.refused[case_id] = "its result record was malformed"
            self.next_seq = seq + 1
            return
        self.report.outcomes[case_id] = outcome
        self.next_seq = seq + 1
        self.send_next()
