"""Reading exact pins: requirement lines and the lock files in locks/ (name, version, marker).

What the zip builder checks its requirements against and what the lock tool compares after compiling;
reading only, no resolver (`autograder.packaging.locks` compiles the files).
"""

from __future__ import annotations

import re

from autograder.core.manifest import ROOT

LOCK_DIR = ROOT / "locks"
EXCLUDES = LOCK_DIR / "excludes.txt"
_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;]+)\s*(?:;\s*(.+))?")


def norm(name: str) -> str:
    """A distribution name as the lock files and pip compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse(text: str) -> list[tuple[str, str, str]]:
    """(normalized name, version, marker or "") for each pinned line of a lock file or requirement list."""
    pins = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        match = _PIN.fullmatch(line)
        if match:
            pins.append((norm(match.group(1)), match.group(2), (match.group(3) or "").strip()))
    return pins


def excluded() -> set[str]:
    """The normalized names in locks/excludes.txt."""
    return {
        norm(line.split("#", 1)[0].strip())
        for line in EXCLUDES.read_text(encoding="utf-8").splitlines()
        if line.split("#", 1)[0].strip()
    }


def mismatches(requirements: list[str], text: str) -> list[str]:
    """How a lock file's `text` disagrees with the exact pins `requirements` (a pin missing from it or
    locked at another version; an entry of locks/excludes.txt in it)."""
    locked: dict[str, set[str]] = {}
    for name, version, _ in parse(text):
        locked.setdefault(name, set()).add(version)
    found = []
    pinned: dict[str, set[str]] = {}
    for line in requirements:
        match = _PIN.fullmatch(line.strip())
        if not match:
            found.append(f"{line!r} is not an exact pin (name==version)")
            continue
        name, version = norm(match.group(1)), match.group(2)
        pinned.setdefault(name, set()).add(version)
        if version not in locked.get(name, set()):
            found.append(f"{name}=={version} is pinned but the lock has {sorted(locked.get(name, set())) or 'none'}")
    for name, versions in sorted(locked.items()):
        if name in pinned and versions - pinned[name]:
            found.append(f"{name}: the lock has {sorted(versions - pinned[name])}, pinned {sorted(pinned[name])}")
    return found + [f"{name} is in locks/excludes.txt but in the lock" for name in sorted(excluded() & set(locked))]
