"""pytest set-up for the public tests: exercise markers and the per-exercise summary at the end."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from hetero.impl import EXERCISES

HERE = Path(__file__).resolve().parent
_RESULTS: dict[str, dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0})


def _points() -> dict[str, float]:
    """Points per exercise: from exercises.json in a release, else from the manifest."""
    listing = HERE / "exercises.json"
    if listing.is_file():
        return {e["id"]: e["points"] for e in json.loads(listing.read_text(encoding="utf-8"))}
    try:
        from autograder.manifest import EXERCISES as MANIFEST
    except ImportError:
        return {}
    return {e.id: e.points for e in MANIFEST}


def pytest_configure(config):
    for ex_id in EXERCISES:
        config.addinivalue_line("markers", f"{ex_id}: public tests of exercise {ex_id}")


def pytest_runtest_logreport(report):
    if report.when != "call" and not (report.when == "setup" and report.failed):
        return
    for ex_id in EXERCISES:
        if f"[{ex_id}." in report.nodeid:
            _RESULTS[ex_id]["passed" if report.passed else "failed"] += 1


def pytest_terminal_summary(terminalreporter):
    if not _RESULTS:
        return
    points = _points()
    tr = terminalreporter
    tr.section("per-exercise summary (public tests)")
    tr.write_line(f"{'exercise':<10}{'points':>8}{'passed':>9}{'failed':>9}  status")
    for ex_id in EXERCISES:
        if ex_id not in _RESULTS:
            continue
        r = _RESULTS[ex_id]
        status = "ok" if r["failed"] == 0 else "FAILING"
        pts = points.get(ex_id)
        tr.write_line(f"{ex_id:<10}{'' if pts is None else f'{pts:g}':>8}{r['passed']:>9}{r['failed']:>9}  {status}")
    tr.write_line("Public tests are part of the grade; hidden tests on other inputs make up the rest.")
