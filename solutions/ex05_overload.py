"""Exercise ex05: prediction-based early rejection and the anti-phase oscillation (lecture §3.2, §7 Q5).

In a disaggregated cluster a request admitted now reaches the decode pool only after it has queued
for and finished its prefill, often many seconds later. Mooncake (§7 of the paper) therefore admits a
request by the decode load *predicted* for the moment it will enter decode, using a system-level
prediction: every request's decode is assumed to take the same (mean) time t_d. Looking only at the
*current* decode load ("early rejection") makes the two pools' loads swing in anti-phase.

Mooncake's load is SLO satisfaction: a decode instance's load is its predicted time between tokens (TBT)
over the TBT SLO (1.0 = exactly at the SLO), and the predicted load of the decode pool is the average of
its instances' loads. The overload simulator (`python -m hetero.overload`, experiment 02 part 3) builds
that prediction from your two functions for every arriving request under the predictive policy:
`predicted_decode_load` counts, for each decode instance, the requests predicted to be decoding there
when the new request would enter decode; the simulator turns each count into that instance's TBT load
(the instance's roofline step time for that batch, over the SLO); `admit_predictive` decides on the sum
of those loads. The last two functions measure the oscillation of its load time series.

Conventions: times are seconds on one simulation clock (`_s`); `predicted_decode_load` counts
requests, `admit_predictive`'s load is a sum of TBT / SLO ratios, and the two measures take any load
samples; invalid input raises ValueError naming the argument.
"""

from __future__ import annotations

import math

import numpy as np


def predicted_decode_load(enter_decode_s: float, decoding_since_s: list[float],
                          prefill_done_s: list[float], mean_decode_s: float) -> int:
    """Number of requests decoding at time `enter_decode_s`, predicted system-level (lecture §3.2).

    The simulator calls this once per decode instance, with the requests of that instance: the ones
    decoding there now and the admitted ones still in prefill that were pre-selected for it.
    All times are seconds on the simulation clock.

    enter_decode_s:   the moment the new request would enter the decode pool (its prefill end).
    decoding_since_s: start times of the requests decoding now; each is assumed to finish at
                      start + mean_decode_s. A request whose predicted end is at or before
                      `enter_decode_s` has left by then (end <= enter: not counted).
    prefill_done_s:   prefill end times of the admitted requests still in the prefill pool
                      (queued or running); each joins the decode pool at its prefill end and is
                      assumed to leave mean_decode_s later. It counts when it has joined by then
                      (done <= enter_decode_s) and has not yet left (done + mean > enter_decode_s).
    mean_decode_s:    the mean decode time t_d, seconds (> 0).
    Returns:          the predicted number of requests decoding at `enter_decode_s` (int), not
                      counting the new request itself (the simulator adds it on its own instance).
    Raises ValueError naming the argument: mean_decode_s not finite or <= 0; any time not finite; a
    `decoding_since_s` entry later than `enter_decode_s` (it cannot be decoding already).
    """
    # BEGIN SOLUTION
    isfinite = math.isfinite  # one lookup: the simulator calls this for every arriving request
    if not isfinite(mean_decode_s) or mean_decode_s <= 0:
        raise ValueError(f"mean_decode_s must be a finite number > 0, got {mean_decode_s}")
    if not isfinite(enter_decode_s):
        raise ValueError(f"enter_decode_s must be finite, got {enter_decode_s}")
    still_decoding = 0
    for start in decoding_since_s:
        if not isfinite(start):
            raise ValueError(f"decoding_since_s must hold finite times, got {start}")
        if start > enter_decode_s:
            raise ValueError(f"decoding_since_s: a request decoding now cannot start after "
                             f"enter_decode_s ({start} > {enter_decode_s})")
        if start + mean_decode_s > enter_decode_s:  # predicted end still ahead: decoding then
            still_decoding += 1
    # The prefill list is the long one (queued requests). A non-finite time makes its sum non-finite, so
    # one sum checks it; only then is it searched, as finite times whose sum overflows are valid.
    if not isfinite(sum(prefill_done_s)):
        for done in prefill_done_s:
            if not isfinite(done):
                raise ValueError(f"prefill_done_s must hold finite times, got {done}")
    joined = 0
    for done in prefill_done_s:
        if done <= enter_decode_s < done + mean_decode_s:  # joined by then, not yet left
            joined += 1
    return still_decoding + joined
    # END SOLUTION


def admit_predictive(predicted_load: float, decode_slots: int, oversubscription: float = 1.0) -> bool:
    """Admit a request iff the predicted decode load leaves room for it (lecture §3.2).

    predicted_load:   the decode pool's load predicted for the moment this request enters decode, this
                      request included: the sum over the decode instances of each one's predicted
                      TBT / TBT SLO (1.0 = an instance exactly at its SLO; the simulator also counts
                      an instance whose KV would not fit in its memory as over 1) (>= 0).
    decode_slots:     the number of decode instances (int >= 1): the pool is full at a load of
                      decode_slots, i.e. when its instances' average load reaches 1.
    oversubscription: factor on the threshold (>= 1.0); 1.1 admits up to an average predicted load
                      of 1.1, trading a few wasted prefills for completions when the prediction errs.
    Returns:          True iff predicted_load < decode_slots x oversubscription (strictly: a pool
                      predicted to be exactly at its SLO has no headroom left).
    Raises ValueError naming the argument: predicted_load negative or not finite; decode_slots not an
    int or < 1; oversubscription not finite or < 1.
    """
    # BEGIN SOLUTION
    if not math.isfinite(predicted_load) or predicted_load < 0:
        raise ValueError(f"predicted_load must be a finite number >= 0, got {predicted_load}")
    if isinstance(decode_slots, bool) or not isinstance(decode_slots, int) or decode_slots < 1:
        raise ValueError(f"decode_slots must be an int >= 1, got {decode_slots!r}")
    if not math.isfinite(oversubscription) or oversubscription < 1.0:
        raise ValueError(f"oversubscription must be a finite number >= 1, got {oversubscription}")
    return bool(predicted_load < decode_slots * oversubscription)
    # END SOLUTION


def antiphase_correlation(prefill_load: list[float], decode_load: list[float]) -> float:
    """Pearson correlation of the two pools' load series sampled at the same instants (lecture §3.2, §7 Q5).

    prefill_load: load samples of the prefill pool (any unit; correlation is unit-free).
    decode_load:  load samples of the decode pool at the same instants, as many as prefill_load.
    Returns:      r in [-1, 1]; near -1 means the pools swing in anti-phase (one full while the other
                  idles), near 0 means no linear relation.
    Raises ValueError naming the argument: lengths differ; fewer than 2 samples; a non-finite sample;
    a constant series (its correlation is undefined).
    """
    # BEGIN SOLUTION
    p = np.asarray(prefill_load, dtype=np.float64)
    d = np.asarray(decode_load, dtype=np.float64)
    if p.ndim != 1 or d.ndim != 1 or p.shape != d.shape:
        raise ValueError(f"prefill_load and decode_load must be 1-D of equal length, got {p.shape} and {d.shape}")
    if p.size < 2:
        raise ValueError(f"prefill_load needs at least 2 samples, got {p.size}")
    if not np.all(np.isfinite(p)):
        raise ValueError("prefill_load has a non-finite sample")
    if not np.all(np.isfinite(d)):
        raise ValueError("decode_load has a non-finite sample")
    pc = p - p.mean()
    dc = d - d.mean()
    sp = math.sqrt(float(pc @ pc))
    sd = math.sqrt(float(dc @ dc))
    if sp == 0.0:
        raise ValueError("prefill_load is constant: correlation undefined")
    if sd == 0.0:
        raise ValueError("decode_load is constant: correlation undefined")
    r = float(pc @ dc) / (sp * sd)
    return min(1.0, max(-1.0, r))
    # END SOLUTION


def dominant_period_s(load: list[float], dt_s: float) -> float:
    """Period of the strongest oscillation in a load series, from its spectrum (lecture §3.2).

    The real FFT of the n samples has bins k = 0 .. n // 2 at frequency k / (n dt_s); drop the DC bin
    k = 0 (the mean), take the bin with the largest magnitude (the lowest k on a tie), and return its
    period n * dt_s / k.

    load:    load samples taken every `dt_s` seconds (at least 4).
    dt_s:    the sampling interval, seconds (> 0).
    Returns: the dominant period in seconds.
    Raises ValueError naming the argument: dt_s not finite or <= 0; fewer than 4 samples; a
    non-finite sample; a constant series (no oscillation at all).
    """
    # BEGIN SOLUTION
    if not math.isfinite(dt_s) or dt_s <= 0:
        raise ValueError(f"dt_s must be a finite number > 0, got {dt_s}")
    x = np.asarray(load, dtype=np.float64)
    if x.ndim != 1 or x.size < 4:
        raise ValueError(f"load must be a 1-D series of at least 4 samples, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("load has a non-finite sample")
    spectrum = np.abs(np.fft.rfft(x - x.mean()))[1:]  # bins k = 1 .. n // 2
    if float(spectrum.max()) <= 1e-12 * max(1.0, float(np.abs(x).max())) * x.size:
        raise ValueError("load is constant: it has no oscillation")
    k = int(np.argmax(spectrum)) + 1
    return x.size * dt_s / k
    # END SOLUTION
