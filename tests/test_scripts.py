"""Every script of ``scripts/`` runs: each benchmark's smallest run, as its command line runs it (a subprocess of this
venv's Python, from the repository, the servers started by the script itself), asserted on what it prints.

Not on speed: the budgets are set out of reach (``--floor-factor``, ``--p95-budget-ms``, ``--rss-budget-mb``), and the
model benchmarks' fixed targets may be missed on a busy machine (then they say so and exit 1, which passes here).
The numbers are the benchmarks' own, on a quiet machine (docs/performance.md). The runs go two at a time (most of
their time is a server starting and a page's first run): the whole file took 56-90 s on a shared 2-core machine.

Run elsewhere, in process: ``browser``, ``class-live``, ``class-steps``, ``profile`` and ``--against`` by
tests/app/test_load_protocol.py, ``class-store`` on PostgreSQL by tests/classroom/test_benchmark_class_store.py,
scripts/train_toy_reverser.py's training by tests/transformer/test_generation.py. The commands the README and docs
show are run up to their ``--help`` by tests/test_readme_map.py.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

OUT_OF_REACH = ("--p95-budget-ms", "1e9", "--rss-budget-mb", "1e9")

#: Each benchmark's smallest run: the command line's arguments after ``scripts/benchmark_load.py``.
SMALLEST = {
    "single": ["single", "--only", "self-attention", "--clicks", "1", "--floor-factor", "1e9"],
    "class": ["class", "--only", "self-attention", "--students", "1", "--duration", "3", "--interval", "1",
              "--drop", "0", *OUT_OF_REACH],
    "training": ["training", "--students", "1", "--duration", "5", "--cold", *OUT_OF_REACH],
    "long": ["long", "--page", "trained-model", "--opens", "1", "--clicks", "1", *OUT_OF_REACH],
    "model": ["model", "--runs", "1"],
    "modern-lm": ["modern-lm", "--runs", "1"],
    "stepper": ["stepper", "--pages", "self_attention", "--example", "default", "--repeat", "1"],
    "class-store": ["class-store", "--database", "sqlite", "--seats", "5", "--minutes", "2", "--events", "300",
                    "--warm-up", "1", "--repeat", "2", "--budget-ms", "1e9"],
}
#: The longest first, so that the two at a time finish together.
ORDER = ("modern-lm", "long", "training", "single", "model", "class", "stepper", "class-store")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.fixture(scope="module")
def runs():
    """Every smallest run, started at once two at a time; each test waits for its own."""
    assert set(ORDER) == set(SMALLEST)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        yield {name: pool.submit(run, "scripts/benchmark_load.py", *SMALLEST[name]) for name in ORDER}


def finished(runs, name: str, missed: str = "") -> str:
    """The run's output; it exited 0 (or 1 having said ``missed``: a fixed target, on a busy machine)."""
    result = runs[name].result()
    out = result.stdout
    assert result.returncode == 0 or (missed and result.returncode == 1 and missed in out), \
        f"exit {result.returncode}\n{out[-3000:]}\n{result.stderr[-3000:]}"
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return out


def test_single_measures_the_floor_and_a_page(runs):
    out = finished(runs, "single")
    floor = re.search(r"^framework floor \(scripts/load_floor_app\.py, one number_input\): median (\d+) ms", out, re.M)
    row = re.search(r"^self-attention\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\d+)\s.*\sok$", out, re.M)
    assert floor and row, out
    assert int(row[1]) > 0 and int(row[7]) > 0  # its first render took time, its click sent messages
    assert "tokens" not in out and out.rstrip().endswith("verdict: single ok")


def test_class_clicks_and_reports_the_server(runs):
    out = finished(runs, "class")
    assert "== class: 1 students, one change every ~1 s each for 3 s, over 1 pages" in out
    clicks = re.search(r"^interaction\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$", out, re.M)
    assert clicks and int(clicks[1]) >= 1 and int(clicks[2]) > 0, out
    assert re.search(r"^server RSS \(MB, all processes\) over time: .*; peak \d+ MB", out, re.M), out
    assert "exceptions: 0   failed sessions: 0" in out and out.rstrip().endswith("verdict: class ok")


def test_training_trains_and_the_student_sees_the_run(runs):
    out = finished(runs, "training")
    assert "progress: 1 of 1 students saw their run's progress" in out, out
    assert re.search(r"^runs: 1 submitted", out, re.M) and re.search(r"^Train\s+1\s+\d+", out, re.M), out
    assert out.rstrip().endswith("verdict: training ok")


def test_long_reads_512_tokens_and_clicks_the_model_page(runs):
    out = finished(runs, "long")
    assert re.search(r"^trained-model\s+first render\s+1\s+(\d+).*\(512 tokens read\)$", out, re.M), out
    head = re.search(r"^trained-model\s+another head\s+1\s+(\d+)", out, re.M)
    assert head and int(head[1]) > 0, out
    assert re.search(r"^trained-model\s+another entry\s+\d+", out, re.M), out
    assert out.rstrip().endswith("verdict: long ok")


def test_model_loads_minilm_and_times_the_page(runs):
    out = finished(runs, "model", missed="MISSED")
    text = re.search(r"^64-token text, everything the page computes \(median\):\s+([\d.]+) ms", out, re.M)
    longest = re.search(r"^the longest text \(512 tokens\), everything the page computes \(median\):\s+([\d.]+) ms",
                        out, re.M)
    added = re.search(r"the model adds (\d+) MB", out)
    assert text and longest and added, out
    assert float(text[1]) > 0 and float(longest[1]) > float(text[1]) and int(added[1]) > 0


def test_modern_lm_loads_smollm2_and_times_the_page(runs):
    out = finished(runs, "modern-lm", missed="a target was missed")
    load = re.search(r"^first load: ([\d.]+) s", out, re.M)
    forward = re.search(r"^a 32-token forward pass: median (\d+) ms", out, re.M)
    assert load and forward and float(load[1]) > 0 and int(forward[1]) > 0, out
    assert re.search(r"^the page under AppTest: a new 32-token prompt median \d+ ms", out, re.M), out


def test_stepper_sizes_one_page_at_its_defaults(runs):
    out = finished(runs, "stepper")
    rows = re.findall(r"^self_attention\s+(default|largest)\s+(\d+)ms\s+(\d+)ms\s+(\d+)/(\d+) kB", out, re.M)
    assert [r[0] for r in rows] == ["default"], out  # --example default: the largest example is not built
    assert int(rows[0][3]) > 0  # the stages' JSON, in kB


def test_class_store_fills_sqlite_and_times_the_dashboard(runs):
    out = finished(runs, "class-store")
    assert re.search(r"^budget: sqlite, right after the fill: median \d+ ms, max \d+ ms -> ok$", out, re.M), out
    assert "postgresql" not in out.split("budget:", 1)[1]


def test_the_scripts_that_are_no_benchmark_answer_help():
    """vendor_frontend.py copies from frontend/node_modules (after npm ci) into static/: here only its --help, which
    writes nothing (tests/app/test_frontend.py checks the copies)."""
    result = run("scripts/vendor_frontend.py", "--help")
    assert result.returncode == 0 and result.stdout.startswith("usage: vendor_frontend.py"), result.stderr
    assert sorted(p.name for p in (ROOT / "scripts").glob("*.py")) == [
        "benchmark_load.py", "load_floor_app.py", "train_toy_reverser.py", "vendor_frontend.py"]


def test_slower_means_the_whole_interval_of_the_ratio_is_above_one():
    """The --against verdicts: a page is slower only beyond the machine's noise (load/report.py)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from load.report import median_ratio_interval

    rng = __import__("numpy").random.default_rng(1)
    before = list(0.050 + 0.010 * rng.random(40))
    same = list(0.050 + 0.010 * rng.random(40))
    low, high = median_ratio_interval(same, before)
    assert low < 1 < high  # two draws of one version: not slower
    low, high = median_ratio_interval([1.3 * t for t in same], before)
    assert 1 < low < 1.3 < high < 1.5  # 30 % slower: the interval holds 1.3, not 1
    assert median_ratio_interval(same, before) == median_ratio_interval(same, before)  # seeded
    with pytest.raises(ValueError):
        median_ratio_interval([], before)


def test_comparing_many_pages_widens_each_interval():
    """Bonferroni: 28 pages at once get 99.8 % intervals each, so two equal versions fail one run in twenty."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from load.report import median_ratio_interval

    rng = __import__("numpy").random.default_rng(2)
    before, this = list(0.05 + 0.01 * rng.random(40)), list(0.05 + 0.01 * rng.random(40))
    one, many = median_ratio_interval(this, before), median_ratio_interval(this, before, comparisons=28)
    assert many[0] < one[0] < one[1] < many[1]
    with pytest.raises(ValueError):
        median_ratio_interval(this, before, comparisons=0)
