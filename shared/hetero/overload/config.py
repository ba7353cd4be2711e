"""The lecture's cluster and workload: the toy decode pool, `OverloadConfig` with its default (every
field fixed from the lecture's words before it was run; docs/figures_overload.md), the short-prefill
variant, and the admission policies the simulation compares."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from hetero.overload.decode import DecodeModel, paper_rule_tbt_slo_s, roofline_decode_model

# The toy's requests are long-context ones (lecture §3.2: "long-context prefill takes 十几秒", ten-plus
# seconds): prompts at LLaMA-3.1-70B's context window, 131,072 tokens (128K), the longest it takes. The
# lecture puts a 128K-token prefill at about 10 s (§2.4); this package's roofline gives 8.64 s for it on
# one prefill instance of 8 x H800 (as for the lecture's 128K recompute: 8.33 s where the lecture says
# about 10 s; README). Each decoding request holds that context's KV.
TOY_MODEL = "LLaMA-3.1-70B"
TOY_CONTEXT_TOKENS = 131_072
# The toy's decode instances: each is 8 x H20 (lecture §1.2: H20 decodes). TBT SLO: the paper's rule,
# 5 x the 7.19 ms single-request step = 35.9 ms. KV capacity, in the order of the lecture's §7 Q2 answer
# (weights first, then 10 % headroom): (8 x 96 GB - 141.1 GB) x 0.9 / 320 KiB = 1,721,811 tokens, the KV
# of 13.1 requests of 131,072 tokens. An instance's load (decode.py) is max(TBT / SLO, KV / HBM): 13
# requests read 27.3 ms per step (0.76 of the SLO) and fill 98.96 % of the KV room, 14 would need 106.6 %
# of it: the KV memory, not the TBT SLO, ends an instance's batch at 13.
TOY_TBT_SLO_S = paper_rule_tbt_slo_s(TOY_MODEL, "H20", 8, TOY_CONTEXT_TOKENS)


def toy_decode(instances: int) -> DecodeModel:
    """`instances` decode instances, each the toy's 8 x H20 instance (13 requests of 128K tokens)."""
    return roofline_decode_model(TOY_MODEL, "H20", 8, TOY_TBT_SLO_S, None, instances)


def toy_mean_output_tokens(decode_capacity_per_s: float, instances: int) -> float:
    """Mean output length (whole tokens) with which `instances` toy decode instances, each at its full batch,
    finish `decode_capacity_per_s` requests per second: full pool / (capacity x step of a full instance)."""
    decode = toy_decode(instances)
    full = decode.max_batch_per_instance(TOY_CONTEXT_TOKENS)
    step = decode.step_s(full, full * TOY_CONTEXT_TOKENS)
    return float(round(full * instances / (decode_capacity_per_s * step)))


# The values of the toy that the lecture does not fix, calibrated by the rules written down in
# docs/figures_overload.md ("Calibration", issue 32; `hetero.overload.calibration`, round 2): the TTFT SLO
# (the paper's real-trace runs use 30 s), the decode pool's capacity (the lecture: "about 2 req/s") and
# its number of instances (the paper's cluster has 8); round 2 also tried stale load reports and kept
# live ones (OverloadConfig.load_report_interval_s = 0).
TOY_TTFT_SLO_S = 25.0
TOY_DECODE_CAPACITY_PER_S = 2.3
TOY_DECODE_INSTANCES = 2
TOY_DECODE = toy_decode(TOY_DECODE_INSTANCES)
# Output lengths (tokens) of the toy: the mean that makes the decode pool serve TOY_DECODE_CAPACITY_PER_S
# at its full batch: 2 x 13 / (2.3 req/s x 27.32 ms) = 414 tokens, 11.3 s of decoding at that batch.
# The lecture's Kimi mean output is 182 tokens (§2.2).
TOY_MEAN_OUTPUT_TOKENS = toy_mean_output_tokens(TOY_DECODE_CAPACITY_PER_S, TOY_DECODE_INSTANCES)


@dataclass(frozen=True)
class OverloadConfig:
    """One cluster + workload; every time in seconds."""

    arrival_rate_per_s: float = 2.6  # lecture §3.2: 2.6 req/s against ~2 req/s of capacity
    duration_s: float = 3600.0  # lecture §3.2: one hour of arrivals; admitted work then drains
    prefill_instances: int = 30  # 30 instances / 15 s mean prefill = 2 req/s of prefill capacity
    prefill_mean_s: float = 15.0  # lecture §3.2: long-context prefill takes "十几秒" (ten-plus seconds)
    prefill_spread: float = 1 / 3  # prefill time ~ Uniform(mean x (1 - spread), mean x (1 + spread)): 10-20 s
    ttft_slo_s: float = TOY_TTFT_SLO_S  # calibrated (issue 32); the paper's real-trace runs use 30 s
    decode: DecodeModel = TOY_DECODE  # each decode instance's TBT model, SLO and KV room
    context_tokens: int = TOY_CONTEXT_TOKENS  # the KV every decoding request holds (tokens)
    decode_mean_tokens: float = TOY_MEAN_OUTPUT_TOKENS  # exponential output lengths: not known in advance
    sample_dt_s: float = 1.0  # load series sampling interval
    # How stale the Conductor's view of the decode pool is. 0: it sees the current occupancy at every
    # arrival. T > 0: the decode pool reports its occupancy (and, for the predictive policy, its
    # requests' decode start times) every T s, and the decode checks made at arrival use the last
    # report; prefill ends since that report are known to the Conductor (it dispatched those requests).
    # The TTFT check and the decode-entry check stay exact.
    load_report_interval_s: float = 0.0

    def validate(self) -> OverloadConfig:
        positive = {
            "arrival_rate_per_s": self.arrival_rate_per_s,
            "duration_s": self.duration_s,
            "prefill_mean_s": self.prefill_mean_s,
            "ttft_slo_s": self.ttft_slo_s,
            "decode_mean_tokens": self.decode_mean_tokens,
            "sample_dt_s": self.sample_dt_s,
        }
        for name, value in positive.items():
            if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        value = self.prefill_instances
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"prefill_instances must be an int >= 1, got {value!r}")
        if not 0 <= self.prefill_spread < 1:
            raise ValueError(f"prefill_spread must lie in [0, 1), got {self.prefill_spread}")
        interval = self.load_report_interval_s
        if isinstance(interval, bool) or not (
            isinstance(interval, (int, float)) and math.isfinite(interval) and interval >= 0
        ):
            raise ValueError(f"load_report_interval_s must be a finite number >= 0, got {interval!r}")
        value = self.context_tokens
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"context_tokens must be an int >= 1, got {value!r}")
        if not isinstance(self.decode, DecodeModel):
            raise ValueError(f"decode must be a DecodeModel, got {type(self.decode).__name__}")
        self.decode.validate()
        if self.decode.max_batch_per_instance(self.context_tokens) < 1:
            raise ValueError(f"context_tokens: one request of {self.context_tokens} tokens overloads a decode instance")
        return self

    @property
    def decode_full_batch(self) -> int:
        """Requests per decode instance at its limit (load 1), every request at `context_tokens`."""
        return self.decode.max_batch_per_instance(self.context_tokens)

    @property
    def decode_max_batch(self) -> int:
        """Requests the whole decode pool holds at its limit (every instance full)."""
        return self.decode_full_batch * self.decode.instances

    @property
    def decode_full_step_s(self) -> float:
        """Step time of a full decode instance."""
        b = self.decode_full_batch
        return self.decode.step_s(b, b * self.context_tokens)

    @property
    def decode_mean_s(self) -> float:
        """The system-level prediction's t_d: the mean output length at a full instance's step time."""
        return self.decode_mean_tokens * self.decode_full_step_s

    @property
    def prefill_capacity_per_s(self) -> float:
        return self.prefill_instances / self.prefill_mean_s

    @property
    def decode_capacity_per_s(self) -> float:
        """Requests per second the decode pool finishes when every instance runs full (TBT SLO or KV memory)."""
        return self.decode_max_batch / self.decode_mean_s


def toy_config(
    ttft_slo_s: float, decode_capacity_per_s: float, decode_instances: int, load_report_interval_s: float = 0.0
) -> OverloadConfig:
    """The lecture's toy with the calibrated values replaced: the TTFT SLO (s), the decode pool's capacity
    at its full batch (req/s; the output mean follows), its number of 8 x H20 instances, and how often
    the decode instances report their load to the Conductor (s; 0: live)."""
    return OverloadConfig(
        ttft_slo_s=float(ttft_slo_s),
        decode=toy_decode(decode_instances),
        decode_mean_tokens=toy_mean_output_tokens(decode_capacity_per_s, decode_instances),
        load_report_interval_s=float(load_report_interval_s),
    ).validate()


DEFAULT = OverloadConfig()
# The same cluster with short prefills (2-6 s on 8 instances, still 2 req/s; TTFT SLO 12 s = 3 mean
# prefill times; the default's decode pool): the admission-to-decode lag is then under ten seconds.
SHORT_PREFILL = replace(DEFAULT, prefill_instances=8, prefill_mean_s=4.0, prefill_spread=0.5, ttft_slo_s=12.0)
SCENARIOS: dict[str, OverloadConfig] = {"default": DEFAULT, "short_prefill": SHORT_PREFILL}


@dataclass(frozen=True)
class Policy:
    """One admission policy, checked at arrival (hetero.overload.simulation)."""

    name: str  # label in tables and JSON
    kind: str  # "baseline" | "early" | "predictive"
    oversubscription: float = 1.0  # factor on the predicted-load threshold (1.0: the SLO), predictive only


POLICY_KINDS = ("baseline", "early", "predictive")
POLICIES: tuple[Policy, ...] = (
    Policy("baseline", "baseline"),
    Policy("early", "early"),
    Policy("predictive", "predictive"),
    Policy("predictive x1.1", "predictive", 1.1),
    Policy("predictive x1.2", "predictive", 1.2),
)
OSCILLATION_POLICIES: tuple[Policy, ...] = POLICIES[:3]

# Mooncake paper §8.2, Table 3 (8 prefill + 8 decode instances, ~23,000 real requests replayed at 2x).
PAPER_REJECTED = {"baseline": 4183, "early": 3771, "predictive": 3589}
