"""Speed budget: the server-side time of one rerun after a widget change, per page.

    .venv/bin/python scripts/benchmark.py [--runs 10] [--budget-ms 50]

For each page, a fresh AppTest session of app.py (default preset) switches to the page and
runs it once (warm-up: imports, caches), then N times changes one widget the way a student
would and times `at.run()`: the whole script rerun, as the server does it, without the
browser. Prints median and max per interaction and the process's peak RSS; exits 1 when a
median is over the budget (or a run raised), so it can gate a change.

The budget is measured here, not in the test suite: timings on a shared 2-core machine are
too noisy for a pass/fail test, and a benchmark shows the numbers instead of hiding them.
"""

from __future__ import annotations

import argparse
import logging
import re
import resource
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"


@dataclass(frozen=True)
class Interaction:
    page: str  # the page file's name; its folder is read from app.py's st.Page list
    name: str
    change: Callable[[AppTest, int], None]  # apply the i-th change (i = 0, 1, ...) before a timed run


def _use_example(at: AppTest, i: int) -> None:
    # The overview's "Use this example" buttons (the one in use is disabled). Not the sidebar
    # picker: AppTest does not see the sidebar that app.py fills around st.navigation.
    enabled = [b for b in at.button if b.key and b.key.startswith("overview_use_") and not b.disabled]
    enabled[i % len(enabled)].click()


def _seed(at: AppTest, i: int) -> None:
    at.number_input(key="setting_seed").set_value(100 + i)


def _query_token(at: AppTest, i: int) -> None:
    box = at.selectbox(key="setting_no_weights.query_index")
    box.set_value((box.value + 1) % len(box.options))


def _d_k(at: AppTest, i: int) -> None:
    at.number_input(key="setting_d_k").set_value(2 + i % 8)  # 2..9, never the default 3 twice in a row


def _next_previous(at: AppTest, i: int) -> None:
    at.button(key="step_next" if i % 2 == 0 else "step_prev").click()


def _keys_cached(at: AppTest, i: int) -> None:
    # Two values in turn: after the first two runs the sampling comes from st.cache_data.
    at.number_input(key="setting_why_sqrt_dk.keys").set_value(8 if i % 2 == 0 else 16)


def _temperature(at: AppTest, i: int) -> None:
    at.select_slider(key="setting_temperature.tau").set_value((0.1, 0.5, 2.0, 10.0)[i % 4])


def _shuffle(at: AppTest, i: int) -> None:
    at.selectbox(key="setting_positional_encoding.shuffle").set_value(("rotate", "random", "reverse")[i % 3])


def _hidden(at: AppTest, i: int) -> None:
    at.number_input(key="setting_additive.hidden").set_value(2 + i % 8)


def _pixel_row(at: AppTest, i: int) -> None:
    box = at.selectbox(key="setting_image_attention.row")
    box.set_value((box.value + 1) % len(box.options))


INTERACTIONS = [
    Interaction("overview.py", "Use this example", _use_example),
    Interaction("tokens.py", "seed", _seed),
    Interaction("no_weights.py", "query token", _query_token),
    Interaction("self_attention.py", "d_k", _d_k),
    Interaction("self_attention.py", "Next / Previous", _next_previous),
    Interaction("why_sqrt_dk.py", "keys n (cached sampling)", _keys_cached),
    Interaction("temperature.py", "τ", _temperature),
    Interaction("positional_encoding.py", "shuffle", _shuffle),
    Interaction("additive.py", "hidden size h", _hidden),
    Interaction("image_attention.py", "pixel row", _pixel_row),
]


def page_path(name: str) -> str:
    """The path of the page file ``name`` that app.py lists (e.g. "app_pages/tokens.py").

    app.py gives st.Page either a string ("app_pages/tokens.py") or PAGES_DIR / "tokens.py".
    """
    text = APP.read_text()
    paths = re.findall(r"""st\.Page\(\s*["']([^"']+\.py)["']""", text)
    paths += [f"app_pages/{file}" for file in re.findall(r"""st\.Page\(\s*PAGES_DIR\s*/\s*["']([^"']+\.py)["']""", text)]
    for path in paths:
        if Path(path).name == name:
            return path
    raise LookupError(f"app.py has no st.Page for {name} (it lists {paths})")


def _exception_text(at: AppTest) -> str:
    return "\n".join(f"{e.message}\n" + "\n".join(e.stack_trace) for e in at.exception)


def measure(interaction: Interaction, runs: int) -> list[float]:
    """Seconds per timed run; raises RuntimeError if the page shows an exception."""
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    at.switch_page(page_path(interaction.page)).run()  # warm-up
    if at.exception:
        raise RuntimeError(f"{interaction.page} raised on its first run:\n{_exception_text(at)}")
    times = []
    for i in range(runs):
        interaction.change(at, i)
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        if at.exception:
            raise RuntimeError(f"{interaction.page} raised after changing {interaction.name}:\n{_exception_text(at)}")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed reruns per interaction (default 10)")
    parser.add_argument("--budget-ms", type=float, default=50.0,
                        help="the largest allowed median rerun time, in ms (default 50)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    # AppTest runs outside a server; Streamlit says so once per process ("missing ScriptRunContext").
    # (A filter, not a level: Streamlit resets its loggers' levels when AppTest starts.)
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(
        lambda record: "missing ScriptRunContext" not in record.getMessage())
    sys.path.insert(0, str(ROOT))  # so attention_core imports as it does for `streamlit run`

    header = f"{'page':<20} {'change':<26} {'median ms':>10} {'max ms':>8}  verdict"
    print(f"{args.runs} timed reruns each, budget: median <= {args.budget_ms:g} ms\n")
    print(header)
    print("-" * len(header))
    failed = False
    for interaction in INTERACTIONS:
        try:
            times = measure(interaction, args.runs)
        except Exception as error:  # noqa: BLE001 - a page that raised, or a widget that is gone: report, go on
            print(f"{interaction.page:<20} {interaction.name:<26} {'-':>10} {'-':>8}  ERROR")
            print("".join(traceback.format_exception(error)) if not isinstance(error, RuntimeError) else error,
                  file=sys.stderr)
            failed = True
            continue
        median_ms, max_ms = 1000 * statistics.median(times), 1000 * max(times)
        over = median_ms > args.budget_ms
        failed |= over
        print(f"{interaction.page:<20} {interaction.name:<26} {median_ms:>10.1f} {max_ms:>8.1f}  "
              f"{'OVER BUDGET' if over else 'ok'}")

    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # ru_maxrss is KiB on Linux
    print(f"\npeak RSS: {peak_mib:.0f} MiB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
