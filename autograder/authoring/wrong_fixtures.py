"""The wrong fixtures: realistic student mistakes, each declared as a small edit of the answer key.

A `WrongFixture` is one mistake a student could make in one exercise:
- `name` ("exNN_<slug>") keys it everywhere: the `mistakes` of autograder/expected/exNN.json (so the
  feedback can say "Your result matches a known mistake: <mistake>"), autograder/fixtures/wrong_scores.json,
  the demo's submission names;
- `mistake` is the sentence the feedback and the docs use;
- `edits` are exact replacements of code lines of the answer key `solutions/exNN_*.py` (old text -> new
  text, inside the function the mistake is about; never docstrings, which other changes may reword).

`source(name)` is the file a student with that mistake would hand in: the answer key with the edits
applied, its `# BEGIN SOLUTION` / `# END SOLUTION` marker lines dropped, and a module docstring that
starts with `MISTAKE: <mistake>`. Each `old` text must occur exactly once in the answer key, or
materialising raises `StaleFixture`: when the key changes under a declaration, the fixture fails loudly
instead of silently testing nothing. `materialise(name, dest_dir)` writes that file into `dest_dir`;
`materialise_all(dest_dir)` writes every fixture as `dest_dir/<name>/<exNN file>`, a one-exercise
submission folder.

The declarations are Python data rather than JSON because they are source code: one string per source
line, quoted as in the exercise files, reads (and diffs) like the code it edits. The module holds
answer-key lines, so it is an authoring tool that never ships in the Gradescope zip
(it is not in the runtime's import closure, `autograder.packaging.build.grader_modules`, and `FORBIDDEN_PREFIXES` refuses it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder.core.manifest import BEGIN, BY_ID, END, ROOT

NOTE = "A copy of {filename} with this one mistake (a wrong submission used to test the grader)."


class StaleFixture(RuntimeError):
    """A declared edit no longer fits the answer key (its old text is missing or not unique)."""


@dataclass(frozen=True)
class Edit:
    old: str  # exact text of the answer key, found exactly once in its file
    new: str


@dataclass(frozen=True)
class WrongFixture:
    name: str
    exercise: str
    mistake: str
    edits: tuple[Edit, ...]

    def __post_init__(self) -> None:
        if self.exercise not in BY_ID or not self.name.startswith(f"{self.exercise}_"):
            raise ValueError(f"{self.name}: the name must be '<exercise>_<slug>' for a known exercise")
        if not self.mistake or not self.edits or any(e.old == e.new for e in self.edits):
            raise ValueError(f"{self.name}: needs a mistake sentence and at least one edit that changes the key")

    @property
    def filename(self) -> str:
        return BY_ID[self.exercise].filename


def source(name: str, root: Path = ROOT) -> str:
    """The text of the wrong submission `name`, built from `root`/solutions/ (StaleFixture if it cannot be)."""
    fixture = BY_NAME[name]
    path = root / "solutions" / fixture.filename
    key = path.read_text(encoding="utf-8")
    stale = [f"{e.old!r} occurs {key.count(e.old)} times" for e in fixture.edits if key.count(e.old) != 1]
    if stale or not key.startswith('"""'):
        why = stale or ["the file does not start with its module docstring"]
        raise StaleFixture(
            f"wrong fixture {name} does not fit {path}: "
            + "; ".join(why)
            + " (update its edits in autograder/authoring/wrong_fixtures.py)"
        )
    text = key
    for edit in fixture.edits:
        if text.count(edit.old) != 1:
            raise StaleFixture(f"wrong fixture {name}: its edits overlap at {edit.old!r}")
        text = text.replace(edit.old, edit.new, 1)
    kept = [line for line in text.splitlines(keepends=True) if not line.strip().startswith((BEGIN, END))]
    head = f'"""MISTAKE: {fixture.mistake}\n\n{NOTE.format(filename=fixture.filename)}\n\n'
    return head + "".join(kept)[len('"""') :]


def materialise(name: str, dest_dir: Path, root: Path = ROOT) -> Path:
    """Write the wrong submission `name` as `dest_dir`/<exNN file> (folders created); return its path."""
    text = source(name, root)
    dest_dir.mkdir(parents=True, exist_ok=True)
    path = dest_dir / BY_NAME[name].filename
    path.write_text(text, encoding="utf-8")
    return path


def materialise_all(dest_dir: Path, root: Path = ROOT) -> dict[str, Path]:
    """Every fixture as `dest_dir`/<name>/<exNN file>; {name: written file}."""
    return {f.name: materialise(f.name, dest_dir / f.name, root) for f in FIXTURES}


def for_exercise(ex_id: str) -> list[WrongFixture]:
    """The fixtures of one exercise, sorted by name."""
    return [f for f in FIXTURES if f.exercise == ex_id]


FIXTURES: tuple[WrongFixture, ...] = (
    WrongFixture(
        "ex01_finite_only",
        "ex01",
        "the input checks only reject nan and infinity, so zero or negative prices and sizes give "
        "ZeroDivisionError or negative results instead of ValueError.",
        (
            Edit(
                '    for name, value in (("price_usd", price_usd), ("capacity_gb", capacity_gb)):\n'
                "        if not (math.isfinite(value) and value > 0):\n",
                '    for name, value in (("price_usd", price_usd), ("capacity_gb", capacity_gb)):\n'
                "        if not (math.isfinite(value)):\n",
            ),
            Edit(
                '    for name, value in (("price_usd", price_usd), ("bandwidth_gb_per_s", bandwidth_gb_per_s)):\n'
                "        if not (math.isfinite(value) and value > 0):\n",
                '    for name, value in (("price_usd", price_usd), ("bandwidth_gb_per_s", bandwidth_gb_per_s)):\n'
                "        if not (math.isfinite(value)):\n",
            ),
            Edit(
                '                        ("bandwidth_gb_per_s", bandwidth_gb_per_s), ("capacity_gb", capacity_gb)):\n'
                "        if not (math.isfinite(value) and value > 0):\n",
                '                        ("bandwidth_gb_per_s", bandwidth_gb_per_s), ("capacity_gb", capacity_gb)):\n'
                "        if not (math.isfinite(value)):\n",
            ),
        ),
    ),
    WrongFixture(
        "ex01_gib",
        "ex01",
        "usd_per_gb converts the capacity to GiB before dividing (an 80 GB card counted as 74.5 GiB).",
        (Edit("    return price_usd / capacity_gb\n", "    return price_usd / (capacity_gb * 1e9 / 2**30)\n"),),
    ),
    WrongFixture(
        "ex01_inverted_bandwidth",
        "ex01",
        "usd_per_gb_per_s divides the bandwidth by the price (GB/s per dollar) instead of the price by the bandwidth.",
        (Edit("    return price_usd / bandwidth_gb_per_s\n", "    return bandwidth_gb_per_s / price_usd\n"),),
    ),
    WrongFixture(
        "ex01_per_dollar",
        "ex01",
        "per_thousand_usd returns what one dollar buys instead of what $1000 buys (the factor 1000 is missing).",
        (
            Edit(
                "    thousands = price_usd / 1000.0  # how many $1000 the device costs\n",
                "    thousands = price_usd  # how many dollars the device costs\n",
            ),
        ),
    ),
    WrongFixture(
        "ex02_fractional_tokens",
        "ex02",
        "kv_capacity_tokens returns the fractional number of tokens (a float) instead of the whole tokens "
        "that fit (an int, rounded down).",
        (
            Edit(
                "    return math.floor(free_bytes / kv_bytes_per_token)\n",
                "    return free_bytes / kv_bytes_per_token\n",
            ),
        ),
    ),
    WrongFixture(
        "ex02_gib_hbm",
        "ex02",
        "hbm_for_kv_bytes treats an '80 GB' card as 80 GiB (80 x 2**30 bytes) instead of 80e9 bytes.",
        (
            Edit(
                "    total_bytes = num_gpus * hbm_per_gpu_gb * 1e9\n",
                "    total_bytes = num_gpus * hbm_per_gpu_gb * 2**30\n",
            ),
        ),
    ),
    WrongFixture(
        "ex02_headroom_first",
        "ex02",
        "hbm_for_kv_bytes takes the headroom off the total HBM before subtracting the weights (435 GB "
        "instead of 449 GB in the lecture's example).",
        (
            Edit(
                "    return (total_bytes - weight_bytes) * (1.0 - headroom_frac)\n",
                "    return total_bytes * (1.0 - headroom_frac) - weight_bytes\n",
            ),
        ),
    ),
    WrongFixture(
        "ex02_k_only",
        "ex02",
        "kv_bytes_per_token counts only the key vector: the factor 2 for K and V is missing.",
        (
            Edit(
                "    return 2.0 * num_layers * num_kv_heads * head_dim * bytes_per_elem  # 2: one K and one V\n",
                "    return 1.0 * num_layers * num_kv_heads * head_dim * bytes_per_elem\n",
            ),
        ),
    ),
    WrongFixture(
        "ex02_round_nearest",
        "ex02",
        "requests_that_fit rounds to the nearest whole request (160 in the lecture's example) instead of "
        "rounding down (159).",
        (
            Edit(
                "    return math.floor(capacity_tokens / mean_tokens_per_request)\n",
                "    return round(capacity_tokens / mean_tokens_per_request)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex02_weights_unchecked",
        "ex02",
        "hbm_for_kv_bytes does not check that the weights fit, so it returns a negative KV budget instead "
        "of raising ValueError.",
        (
            Edit(
                "    if weight_bytes > total_bytes:\n"
                '        raise ValueError(f"weight_bytes {weight_bytes:.4g} B do not fit in {total_bytes:.4g} B of HBM")\n',
                "",
            ),
        ),
    ),
    WrongFixture(
        "ex03_duplication_inverted",
        "ex03",
        "duplication_factor returns distinct / total (0.125 for 8 copies) instead of total / distinct.",
        (Edit("    return total / len(distinct)\n", "    return len(distinct) / total\n"),),
    ),
    WrongFixture(
        "ex03_ignores_pool",
        "ex03",
        "ttft_dispatch ignores the global pool: an instance reuses only its own hit blocks and recomputes "
        "what it could have fetched.",
        (Edit("        reused = max(hit, pool_hit_blocks)\n", "        reused = hit\n"),),
    ),
    WrongFixture(
        "ex03_ignores_queue",
        "ex03",
        "ttft_dispatch ignores the queued work and sends each request where the most blocks are reusable "
        "(pure cache affinity).",
        (
            Edit(
                "        estimates.append(queued + transfer + (request_blocks - reused))\n",
                "        estimates.append(transfer + (request_blocks - reused))\n",
            ),
        ),
    ),
    WrongFixture(
        "ex03_ties_highest",
        "ex03",
        "ttft_dispatch breaks ties toward the highest instance index instead of the lowest.",
        (
            Edit(
                "    return next(i for i, estimate in enumerate(estimates) if estimate <= best + TIE_TOLERANCE)\n",
                "    return max(i for i, estimate in enumerate(estimates) if estimate <= best + TIE_TOLERANCE)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex03_total_not_distinct",
        "ex03",
        "effective_capacity_blocks counts every block held, so copies on several instances are counted "
        "again (total instead of distinct).",
        (
            Edit(
                "    distinct: set[int] = set()\n"
                "    for blocks in instance_blocks:\n"
                "        distinct.update(blocks)\n"
                "    return len(distinct)\n",
                "    return sum(len(blocks) for blocks in instance_blocks)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex03_transfer_free",
        "ex03",
        "ttft_dispatch treats pool fetches as free: the transfer time of the pool blocks an instance lacks "
        "is left out of its estimate.",
        (
            Edit(
                "        transfer = (reused - hit) / transfer_blocks_per_prefill_block\n"
                "        estimates.append(queued + transfer + (request_blocks - reused))\n",
                "        estimates.append(queued + (request_blocks - reused))\n",
            ),
        ),
    ),
    WrongFixture(
        "ex03_transfer_multiplied",
        "ex03",
        "ttft_dispatch multiplies the blocks to transfer by transfer_blocks_per_prefill_block instead of "
        "dividing by it (a rate, not a cost).",
        (
            Edit(
                "        transfer = (reused - hit) / transfer_blocks_per_prefill_block\n",
                "        transfer = (reused - hit) * transfer_blocks_per_prefill_block\n",
            ),
        ),
    ),
    WrongFixture(
        "ex04_above_line_rate",
        "ex04",
        "link_efficiency accepts a measurement above line rate (mixed Gb/s and GB/s) and returns an "
        "efficiency above 1 instead of raising ValueError.",
        (
            Edit(
                "    if measured_gb_per_s > line_rate_gb_per_s:\n"
                '        raise ValueError(f"measured_gb_per_s {measured_gb_per_s} exceeds line_rate_gb_per_s "\n'
                '                         f"{line_rate_gb_per_s}: check the units (Gb/s vs GB/s)")\n',
                "",
            ),
        ),
    ),
    WrongFixture(
        "ex04_bits_as_bytes",
        "ex04",
        "line_rate_gb_per_s forgets that NIC rates are in bits: it returns Gb/s (800 for 4 x 200 Gb/s) "
        "instead of GB/s (100).",
        (Edit("    return num_nics * gbit_per_s_per_nic / 8.0\n", "    return num_nics * gbit_per_s_per_nic\n"),),
    ),
    WrongFixture(
        "ex04_gib_time",
        "ex04",
        "transfer_time_s takes a GB/s as 2**30 bytes per second instead of 1e9.",
        (
            Edit(
                "    return num_bytes / (bandwidth_gb_per_s * 1e9)\n",
                "    return num_bytes / (bandwidth_gb_per_s * 2**30)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex04_inverted_speedup",
        "ex04",
        "speedup_over_recompute divides the transfer time by the recompute time (0.2 instead of 5).",
        (Edit("    return recompute_s / transfer_s\n", "    return transfer_s / recompute_s\n"),),
    ),
    WrongFixture(
        "ex04_percent",
        "ex04",
        "link_efficiency returns a percentage (87) instead of a fraction (0.87).",
        (
            Edit(
                "    return measured_gb_per_s / line_rate_gb_per_s\n",
                "    return 100.0 * measured_gb_per_s / line_rate_gb_per_s\n",
            ),
        ),
    ),
    WrongFixture(
        "ex05_admit_le",
        "ex05",
        "admit_predictive admits when the predicted load equals the threshold (<= instead of <), one request too many.",
        (
            Edit(
                "    return bool(predicted_load < decode_slots * oversubscription)\n",
                "    return bool(predicted_load <= decode_slots * oversubscription)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex05_current_load",
        "ex05",
        "predicted_decode_load returns the current number of decoders instead of predicting the load at "
        "enter_decode_s.",
        (Edit("    return still_decoding + joined\n", "    return len(decoding_since_s)\n"),),
    ),
    WrongFixture(
        "ex05_end_inclusive",
        "ex05",
        "predicted_decode_load still counts a decoder whose predicted end equals enter_decode_s (>= instead of >).",
        (
            Edit(
                "        if start + mean_decode_s > enter_decode_s:  # predicted end still ahead: decoding then\n",
                "        if start + mean_decode_s >= enter_decode_s:  # predicted end still ahead: decoding then\n",
            ),
        ),
    ),
    WrongFixture(
        "ex05_keeps_finished",
        "ex05",
        "predicted_decode_load forgets to remove requests that finish decoding before enter_decode_s "
        "(every current decoder and every joined prefill is counted).",
        (
            Edit(
                "        if start + mean_decode_s > enter_decode_s:  # predicted end still ahead: decoding then\n",
                "        if start <= enter_decode_s:  # started: counted as decoding\n",
            ),
            Edit(
                "        if done <= enter_decode_s < done + mean_decode_s:  # joined by then, not yet left\n",
                "        if done <= enter_decode_s:  # joined by then\n",
            ),
        ),
    ),
    WrongFixture(
        "ex05_no_centering",
        "ex05",
        "antiphase_correlation does not subtract the means, so it computes the cosine of the raw loads "
        "instead of Pearson's r.",
        (Edit("    pc = p - p.mean()\n    dc = d - d.mean()\n", "    pc = p\n    dc = d\n"),),
    ),
    WrongFixture(
        "ex05_period_in_samples",
        "ex05",
        "dominant_period_s returns the period in samples (n / k) and forgets to multiply by dt_s.",
        (Edit("    return x.size * dt_s / k\n", "    return x.size / k\n"),),
    ),
    WrongFixture(
        "ex06_bits_not_bytes",
        "ex06",
        "expert_bytes_per_token returns bits, not bytes (the division by 8 bits per byte is missing).",
        (
            Edit(
                "    return float(active_experts * params_per_expert * num_moe_layers) * bits_per_param / 8.0\n",
                "    return float(active_experts * params_per_expert * num_moe_layers) * bits_per_param\n",
            ),
        ),
    ),
    WrongFixture(
        "ex06_gib_bandwidth",
        "ex06",
        "decode_tokens_per_s_bound treats GB/s as 2**30 bytes per second instead of 1e9.",
        (
            Edit(
                "    return efficiency * bandwidth_gb_per_s * 1e9 / bytes_per_token\n",
                "    return efficiency * bandwidth_gb_per_s * 2**30 / bytes_per_token\n",
            ),
        ),
    ),
    WrongFixture(
        "ex06_no_efficiency",
        "ex06",
        "decode_tokens_per_s_bound ignores the memory efficiency and uses the full peak bandwidth.",
        (
            Edit(
                "    return efficiency * bandwidth_gb_per_s * 1e9 / bytes_per_token\n",
                "    return bandwidth_gb_per_s * 1e9 / bytes_per_token\n",
            ),
        ),
    ),
    WrongFixture(
        "ex06_two_matrices",
        "ex06",
        "expert_params counts only 2 matrices per expert (the SwiGLU gate matrix is forgotten).",
        (
            Edit(
                "    return int(matrices_per_expert * hidden * expert_dim)\n",
                "    return int(2 * hidden * expert_dim)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex07_alphabetical_ties",
        "ex07",
        "offload_order breaks ties alphabetically instead of keeping the order of the dict.",
        (
            Edit(
                "    return sorted(tokens_per_param, key=lambda name: tokens_per_param[name])\n",
                "    return sorted(tokens_per_param, key=lambda name: (tokens_per_param[name], name))\n",
            ),
        ),
    ),
    WrongFixture(
        "ex07_forgot_num_experts",
        "ex07",
        "tokens_per_routed_expert forgets to divide by the number of routed experts (every expert seen by all picks).",
        (
            Edit(
                "    return batch * active_experts / num_routed_experts\n", "    return float(batch * active_experts)\n"
            ),
        ),
    ),
    WrongFixture(
        "ex07_highest_first",
        "ex07",
        "offload_order puts the part with the highest tokens per parameter first (sorted the wrong way).",
        (
            Edit(
                "    return sorted(tokens_per_param, key=lambda name: tokens_per_param[name])\n",
                "    return sorted(tokens_per_param, key=lambda name: tokens_per_param[name], reverse=True)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex07_integer_division",
        "ex07",
        "tokens_per_routed_expert uses integer division, so an expert used by less than one token on average gets 0.",
        (
            Edit(
                "    return batch * active_experts / num_routed_experts\n",
                "    return float(batch * active_experts // num_routed_experts)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex08_deferred_free",
        "ex08",
        "layer_time_s treats deferred experts as free: they vanish instead of overlapping with the next "
        "layer's GPU work.",
        (
            Edit(
                "    return max(gpu_s, deferred * cpu_per_expert_s) + (active_experts - deferred) * cpu_per_expert_s\n",
                "    return gpu_s + (active_experts - deferred) * cpu_per_expert_s\n",
            ),
        ),
    ),
    WrongFixture(
        "ex08_ignores_min_immediate",
        "ex08",
        "best_deferred ignores min_immediate and may defer every expert of the layer.",
        (
            Edit(
                "             for d in range(active_experts - min_immediate + 1)]\n",
                "             for d in range(active_experts + 1)]\n",
            ),
        ),
    ),
    WrongFixture(
        "ex08_largest_best",
        "ex08",
        "best_deferred returns the largest deferral with the minimal layer time instead of the smallest "
        "(defers more than needed).",
        (
            Edit(
                "    return next(d for d, t in enumerate(times) if t <= best * (1 + 1e-9))\n",
                "    return max(d for d, t in enumerate(times) if t <= best * (1 + 1e-9))\n",
            ),
        ),
    ),
    WrongFixture(
        "ex08_speedup_inverted",
        "ex08",
        "deferral_speedup divides the deferred time by the undeferred time (the ratio is upside down).",
        (
            Edit(
                "    return (layer_time_s(gpu_s, cpu_per_expert_s, active_experts, 0)\n"
                "            / layer_time_s(gpu_s, cpu_per_expert_s, active_experts, deferred))\n",
                "    return (layer_time_s(gpu_s, cpu_per_expert_s, active_experts, deferred)\n"
                "            / layer_time_s(gpu_s, cpu_per_expert_s, active_experts, 0))\n",
            ),
        ),
    ),
    WrongFixture(
        "ex08_sum_not_max",
        "ex08",
        "layer_time_s adds the deferred experts' CPU time to the GPU time instead of overlapping them (no "
        "gain from deferral).",
        (
            Edit(
                "    return max(gpu_s, deferred * cpu_per_expert_s) + (active_experts - deferred) * cpu_per_expert_s\n",
                "    return gpu_s + deferred * cpu_per_expert_s + (active_experts - deferred) * cpu_per_expert_s\n",
            ),
        ),
    ),
    WrongFixture(
        "ex09_ghz_as_hz",
        "ex09",
        "peak_tops forgets that a GHz is 1e9 cycles per second (the clock is used as if in Hz).",
        (
            Edit(
                "    return cores * clock_ghz * 1e9 * ops_per_cycle_per_core / 1e12\n",
                "    return cores * clock_ghz * ops_per_cycle_per_core / 1e12\n",
            ),
        ),
    ),
    WrongFixture(
        "ex09_mac_one_op",
        "ex09",
        "amx_ops_per_instruction counts a multiply-accumulate as 1 operation instead of 2.",
        (Edit("    return int(2 * m * k * n)\n", "    return int(m * k * n)\n"),),
    ),
    WrongFixture(
        "ex09_percent",
        "ex09",
        "fraction_of_peak returns a percentage (16.1) instead of a fraction (0.161).",
        (Edit("    return measured_tops / peak_tops\n", "    return 100 * measured_tops / peak_tops\n"),),
    ),
    WrongFixture(
        "ex09_prefill_no_factor_2",
        "ex09",
        "prefill_expert_time_s counts 1 FLOP per parameter per token instead of 2 (multiply and add).",
        (
            Edit(
                "    return 2.0 * num_tokens * active_params_per_token / (achieved_tflops * 1e12)\n",
                "    return num_tokens * active_params_per_token / (achieved_tflops * 1e12)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex10_carry_dropped",
        "ex10",
        "The output carried from the previous layer is never added to the residual stream (deferred output lost).",
        (Edit("    if carry is not None:\n        x_new = x_new + carry\n", ""),),
    ),
    WrongFixture(
        "ex10_defer_as_skip",
        "ex10",
        "Deferral implemented as skipping: the deferred weights are dropped instead of being carried to "
        "the next layer.",
        (Edit('    if mode == "skip":\n', '    if mode in ("skip", "defer"):\n'),),
    ),
    WrongFixture(
        "ex10_defer_same_layer",
        "ex10",
        "The deferred experts' output is added in the same layer instead of one layer later.",
        (
            Edit(
                "    x_new = x + shared_out + (immediate.unsqueeze(-1) * expert_out).sum(dim=1)  # [T, D]\n",
                "    x_new = x + shared_out + ((immediate + deferred).unsqueeze(-1) * expert_out).sum(dim=1)  # [T, D]\n",
            ),
        ),
    ),
    WrongFixture(
        "ex10_last_layer_defers",
        "ex10",
        "The last layer also defers its experts, so their output is lost because there is no next layer.",
        (Edit('    defers_here = mode == "defer" and not last_layer\n', '    defers_here = mode == "defer"\n'),),
    ),
    WrongFixture(
        "ex10_skip_renormalised",
        "ex10",
        "After skipping, the remaining weights are renormalised to sum to 1 instead of simply dropping "
        "the skipped ones.",
        (
            Edit(
                "        return immediate, zeros\n",
                "        return immediate / immediate.sum(dim=1, keepdim=True), zeros\n",
            ),
        ),
    ),
    WrongFixture(
        "ex10_ties_lower_index",
        "ex10",
        "Ties broken the other way: among equal weights the lower slot index is dropped or deferred first.",
        (
            Edit(
                "    flipped = topk_weights.flip(dims=(1,))  # [T, K]\n"
                "    order = torch.sort(flipped, dim=1, stable=True).indices  # [T, K], ascending weight\n"
                "    smallest = (num_slots - 1) - order[:, :k]  # [T, k] original slot indices\n",
                "    order = torch.sort(topk_weights, dim=1, stable=True).indices  # [T, K], ascending weight\n"
                "    smallest = order[:, :k]  # [T, k] original slot indices\n",
            ),
        ),
    ),
    WrongFixture(
        "ex10_topk_off_by_one",
        "ex10",
        "Off by one in choosing the experts: k+1 lowest-weighted experts are skipped or deferred instead of k.",
        (
            Edit(
                "    smallest = (num_slots - 1) - order[:, :k]  # [T, k] original slot indices\n",
                "    smallest = (num_slots - 1) - order[:, :min(k + 1, num_slots)]  # [T, k] original slot indices\n",
            ),
        ),
    ),
    # The slips of a student who worked through the copy from nothing (issue 31) that the public cases
    # did not show: each now fails a public case of its function.
    WrongFixture(
        "ex01_first_argument_only",
        "ex01",
        "per_thousand_usd validates only its first argument (the price): a zero or negative TFLOPS, bandwidth "
        "or capacity gives a zero or negative result instead of ValueError.",
        (
            Edit(
                '    for name, value in (("price_usd", price_usd), ("peak_tflops", peak_tflops),\n'
                '                        ("bandwidth_gb_per_s", bandwidth_gb_per_s), ("capacity_gb", capacity_gb)):\n',
                '    for name, value in (("price_usd", price_usd),):\n',
            ),
        ),
    ),
    WrongFixture(
        "ex01_tuple_not_dict",
        "ex01",
        "per_thousand_usd returns a tuple (tflops, bandwidth, capacity) instead of the documented dict.",
        (
            Edit(
                "    return {\n"
                '        "tflops": peak_tflops / thousands,\n'
                '        "bandwidth_gb_per_s": bandwidth_gb_per_s / thousands,\n'
                '        "capacity_gb": capacity_gb / thousands,\n'
                "    }\n",
                "    return (peak_tflops / thousands, bandwidth_gb_per_s / thousands, capacity_gb / thousands)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex02_round_tokens",
        "ex02",
        "kv_capacity_tokens rounds to the nearest whole token instead of rounding down (a partial token does not fit).",
        (
            Edit(
                "    return math.floor(free_bytes / kv_bytes_per_token)\n",
                "    return round(free_bytes / kv_bytes_per_token)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex03_sorts_in_place",
        "ex03",
        "duplication_factor sorts each instance's list in place before counting, which changes the caller's "
        "cluster, instead of working on a copy.",
        (
            Edit(
                "    total = sum(len(blocks) for blocks in instance_blocks)\n",
                "    for blocks in instance_blocks:\n"
                "        blocks.sort()\n"
                "    total = sum(len(blocks) for blocks in instance_blocks)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex03_writes_hit_blocks",
        "ex03",
        "ttft_dispatch writes each instance's reused block count into the caller's hit_blocks list.",
        (
            Edit(
                "    for hit, queued in zip(hit_blocks, queued_blocks):\n        reused = max(hit, pool_hit_blocks)\n",
                "    for i, (hit, queued) in enumerate(zip(hit_blocks, queued_blocks)):\n"
                "        reused = max(hit, pool_hit_blocks)\n"
                "        hit_blocks[i] = reused\n",
            ),
        ),
    ),
    WrongFixture(
        "ex03_no_tie_tolerance",
        "ex03",
        "ttft_dispatch ignores TIE_TOLERANCE: an estimate a rounding error above the smallest loses to it "
        "instead of counting as tied (and the lower index winning).",
        (
            Edit(
                "    return next(i for i, estimate in enumerate(estimates) if estimate <= best + TIE_TOLERANCE)\n",
                "    return estimates.index(best)\n",
            ),
        ),
    ),
    WrongFixture(
        "ex04_nics_unchecked",
        "ex04",
        "line_rate_gb_per_s does not check num_nics: 0 NICs give a line rate of 0 and a negative count a "
        "negative rate instead of ValueError.",
        (
            Edit(
                "    if isinstance(num_nics, bool) or not isinstance(num_nics, int) or num_nics < 1:\n"
                '        raise ValueError(f"num_nics must be an int >= 1, got {num_nics!r}")\n',
                "",
            ),
        ),
    ),
    WrongFixture(
        "ex07_reversed_ties",
        "ex07",
        "offload_order sorts from the highest value down and reverses the list, so tied parts come out in "
        "the reverse of their dict order.",
        (
            Edit(
                "    return sorted(tokens_per_param, key=lambda name: tokens_per_param[name])\n",
                "    return sorted(tokens_per_param, key=lambda name: tokens_per_param[name], reverse=True)[::-1]\n",
            ),
        ),
    ),
    WrongFixture(
        "ex09_integer_division",
        "ex09",
        "ops_per_cycle_per_core uses integer division (//), so 100 ops every 3 cycles give 33 (an int) "
        "instead of 33.33.",
        (
            Edit(
                "    return ops_per_instruction / cycles_per_instruction\n",
                "    return ops_per_instruction // cycles_per_instruction\n",
            ),
        ),
    ),
    WrongFixture(
        "ex10_topk_largest_false",
        "ex10",
        "lowest_k_mask takes torch.topk(largest=False): among equal weights topk's own order decides, not the "
        "documented rule (the higher slot index counts as smaller).",
        (
            Edit(
                "    flipped = topk_weights.flip(dims=(1,))  # [T, K]\n"
                "    order = torch.sort(flipped, dim=1, stable=True).indices  # [T, K], ascending weight\n"
                "    smallest = (num_slots - 1) - order[:, :k]  # [T, k] original slot indices\n",
                "    smallest = torch.topk(topk_weights, k, dim=1, largest=False).indices  # [T, k]\n",
            ),
        ),
    ),
    WrongFixture(
        "ex10_defer_k0_no_carry",
        "ex10",
        "moe_residual_update returns None as carry when k = 0 in defer mode, instead of a zero tensor [T, D].",
        (
            Edit(
                "    carry_out = (deferred.unsqueeze(-1) * expert_out).sum(dim=1) if defers_here else None  # [T, D]\n",
                "    carry_out = (deferred.unsqueeze(-1) * expert_out).sum(dim=1) if defers_here and k > 0 else None\n",
            ),
        ),
    ),
)

BY_NAME: dict[str, WrongFixture] = {f.name: f for f in FIXTURES}
