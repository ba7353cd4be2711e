"""The answer key's driver figures for the student's copy: `assignments/reference_figures.json`.

Every lecture-driver part is run on the answer key (`hetero.lecture.run_experiment` on solutions/) and
its figures are kept as aggregates (`hetero.reference.aggregates`: no wall-clock timings, no plot
series), without any number that is a hidden case's distinctive stored expected value (so the file
tells a student nothing the grader hides; the copy's audit checks this again). The drivers print them
beside the student's figures (`hetero.reference`).

The figures take a minute (the MoE part trains its model; cached in .cache/) and some differ between
CPUs in their last digits, so they are not recomputed to check for drift: the file records the sha256
of everything they are computed from (`INPUTS`), `make release` recomputes them only when that
changed, and `release --check` (and the copy's build) report a file whose inputs changed as stale.

The deferral figures come from a trained model, which another machine would train differently: the
release ships that very checkpoint as `assignments/reference_moe.pt` (`write_model`; the figures record its
weights' sha256), so that the drivers evaluate anyone's ex10 on the same model (`hetero.moe.experiment`),
and the handout quotes the same numbers (`deferral_text`, in place of `DEFERRAL_SLOT`).
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from fractions import Fraction
from pathlib import Path
from typing import Any

from autograder.authoring.derived import HETERO_LIST, PROSE_FILES
from autograder.core.manifest import EXERCISES, ROOT
from hetero import reference

INPUTS = ("solutions", "shared/hetero", "autograder/tests")  # the figures, and the hidden cases the filter reads
SKIPPED_PARTS = ("__pycache__",)
DERIVED = {HETERO_LIST, *PROSE_FILES}  # written by the release after the figures are computed


class StaleReference(RuntimeError):
    """The stored reference figures were computed from other inputs: run `make release`."""


def inputs_digest(root: Path = ROOT) -> str:
    """sha256 over the paths and bytes of every file under INPUTS (Python sources and data)."""
    digest = hashlib.sha256()
    for top in INPUTS:
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and not set(path.parts) & set(SKIPPED_PARTS) and path.suffix not in (".pyc",):
                if path.name == reference.REFERENCE_FILE or path.relative_to(root) in DERIVED:
                    continue  # the file itself; files the release derives from the manifest afterwards
                digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


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


def compute(root: Path = ROOT, expected: dict[str, str] | None = None) -> str:
    """The file's text, computed from the answer key (a minute: every driver part runs)."""
    from hetero.lecture import EXPERIMENTS, run_experiment

    figures: dict[str, dict] = {}
    for exp in EXPERIMENTS:
        result = run_experiment(exp, str(root / "solutions"))
        if result["missing"]:
            raise RuntimeError(f"the answer key cannot run experiment {exp}: {result['missing']}")
        figures[exp] = {key: reference.aggregates(result[key]) for key in result["parts"]}
    return reference.dumps(
        {reference.INPUTS_KEY: inputs_digest(root), **without(figures, hidden_expected_values(root, expected))}
    )


def stored_text(assignments: Path, root: Path = ROOT) -> str:
    """The stored file's text when its inputs are today's; StaleReference otherwise."""
    path = assignments / reference.REFERENCE_FILE
    if not path.is_file():
        raise StaleReference(f"{path} is missing: run `make release`")
    text = path.read_text(encoding="utf-8")
    recorded = json.loads(text).get(reference.INPUTS_KEY)
    if recorded != inputs_digest(root):
        raise StaleReference(f"{path} was computed from other solutions/ or hetero sources: run `make release`")
    return text


def current_text(assignments: Path, root: Path = ROOT, expected: dict[str, str] | None = None) -> str:
    """The stored text if current, else a fresh computation (what `make release` writes)."""
    try:
        return stored_text(assignments, root)
    except StaleReference:
        return compute(root, expected)


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
