"""The lecture driver: one JSON object on stdout, missing or broken exercises named (file:line), other parts
still run; `assignments` is the folder found from the current directory upward, printed, never another copy."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.core.manifest import BY_ID

ROOT = Path(__file__).resolve().parents[1]


def lecture(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hetero.lecture", *args], capture_output=True, text=True, cwd=ROOT, timeout=600
    )


@pytest.mark.parametrize("exp", ["01", "02", "03"])
def test_json_on_stubs_names_missing_exercises(exp):
    result = lecture(exp, "--impl", "assignments", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)  # exactly one JSON object: progress went to stderr
    assert data["experiment"] == exp and data["parts"]
    assert data["missing"], "with unfilled stubs some part must report a missing exercise"
    for key, message in data["missing"].items():
        assert "not implemented yet" in message and "ex" in message
        assert key not in data
    ran = [k for k in data["parts"] if k not in data["missing"]]
    for key in ran:
        assert isinstance(data[key], dict)


def test_unknown_impl_folder_is_a_clear_error():
    result = lecture("01", "--impl", "no/such/folder")
    assert result.returncode != 0 and "no such folder" in result.stderr, result.stderr


def test_text_mode_prints_tables_and_missing_note():
    result = lecture("01", "--impl", "assignments")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Experiment 01" in result.stdout and "missing" in result.stdout


def test_assignments_is_found_upward_and_the_folder_is_printed(tmp_path):
    work = tmp_path / "course" / "assignments"
    shutil.copytree(ROOT / "assignments", work, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    below = work / "tests"
    result = subprocess.run(  # --trust-impl: outside the course's folder, this copy is the test's own
        [sys.executable, "-m", "hetero.lecture", "01", "--json", "--trust-impl"],
        capture_output=True,
        text=True,
        cwd=below,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert data["impl_dir"] == str(work.resolve()), (
        f"from {below} the driver must read {work.resolve()} (the first assignments/ upward), read {data['impl_dir']}"
    )
    assert f"exercise files: {work.resolve()}" in result.stderr


def test_a_students_repository_is_refused_where_the_grader_is_installed(tmp_path):
    """Run inside a student's copy (its assignments/ is the first one upward), the default --impl is the
    student's code: where the grader is installed the driver refuses it, imports nothing, and names the
    sandboxed command to run from the course's folder."""
    repo = tmp_path / "alice"
    (repo / "assignments").mkdir(parents=True)
    marker = tmp_path / "imported.txt"
    for ex in ("ex01", "ex02"):
        code = (ROOT / "solutions" / BY_ID[ex].filename).read_text(encoding="utf-8")
        code += f"\nopen({str(marker)!r}, 'a').write('{ex} ran in the instructor\\'s process')\n"
        (repo / "assignments" / BY_ID[ex].filename).write_text(code, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "hetero.lecture", "01", "--json"], capture_output=True, text=True, cwd=repo, timeout=600
    )
    assert result.returncode != 0, "the student's assignments/ must not be imported by the instructor's driver"
    assert not marker.exists(), marker.read_text()
    assert f"cd {ROOT} && python -m autograder lecture" in result.stderr, result.stderr[-2000:]


def test_no_fallback_to_the_copy_beside_the_installed_package(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "hetero.lecture", "01"], capture_output=True, text=True, cwd=tmp_path, timeout=600
    )
    assert result.returncode != 0, "with no assignments/ here or above, the driver must not run another copy"
    assert "no folder assignments/" in result.stderr and str(tmp_path.resolve()) in result.stderr, result.stderr
    assert str(ROOT / "assignments") not in result.stdout + result.stderr


def test_a_broken_exercise_costs_only_its_parts(tmp_path):
    folder = tmp_path / "assignments"
    folder.mkdir()
    for name in ("ex01_cost_per_gb.py", "ex02_kv_capacity.py"):
        shutil.copyfile(ROOT / "solutions" / name, folder / name)
    (folder / "ex01_cost_per_gb.py").write_text(
        (ROOT / "solutions" / "ex01_cost_per_gb.py").read_text(encoding="utf-8") + "\ndef broken(:\n", encoding="utf-8"
    )
    ex02 = folder / "ex02_kv_capacity.py"
    ex02.write_text(
        ex02.read_text(encoding="utf-8").replace(
            "    return 2.0 * num_layers * num_kv_heads * head_dim * bytes_per_elem", "    return 1 / 0"
        ),
        encoding="utf-8",
    )
    result = lecture("01", "--impl", str(folder), "--trust-impl", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert re.search(r"ex01 failed at ex01_cost_per_gb\.py:\d+: SyntaxError", data["missing"]["cost"]), data["missing"]
    assert re.search(r"ex02 failed at ex02_kv_capacity\.py:\d+: ZeroDivisionError", data["missing"]["roofline"]), data[
        "missing"
    ]
    text = lecture("01", "--impl", str(folder), "--trust-impl")
    assert text.returncode == 0 and "ZeroDivisionError" in text.stdout and "Traceback" not in text.stderr


def _answer_key_folder(folder: Path) -> Path:
    folder.mkdir()
    for path in (ROOT / "solutions").glob("ex*.py"):
        shutil.copyfile(path, folder / path.name)
    return folder


def test_the_answer_keys_files_match_the_reference(tmp_path):
    folder = _answer_key_folder(tmp_path / "mine")
    text = lecture("01", "--impl", str(folder), "--trust-impl")
    assert text.returncode == 0, text.stderr[-2000:]
    assert "reference figures (answer key): " + str(ROOT / "assignments" / "reference_figures.json") in text.stderr
    assert "all agree within 1e-06 relative" in text.stdout, text.stdout[-3000:]
    assert "<- differs from the reference" not in text.stdout and "yours 187.5" not in text.stdout
    details = lecture("01", "--impl", str(folder), "--trust-impl", "--details")
    assert "usd_per_gb: yours 187.5, reference 187.5" in details.stdout, details.stdout[-3000:]
    data = json.loads(lecture("01", "--impl", str(folder), "--trust-impl", "--json").stdout)
    assert set(data["reference"]) == {"cost", "roofline", "kv_capacity"} and data["gaps"] == []


def test_a_wrong_exercise_is_marked_against_the_reference(tmp_path):
    folder = _answer_key_folder(tmp_path / "mine")
    ex01 = folder / "ex01_cost_per_gb.py"
    right = "    return price_usd / capacity_gb\n"
    assert right in ex01.read_text(encoding="utf-8")
    ex01.write_text(
        ex01.read_text(encoding="utf-8").replace(right, "    return 2 * price_usd / capacity_gb\n"), encoding="utf-8"
    )
    text = lecture("01", "--impl", str(folder), "--trust-impl")
    assert text.returncode == 0, text.stderr[-2000:]
    assert re.search(
        r"usd_per_gb: yours 375, reference 187\.5  <- differs from the reference: \+100\.0%", text.stdout
    ), text.stdout[-3000:]
    data = json.loads(lecture("01", "--impl", str(folder), "--trust-impl", "--json").stdout)
    assert any(
        g["part"] == "cost" and g["path"].endswith("usd_per_gb") and g["gap"] == "+100.0%" for g in data["gaps"]
    ), data["gaps"]


def test_a_unit_slip_of_seven_percent_is_marked(tmp_path):
    """Issue 31: ex01 computing GB as GiB (201.3 vs 187.5 $/GB, +7.4%) printed "all within 10%"."""
    folder = _answer_key_folder(tmp_path / "mine")
    ex01 = folder / "ex01_cost_per_gb.py"
    right = "    return price_usd / capacity_gb\n"
    ex01.write_text(
        ex01.read_text(encoding="utf-8").replace(right, "    return price_usd / (capacity_gb * 1e9 / 2**30)\n"),
        encoding="utf-8",
    )
    text = lecture("01", "--impl", str(folder), "--trust-impl")
    assert re.search(
        r"usd_per_gb: yours 201\.3, reference 187\.5  <- differs from the reference: \+7\.4%", text.stdout
    ), text.stdout[-3000:]


@pytest.mark.slow
def test_a_correct_submission_shows_no_gap_in_any_experiment(tmp_path):
    """The answer key's files in a folder of their own are a correct submission: no figure of any part of any
    experiment is off the reference, the MoE's included (evaluated on the release's model, not one trained
    here), and the deferral part says which model its table comes from."""
    folder = _answer_key_folder(tmp_path / "mine")
    data = json.loads(lecture("all", "--impl", str(folder), "--trust-impl", "--json").stdout)
    for exp, result in data.items():
        assert not result["missing"], (exp, result["missing"])
        assert result["gaps"] == [] and result["not_compared"] == {}, (exp, result["gaps"][:5], result["not_compared"])
        assert set(result["reference"]) == set(result["parts"]), exp
    assert data["03"]["deferral"]["model_source"] == "reference"


def test_no_reference_file_is_said_once_and_the_figures_still_print(tmp_path):
    folder = _answer_key_folder(tmp_path / "assignments")
    result = subprocess.run(  # --trust-impl: outside the course's folder, this copy is the test's own
        [sys.executable, "-m", "hetero.lecture", "01", "--trust-impl"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.count("no reference_figures.json") == 1 and str(folder) in result.stderr
    assert "Experiment 01" in result.stdout and "yours" not in result.stdout


def test_the_answer_key_itself_is_not_compared():
    result = lecture("01", "--impl", "solutions", "--json")
    data = json.loads(result.stdout)
    assert "reference" not in data and "gaps" not in data and "reference" not in result.stderr


def test_every_part_of_every_experiment_has_a_plot():
    import importlib

    from hetero.lecture import EXPERIMENTS

    parts = [p for _, modules in EXPERIMENTS.values() for m in modules for p in importlib.import_module(m).PARTS]
    assert parts and all(callable(p.plot) for p in parts), [p.key for p in parts if not callable(p.plot)]


def test_plots_of_every_part_that_ran_with_stub_ex08_and_ex10(tmp_path):
    """Issue 22: `lecture 03 --plots` wrote no PNG when ex08 and ex10 were stubs, though placement and amx ran."""
    folder = tmp_path / "work"
    folder.mkdir()
    for path in (ROOT / "solutions").glob("ex*.py"):
        stub = path.name.startswith(("ex08_", "ex10_"))
        shutil.copyfile((ROOT / "assignments" / path.name) if stub else path, folder / path.name)
    out = tmp_path / "plots"
    result = lecture("03", "--impl", str(folder), "--trust-impl", "--json", "--plots", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout)
    assert set(data["missing"]) == {"decode", "deferral"}, data["missing"]
    ran = [k for k in data["parts"] if k not in data["missing"]]
    assert ran == ["placement", "amx"], ran
    for key in ran:
        written = re.findall(rf"\[03\] {key}: wrote (\S+\.png)", result.stderr)
        assert written and all(Path(w).is_file() and Path(w).stat().st_size > 10_000 for w in written), (
            f"part {key} ran but wrote no plot:\n{result.stderr[-2000:]}"
        )
    assert sorted(p.name for p in out.glob("*.png")) == ["exp03_amx.png", "exp03_placement.png"]
