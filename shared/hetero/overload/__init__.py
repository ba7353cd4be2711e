"""Scheduling under overload in a disaggregated cluster (lecture §3, Mooncake §7; experiment 02 part 3).

A discrete-event simulation of a prefill pool and a decode pool, with the lecture's admission policies
(baseline, early rejection, prediction-based rejection with exercise ex05's functions). One file per job,
in the order they build on each other:

    decode.py       a decode instance's TBT model and load (`DecodeModel`: roofline step time from each
                    request's own context; load = max(TBT / SLO, KV / HBM, batch / cap))
    config.py       the lecture's cluster and workload (`OverloadConfig`, `DEFAULT`, `SHORT_PREFILL`) and
                    the admission policies (`Policy`, `POLICIES`)
    workload.py     the requests to replay (`Workload`, `PrefixReuse`, `poisson_workload`)
    simulation.py   the discrete-event simulation (`simulate`, `simulate_config`, `SimResult`): decode
                    instances pre-selected at arrival and double-checking the SLO at entry (Algorithm 1)
    oscillation.py  the two pools' load series measured (`oscillation`)
    trace.py        trace mode: a Mooncake-format trace on the paper's cluster (`TraceCostModel`, `replay_trace`),
                    its decode arithmetic (`decode_arithmetic`) and the capacity x TBT SLO sweep (`sweep`)
    experiment.py   experiment 02's parts "overload" and "overload_lag" (`experiment`, `lag_sweep`, `PARTS`)
    report.py       their text and plots (`render`, `render_lag`, `render_sweep`, `plot`, `plot_lag`, `plot_sweep`)
    cli.py          `python -m hetero.overload` (`main`)
    calibration.py  the calibration of the default's TTFT SLO and decode pool (issue 32)

Default configuration (fixed from the lecture's words before it was run, three values then calibrated to
the lecture's figures by rules written down before their runs; docs/figures_overload.md): requests arrive
as a Poisson process at 2.6 req/s for one hour, the prefill pool serves 2 req/s with long prefills (10-20 s,
"十几秒") under a 25 s TTFT SLO, output lengths are exponential, and the decode pool (about 2 req/s:
2.3) is two instances of 8 x H20, each holding the KV of 13 prompts at the model's 128K-token window
(its load, max(TBT / SLO, KV / HBM), is 0.99 with 13 and 1.07 with 14: the KV memory binds before the
TBT SLO). `calibration.py` holds the calibration's grids and rules (`python -m hetero.overload.calibration`).
`SHORT_PREFILL` is the same cluster with 2-6 s prefills; the lag sweep (`lag_sweep`, experiment part
"overload_lag") varies the prefill time at constant capacity and shows where "look at the decode load
now" stops predicting it.
"""

from hetero.overload.cli import main
from hetero.overload.config import (
    DEFAULT,
    OSCILLATION_POLICIES,
    POLICIES,
    SCENARIOS,
    SHORT_PREFILL,
    TOY_CONTEXT_TOKENS,
    TOY_DECODE,
    TOY_MEAN_OUTPUT_TOKENS,
    OverloadConfig,
    Policy,
    toy_config,
)
from hetero.overload.decode import KV_BYTES_PER_TOKEN, PAPER_TBT_SLO_S, PAPER_TTFT_SLO_S, DecodeModel
from hetero.overload.experiment import LAG_SWEEP_PREFILL_MEAN_S, PARTS, experiment, lag_config, lag_sweep
from hetero.overload.oscillation import WARMUP_S, oscillation
from hetero.overload.report import plot, plot_lag, plot_sweep, render, render_lag, render_sweep
from hetero.overload.simulation import SimResult, simulate, simulate_config
from hetero.overload.trace import TraceCostModel, decode_arithmetic, replay_trace, sweep
from hetero.overload.workload import PrefixReuse, Workload, poisson_workload

__all__ = [
    "DEFAULT",
    "KV_BYTES_PER_TOKEN",
    "LAG_SWEEP_PREFILL_MEAN_S",
    "OSCILLATION_POLICIES",
    "PAPER_TBT_SLO_S",
    "PAPER_TTFT_SLO_S",
    "PARTS",
    "POLICIES",
    "SCENARIOS",
    "SHORT_PREFILL",
    "TOY_CONTEXT_TOKENS",
    "TOY_DECODE",
    "TOY_MEAN_OUTPUT_TOKENS",
    "WARMUP_S",
    "DecodeModel",
    "OverloadConfig",
    "Policy",
    "PrefixReuse",
    "SimResult",
    "TraceCostModel",
    "Workload",
    "decode_arithmetic",
    "experiment",
    "lag_config",
    "lag_sweep",
    "main",
    "oscillation",
    "plot",
    "plot_lag",
    "plot_sweep",
    "poisson_workload",
    "render",
    "render_lag",
    "render_sweep",
    "replay_trace",
    "simulate",
    "simulate_config",
    "sweep",
    "toy_config",
]
