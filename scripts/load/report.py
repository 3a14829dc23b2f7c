"""What every scenario reports: percentiles, the p50 / p95 / max columns, the server's tracebacks, its memory over
time and the exceptions and failed sessions."""

from __future__ import annotations

import argparse
from typing import Any, Optional

from load.server import RssSampler, Server


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by the nearest-rank method; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered) + 0.5)) - 1))]


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
