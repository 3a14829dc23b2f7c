"""``scripts/benchmark_load.py class-store`` (scripts/load/dashboard.py) runs end to end at a tiny size, on SQLite and
on the PostgreSQL it starts (no timing asserted: the dashboard's speed is measured by the benchmark at full size, on a
quiet machine)."""

from __future__ import annotations

import re
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "scripts"))  # the benchmarks' package (scripts/load/)
from load import dashboard as bench  # noqa: E402


def test_the_store_benchmark_fills_both_databases_and_times_every_state(capsys):
    code = bench.main(["--seats", "5", "--minutes", "2", "--events", "300", "--warm-up", "1", "--repeat", "2",
                       "--budget-ms", "1e9"])
    out = capsys.readouterr().out
    assert code == 0, out
    states = re.findall(r"^budget: (.+): median \d+ ms, max \d+ ms -> ok$", out, re.M)
    assert states[:4] == ["sqlite, right after the fill", "postgresql, right after the fill",
                          "postgresql, after ANALYZE (statistics only)",
                          "postgresql, after VACUUM ANALYZE (visibility map set)"], out
    assert len(states) == 6 and "store's autovacuum" in states[4] and "default autovacuum" in states[5]
    assert out.count("(300 events, ") == 4  # the measured class, before the tails add to it
    assert re.search(r"\d+ all-visible; 600 live rows, 0 inserted since the last vacuum", out)
