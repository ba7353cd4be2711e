"""`python -m autograder pack`: the student's packing tool, which lives in `hetero.pack` so that the
student's copy (which holds `hetero` and no grader) ships it too; see that module for what it does."""

from __future__ import annotations

from hetero.pack import ZIP_DATE, FileStatus, inspect_file, inspect_folder, main, pack, stub_functions

__all__ = ["ZIP_DATE", "FileStatus", "inspect_file", "inspect_folder", "main", "pack", "stub_functions"]
