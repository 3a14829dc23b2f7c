"""What every scenario reports: percentiles, the p50 / p95 / max columns, the server's tracebacks, its memory over
time and the exceptions and failed sessions."""

from __future__ import annotations

import argparse
from typing import Any, Optional, Sequence

import numpy as np

from load.server import RssSampler, Server

#: The bootstrap behind :func:`median_ratio_interval`: resamples, the family's coverage and a fixed seed (the same
#: times give the same interval).
RESAMPLES, COVERAGE, SEED = 4000, 0.95, 0


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by the nearest-rank method; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))]


def median_ratio_interval(this: Sequence[float], before: Sequence[float], comparisons: int = 1) -> tuple[float, float]:
    """A bootstrap interval of median(this) / median(before): each side's times resampled with replacement
    (:data:`RESAMPLES` times, seeded), the ratio's percentiles (the percentile bootstrap, Efron & Tibshirani 1993,
    ch. 13). Its coverage is 1 − 0.05 / ``comparisons`` (Bonferroni): when 28 pages are compared at once, 95 % each
    would call about one of two equal versions' pages slower in every run; this way, one in twenty runs. A version is
    slower beyond the machine's noise only when the whole interval lies above 1; a ratio of two medians above 1 alone
    is a coin flip between two equal versions on a shared machine.

    Raises:
        ValueError: either side without times, or ``comparisons`` < 1.
    """
    if comparisons < 1:
        raise ValueError("comparisons must be at least 1")
    if not len(this) or not len(before):
        raise ValueError("both versions need at least one time")
    rng = np.random.default_rng(SEED)
    a, b = np.asarray(this, dtype=np.float64), np.asarray(before, dtype=np.float64)
    ratios = (np.median(rng.choice(a, (RESAMPLES, a.size)), axis=1)
              / np.median(rng.choice(b, (RESAMPLES, b.size)), axis=1))
    miss = (1 - COVERAGE) / comparisons
    low, high = np.quantile(ratios, [miss / 2, 1 - miss / 2])
    return float(low), float(high)


def fmt_ms(values: list[float]) -> str:
    ms = [1000 * v for v in values]
    return f"{pct(ms, .5):>7.0f} {pct(ms, .95):>7.0f} {max(ms, default=float('nan')):>7.0f}"


def report_tracebacks(server: Server) -> bool:
    tracebacks = server.tracebacks()
    if tracebacks:
        print(f"\nthe server logged {len(tracebacks)} traceback(s); the first:\n{tracebacks[0][-1500:]}")
    return not tracebacks


def report_memory_and_errors(args: argparse.Namespace, server: Optional[Server], sampler: RssSampler,
                              result: Any) -> bool:
    """Print the server's RSS over time (when it is measured) and the exceptions and failed sessions; True when the
    peak of one process is under ``--rss-budget-mb`` (or nothing was measured)."""
    measured = bool(args.pid_file or server)
    if measured:
        print(f"server RSS (MB, all processes) over time: {sampler.timeline()}; peak {sampler.peak:.0f} MB; "
              f"largest one process: {sampler.peak_per_process:.0f} MB")
    print(f"exceptions: {len(result.exceptions)}   failed sessions: {len(result.failed)}")
    for line in (result.exceptions + result.failed)[:10]:
        print("   ", line[:300])
    return sampler.peak_per_process < args.rss_budget_mb if measured else True
