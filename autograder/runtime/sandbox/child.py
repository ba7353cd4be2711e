"""What runs inside the sandboxed child process: load one student exercise file, run the calls it is sent.

`autograder.runtime.sandbox.runner` copies this file into the child's read-only folder and `autograder.runtime.sandbox.jail` starts
it, inside the child's namespaces, as `python -S -s -B -u child.py RESULT_FD` (as an unprivileged user
when the grader is root). It must not import `autograder` (out of the child's sight); it imports
only the standard library and `hetero.checks`. The protocol, one JSON object per line:

  control channel (the parent writes; it arrives on stdin, which the child moves to a private fd and
  replaces by /dev/null before any student code runs):
    1. {"key": <hex>, "path": <student file>, "name": <module name>}   -- the per-run MAC key
    2. after the import record: {"seq": n, "case": <call spec>} for one case, or {"end": true}
       (the parent sends case n+1 only after it has the record of case n, so the child never holds
       the inputs of a case it has not reached: public cases run before any hidden input exists here)
  result channel (fd RESULT_FD, a pipe the parent reads): lines "<hex HMAC-SHA256> <payload JSON>",
    payload {"seq": -1, "kind": "import", "ok": bool, "error": str} once, then
    {"seq": n, "id": <case id>, "outcome": Outcome.to_json()} per case.

A call spec is {"id", "func", "args", "kwargs", "harness"} with args/kwargs encoded by
`hetero.checks.encode`; expected values never reach this process. The MAC only stops records that
were not produced with the key (stray writes, a student printing fake records); the threat model,
including why student code that digs the key out of memory gains nothing, is in
`autograder.runtime.sandbox.runner`.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import os
import sys
import traceback
from typing import Any

TRACEBACK_CHARS = 4000  # an import traceback is shown to the student; keep it readable
MESSAGE_CHARS = 2000  # same cap as hetero.checks.Outcome.from_json


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class _Channel:
    """Signs and writes result records; holds the only copy of the key the harness keeps."""

    def __init__(self, fd: int, key_hex: str):
        self._fd = fd
        self._mac = hmac.new(bytes.fromhex(key_hex), digestmod=hashlib.sha256)

    def send(self, payload: dict) -> None:
        data = json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("utf-8")
        mac = self._mac.copy()
        mac.update(data)
        _write_all(self._fd, mac.hexdigest().encode("ascii") + b" " + data + b"\n")


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)[:MESSAGE_CHARS]
    except BaseException:  # a student exception whose __str__ fails is still a result
        return f"<{type(exc).__name__} whose message cannot be printed>"


def _student_traceback(exc: BaseException, path: str) -> str:
    """The traceback of a failed import, from the first frame in the student's file on."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [i for i, frame in enumerate(frames) if frame.filename == path]
    shown = traceback.StackSummary.from_list(frames[own[0] :]) if own else []
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(shown)] if shown else []
    try:
        lines += traceback.format_exception_only(type(exc), exc)
    except BaseException:
        lines.append(f"{type(exc).__name__}: <message cannot be printed>\n")
    text = "".join(lines)
    return text if len(text) <= TRACEBACK_CHARS else text[:TRACEBACK_CHARS] + "\n... (truncated)"


def _case(spec: dict) -> Any:
    from hetero import checks

    return checks.Case(
        id=spec["id"],
        func=spec["func"],
        args=tuple(checks.unwrap(checks.decode(spec["args"]))),
        kwargs=checks.unwrap(checks.decode(spec["kwargs"])),
        harness=spec.get("harness"),
    )


def _import_student(path: str, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _packages() -> None:
    """Put the child's own site folder (links to the packages the student's environment holds, and to
    hetero: `allowlist.site_links`) on sys.path, after this folder. The interpreter runs with -S: no
    site-packages, no .pth file, nothing of the grader's venv beyond these packages."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(1, os.path.join(here, "site"))


def main(argv: list[str]) -> int:
    _packages()
    result_fd = int(argv[1])
    control = os.fdopen(os.dup(0), "rb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    hello = json.loads(control.readline())
    channel = _Channel(result_fd, hello.pop("key"))
    from hetero import checks  # imported before the student's file, so it is the harness's copy

    try:
        module = _import_student(hello["path"], hello["name"])
    except BaseException as exc:  # SyntaxError, ImportError, SystemExit at import: all are results
        channel.send({"seq": -1, "kind": "import", "ok": False, "error": _student_traceback(exc, hello["path"])})
        return 1
    channel.send({"seq": -1, "kind": "import", "ok": True, "error": ""})
    while True:
        line = control.readline()
        if not line:
            return 0
        message = json.loads(line)
        if message.get("end"):
            return 0
        case = _case(message["case"])
        try:
            outcome = checks.run_call(case, module)
        except BaseException as exc:  # SystemExit / KeyboardInterrupt from student code, or a bad __str__
            outcome = checks.Outcome(None, type(exc).__name__, _safe_str(exc))
        payload = {"seq": message["seq"], "id": case.id, "outcome": outcome.to_json()}
        try:
            channel.send(payload)
        except (TypeError, ValueError, RecursionError) as exc:  # e.g. an int too long to print
            failed = checks.Outcome(None, "EncodeError", f"the result could not be serialised: {_safe_str(exc)}")
            channel.send({"seq": message["seq"], "id": case.id, "outcome": failed.to_json()})


if __name__ == "__main__":
    code = main(sys.argv)
    # os._exit: student atexit hooks and non-daemon threads must not keep the process alive.
    os._exit(code)
