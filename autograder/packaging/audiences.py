"""Who installs this package where: each audience's Python versions, platforms and requirement set.

- Gradescope: the autograder zip targets Gradescope's Ubuntu 22.04 base image, whose python3 is 3.10
  (x86_64, glibc 2.35). setup.sh installs the zip's requirements.txt and requirements-torch.txt there.
- Students: the student bundle runs on laptops with Python 3.10 to 3.13 (numpy, matplotlib, torch,
  pytest; no grading tools): the pins `autograder.packaging.bundle` writes into the student's pyproject.toml.
- Instructors: this repository with every extra (nbgrader 0.9.6 and otter-grader need Python 3.11+).

`tests/test_pins_resolve.py` runs pip's resolver for each target below against exactly these
requirement sets (`pip install --dry-run --python-version --platform --only-binary=:all:`), so a pin
that an audience's Python cannot install fails the test suite. torch is looked up separately
(`pip index versions`): resolving it would download a several-hundred-MB wheel per target.
The instructor and Gradescope sets are also what `autograder.packaging.locks` compiles into locks/.
"""

from __future__ import annotations

from dataclasses import dataclass

LINUX_X86_64 = ("manylinux_2_35_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")


@dataclass(frozen=True)
class Target:
    audience: str  # gradescope | student | instructor
    python: str  # "3.10"
    platforms: tuple[str, ...] = LINUX_X86_64


TARGETS: tuple[Target, ...] = (
    Target("gradescope", "3.10"),
    Target("student", "3.10"),
    Target("student", "3.11"),
    Target("student", "3.12"),
    Target("student", "3.13"),
    Target("instructor", "3.11"),
    Target("instructor", "3.13"),
)


def requirements(audience: str) -> list[str]:
    """The requirement lines an audience installs, torch included."""
    if audience == "gradescope":
        from autograder.packaging.build import shipped_requirements

        reqs, torch = shipped_requirements()
        return reqs + torch
    if audience == "student":
        from autograder.packaging.bundle import student_requirements

        return student_requirements()
    if audience == "instructor":
        from autograder.packaging.build import project_arrays

        arrays = project_arrays()
        return arrays["dependencies"] + arrays["test"] + arrays["grading"]
    raise ValueError(f"unknown audience {audience!r}")
