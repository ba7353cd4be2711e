"""What the grader asks of a sandboxed run (`Limits`) and what it gets back (`ChildReport`).

The meaning of each limit is in `autograder.runtime.sandbox.runner`'s docstring.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hetero.checks import Outcome


@dataclass(frozen=True)
class Limits:
    timeout_s: float  # wall clock for the whole exercise (every child, import + every case)
    cpu_s: float  # RLIMIT_CPU, shared by the children of one exercise
    memory_mib: int  # RLIMIT_AS
    case_timeout_s: float | None = None  # wall clock for one case's call (None: only timeout_s)
    output_bytes: int = 4 * 2**20  # printed output in all, and RLIMIT_FSIZE for files the child writes
    kept_output_bytes: int = 64 * 2**10  # how much printed output the parent keeps (the rest is counted)
    shown_output_chars: int = 4000  # how much of the public output feedback shows
    max_processes: int = 64  # RLIMIT_NPROC for the sandbox uid (threads count too)
    open_files: int = 1024  # RLIMIT_NOFILE
    result_bytes: int = 64 * 2**20  # result records of the exercise's children in all, then the child is stopped
    # One record at most: the answer key's largest is ~5 KB (messages are cut at 2,000 characters); a
    # longer one is refused unread, as its case's result, so no record can make the grader decode
    # (and keep) millions of JSON values.
    record_bytes: int = 64 * 2**10
    junk_lines: int = 1000  # lines on the result channel that are not valid records, then it is stopped
    # A tool's command (its work folder on the machine's disk): stopped when that disk has less than this free,
    # so that a student's notebook cannot take the room the grader needs for everyone's results.
    disk_floor_bytes: int = 512 * 2**20


@dataclass
class ChildReport:
    """What the children of one exercise produced. `outcomes` holds only records that passed every check."""

    imported: bool | None = None  # None: the child never reported its import
    import_error: str = ""
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)  # case id -> why it has no accepted record
    ended: str = "finished"  # finished | timeout | cpu | output | memory | exited | signal | result_size | junk
    detail: str = ""  # one sentence for feedback when not finished
    returncode: int | None = None
    wall_s: float = 0.0
    cpu_s: float = 0.0
    bad_records: int = 0  # lines on the result channel without a valid MAC or shape
    result_bytes: int = 0  # bytes read from the result channels of all the exercise's children
    output_public: str = ""  # output printed before the first hidden case was sent (bounded)
    output_all: str = ""  # the whole output (bounded)
    output_bytes: int = 0  # how many bytes were printed in all
    survivors_killed: int = 0  # processes of the sandbox uid found alive after a child and killed
    stopped_cases: tuple[str, ...] = ()  # cases stopped at the per-case limit (a fresh child went on)
    isolation: tuple[str, ...] = ()  # one note per kind of isolation, "network: not isolated (...)" included
