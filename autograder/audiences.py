"""Who installs this package where: each audience's Python versions, platforms and requirement set.

- Gradescope: the autograder zip targets Gradescope's Ubuntu 22.04 base image, whose python3 is 3.10
  (x86_64, glibc 2.35). setup.sh installs the zip's requirements.txt and requirements-torch.txt there.
- Students: the student bundle runs on laptops with Python 3.10 to 3.13 (numpy, matplotlib, torch,
  pytest; no grading tools).
- Instructors: this repository with every extra (nbgrader 0.9.6 and otter-grader need Python 3.11+).

`tests/test_pins_resolve.py` runs pip's resolver for each target below against exactly these
requirement sets (`pip install --dry-run --python-version --platform --only-binary=:all:`), so a pin
that an audience's Python cannot install fails the test suite. torch is looked up separately
(`pip index versions`): resolving it would download a several-hundred-MB wheel per target.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from autograder.manifest import ROOT

GRADESCOPE_IMAGE = "Gradescope base image Ubuntu 22.04 (python3 3.10, x86_64)"
LINUX_X86_64 = ("manylinux_2_35_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64",
                "manylinux2014_x86_64")


@dataclass(frozen=True)
class Target:
    audience: str  # gradescope | student | instructor
    python: str  # "3.10"
    platforms: tuple[str, ...] = LINUX_X86_64


TARGETS: tuple[Target, ...] = (
    Target("gradescope", "3.10"),
    Target("student", "3.10"), Target("student", "3.11"), Target("student", "3.12"), Target("student", "3.13"),
    Target("instructor", "3.11"), Target("instructor", "3.13"),
)


def _project_arrays() -> dict[str, list[str]]:
    """{"dependencies": [...], "<extra>": [...]} from pyproject.toml (the package's one list of pins).

    Instructor side only (Python 3.11+, where tomllib is in the standard library).
    """
    import tomllib  # novermin (instructor side only: Python 3.11+, as nbgrader 0.9.6 needs)

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return {"dependencies": list(project["dependencies"]), **project["optional-dependencies"]}


STUDENT_TOOLS = ("pytest", "pytest-timeout")  # what students run; the rest of the test extra is the package's own


def requirements(audience: str) -> list[str]:
    """The requirement lines an audience installs, torch included."""
    arrays = _project_arrays()
    if audience == "gradescope":
        from autograder.build import collect

        _, lines = collect()
        return list(lines)
    if audience == "student":
        tools = [r for r in arrays["test"] if re.split(r"[=<>!~;\[ ]", r, 1)[0] in STUDENT_TOOLS]
        return arrays["dependencies"] + tools
    if audience == "instructor":
        return arrays["dependencies"] + arrays["test"] + arrays["grading"]
    raise ValueError(f"unknown audience {audience!r}")
