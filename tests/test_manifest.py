"""The manifest is consistent with the exercise loader and totals 100 points."""

from autograder.core.manifest import EXERCISES, check
from hetero.impl import EXERCISES as LOADER


def test_manifest_is_consistent():
    check()
    assert [e.id for e in EXERCISES] == list(LOADER)
    assert [e.module for e in EXERCISES] == list(LOADER.values())
