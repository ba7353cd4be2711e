"""`python -m autograder fill-notebooks`: a folder of .py submissions into filled notebooks for nbgrader and Otter.

The released notebooks here are the package's own student notebooks (the same tagged exercise cell as
nbgrader's release and Otter's student notebook; the real tools run in the real_exports proof). Each
filled notebook must read back (`autograder.runtime.notebook_code.extract_code`, what the grader and
the exports' cells run) to exactly the student's file; a missing exercise gets no notebook; nothing a
student wrote is run.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from autograder.__main__ import main as cli
from autograder.batch import fill_notebooks
from autograder.core.manifest import BY_ID, ROOT
from autograder.exports import notebooks as nb
from autograder.runtime.notebook_code import extract_code
from autograder.selftest.attacks import disguised_copy

EXERCISES = ["ex01", "ex02"]


def _key(ex_id: str) -> str:
    return (ROOT / "solutions" / BY_ID[ex_id].filename).read_text(encoding="utf-8")


@pytest.fixture()
def submissions(tmp_path) -> tuple[Path, dict[str, dict[str, str]], Path]:
    subs, marker = tmp_path / "subs", tmp_path / "RAN"
    codes = {
        "alice": {"ex01": _key("ex01"), "ex02": disguised_copy(_key("ex02"))},
        "bob": {"ex01": _key("ex01")},
        "eve": {"ex01": f"open({str(marker)!r}, 'w').write('ran')\n" + _key("ex01")},
    }
    (subs / "alice").mkdir(parents=True)
    for ex, code in codes["alice"].items():
        (subs / "alice" / BY_ID[ex].filename).write_text(code)
    with zipfile.ZipFile(subs / "bob.zip", "w") as zf:  # a zip, a near-miss name, no ex02
        zf.writestr("work/ex01_cost_per_gb (1).py", codes["bob"]["ex01"])
    (subs / "eve").mkdir()
    (subs / "eve" / BY_ID["ex01"].filename).write_text(codes["eve"]["ex01"])
    return subs, codes, marker


def _release(folder: Path, layout: str) -> dict[str, Path]:
    made = {}
    for ex in EXERCISES:
        module = BY_ID[ex].module
        path = folder / (
            f"release/a2/{module}.ipynb" if layout == "nbgrader" else f"dist/{module}/student/{module}.ipynb"
        )
        made[ex] = nb.write_notebook(nb.student_notebook(nb.load_sources(ex)), path)
    return made


def test_nbgrader_layout_holds_each_students_code_and_nothing_runs(tmp_path, submissions, capsys):
    subs, codes, marker = submissions
    course = tmp_path / "course"
    _release(course, "nbgrader")
    assert cli(["fill-notebooks", str(subs), "--nbgrader", str(course)]) == 0
    printed = capsys.readouterr().out
    for student, exercises in codes.items():
        for ex, code in exercises.items():
            path = course / "submitted" / student / "a2" / f"{BY_ID[ex].module}.ipynb"
            assert path.is_file(), f"{student}'s {ex} notebook is where nbgrader autograde looks: {path}"
            assert extract_code(path, ex).strip() == code.strip(), (
                f"{student} {ex}: the notebook reads back to the file"
            )
    assert not (course / "submitted" / "bob" / "a2" / f"{BY_ID['ex02'].module}.ipynb").exists()
    assert "bob: 1 notebooks; missing ex02" in printed and "filled 4 notebooks for 3 students" in printed, printed
    assert not marker.exists(), "the tool read eve's code; it never ran it"
    release = json.loads((course / "release/a2" / f"{BY_ID['ex01'].module}.ipynb").read_text())
    filled = json.loads((course / "submitted/alice/a2" / f"{BY_ID['ex01'].module}.ipynb").read_text())
    assert len(filled["cells"]) == len(release["cells"]), "only the exercise cell changes: every test cell stays"


def test_otter_layout_is_what_otter_grade_reads(tmp_path, submissions):
    subs, codes, _ = submissions
    masters, out = tmp_path / "masters", tmp_path / "otter_subs"
    _release(masters, "otter")
    calls = []
    release = fill_notebooks.otter_release(masters, assign=lambda m: calls.append(m) or {})
    assert calls == [masters] and set(release) == set(EXERCISES)
    done, refused = fill_notebooks.fill(subs, release, lambda folder, ex: out / folder / f"{ex.module}.ipynb")
    assert refused == [] and {d.student: d.missing for d in done} == {"alice": [], "bob": ["ex02"], "eve": ["ex02"]}
    assert (
        extract_code(out / "alice" / f"{BY_ID['ex02'].module}.ipynb", "ex02").strip() == codes["alice"]["ex02"].strip()
    )


def test_a_course_without_a_release_is_refused_with_what_to_do(tmp_path, submissions, capsys):
    subs, _, _ = submissions
    assert cli(["fill-notebooks", str(subs), "--nbgrader", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "no released notebook" in err and "nbgrader generate_assignment a2" in err, err
    with pytest.raises(SystemExit):
        cli(["fill-notebooks", str(subs), "--otter", str(tmp_path)])  # --out is required with --otter
