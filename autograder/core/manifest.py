"""The one declaration of how the ten exercises are graded: points, tests, visibility, limits.

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

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VISIBILITY_LEVELS = ("hidden", "after_due_date", "after_published", "visible")


def public_cases_in(folder: Path, ex_id: str) -> Path:
    """Where an exercise's public cases are inside `folder`, the answer key `solutions/` or the release
    `assignments/` (the release copies them unchanged): `tests/public_exNN.py`."""
    return Path(folder) / "tests" / f"public_{ex_id}.py"


@dataclass(frozen=True)
class Exercise:
    id: str  # "ex02": the task id in stubs, exceptions, pytest markers and Gradescope test names
    module: str  # file stem in solutions/ and assignments/
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
        "ex01",
        "ex01_cost_per_gb",
        "What a dollar buys: $/GB, $/(GB/s), per-$1000 purchases",
        "§1.2, §7 Q1",
        6,
        0.4,
        20,
        20,
        2048,
        terms="算力 / compute, 带宽 / bandwidth, 容量 / capacity",
    ),
    Exercise(
        "ex02",
        "ex02_kv_capacity",
        "KV bytes per token and how many tokens fit in HBM",
        "§1.2, §2.2, §7 Q2",
        10,
        0.4,
        20,
        20,
        2048,
        terms="KV 缓存 / KV cache, 显存 / HBM, 余量 / headroom, 分组查询注意力 / grouped-query attention (GQA)",
    ),
    Exercise(
        "ex03",
        "ex03_cache_pool",
        "Local vs global KV cache: duplication, effective capacity, TTFT-aware dispatch",
        "§2.1, §2.3, §7 Q3",
        12,
        0.4,
        60,
        60,
        3072,
        terms="全局缓存池 / global cache pool, 本地缓存 / local cache, 轮流派发 / round-robin dispatch, 有效容量 / effective capacity, 前缀命中 / prefix hit",
    ),
    Exercise(
        "ex04",
        "ex04_nic_line_rate",
        "Transfer engine: NIC line rate, efficiency, transfer vs recompute",
        "§2.4, §7 Q4",
        6,
        0.4,
        20,
        20,
        2048,
        terms="传输引擎 / transfer engine, 线速 / line rate, 网卡 / NIC, 用存储换计算 / trading storage for compute",
    ),
    Exercise(
        "ex05",
        "ex05_overload",
        "Prediction-based early rejection and the anti-phase oscillation",
        "§3.2, §7 Q5",
        14,
        0.4,
        90,
        90,
        3072,
        case_timeout_s=20.0,
        terms="提前拒绝 / early rejection, 按预测拒绝 / prediction-based rejection, 反相位振荡 / anti-phase oscillation, 过载 / overload",
    ),
    Exercise(
        "ex06",
        "ex06_expert_bytes",
        "Expert bytes per token and the CPU decode bound",
        "§4.2, §4.3, §7 Q6",
        8,
        0.4,
        20,
        20,
        2048,
        terms="路由专家 / routed expert, 量化 / quantisation, 解码 / decode, 内存带宽 / memory bandwidth",
    ),
    Exercise(
        "ex07",
        "ex07_arithmetic_intensity",
        "Tokens per expert at batch B and the offload order",
        "§4.2, §7 Q7",
        8,
        0.4,
        20,
        20,
        2048,
        terms="算术强度 / arithmetic intensity, 卸载 / offload, 共享专家 / shared expert",
    ),
    Exercise(
        "ex08",
        "ex08_deferral_overlap",
        "Expert deferral: the CPU/GPU overlap model",
        "§4.3, §7 Q8",
        10,
        0.4,
        20,
        20,
        2048,
        terms="专家推迟 / expert deferral, 重叠 / overlap, 残差流 / residual stream",
    ),
    Exercise(
        "ex09",
        "ex09_amx_tops",
        "AMX: ops per instruction, peak TOPS, prefill time",
        "§4.5, §7 Q9",
        6,
        0.4,
        20,
        20,
        2048,
        terms="矩阵扩展 / AMX, 峰值 / peak, 预填充 / prefill",
    ),
    Exercise(
        "ex10",
        "ex10_deferral_accuracy",
        "Skip vs defer on the small MoE",
        "§4.4",
        20,
        0.4,
        120,
        120,
        4096,
        case_timeout_s=30.0,
        terms="专家推迟 / expert deferral, 跳过 / skip, 残差流 / residual stream, 毫 nat / milli-nat",
    ),
)

BY_ID: dict[str, Exercise] = {e.id: e for e in EXERCISES}


def check() -> None:
    """Fail loudly if the manifest is inconsistent (run by the test suite)."""
    total = sum(e.points for e in EXERCISES)
    if abs(total - 100) > 1e-9:
        raise ValueError(f"exercise points total {total}, not 100")
    for e in EXERCISES:
        for level in (e.public_visibility, e.hidden_visibility, e.hidden_detail_visibility or "hidden"):
            if level not in VISIBILITY_LEVELS:
                raise ValueError(f"{e.id}: unknown visibility {level!r}")
        if not 0 < e.case_timeout_s <= e.timeout_s:
            raise ValueError(f"{e.id}: case_timeout_s must lie in (0, timeout_s]")
        if not 0 <= e.public_share <= 1:
            raise ValueError(f"{e.id}: public_share must lie in [0, 1]")
