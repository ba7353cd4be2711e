"""The one matplotlib set-up of the experiment drivers: a non-interactive backend (plots are files, on a
laptop, a CI runner or Gradescope alike) and one way to write a figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (imported on first use: the simulators never need it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(figure: Any, outdir: Path | str, name: str, dpi: int = 120) -> Path:
    """Lay out `figure`, write it as `outdir/name` (creating outdir), close it, and return the path."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    path = outdir / name
    figure.savefig(path, dpi=dpi)
    pyplot().close(figure)
    return path
