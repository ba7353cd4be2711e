"""Exercise ex08: expert deferral as a per-layer overlap model of batch-1 decode (lecture §4.3, §7 Q8).

In hybrid decode the GPU runs each layer's attention, router and shared expert; the CPU computes the
layer's `active_experts` routed experts. The model (all times in seconds per layer, steady state
over many layers):

- The CPU computes one expert after another, each in cpu_per_expert_s; the GPU part of a layer
  takes gpu_s. Transfers of activations between them are negligible at batch 1.
- Without deferral the two alternate: the CPU needs the router's choice, and the next layer's
  attention needs every expert's output, so nothing overlaps.
- With d deferred experts, the outputs of d experts of layer l are added to the residual stream one
  layer later. Once the active_experts - d immediate experts of layer l are done, the GPU starts
  layer l+1 while the CPU computes the d deferred experts of layer l; the CPU starts layer l+1's
  experts when both of those are done. (Here d counts deferred experts; ex10 calls it k.)

Every deferred expert reaches the next layer's attention one layer late, so the lecture keeps at
least 2 experts immediate.
"""

from __future__ import annotations


def layer_time_s(gpu_s: float, cpu_per_expert_s: float, active_experts: int, deferred: int) -> float:
    """Steady-state time of one MoE layer with `deferred` experts deferred (lecture §4.3).

    Follows the schedule in the module docstring; deferred = 0 is the alternating schedule.

    gpu_s:            GPU work of the layer: attention, router, shared expert (s, >= 0).
    cpu_per_expert_s: CPU time of one routed expert (s, > 0).
    active_experts:   routed experts per token per layer (count, >= 1).
    deferred:         experts whose output is deferred to the next layer (count, 0 <= d <= active_experts).
    Returns:          seconds per layer (float, s).
    Raises ValueError naming the argument when gpu_s < 0, cpu_per_expert_s <= 0, active_experts < 1
    or deferred is outside [0, active_experts].
    """
    # TODO(ex08): implement layer_time_s
    raise NotImplementedError("ex08: layer_time_s")


def best_deferred(gpu_s: float, cpu_per_expert_s: float, active_experts: int, min_immediate: int = 2) -> int:
    """The number of experts to defer (lecture §4.3: "just enough to keep the CPU busy").

    Among d = 0 .. active_experts - min_immediate, the smallest d whose `layer_time_s` is minimal.
    Layer times within a relative 1e-9 of the minimum count as equal (float rounding: 3c + 5c and
    4c + 4c may differ in the last bit).

    gpu_s:            GPU work of the layer (s, >= 0).
    cpu_per_expert_s: CPU time of one routed expert (s, > 0).
    active_experts:   routed experts per token per layer (count, >= 1).
    min_immediate:    experts that must stay immediate (count, 0 <= m <= active_experts).
    Returns:          experts to defer (int, count).
    Raises ValueError naming the argument for the invalid inputs of `layer_time_s` and when
    min_immediate is outside [0, active_experts].
    """
    # TODO(ex08): implement best_deferred
    raise NotImplementedError("ex08: best_deferred")


def deferral_speedup(gpu_s: float, cpu_per_expert_s: float, active_experts: int, deferred: int) -> float:
    """Speed-up of decode from deferring `deferred` experts (lecture §4.3: slides "up to 1.45x").

    layer_time_s(..., 0) / layer_time_s(..., deferred): > 1 means faster.

    gpu_s, cpu_per_expert_s, active_experts, deferred: as in `layer_time_s`.
    Returns: speed-up (float, dimensionless).
    Raises ValueError naming the argument for the invalid inputs of `layer_time_s`.
    """
    # TODO(ex08): implement deferral_speedup
    raise NotImplementedError("ex08: deferral_speedup")
