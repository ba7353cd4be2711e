"""Shared pytest fixtures: the wrong submissions of autograder/wrong_fixtures.py, materialised once."""

from __future__ import annotations

from pathlib import Path

import pytest

from autograder.wrong_fixtures import materialise_all


@pytest.fixture(scope="session")
def wrong_dir(tmp_path_factory) -> Path:
    """Every wrong fixture written as <wrong_dir>/<name>/<exNN file>.py (a one-exercise submission folder)."""
    folder = tmp_path_factory.mktemp("wrong")
    materialise_all(folder)
    return folder
