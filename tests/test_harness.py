"""hetero.harness: the one naming rule for grading inputs (`Gen`) and harnesses, and its refusals."""

from __future__ import annotations

import sys

import pytest

from hetero import harness
from hetero.checks import Case, Gen, decode, encode, run_call


def test_a_name_resolves_to_the_function_of_its_module():
    from hetero.harness import kvcache as hkv

    assert harness.resolve("kvcache.cluster") is hkv.cluster
    assert harness.build("kvcache.cluster", seed=3, num_instances=2, max_blocks=4, id_range=9) == hkv.cluster(
        seed=3, num_instances=2, max_blocks=4, id_range=9
    )


@pytest.mark.parametrize(
    "name",
    [
        "hetero.kvcache:dispatch_harness",
        "os.system",
        "kvcache",
        "kvcache.np",
        "kvcache._small_config",
        "kvcache.WorkloadConfig",
        "../kvcache.cluster",
        "nosuch.cluster",
        "kvcache.cluster.x",
        "",
    ],
)
def test_a_name_outside_the_package_or_its_all_is_refused(name):
    with pytest.raises(ValueError, match="grading name|has no"):
        harness.resolve(name)


def test_a_non_string_name_is_refused():
    with pytest.raises(ValueError, match="grading name"):
        harness.resolve(3)  # type: ignore[arg-type]


def test_gen_round_trips_through_the_case_encoding_and_expands_nested():
    spec = {"cluster": [Gen("kvcache.cluster", {"seed": 1, "num_instances": 2, "max_blocks": 3, "id_range": 5})]}
    assert decode(encode(spec)) == spec
    built = harness.expand(spec)
    assert isinstance(built["cluster"][0], list) and len(built["cluster"][0]) == 2


def test_an_unknown_harness_in_a_case_is_the_cases_error_not_a_crash():
    case = Case(id="ex03.x.y", func="x", harness="kvcache.nosuch")
    outcome = run_call(case, object())
    assert outcome.error_type == "ValueError" and "has no 'nosuch'" in outcome.error_message


def test_importing_the_case_format_imports_neither_torch_nor_a_simulator():
    code = (
        "import sys, hetero.checks; bad = [m for m in ('torch', 'hetero.kvcache', 'hetero.moe', "
        "'hetero.overload') if m in sys.modules]; print(bad)"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"hetero.checks must stay light (the sandbox imports it first): {out}"
