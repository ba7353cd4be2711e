"""The one declaration of the exercises: one keyword entry each — id, file, functions, points, limits.

A maintainer adds an exercise by writing its solution file, public cases, hidden cases and entry here,
then `make release` (`python -m autograder new-exercise exNN_slug` writes the first three from
templates); everything else derives from this table: the release and its handout counts, `hetero`'s
exercise list (`shared/hetero/exercises.py`, written by the release), pytest markers, Gradescope test
names, the zip, the exports. The table is validated when this module is imported (ids, points adding
up to exactly 100, positive limits, known visibilities): a bad entry stops every command, release and
build included, with the manifest's file and line. `check_files` adds what needs the answer key
(solution, case files and functions exist and agree: `autograder.core.cases.check_files`), run by
release, build and the tests.

Everything that scores or exports an exercise reads this module: the release tool (which files a
student gets), the grader (points, time and memory limits, visibility in results.json), the
Gradescope builder and the nbgrader / Otter exports. Points total 100.

Per exercise, `public_share` of the points come from the public cases (the ones students run
locally: `solutions/tests/public_exNN.py`, released to `assignments/tests/`) and the rest from the
hidden cases (`autograder/tests/exNN_hidden.py`, never released). Inside each share, points are
split in exact hundredths in proportion to each case's `points` weight, and a passed case pays only
when its function is shown to compute (`autograder.core.scoring`).

Visibility uses Gradescope's four levels (hidden, after_due_date, after_published, visible):
`public_visibility` for the public-case entries; `hidden_visibility` for the hidden-case entries (fixed
words: the likely mistake, never the inputs or the expected value). `hidden_detail_visibility` is
None by default: no entry shows the hidden inputs and expected values. Setting it (for instance to
"after_due_date") adds a zero-point entry that does; on Gradescope every later submission of the same
student can read earlier results, so from that level on the hidden cases are no longer hidden.

Limits: `timeout_s` and `cpu_s` bound one exercise's whole child process, `case_timeout_s` one case's
call (a loop costs only that case), `memory_mib` its address space (MiB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VISIBILITY_LEVELS = ("hidden", "after_due_date", "after_published", "visible")


def public_cases_in(folder: Path, ex_id: str) -> Path:
    """Where an exercise's public cases are inside `folder`, the answer key `solutions/` or the release
    `assignments/` (the release copies them unchanged): `tests/public_exNN.py`."""
    return Path(folder) / "tests" / f"public_{ex_id}.py"


@dataclass(frozen=True, kw_only=True)
class Exercise:
    id: str  # "ex02": the task id in stubs, exceptions, pytest markers and Gradescope test names
    module: str  # file stem in solutions/ and assignments/: `<id>_<slug>`
    functions: tuple[str, ...]  # the functions students write, in file order; each has public and hidden cases
    title: str
    lecture: str  # lecture section(s) the exercise comes from
    points: float
    public_share: float  # fraction of `points` earned by the public cases
    timeout_s: float  # wall-clock limit for all of this exercise's cases in one child process
    cpu_s: float  # CPU-time limit (RLIMIT_CPU) for that process
    memory_mib: int  # address-space limit for that process
    public_visibility: str = "visible"
    hidden_visibility: str = "visible"
    hidden_detail_visibility: str | None = None  # opt-in entry with the hidden inputs and expected values
    terms: str = ""  # the lecture's Chinese terms beside the English ones, for the handout
    case_timeout_s: float = 10.0  # wall-clock limit for one case's call: a loop costs only that case

    @property
    def filename(self) -> str:
        return f"{self.module}.py"

    @property
    def hidden_cases_path(self) -> Path:
        return ROOT / "autograder" / "tests" / f"{self.id}_hidden.py"


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        id="ex01",
        module="ex01_cost_per_gb",
        functions=("usd_per_gb", "usd_per_gb_per_s", "per_thousand_usd"),
        title="What a dollar buys: $/GB, $/(GB/s), per-$1000 purchases",
        lecture="§1.2, §7 Q1",
        points=6,
        public_share=0.4,
        timeout_s=20,
        cpu_s=20,
        memory_mib=2048,
        terms="算力 / compute, 带宽 / bandwidth, 容量 / capacity",
    ),
    Exercise(
        id="ex02",
        module="ex02_kv_capacity",
        functions=("kv_bytes_per_token", "hbm_for_kv_bytes", "kv_capacity_tokens", "requests_that_fit"),
        title="KV bytes per token and how many tokens fit in HBM",
        lecture="§1.2, §2.2, §7 Q2",
        points=10,
        public_share=0.4,
        timeout_s=20,
        cpu_s=20,
        memory_mib=2048,
        terms="KV 缓存 / KV cache, 显存 / HBM, 余量 / headroom, 分组查询注意力 / grouped-query attention (GQA)",
    ),
    Exercise(
        id="ex03",
        module="ex03_cache_pool",
        functions=("effective_capacity_blocks", "duplication_factor", "ttft_dispatch"),
        title="Local vs global KV cache: duplication, effective capacity, TTFT-aware dispatch",
        lecture="§2.1, §2.3, §7 Q3",
        points=12,
        public_share=0.4,
        timeout_s=60,
        cpu_s=60,
        memory_mib=3072,
        terms="全局缓存池 / global cache pool, 本地缓存 / local cache, 轮流派发 / round-robin dispatch, 有效容量 / effective capacity, 前缀命中 / prefix hit",
    ),
    Exercise(
        id="ex04",
        module="ex04_nic_line_rate",
        functions=("line_rate_gb_per_s", "link_efficiency", "transfer_time_s", "speedup_over_recompute"),
        title="Transfer engine: NIC line rate, efficiency, transfer vs recompute",
        lecture="§2.4, §7 Q4",
        points=6,
        public_share=0.4,
        timeout_s=20,
        cpu_s=20,
        memory_mib=2048,
        terms="传输引擎 / transfer engine, 线速 / line rate, 网卡 / NIC, 用存储换计算 / trading storage for compute",
    ),
    Exercise(
        id="ex05",
        module="ex05_overload",
        functions=("predicted_decode_load", "admit_predictive", "antiphase_correlation", "dominant_period_s"),
        title="Prediction-based early rejection and the anti-phase oscillation",
        lecture="§3.2, §7 Q5",
        points=14,
        public_share=0.4,
        timeout_s=90,
        cpu_s=90,
        memory_mib=3072,
        case_timeout_s=20.0,
        terms="提前拒绝 / early rejection, 按预测拒绝 / prediction-based rejection, 反相位振荡 / anti-phase oscillation, 过载 / overload",
    ),
    Exercise(
        id="ex06",
        module="ex06_expert_bytes",
        functions=("expert_params", "expert_bytes_per_token", "decode_tokens_per_s_bound"),
        title="Expert bytes per token and the CPU decode bound",
        lecture="§4.2, §4.3, §7 Q6",
        points=8,
        public_share=0.4,
        timeout_s=20,
        cpu_s=20,
        memory_mib=2048,
        terms="路由专家 / routed expert, 量化 / quantisation, 解码 / decode, 内存带宽 / memory bandwidth",
    ),
    Exercise(
        id="ex07",
        module="ex07_arithmetic_intensity",
        functions=("tokens_per_routed_expert", "tokens_per_shared_expert", "offload_order"),
        title="Tokens per expert at batch B and the offload order",
        lecture="§4.2, §7 Q7",
        points=8,
        public_share=0.4,
        timeout_s=20,
        cpu_s=20,
        memory_mib=2048,
        terms="算术强度 / arithmetic intensity, 卸载 / offload, 共享专家 / shared expert",
    ),
    Exercise(
        id="ex08",
        module="ex08_deferral_overlap",
        functions=("layer_time_s", "best_deferred", "deferral_speedup"),
        title="Expert deferral: the CPU/GPU overlap model",
        lecture="§4.3, §7 Q8",
        points=10,
        public_share=0.4,
        timeout_s=20,
        cpu_s=20,
        memory_mib=2048,
        terms="专家推迟 / expert deferral, 重叠 / overlap, 残差流 / residual stream",
    ),
    Exercise(
        id="ex09",
        module="ex09_amx_tops",
        functions=(
            "amx_ops_per_instruction",
            "ops_per_cycle_per_core",
            "peak_tops",
            "fraction_of_peak",
            "prefill_expert_time_s",
        ),
        title="AMX: ops per instruction, peak TOPS, prefill time",
        lecture="§4.5, §7 Q9",
        points=6,
        public_share=0.4,
        timeout_s=20,
        cpu_s=20,
        memory_mib=2048,
        terms="矩阵扩展 / AMX, 峰值 / peak, 预填充 / prefill",
    ),
    Exercise(
        id="ex10",
        module="ex10_deferral_accuracy",
        functions=("lowest_k_mask", "split_topk_weights", "moe_residual_update"),
        title="Skip vs defer on the small MoE",
        lecture="§4.4",
        points=20,
        public_share=0.4,
        timeout_s=120,
        cpu_s=120,
        memory_mib=4096,
        case_timeout_s=30.0,
        terms="专家推迟 / expert deferral, 跳过 / skip, 残差流 / residual stream, 毫 nat / milli-nat",
    ),
)

BY_ID: dict[str, Exercise] = {e.id: e for e in EXERCISES}


MANIFEST = Path(__file__).resolve()
POINTS_TOTAL = 100.0
ID_RE = re.compile(r"ex\d\d")
# The answer key's solution-block markers, spelled in two: the zip refuses a file holding the marker text.
BEGIN = "# BEGIN" + " SOLUTION"
END = "# END" + " SOLUTION"


class ManifestError(ValueError):
    """The manifest (or a file it names) is wrong; the message names the file and line to edit."""


def entry_line(ex_id: str) -> int:
    """The line of `id="exNN"` in this file (1 when it cannot be found)."""
    text = MANIFEST.read_text(encoding="utf-8")
    match = re.search(rf'^\s*id="{re.escape(ex_id)}"', text, re.M)
    return text[: match.start()].count("\n") + 1 if match else 1


def where(ex_id: str | None = None) -> str:
    """`autograder/core/manifest.py:LINE` of an entry (or the file alone): where to edit."""
    rel = MANIFEST.relative_to(ROOT) if MANIFEST.is_relative_to(ROOT) else MANIFEST
    return f"{rel}:{entry_line(ex_id)}" if ex_id else str(rel)


def problems(exercises: tuple[Exercise, ...]) -> list[str]:
    """What is wrong with the table itself, each naming the file and line to edit (empty: nothing)."""
    found: list[str] = []
    seen: set[str] = set()
    for e in exercises:
        here = where(e.id)
        if not ID_RE.fullmatch(e.id):
            found.append(f"{here}: id {e.id!r} is not exNN (two digits)")
        if e.id in seen:
            found.append(f"{here}: id {e.id} is declared twice")
        seen.add(e.id)
        if not re.fullmatch(rf"{re.escape(e.id)}_[a-z0-9_]+", e.module):
            found.append(f"{here}: module {e.module!r} must be {e.id}_<slug> (lower case, digits, underscores)")
        if not e.functions or len(set(e.functions)) != len(e.functions):
            found.append(f"{here}: functions must name each exercise function once")
        if not e.points > 0:
            found.append(f"{here}: points must be positive, got {e.points}")
        for name in ("timeout_s", "cpu_s", "memory_mib", "case_timeout_s"):
            if not getattr(e, name) > 0:
                found.append(f"{here}: {name} must be positive, got {getattr(e, name)}")
        if not e.case_timeout_s <= e.timeout_s:
            found.append(f"{here}: case_timeout_s ({e.case_timeout_s}) exceeds timeout_s ({e.timeout_s})")
        if not 0 <= e.public_share <= 1:
            found.append(f"{here}: public_share must lie in [0, 1], got {e.public_share}")
        for level in (e.public_visibility, e.hidden_visibility, e.hidden_detail_visibility or "hidden"):
            if level not in VISIBILITY_LEVELS:
                found.append(f"{here}: unknown visibility {level!r} (one of {', '.join(VISIBILITY_LEVELS)})")
    total = sum(e.points for e in exercises)
    if abs(total - POINTS_TOTAL) > 1e-9:
        entries = ", ".join(f"{e.id} {e.points:g} (line {entry_line(e.id)})" for e in exercises)
        found.append(
            f"{where()}: the exercises' points add up to {total:g}, not {POINTS_TOTAL:g}; the entries' points: {entries}"
        )
    return found


_problems = problems(EXERCISES)
if _problems:
    raise ManifestError("the manifest does not hold:\n  " + "\n  ".join(_problems))
