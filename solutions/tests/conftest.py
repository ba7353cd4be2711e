"""pytest set-up for the public tests: markers, what is read and what is still a stub (at the top), one
short block per failure, and the per-exercise summary as the last thing printed."""

from __future__ import annotations

import functools
from collections import defaultdict
from pathlib import Path

from hetero.impl import EXERCISES
from hetero.pack import inspect_folder
from hetero.publictest import load_listing

HERE = Path(__file__).resolve().parent
IMPL_DIR = HERE.parent
_RESULTS: dict[str, dict[str, float]] = defaultdict(lambda: {"passed": 0, "failed": 0, "points": 0.0})
LEGEND = (
    "public points: what your passed public cases are worth / what all public cases give (points earned",
    "by public cases, not yet your score: a function's passed cases pay only once it also returns correct,",
    "different answers on hidden inputs; README, Grading). exercise max: public and hidden cases together.",
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


def pytest_runtest_logreport(report):
    if report.when != "call" and not (report.when == "setup" and report.failed):
        return
    for ex_id in EXERCISES:
        if f"[{ex_id}." in report.nodeid:
            _RESULTS[ex_id]["passed" if report.passed else "failed"] += 1
            if report.passed:
                case_id = report.nodeid.rsplit("[", 1)[1].rstrip("]")
                info = _listing().get(ex_id)
                _RESULTS[ex_id]["points"] += info.case_points.get(case_id, 0.0) if info else 0.0


@functools.lru_cache(maxsize=1)
def _listing() -> dict:
    return load_listing(HERE)


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
        public = f"{_points(r['points'])} / {_points(info.public_points)}" if info else ""
        most = f"{info.points:g}" if info else ""
        reporter.write_line(f"{ex_id:<10}{r['passed']:>8}{r['failed']:>8}{public:>16}{most:>10}  {status}")
    for line in LEGEND:
        reporter.write_line(line)
