"""pytest set-up for the public tests: markers, what is read and what is still a stub (at the top), one
short block per failure, and the per-exercise summary as the last thing printed."""

from __future__ import annotations

import functools
from collections import defaultdict
from pathlib import Path

from hetero.impl import EXERCISES, load_module_from_path
from hetero.pack import inspect_folder
from hetero.publictest import load_listing

HERE = Path(__file__).resolve().parent
IMPL_DIR = HERE.parent
_RESULTS: dict[str, dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0})
LEGEND = (
    "public points: what your passed public cases are worth / what all public cases give (points earned",
    "by public cases, not yet your score: a function's passed cases pay only once it also returns correct,",
    "different answers on hidden inputs, so a function that passes none of its public cases that expect a",
    "value counts 0 here, its invalid-input cases too; README, Grading). exercise max: public and hidden",
    "cases together.",
    "ok: every public case passed, nothing more. Public tests are part of the grade; hidden tests on other",
    "inputs make up the rest.",
)


def pytest_configure(config):
    for ex_id in EXERCISES:
        config.addinivalue_line("markers", f"{ex_id}: public tests of exercise {ex_id}")


def _header_lines() -> list[str]:
    listing = load_listing(HERE)
    limits = sorted({info.case_timeout_s for info in listing.values()})
    lines = [f"exercise files: {IMPL_DIR}"]
    if limits:
        special = ", ".join(f"{ex_id} {info.case_timeout_s:g} s" for ex_id, info in listing.items()
                            if info.case_timeout_s != limits[0])
        lines.append(f"time limit per case: {limits[0]:g} s" + (f" ({special})" if special else ""))
    unfilled = [s.exercise for s in inspect_folder(IMPL_DIR) if s.present and s.stubs]
    if unfilled:
        lines.append(f"still stubs: {', '.join(unfilled)}. Their public tests fail with NotImplementedError "
                     "until you fill them in: that is expected at the start.")
    return lines


def pytest_collection_finish(session):
    """Printed before the first test, also with -q: which files are read, the limits, what is unfilled."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    for line in _header_lines():
        reporter.write_line(line)


def pytest_sessionstart(session):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and hasattr(reporter, "reportchars"):
        # each failure already printed its one block; the short summary would repeat every message
        reporter.reportchars = reporter.reportchars.replace("f", "").replace("E", "")


_PASSED: dict[str, set[str]] = defaultdict(set)  # exercise -> its passed public case ids


def pytest_runtest_logreport(report):
    if report.when != "call" and not (report.when == "setup" and report.failed):
        return
    for ex_id in EXERCISES:
        if f"[{ex_id}." in report.nodeid:
            _RESULTS[ex_id]["passed" if report.passed else "failed"] += 1
            if report.passed:
                _PASSED[ex_id].add(report.nodeid.rsplit("[", 1)[1].rstrip("]"))


@functools.cache
def _functions(ex_id: str) -> dict[str, tuple[str, bool]]:
    """{public case id: (its function, whether it expects a value rather than an exception)}."""
    path = HERE / f"public_{ex_id}.py"
    if not path.is_file():
        return {}
    cases = load_module_from_path(path, f"_public_summary_{ex_id}").CASES
    return {c.id: (c.func, not c.raises) for c in cases}


def _public_points(ex_id: str, info) -> float:
    """What the passed public cases of `ex_id` are worth, counting a function only once one of its public
    cases that expect a value has passed (the grader pays nothing of a function that returns no right value)."""
    functions = _functions(ex_id)
    passed = _PASSED[ex_id]
    valued = {functions[c][0] for c in passed if c in functions and functions[c][1]}
    return sum(info.case_points.get(c, 0.0) for c in passed if c not in functions or functions[c][0] in valued)


def _points(value: float) -> str:
    return f"{value:.2f}".rstrip("0").rstrip(".")


def pytest_unconfigure(config):
    """After pytest's own last line, so that this summary is the last thing printed."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if not _RESULTS or reporter is None:
        return
    listing = load_listing(HERE)
    reporter.write_sep("=", "per-exercise summary (public tests)")
    reporter.write_line(f"{'':<10}{'public cases':>16}{'public points':>16}{'exercise':>10}")
    reporter.write_line(f"{'exercise':<10}{'passed':>8}{'failed':>8}{'passed / max':>16}{'max':>10}  status")
    for ex_id in EXERCISES:
        if ex_id not in _RESULTS:
            continue
        r = _RESULTS[ex_id]
        status = "ok" if r["failed"] == 0 else "FAILING"
        info = listing.get(ex_id)
        public = f"{_points(_public_points(ex_id, info))} / {_points(info.public_points)}" if info else ""
        most = f"{info.points:g}" if info else ""
        reporter.write_line(f"{ex_id:<10}{r['passed']:>8}{r['failed']:>8}{public:>16}{most:>10}  {status}")
    for line in LEGEND:
        reporter.write_line(line)
