"""The answer key's driver figures for the student's copy: `assignments/reference_figures.json`.

Every lecture-driver part is run on the answer key (`Part.run` on solutions/) and its figures are kept as
aggregates (`hetero.reference.aggregates`: no wall-clock timings, no plot series), without any number
that is a hidden case's distinctive stored expected value (so the file tells a student nothing the
grader hides; the copy's audit checks this again). The drivers print them beside the student's figures
(`hetero.reference`).

The figures take minutes (the MoE part trains its model; cached in .cache/) and some differ between CPUs
in their last digits, so they are not recomputed to check for drift. Each part has a digest of what it is
computed from (`autograder.authoring.digests.part_digest`), recorded with the numbers its figures leave out
(`withheld`) in `autograder/expected/digests.json`; the file's own `inputs_sha256` is the digest of those
records. `make release` runs again only the parts whose digest changed, or whose left-out numbers are no
longer all hidden; the others keep their stored figures, filtered again by today's hidden values.
`release --check` (and the copy's build) report a stale part by name.

The deferral figures come from a trained model, which another machine would train differently: the
release ships that very checkpoint as `assignments/reference_moe.pt` (`write_model`; the figures record its
weights' sha256), so that the drivers evaluate anyone's ex10 on the same model (`hetero.moe.experiment`),
and the handout quotes the same numbers (`deferral_text`, in place of `DEFERRAL_SLOT`).
"""

from __future__ import annotations

import importlib
import json
import math
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

from autograder.authoring import digests
from autograder.core.manifest import EXERCISES, ROOT
from hetero import reference


class StaleReference(RuntimeError):
    """The stored reference figures were computed from other inputs: run `make release`."""


def parts() -> list[tuple[str, Any]]:
    """(experiment, Part) of every lecture-driver part, in the drivers' order."""
    from hetero.lecture import EXPERIMENTS

    return [
        (exp, part)
        for exp, (_, modules) in EXPERIMENTS.items()
        for name in modules
        for part in importlib.import_module(name).PARTS
    ]


def distinctive(value: float) -> bool:
    """A number that betrays a case's answer: finite, six or more significant digits, not a simple
    fraction (1/3, 0.1, 12.0 occur everywhere)."""
    if not math.isfinite(value) or float(Fraction(value).limit_denominator(1000)) == value:
        return False
    return len(repr(abs(value)).split("e")[0].replace(".", "").strip("0")) >= 6


def numbers(tree: Any) -> list[float]:
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in numbers(v)]
    if isinstance(tree, list):
        return [x for v in tree for x in numbers(v)]
    return [float(tree)] if isinstance(tree, (int, float)) and not isinstance(tree, bool) else []


def hidden_expected_values(root: Path = ROOT, expected: dict[str, str] | None = None) -> frozenset[float]:
    """The distinctive numbers of the hidden cases' expected values that are no public case's: from
    `expected` ({exercise id: stored file text}, a release's fresh ones) or the stored files."""
    values: set[float] = set()
    for ex in EXERCISES:
        path = root / "autograder" / "expected" / f"{ex.id}.json"
        if expected and ex.id in expected:
            stored = json.loads(expected[ex.id])
        elif path.is_file():
            stored = json.loads(path.read_text(encoding="utf-8"))
        else:
            continue
        hidden = {case["id"] for case in stored.get("hidden", [])}
        cases = stored.get("cases", {})
        public = {x for cid, c in cases.items() if cid not in hidden for x in numbers(c.get("expect"))}
        values |= {x for cid in hidden for x in numbers(cases.get(cid, {}).get("expect")) if x not in public}
    return frozenset(x for x in values if distinctive(x))


def without(tree: Any, hidden: frozenset[float]) -> Any:
    """`tree` with every number in `hidden` left out (a dict drops the key, a list holds None instead)."""
    if isinstance(tree, dict):
        return {k: without(v, hidden) for k, v in tree.items() if not numbers(v) or _kept(v, hidden)}
    if isinstance(tree, list):
        return [without(v, hidden) if _kept(v, hidden) else None for v in tree]
    return tree


def _kept(value: Any, hidden: frozenset[float]) -> bool:
    return isinstance(value, (dict, list)) or not numbers(value) or numbers(value)[0] not in hidden


def _withheld(figures: Any, hidden: frozenset[float]) -> list[float]:
    return sorted({x for x in numbers(figures) if x in hidden})


def _run(exp: str, part: Any, root: Path) -> Any:
    try:
        figures = part.run(str(root / "solutions"))
    except Exception as exc:
        raise RuntimeError(
            f"the answer key cannot run experiment {exp} part {part.key}: {type(exc).__name__}: {exc}"
        ) from exc
    return reference.aggregates(figures)


def compute(
    root: Path = ROOT,
    expected: dict[str, str] | None = None,
    stored: str | None = None,
    records: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any], list[str]]:
    """(the file's text, the parts' records for digests.json, the parts run). A part whose digest equals its record in
    `records` and whose left-out numbers are all still hidden keeps its figures from `stored` (the current
    file's text); the others run on the answer key. `expected`: fresh expected-value texts by exercise."""
    hidden = hidden_expected_values(root, expected)
    old = json.loads(stored) if stored else {}
    figures: dict[str, dict[str, Any]] = {}
    new_records: dict[str, Any] = {}
    ran: list[str] = []
    for exp, part in parts():
        key = f"{exp}/{part.key}"
        now = digests.part_digest(part, root)
        record = (records or {}).get(key, {})
        kept = old.get(exp, {}).get(part.key)
        reusable = record.get("inputs") == now and kept is not None and set(record.get("withheld", [])) <= hidden
        raw = kept if reusable else _run(exp, part, root)
        ran += [] if reusable else [key]
        withheld = (
            sorted(set(record.get("withheld", [])) | set(_withheld(raw, hidden)))
            if reusable
            else _withheld(raw, hidden)
        )
        figures.setdefault(exp, {})[part.key] = without(raw, hidden)
        new_records[key] = {"inputs": now, "withheld": withheld}
    return reference.dumps({reference.INPUTS_KEY: digests.figures_sha(new_records), **figures}), new_records, ran


def staleness(assignments: Path, root: Path = ROOT, records: dict[str, Any] | None = None) -> list[str]:
    """Why the stored file is not what `compute` would keep (empty: current): parts whose inputs changed,
    whose left-out numbers are no longer all hidden, or that show a number hidden now."""
    path = assignments / reference.REFERENCE_FILE
    if not path.is_file():
        return [f"{path} is missing"]
    data = json.loads(path.read_text(encoding="utf-8"))
    records = digests.load(root / digests.RECORD_NAME)["figures"] if records is None else records
    if data.get(reference.INPUTS_KEY) != digests.figures_sha(records):
        return [f"{path} does not match the records of {digests.RECORD_NAME}"]
    hidden = hidden_expected_values(root)
    problems = []
    for exp, part in parts():
        key, record = f"{exp}/{part.key}", records.get(f"{exp}/{part.key}", {})
        kept = data.get(exp, {}).get(part.key)
        if kept is None or record.get("inputs") != digests.part_digest(part, root):
            problems.append(f"{key}: its inputs changed")
        elif not set(record.get("withheld", [])) <= hidden or _withheld(kept, hidden):
            problems.append(f"{key}: the hidden expected values it must leave out changed")
    return problems


def stored_text(assignments: Path, root: Path = ROOT) -> str:
    """The stored file's text when every part is current; StaleReference (naming the parts) otherwise."""
    problems = staleness(assignments, root)
    if problems:
        raise StaleReference(f"reference figures are stale ({'; '.join(problems)}): run `make release`")
    return (assignments / reference.REFERENCE_FILE).read_text(encoding="utf-8")


DEFERRAL_SLOT = "<!-- DEFERRAL_FIGURES -->"  # in the handout: the release's deferral table, in words


def _deferral(figures_text: str) -> dict[str, Any]:
    deferral = json.loads(figures_text).get("03", {}).get("deferral")
    if not isinstance(deferral, dict) or "model_sha256" not in deferral:
        raise StaleReference("the reference figures hold no deferral table of a known model: run `make release`")
    return deferral


def deferral_text(figures_text: str) -> str:
    """The deferral figures of `figures_text` as the handout quotes them (one set of numbers everywhere)."""
    d = _deferral(figures_text)
    delta = d["delta_mnats"]
    skip = " / ".join(f"{delta[f'skip_{k}']:+.2f}" for k in (1, 2, 3))
    defer = " / ".join(f"{delta[f'defer_{k}']:+.2f}" for k in (1, 2, 3))
    top1 = d["top1_weight_by_layer"]
    return (
        f"skipping 1 / 2 / 3 experts changes the validation loss by {skip} milli-nats per character, deferring "
        f"them by {defer} (full model: {d['full_loss_nats']:.4f} nats/char; mean top-1 routing weight "
        f"{min(top1):.2f}-{max(top1):.2f} by layer)"
    )


TRAINING_SLOT = "<!-- MOE_TRAINING -->"  # in the handout: the release's model's training run, in words


def training_text(figures_text: str, assignments: Path, root: Path = ROOT) -> str:
    """The training run of the deferral figures' checkpoint as the handout quotes it (steps and seconds)."""
    from hetero.moe.checkpoint import load_checkpoint

    meta = load_checkpoint(model_file(figures_text, assignments, root))[1]
    return f"its {int(meta['steps']):,} steps took {float(meta['train_seconds']):.0f} s there (the release's own run)"


def model_file(figures_text: str, assignments: Path, root: Path = ROOT) -> Path:
    """The checkpoint the deferral figures of `figures_text` come from: the stored one in `assignments`, else
    the answer key's run's in `.cache/moe/`; StaleReference when neither holds those weights."""
    from hetero.moe.checkpoint import CheckpointError, checkpoint_path, load_checkpoint
    from hetero.moe.experiment import REFERENCE_MODEL

    want = _deferral(figures_text)["model_sha256"]
    for path in (assignments / REFERENCE_MODEL, checkpoint_path()):
        try:
            if path.is_file() and load_checkpoint(path)[1]["state_sha256"] == want:
                return path
        except CheckpointError:
            continue
    raise StaleReference(
        f"no checkpoint with the weights the deferral figures come from (sha256 {want[:12]}...): run `make release`"
    )


def write_model(dest: Path, figures_text: str, root: Path = ROOT) -> Path:
    """Copy the deferral figures' checkpoint to `dest` (the release folder) as reference_moe.pt."""
    from hetero.moe.experiment import REFERENCE_MODEL

    source = model_file(figures_text, root / "assignments", root)
    target = dest / REFERENCE_MODEL
    if source.resolve() != target.resolve():
        shutil.copyfile(source, target)
    return target
