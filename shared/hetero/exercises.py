"""The exercises: id -> exercise file stem (`ex02` -> `ex02_kv_capacity`), in order.

Written by `python -m autograder release` from the instructor's manifest (autograder/core/manifest.py):
do not edit; `release --check` reports drift.
"""

EXERCISES: dict[str, str] = {
    "ex01": "ex01_cost_per_gb",
    "ex02": "ex02_kv_capacity",
    "ex03": "ex03_cache_pool",
    "ex04": "ex04_nic_line_rate",
    "ex05": "ex05_overload",
    "ex06": "ex06_expert_bytes",
    "ex07": "ex07_arithmetic_intensity",
    "ex08": "ex08_deferral_overlap",
    "ex09": "ex09_amx_tops",
    "ex10": "ex10_deferral_accuracy",
}
