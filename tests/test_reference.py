"""The comparison the lecture drivers print beside the student's figures (`hetero.reference`)."""

from __future__ import annotations

import json
from pathlib import Path

from hetero import reference as ref

ROOT = Path(__file__).resolve().parents[1]


def _gaps(yours, reference, **tolerance):
    return {r.path: r.gap for r in ref.compare(yours, reference, **tolerance) if r.gap}


def test_numbers_within_tolerance_are_not_flagged():
    rows = ref.compare(
        {"a": 100.0, "b": {"c": -5, "d": [1.0, 2.0]}, "e": 0.0, "f": True},
        {"a": 105.0, "b": {"c": -5.4, "d": [1.0, 2.1]}, "e": 1e-12, "f": True},
        rel_gap=0.10,
    )
    assert [r.path for r in rows] == ["a", "b.c", "b.d[0]", "b.d[1]", "e", "f"]
    assert not [r for r in rows if r.gap], rows


def test_the_default_tolerance_flags_a_unit_slip_and_not_float_rounding():
    """Closed-form figures: correct code agrees to float rounding, so 1e-6 relative; GiB for GB is +7.4%."""
    assert ref.REL_GAP == 1e-6
    gib = 15000 / (80 * 1e9 / 2**30)
    assert _gaps({"usd_per_gb": gib}, {"usd_per_gb": 187.5}) == {"usd_per_gb": "+7.4%"}
    assert _gaps({"x": 0.1 + 0.2}, {"x": 0.3}) == {}, "float rounding of a correct computation is not a gap"
    assert _gaps({"x": 1.00001}, {"x": 1.0}) == {"x": "+0.001%"}, "a small gap above the tolerance shows its size"
    assert _gaps({"loss": 2.5600}, {"loss": 2.5601}, rel_gap=1e-4, abs_gap=0.01) == {}


def test_a_fifty_percent_gap_is_flagged_with_its_size():
    assert _gaps({"wasted": 3.0}, {"wasted": 2.0}) == {"wasted": "+50.0%"}
    assert _gaps({"x": {"y": [1.0, 1.0]}}, {"x": {"y": [1.0, 2.0]}}) == {"x.y[1]": "-50.0%"}


def test_a_sign_change_is_flagged_even_when_small():
    assert _gaps({"cut": 0.5}, {"cut": -0.5}) == {"cut": "sign differs"}
    assert _gaps({"cut": -97.9, "done": -25.6}, {"cut": -50.0, "done": -4.1}) == {"cut": "-95.8%", "done": "-524.4%"}


def test_missing_keys_labels_and_timings_are_skipped():
    rows = ref.compare(
        {"only_yours": 1.0, "name": "A100", "train_seconds": 3.0, "items": [1.0, 9.0, 9.0]},
        {"only_ref": 2.0, "name": "H100", "train_seconds": 30.0, "items": [1.0]},
    )
    assert [(r.path, r.gap) for r in rows] == [("items[0]", None)]
    assert ref.compare({"a": {"b": 1.0}}, {"a": 3.0}) == [] and ref.compare(None, {"a": 1.0}) == []
    assert _gaps({"flag": True}, {"flag": False}) == {"flag": "differs"}


def test_rendered_rows_show_both_values_and_mark_the_gap():
    rows = ref.compare({"a": 2.0, "b": 1.0, "c": -1.0}, {"a": 1.0, "b": 1.0, "c": 1.0})
    text = ref.render_rows(rows)
    assert "a: yours 2, reference 1  <- differs from the reference: +100.0%" in text
    assert "c: yours -1, reference 1  <- the sign differs from the reference's" in text, text
    assert "2 differ by more than 1e-06 relative (or in sign)" in text and "b: yours" not in text
    assert "b: yours 1, reference 1" in ref.render_rows(rows, details=True)
    assert "all agree within 1e-06 relative" in ref.render_rows(ref.compare({"b": 1.0}, {"b": 1.0}))


def test_the_released_file_holds_aggregates_without_timings_or_series():
    data = json.loads((ROOT / "assignments" / ref.REFERENCE_FILE).read_text(encoding="utf-8"))
    assert len(data.pop(ref.INPUTS_KEY)) == 64, "the file records the sha256 of what it was computed from"
    assert set(data) == {"01", "02", "03"} and "cost" in data["01"] and "overload" in data["02"]

    def walk(x, path=""):
        if isinstance(x, dict):
            for k, v in x.items():
                assert k not in ref.WALL_CLOCK_KEYS, f"{path}.{k}: a wall-clock timing in the reference"
                walk(v, f"{path}.{k}")
        elif isinstance(x, list):
            assert len(x) <= ref.MAX_LIST, f"{path}: a plot series of {len(x)} items in the reference"
            for v in x:
                walk(v, path)

    walk(data)


def test_stale_reference_figures_are_reported_by_part_not_recomputed(tmp_path):
    """`release --check` does not rerun the drivers (minutes, and last digits differ between CPUs): it
    compares each part's recorded digest (autograder/expected/digests.json) with today's and names the
    parts whose inputs changed, or whose left-out numbers are no longer hidden values."""
    from autograder.authoring import digests, reference_figures

    records = digests.load()["figures"]
    assert reference_figures.staleness(ROOT / "assignments", ROOT, records) == []
    assert reference_figures.staleness(ROOT / "assignments", ROOT, {**records, "01/cost": {}}) == [
        f"{ROOT / 'assignments' / ref.REFERENCE_FILE} does not match the records of {digests.RECORD_NAME}"
    ], "the file carries the digest of its records"
    data = json.loads((ROOT / "assignments" / ref.REFERENCE_FILE).read_text(encoding="utf-8"))

    def stale_with(changed: dict) -> list[str]:
        (tmp_path / ref.REFERENCE_FILE).write_text(
            ref.dumps({**data, ref.INPUTS_KEY: digests.figures_sha(changed)}), encoding="utf-8"
        )
        return reference_figures.staleness(tmp_path, ROOT, changed)

    edited = {**records, "01/cost": {**records["01/cost"], "inputs": "0" * 64}}
    assert stale_with(edited) == ["01/cost: its inputs changed"], stale_with(edited)
    no_longer_hidden = {**records, "02/overload": {**records["02/overload"], "withheld": [123.456789]}}
    assert stale_with(no_longer_hidden) == ["02/overload: the hidden expected values it must leave out changed"]
    part = next(p for exp, p in reference_figures.parts() if exp == "01" and p.key == "cost")
    assert digests.part_digest(part) == records["01/cost"]["inputs"]


def test_hidden_values_are_left_out_of_the_figures():
    from autograder.authoring.reference_figures import without

    tree = {"a": 1.2345678, "b": [3.14159265, 2.0], "c": {"d": 1.2345678, "e": "label"}}
    assert without(tree, frozenset({1.2345678, 3.14159265})) == {"b": [None, 2.0], "c": {"e": "label"}}


def test_every_headline_renders_from_the_answer_keys_figures():
    """Each part the lecture gives figures for leads with them beside the run's; none is left unreadable ("?")."""
    from hetero import headlines

    data = json.loads((ROOT / "assignments" / ref.REFERENCE_FILE).read_text(encoding="utf-8"))
    rendered = 0
    for exp, parts in data.items():
        if exp == ref.INPUTS_KEY:
            continue
        for key, figures in parts.items():
            text = headlines.render(key, figures)
            if key in headlines.HEADLINES:
                rendered += 1
                assert text.splitlines()[0].split() == ["lecture", "this", "run"], text
                assert "  ?" not in text, f"{exp}.{key}: a headline the answer key's figures cannot fill:\n{text}"
    assert rendered >= 12, rendered
    assert headlines.render("no_such_part", {}) == ""
    assert "  ?" in headlines.render("cost", {"devices": {}}), "an unusable figure shows as ?"
