"""The benchmarks, one command line: what a student waits for on the real server (alone, with a class, in Chromium),
the model pages, the step-through element's payload and the class store's dashboard.

    .venv/bin/python scripts/benchmark_load.py                      # single, class (30 students, 60 s), browser
    .venv/bin/python scripts/benchmark_load.py single
    .venv/bin/python scripts/benchmark_load.py class --students 30 --duration 60 --interval 3
    .venv/bin/python scripts/benchmark_load.py browser
    .venv/bin/python scripts/benchmark_load.py training             # 30 students train their own seed (150 s)
    .venv/bin/python scripts/benchmark_load.py long                 # the model pages on a 512-token text
    .venv/bin/python scripts/benchmark_load.py long --page trained-model --clicks 20
    .venv/bin/python scripts/benchmark_load.py class-live --rounds 2    # a class, live: its cost (issue 38)
    .venv/bin/python scripts/benchmark_load.py class-steps --students 100 --against f642324 [--in-class]
    .venv/bin/python scripts/benchmark_load.py class --url http://127.0.0.1:8080 --students 100 \\
        --p95-budget-ms 500 --pid-file /tmp/lecture-hall/replica-1.pid --pid-file ...   # through a proxy
    .venv/bin/python scripts/benchmark_load.py model [--runs 10]       # the trained model's page, in one process
    .venv/bin/python scripts/benchmark_load.py modern-lm [--runs 10]   # the modern language model's page
    .venv/bin/python scripts/benchmark_load.py stepper [--pages self_attention,causal] [--repeat 3]
    .venv/bin/python scripts/benchmark_load.py class-store [--database sqlite]   # the teacher's dashboard

The last four are one process each, without a server, with options of their own (``benchmark_load.py model
--help``); they run one at a time and not beside the server scenarios. Each one's smallest run (what
tests/test_scripts.py runs) is listed below the scenarios.

The server scenarios: without ``--url`` it starts ``streamlit run app.py`` on a free loopback port (with the
repository's ``.streamlit/config.toml``) and stops it at the end. Each simulated student is a websocket on
``/_stcore/stream`` that speaks Streamlit's own protobufs, as the browser does: a ``BackMsg`` with
``rerun_script`` (the page, the widget states) goes up; ``ForwardMsg``s (``new_session``, deltas,
``script_finished``) come down. No browser is involved, so the numbers are the server's: the time
from sending a change to receiving ``script_finished`` for it.

Scenarios:

- ``single``: one student. First a trivial one-widget app (``scripts/load_floor_app.py``, the
  framework's own floor) is measured, then every page of the app, ``--clicks`` interactions each,
  one after another. Budget: every page's median within ``--floor-factor`` (2) x the floor's median.
- ``class``: ``--students`` sessions open their pages within the same second (a burst: the same
  link shared by a teacher), spread over every page including *Inside a trained model* (``--only``: those
  pages), then each
  changes a widget every ~``--interval`` s (uniformly 0.5x-1.5x) for ``--duration`` s. ``--drop K``
  students close their websocket in the middle of a run and come back as new sessions. Budget:
  interaction p95 < ``--p95-budget-ms`` (150), 0 exceptions, 0 failed sessions, peak server RSS
  < ``--rss-budget-mb`` (1400: the class's ~900 MB plus SmolLM2 on *Inside a modern language model*, loaded once per
  server, ~400 MB). Through a proxy (``--url``), a student whose websocket is closed by
  a replica going away reconnects, as the browser does, and is counted as *moved*; ``--fault-cmd``
  runs a shell command (e.g. kill a replica) ``--fault-at`` seconds in.
- ``browser``: Debian's Chromium (Playwright) on self-attention, causal, multi-head, positional encoding and the
  backward pass (:data:`BROWSER_PAGES`; ``--browser-page`` for fewer): click *Next* and a number input's + button, and
  time, on the page's own clock, click -> the run's ``script_finished`` reaches the page (read off the app's websocket)
  -> the step picker (the number's input) shows the new value -> two animation frames (the repaint). The floor beside
  them: the one-widget app (``load_floor_app.py``) in the same browser, its number's + clicked as often. Budget: every
  click's median within its budget: a click the page answers itself (the step-through element's) under
  ``--step-budget-ms`` (50) times ``--throttle`` (issue 61), a click with a run < ``--browser-budget-ms`` (200) or, with ``--against``, no slower than
  the reference's. ``--browser-profile N``: N more clicks of each under Chromium's
  sampling profiler, and where the page's main thread spent them: Vega, React, styles (emotion), Markdown and KaTeX,
  other JavaScript, the browser's own style / layout / paint, garbage collection.
- ``training`` (not in the default run: it takes 2-3 minutes): ``--students`` sessions open *Watch attention
  learn* (/training) within the same second, each types its own seed (its index: as many different runs, which
  queue on the server's one training worker) and clicks *Train*. Then, for ``--duration`` s (150), half of them
  (``--watch-share``) watch their run: the page's progress fragment (``st.fragment(run_every=1.0)``) is rerun every
  second as the browser's timer does (a ``rerun_script`` with the fragment's id and ``is_auto_rerun``; the timers
  follow the server's ``auto_rerun`` / ``stop_auto_rerun`` messages and a full run's ``new_session`` clears them);
  once their run has finished they click the results' own widgets every ~``--interval`` s. The others click on
  another page every ~``--interval`` s and come back to /training every 4th time for one interval. At the end
  everyone looks at /training once. Reported: the latencies (first render, the seed, Train, every widget change,
  page switches, the progress reruns, the last look), which students saw their run's progress (its queue place,
  its steps, moving, finishing) and how many runs finished. Budget: interaction p95 < ``--p95-budget-ms`` (300),
  0 exceptions, 0 failed sessions, peak server RSS < ``--rss-budget-mb`` (1400, as the class: the runs a server keeps,
  at most 32 with ~3 MB of snapshots each, fit in its margin), every student saw their run's progress,
  and it never went backwards (a queue place up, a step back).

- ``long`` (not in the default run): the model pages (``--page``: *Inside a trained model* and *Inside a modern
  language model* unless named) opened by a link that carries a long text in the page's text setting (``?trained_model.
  sentence=...``: ``--words`` words of prose, more than the page reads, so it is cut at the page's token limit, 512).
  The server is warmed first (one visit with the page's default text: the model loads once per server). Then
  ``--opens`` students each open the link with a text of their own (a new text: nothing cached), timed to the first
  render's ``script_finished``; the last one then makes ``--clicks`` of each of the page's own clicks, as the browser
  sends them (with the link's query string, as the browser keeps it): another head never opened before (the layer and
  head pickers, in turn), another explained entry (the row and column pickers, in turn, across the whole matrix) and
  another step (the step picker, every stage in turn); on the modern LM's page also Generate (up to its 12
  tokens). Before the clicks it checks that the page reads the text's first 512 tokens (the row
  picker's options at the weights step). Budget: every kind of click's p95 < ``--p95-budget-ms`` (300).

- ``class-live`` (not in the default run; scripts/load/class_live.py, on load/client.py's Student): 30 students
  answer a practice question every ~3 s for 60 s, without a class and then in a class started from the sidebar, whose
  teacher's page refreshes every 2.5 s; the Check's p95 in a class against alone (budget <= 1.1 x), the teacher's
  refresh (p95 < 200 ms), and every answer sent found in the class store (a temporary one: SQLite, or
  ``--class-store postgresql``).

- ``class-steps`` (not in the default run; scripts/load/class_steps.py): ``--students`` students step through the step
  pages (Next every ~``--interval`` s for ``--duration`` s; ``--in-class``: in a class). With the step-through element
  a step is the browser's: the students send what the element sends (the entries of a stage not yet sent, the step
  reached in a class); before it, each step was a script run. The server's CPU seconds per minute, beside
  ``--against REF``'s (budget: at most a third).

Widgets drawn inside an ``st.fragment`` (the step-through's stepper, step picker and entry pickers)
are changed as the browser changes them: the rerun request names the fragment, and only it reruns.

Prints first-render and interaction latency (p50, p95, max), exceptions, failed sessions and the
server's RSS over time; exits 1 when a budget is broken. Traffic goes to loopback only (any other
host is refused), every loop is bounded by ``--duration`` and per-run timeouts, and the script
stops the servers it started. Measure on an otherwise idle machine: the simulated students share
the 2 cores with the server.

- ``class-check`` (not in the default run; scripts/load/class_check.py): a class started with *Check before and
  after*, ``--students`` students open the check (24 items drawn for their seat) within a second and hand it in
  0.2-1 x ``--interval`` s later, then the check after once the teacher sends it; the teacher's page refreshing every
  2 s. Budgets: a hand-in's p95 <= 3 x the floor, drawing a check <= 50 ms and grading an answer <= 20 ms (in
  process), every answer in the store (``--class-store`` as class-live's).

- ``model``, ``modern-lm`` (scripts/load/model.py, scripts/load/modern_lm.py): the model pages' first load, memory and
  computations in one process, and the page under AppTest; their targets are in ``--help``.
- ``stepper`` (scripts/load/stepper.py): what the step-through element is sent, page by page (size, build time).
- ``class-store`` (scripts/load/dashboard.py): ``Store.dashboard`` over a big class, on SQLite and PostgreSQL.

The smallest run of each, seconds rather than minutes (tests/test_scripts.py runs these, with the budgets out of
reach): ``single --only self-attention --clicks 1``, ``class --only self-attention --students 1 --duration 3
--interval 1 --drop 0``, ``training --students 1 --duration 5 --cold``, ``long --page trained-model --opens 1 --clicks
1``, ``model --runs 1``, ``modern-lm --runs 1``, ``stepper --pages self_attention --example default --repeat 1``,
``class-store --database sqlite --seats 5 --minutes 2 --events 300 --warm-up 1 --repeat 2``. ``browser``,
``class-live``, ``class-steps``, ``profile`` and ``--against`` are run in process, as small, by
tests/app/test_load_protocol.py.

This file is the command line: the arguments and the dispatch. The code is the package ``scripts/load/``: the
student's websocket client (``client.py``), the servers (``server.py``), the reports (``report.py``) and one module
per scenario (``single.py``, ``classroom.py``, ``browser.py``, ``training.py``, ``long.py``, ``class_live.py``,
``class_steps.py``, ``profile.py``, ``model.py``, ``modern_lm.py``, ``stepper.py``, ``dashboard.py``); ``--against``
is ``against.py``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Optional

#: The scenarios that run on the server (or in Chromium), several in one command.
SCENARIOS = ("single", "class", "browser", "training", "long", "class-live", "class-steps", "class-check", "profile")

#: The benchmarks that are one process of their own, without a server: the first word, then their own options.
ON_THEIR_OWN = {"model": "load.model", "modern-lm": "load.modern_lm", "stepper": "load.stepper",
                "class-store": "load.dashboard"}


def scenario_name(word: str) -> str:
    """A scenario's name, checked as the command line is read (before ``--help``: a renamed mode fails as written)."""
    if word not in SCENARIOS and word not in ON_THEIR_OWN:
        raise argparse.ArgumentTypeError(f"unknown scenario {word!r}: choose from "
                                         + ", ".join(SCENARIOS + tuple(ON_THEIR_OWN)))
    return word


def main(argv: Optional[list[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ON_THEIR_OWN:  # imported only now: the model's "before" is the app's own imports
        module = importlib.import_module(ON_THEIR_OWN[argv[0]])
        return module.main(argv[1:], prog=f"benchmark_load.py {argv[0]}")
    return run_scenarios(argv)


def run_scenarios(argv: list[str]) -> int:
    from load.against import run_browser_against, run_class_against, run_single_against
    from load.browser import BROWSER_PAGES, run_browser
    from load.class_check import run_class_check
    from load.class_live import run_class_live
    from load.class_steps import run_class_steps
    from load.classroom import run_class
    from load.long import LONG_PAGES, run_long
    from load.profile import add_arguments, run_profile
    from load.server import STREAMLIT_ARGS, require_loopback
    from load.single import run_single
    from load.training import run_training

    #: The scenarios that ``--against REF`` measures beside that commit (scripts/load/against.py).
    against = {"single": run_single_against, "class": run_class_against, "browser": run_browser_against}
    parser = argparse.ArgumentParser(prog="benchmark_load.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="On their own, with options of their own (e.g. benchmark_load.py model "
                                            "--help): " + ", ".join(ON_THEIR_OWN) + ".")
    parser.add_argument("scenarios", nargs="*", metavar="scenario", type=scenario_name,
                        help=", ".join(SCENARIOS) + " (default: single, class, browser); or, the first word and on "
                             "its own, one of " + ", ".join(ON_THEIR_OWN))
    parser.add_argument("--url", help="an already running app (loopback only), e.g. the lecture-hall proxy")
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds of clicking in the class (default 60) and training (default 150) scenarios")
    parser.add_argument("--interval", type=float, default=3.0, help="seconds between a student's changes (mean)")
    parser.add_argument("--clicks", type=int, default=10, help="timed changes per page (single, browser)")
    parser.add_argument("--drop", type=int, default=2, help="students who close their tab mid-run (class)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the students' timing")
    parser.add_argument("--floor-factor", type=float, default=1.5,
                        help="single: every page's median click at most this many times the one-widget floor")
    parser.add_argument("--p95-budget-ms", type=float, default=None,
                        help="interaction p95 budget (default: class 150, training 300, long 300)")
    parser.add_argument("--watch-share", type=float, default=0.5,
                        help="training: the share of the students who stay on the page and watch their run (0-1)")
    parser.add_argument("--rss-budget-mb", type=float, default=None,
                        help="per server process (each replica); default 1400 (class, training)")
    parser.add_argument("--browser-budget-ms", type=float, default=200.0,
                        help="browser: every click's median from the click to the repaint under this")
    parser.add_argument("--step-budget-ms", type=float, default=50.0,
                        help="browser: a click the page answers itself (the step-through element's Next, Previous, "
                             "a stage, an entry: no run): its median under this times --throttle (issue 61: 50 ms, "
                             "200 ms at 4x)")
    parser.add_argument("--throttle", type=float, default=1.0, metavar="N",
                        help="browser: Chromium's main thread N times slower (CDP CPU throttling; 4: a low-end laptop)")
    parser.add_argument("--browser-page", dest="browser_pages", action="append", default=[],
                        choices=[path for path, _stage, _number in BROWSER_PAGES],
                        help="browser: only this page (repeatable; default: all of them)")
    parser.add_argument("--browser-profile", type=int, default=0, metavar="CLICKS",
                        help="browser: after the timed clicks, this many more of each under Chromium's sampling "
                             "profiler, and where the page's main thread spent them (Vega, React, styles, Markdown "
                             "and KaTeX, other JavaScript, style / layout / paint, garbage collection)")
    parser.add_argument("--pid-file", action="append", default=[],
                        help="with --url: a file holding a server pid whose RSS to sample (repeatable)")
    parser.add_argument("--fault-cmd", help="a shell command to run --fault-at seconds into the class scenario")
    parser.add_argument("--fault-at", type=float, default=20.0)
    parser.add_argument("--cold", dest="warm", action="store_false",
                        help="class: no warm-up visit before the students arrive (a server nobody has opened yet)")
    parser.add_argument("--page", action="append", choices=sorted(LONG_PAGES), default=[],
                        help="long: the model page(s) to measure (default: both)")
    parser.add_argument("--words", type=int, default=700,
                        help="long: words of prose in the link's text (more than the page's 512 tokens)")
    parser.add_argument("--opens", type=int, default=3, help="long: first renders, each with a text of its own")
    parser.add_argument("--rounds", type=int, default=1,
                        help="class-live: rounds of both configurations (2: alone, class, class, alone); "
                             "--against: rounds of both versions (2: REF, this, this, REF)")
    parser.add_argument("--ratio-budget", type=float, default=1.1,
                        help="class-live: the Check's p95 in a class at most this times alone's")
    parser.add_argument("--teacher-budget-ms", type=float, default=200.0,
                        help="class-live: the teacher's dashboard refresh p95 under this")
    parser.add_argument("--in-class", action="store_true",
                        help="class-steps: the students join a class (the element reports the step reached)")
    parser.add_argument("--check-factor", type=float, default=3.0,
                        help="class-check: a hand-in's p95 at most this times the one-widget floor's median")
    parser.add_argument("--class-store", choices=("sqlite", "postgresql"), default="sqlite",
                        help="class-live: the temporary class store of the server started here")
    parser.add_argument("--class-store-url",
                        help="class-live: the class store's SQLAlchemy URL (needed with --url: the one that server uses)")
    parser.add_argument("--against", metavar="REF",
                        help="single, class, browser: measure the commit REF too (e.g. 7d7d826), back to back with this checkout "
                             "in the same run, with the floor beside them (scripts/load/against.py)")
    parser.add_argument("--common-pages", action="store_true",
                        help="class --against: spread the students over the pages both versions have")
    parser.add_argument("--streamlit-arg", action="append", default=[], metavar="OPTION=VALUE",
                        help="pass --OPTION VALUE to the servers started here, e.g. runner.postScriptGC=true "
                             "(to compare against .streamlit/config.toml; repeatable)")
    add_arguments(parser)
    args = parser.parse_args(argv)
    for option in args.streamlit_arg:
        name, _, value = option.partition("=")
        STREAMLIT_ARGS.extend([f"--{name.removeprefix('--')}", value])
    if args.url:
        require_loopback(args.url)
    if (not 1 <= args.students <= 300 or not (args.duration is None or 0 < args.duration <= 900)
            or not 1 <= args.clicks <= 200 or not 0 <= args.watch_share <= 1 or not 1 <= args.words <= 5000
            or not 1 <= args.opens <= 20 or not 1 <= args.rounds <= 4 or not 0 <= args.browser_profile <= 50
            or not 1 <= args.throttle <= 20):
        parser.error("bounded load: 1-300 students, duration up to 900 s, 1-200 clicks, a watch share of 0-1, "
                     "1-5000 words, 1-20 opens, 1-4 rounds, 0-50 profiled browser clicks, a throttle of 1-20")
    runners = {"single": run_single, "class": run_class, "browser": run_browser, "training": run_training,
               "long": run_long, "class-live": run_class_live, "class-steps": run_class_steps,
               "class-check": run_class_check,
               "profile": run_profile}
    scenarios = args.scenarios or ["single", "class", "browser"]  # training, long, class-live, class-steps, profile:
    # not by default
    alone = [name for name in scenarios if name in ON_THEIR_OWN]
    if alone:
        parser.error(f"{', '.join(alone)}: one at a time, as the first word (benchmark_load.py {alone[0]} --help)")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    verdicts = {}
    for name in scenarios:
        run = against[name] if args.against and name in against else runners[name]  # --against: beside REF
        verdicts[name] = run(args)
        print()
    print("verdict: " + ", ".join(f"{n} {'ok' if v else 'OVER BUDGET'}" for n, v in verdicts.items()))
    return 0 if all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
