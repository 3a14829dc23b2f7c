"""Every page over Streamlit's real websocket protocol, a burst of a class, and students who leave mid-run.

AppTest runs a page in-process; here `streamlit run app.py` serves it and simulated students speak the
browser's protocol (scripts/load/client.py's Student: BackMsg up, ForwardMsg down). No timing is
asserted: speed is measured by `scripts/benchmark_load.py`, on an idle machine, not by tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import AsyncIterator

import pytest

from ui.classroom import class_banner, class_dashboard

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))  # the benchmarks' package (scripts/load/)
from load import class_live as live  # noqa: E402
from load.browser import CHROMIUM, run_browser  # noqa: E402
from load.client import PAGES, Student  # noqa: E402
from load.server import APP, Server  # noqa: E402
from load.training import TRAIN_BUTTON, TRAINING, TRAINING_SEED, Learner, _read_progress, _training_state  # noqa: E402


@pytest.fixture(scope="module")
def server():
    srv = Server(APP)
    yield srv
    srv.stop()


@contextlib.asynccontextmanager
async def on_page(url: str, page: str, query: str = "") -> AsyncIterator[Student]:
    """A student connected to the server at ``url`` with ``page`` open (its first run read; ``query``: the link's
    query string); closed afterwards."""
    student = Student(url, "t")
    await student.connect()
    try:
        await student.open_page(page, query)
        yield student
    finally:
        await student.close()


def last_run(student: Student) -> tuple[list[str], int]:
    """The headings the student's last run drew, in order, and how many messages it sent."""
    return list(student.run_headings), student.run_messages


def test_the_load_benchmark_covers_every_page_of_the_app():
    from attention_core import registry

    assert [p.path for p in PAGES] == [p.url_path for p in registry.PAGES]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.path)
def test_every_page_renders_and_takes_changes_over_the_protocol(server, page):
    async def visit():
        async with on_page(server.url, page.path) as student:
            assert student.session_id, "the server sent no new_session"
            mine = page.widgets or student.page_widgets()
            assert mine and all(key in student.main_keys for key in mine), sorted(student.widgets)
            for _ in range(len(mine) + 1):  # every widget of the page changed at least once
                await student.interact(page.widgets)
        return student.exceptions

    assert asyncio.run(visit()) == []


def test_a_burst_of_a_class_with_students_leaving_mid_run(server):
    """30 students open the same link in the same second; 3 close their tab in the middle of a run."""

    async def lesson():
        students = [Student(server.url, f"s{i}") for i in range(30)]
        await asyncio.gather(*(s.connect() for s in students))
        await asyncio.gather(*(s.open_page("self-attention") for s in students))
        keys = ("setting_self_attention.stage", "setting_d_k")
        leavers, stayers = students[:3], students[3:]
        await asyncio.gather(*(s.interact(keys, drop=True) for s in leavers))
        await asyncio.gather(*(s.interact(keys) for s in stayers))
        await asyncio.gather(*(s.interact(keys) for s in stayers))
        ids = {s.session_id for s in stayers}
        for s in stayers:
            await s.close()
        return students, ids

    students, ids = asyncio.run(lesson())
    assert len(ids) == 27  # each stayer kept its own session throughout
    assert [e for s in students for e in s.exceptions] == []
    assert server.tracebacks() == []


def test_a_click_inside_the_step_through_reruns_only_its_fragment(server):
    """The step-through element and its practice switch are drawn inside a part of the page's body, a fragment of
    its own (ui/page_body.py; on the modern LM page inside the open head's part, inside the heads' part): the browser
    (and the Student) sends the fragment id of the widget clicked, and the server answers with a run of that fragment
    alone. Neither reruns the router: the sidebar's widgets stay as they were, and a click in the outer part (another
    layer) draws the step-through again inside it."""

    async def visit():
        async with on_page(server.url, "modern-lm") as student:
            stage_fragment = student.widgets["setting_practice"][2]
            heads_fragment = student.widgets["setting_modern_lm.layer"][2]
            assert stage_fragment and heads_fragment and stage_fragment != heads_fragment
            assert not student.widgets["setting_preset"][2]  # the sidebar: the router's, in no fragment
            await student.interact(("setting_practice",))
            inside, inside_messages = student.last_fragment, student.run_messages
            await student.interact(("setting_modern_lm.layer",))
            outside, outside_messages = student.last_fragment, student.run_messages
            assert "setting_modern_lm.layer" in student.widgets and "setting_preset" in student.widgets
            assert "setting_practice" in student.widgets  # drawn again inside the heads' part
        return inside, outside, inside_messages < outside_messages, student.exceptions

    assert asyncio.run(visit()) == (True, True, True, [])


def test_a_click_inside_the_body_does_not_send_the_header_and_footer_again(server):
    """A page's title and introduction (its header) and the √d_k page's derivation (its footer) are drawn outside the
    page's body (ui/page_body.py): a whole-page run draws them, a click on one of the page's own settings reruns the
    body alone and sends none of them again (they stay on the screen: test_browser.py); the body's own headers are
    drawn again."""

    async def visit():
        async with on_page(server.url, "why-sqrt-dk") as student:
            opened, opened_messages = last_run(student)
            await student.interact(("setting_why_sqrt_dk.keys",))
            clicked, clicked_messages = last_run(student)
        return opened, clicked, opened_messages, clicked_messages, student.last_fragment, student.exceptions

    opened, clicked, opened_messages, clicked_messages, fragment, exceptions = asyncio.run(visit())
    # sent in this order: the footer goes out before the body, into its place under the body's (on the screen it is
    # under the body: test_browser.py), so that a body that stops on bad input leaves it there
    assert opened == ["Why divide by √d_k?", "3. The derivation, with sympy", "1. The variance of q · k grows like d_k",
                      "2. What that does to the softmax"]
    assert clicked == ["1. The variance of q · k grows like d_k", "2. What that does to the softmax"]
    assert fragment and exceptions == []
    assert clicked_messages < opened_messages / 2  # the derivation's rows were most of the page's elements


def test_a_click_on_the_open_head_reruns_only_its_part_of_the_modern_lm_page(server):
    """*Inside a modern language model* draws every head and the open head as a part of its own (ui.page_body.part),
    and the open head's map and step-through as a part inside that, the step-through element in a part of its own
    inside that: another head reruns the heads' part, not the prompt's tokens and next token above it; the practice
    switch reruns only the element's part (a step or an entry is the element's, in the browser: nothing is sent)."""

    async def visit():
        async with on_page(server.url, "modern-lm") as student:
            opened, opened_messages = last_run(student)
            body, heads, steps = (student.widgets[key][2] for key in
                                  ("lm_generate", "setting_modern_lm.layer", "setting_practice"))
            await student.change(*student.choose("setting_modern_lm.layer", 1))  # layer 2
            layer_headings, layer_messages = last_run(student)
            await student.interact(("setting_practice",))  # practice mode on
            practice_headings, practice_messages = last_run(student)
        return (opened, layer_headings, practice_headings, (opened_messages, layer_messages, practice_messages),
                (body, heads, steps), student.exceptions)

    opened, layer_headings, practice_headings, messages, fragments, exceptions = asyncio.run(visit())
    body, heads, steps = fragments
    assert body and heads and steps and len({body, heads, steps}) == 3, fragments  # nested fragments
    assert opened[:2] == ["Inside a modern language model", "5 tokens"] and "The next token" in opened, opened
    assert layer_headings[0] == "Every head of every layer" and "The next token" not in layer_headings
    assert "Layer 2, head 1 (key/value head 1)" in layer_headings, layer_headings
    assert practice_headings == [], practice_headings  # the switch and the element: not the head's headings
    assert messages[0] > messages[1] > messages[2], messages
    assert exceptions == []


def test_choosing_an_example_on_the_overview_reruns_the_whole_app_once(server):
    """The example is drawn by the router (the sidebar's picker and its note), so the overview, whose only widgets
    choose it, is drawn as its header, outside the page's body (ui/page_body.py): *Use this example* names no
    fragment, its click is one whole-app run (not a fragment run that then reran the app), and the sidebar shows the
    new example."""

    async def visit():
        student = Student(server.url, "t")
        await student.connect()
        try:
            await student.open_page("overview")
            from streamlit.proto.WidgetStates_pb2 import WidgetState

            _etype, proto, fragment_id = student.widgets["overview_use_hello"]
            assert fragment_id == ""  # outside the page's fragment
            await student.change(WidgetState(id=proto.id, trigger_value=True), fragment_id)
            shown = student.widgets["setting_preset"][1]
        finally:
            await student.close()
        return shown.raw_value if shown.HasField("raw_value") else None, student.exceptions

    assert asyncio.run(visit()) == ("Hello shiny sun! (hand-picked 3-d vectors)", [])  # the sidebar picker shows it


def test_a_router_setting_changed_inside_a_pages_body_reruns_the_whole_app():
    """A click inside a page's body (its fragment) that changes what the router draws (the example) reruns the whole
    app, so the router's picker shows the new example (ui/page_body.py, ui.state.router_stale): on a one-page app
    whose body does that (tests/app/router_field_app.py), since no page of the app does now."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    app = Path(__file__).parent / "router_field_app.py"
    srv = Server(app, env={"PYTHONPATH": str(ROOT)})

    async def visit():
        student = Student(srv.url, "t")
        await student.connect()
        try:
            await student.open_page("")
            before = student.widgets["setting_preset"][1]
            _etype, proto, fragment_id = student.widgets["choose_hello"]
            assert fragment_id  # inside the page's body
            await student.change(WidgetState(id=proto.id, trigger_value=True), fragment_id)
            after = student.widgets["setting_preset"][1]
        finally:
            await student.close()
        return (*(shown.raw_value if shown.HasField("raw_value") else None for shown in (before, after)),
                student.exceptions)

    try:
        before, after, exceptions = asyncio.run(visit())
    finally:
        srv.stop()
    from attention_core.settings import Settings

    assert (before, exceptions) == (Settings().preset, []) and before != "hello"
    assert after == "hello"  # the sidebar's picker, drawn only by a whole-app run, shows it


def test_a_learner_trains_and_the_progress_reruns_on_its_timer_as_in_the_browser(server):
    """Train on "Watch attention learn" (the training scenario's Student): the progress fragment's run_every timer is
    armed by the server's auto_rerun message, and the Student reruns the fragment on it, as the browser does, until
    the run has finished and the fragment reran the whole page (the results, no timer left)."""

    async def visit():
        student = Student(server.url, "t")
        await student.connect()
        try:
            await student.open_page(TRAINING)
            await student.change(*student.number(TRAINING_SEED, 4242))  # a run no other test trains
            await student.change(*student.number("setting_training.steps", 50))
            before = _training_state(student)
            await student.change(*student.button(TRAIN_BUTTON))
            submitted = _training_state(student)
            assert student.auto_reruns, "the progress fragment armed no timer"
            ticks, deadline = 0, time.monotonic() + 60
            while _training_state(student) != "results" and time.monotonic() < deadline:
                due, fragment_id = student.next_tick()
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                await student.tick(fragment_id)
                ticks += 1
            after = _training_state(student), dict(student.auto_reruns)
        finally:
            await student.close()
        learner = Learner(watcher=True, page="")
        _read_progress(learner, student.progress)
        return before, submitted, ticks, after, learner, student.exceptions

    before, submitted, ticks, (state, timers), learner, exceptions = asyncio.run(visit())
    assert (before, state, timers) == ("no run", "results", {})
    assert submitted in ("queued", "training") and ticks >= 1
    assert (learner.queue_places or learner.steps) and learner.order_errors == []
    assert exceptions == []


@pytest.mark.browser
def test_the_browser_scenario_times_every_click_it_makes(capsys):
    """The benchmark's Chromium scenario runs end to end: every click is answered and timed, the first time (no click
    made again), with the one-widget app's click beside them (no budget here: speed is measured on an idle machine,
    not by tests); ``--browser-profile`` splits one more click of each by part. The self-attention page's
    step-through is the browser element: its Next and its cells are timed and send no message."""
    import argparse
    import os
    import re

    if not Path(CHROMIUM).exists() and not os.environ.get("CI"):
        pytest.skip(f"{CHROMIUM} is missing (bash scripts/test.sh installs it)")
    assert run_browser(argparse.Namespace(url=None, clicks=2, browser_budget_ms=1e9, step_budget_ms=1e9,
                                          browser_pages=["self-attention", "positional-encoding"],
                                          browser_profile=1)) is True
    out = capsys.readouterr().out
    floor = re.search(r"^floor: a one-number_input app, \+\s+(\d+)\s+(\d+)\s+(\d+)\s+1\.00\s+\(floor\)", out, re.M)
    assert floor and 0 < int(floor[1]) <= int(floor[3]), out
    clicks = ("self-attention: Next / Previous", "self-attention: an entry (a cell)", "self-attention: d_k +",
              "positional-encoding: experiment_seed +")
    sent = {}
    for click in clicks:
        row = re.search(rf"^{re.escape(click)}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+\.\d\d)\s+(\d+)\s+ok", out, re.M)
        assert row and 0 < int(row[1]) <= int(row[3]), out
        sent[click] = int(row[5])
        # x floor is the two unrounded medians' ratio; each median is printed rounded to the ms (+-0.5), the ratio to
        # 0.01 (+-0.005): it lies between the ratios of the printed medians' ends.
        p50, floor_p50 = int(row[1]), int(floor[1])
        assert (p50 - 0.5) / (floor_p50 + 0.5) - 0.005 <= float(row[4]) <= (p50 + 0.5) / (floor_p50 - 0.5) + 0.005, out
    # the step-through element steps in the browser: its Next and its cells send nothing; a setting is one message
    assert sent["self-attention: Next / Previous"] == sent["self-attention: an entry (a cell)"] == 0, out
    assert sent["self-attention: d_k +"] >= 1 and sent["positional-encoding: experiment_seed +"] >= 1, out
    assert re.search(r"^self-attention: first visit of a step\s+\d+.*\(once\)", out, re.M), out
    assert "made again" not in out  # every click's run was seen to end (none waited for until the timeout)
    assert "positional-encoding: Next" not in out  # not a step page
    # the profile's table: per click its busy ms, then each part's ms and share, in the header's order
    header = re.search(r"^click\s+busy\s+(.+)$", out, re.M)
    assert header and header[1].split() == ["Vega", "React", "styles", "Markdown", "other", "JS", "browser", "GC"], out
    for click in ("self-attention: d_k +", "positional-encoding: experiment_seed +"):
        row = re.search(rf"^{re.escape(click)}\s+(\d+)((?:\s+\d+ \(\s*\d+ %\)){{7}})$", out, re.M)
        assert row, out
        parts = [int(ms) for ms, _share in re.findall(r"(\d+) \(\s*(\d+) %\)", row[2])]
        assert int(row[1]) > 0 and abs(sum(parts) - int(row[1])) <= 4, out  # the parts (each rounded) make the whole
        if click == "positional-encoding: experiment_seed +":
            assert parts[1] > 0, out  # Streamlit's React redraws the page's charts and tables


# ---------------------------------------------------------------- the class-live scenario (scripts/load/class_live.py)


@pytest.fixture(scope="module")
def class_server(tmp_path_factory):
    """A server whose class store is a SQLite file of its own: (server, the store's URL)."""
    folder = tmp_path_factory.mktemp("class-live")
    url = f"sqlite:///{folder / 'classes.sqlite'}"
    srv = Server(APP, env={live.ENV_URL: url, live.ENV_DATA: str(folder)})
    yield srv, url
    srv.stop()


def test_an_answer_is_one_rerun_and_the_class_records_every_answer(class_server):
    """The scenario's protocol: Start a class in the sidebar gives the teacher's link; a student's practice link
    with the class arms the banner's timer (10 s); typing a number and clicking Check in the step-through element is
    one rerun (the element's trigger) that grades it (the hint comes back in the element's data); the teacher's page arms its refresh timer (ui.classroom.class_dashboard.REFRESH_S) and its
    rerun shows the answers; the store holds exactly the answers sent."""
    server, url = class_server

    async def lesson():
        code, key = await live.start_class_in_the_sidebar(server.url)
        student = Student(server.url, "s")
        teacher = Student(server.url, "t")
        try:
            await student.connect()
            await student.open_page(live.PAGE, live._link("scores", code))
            banner = sorted(interval for interval, _armed in student.auto_reruns.values())
            state, fragment_id = live.answer(student, live.answer_text(0, 1))
            # the element's trigger: a run of the part of the page's body the element is drawn in (a fragment of its
            # own: ui/page_body.py part), not of the body around it (its settings) nor of the router
            assert state.WhichOneof("value") == "json_trigger_value" and fragment_id
            assert fragment_id != student.widgets["setting_d_k"][2] != ""
            assert json.loads(state.json_trigger_value)[0]["value"]["stage"] == "scores"
            sent = 0
            for n in range(1, 4):
                await student.change(*live.answer(student, live.answer_text(0, n)))
                sent += 1
                assert live.graded(student)  # graded: the hint (and Show the solution) sent back with the run
            await student.tick(next(iter(student.auto_reruns)))  # the banner's timer fires
            await teacher.connect()
            await teacher.open_page(live.your_class_path(), f"class={code}&teacher={key}")
            refresh = sorted(interval for interval, _armed in teacher.auto_reruns.values())
            recorded, dash, info, _held = live.recorded_answers(url, code, sent)
            await teacher.tick(teacher.next_tick()[1])
            shown = teacher.metrics.get("Answers")
        finally:
            await student.close()
            await teacher.close()
        return banner, refresh, sent, recorded, dash, info, shown, student.exceptions + teacher.exceptions

    banner, refresh, sent, recorded, dash, info, shown, exceptions = asyncio.run(lesson())
    assert banner == [class_banner.BANNER_EVERY_S] and refresh == [class_dashboard.REFRESH_S]
    assert recorded == sent == 3 and shown == "3"
    assert dash.practice == [("self_attention", "scores", 3, 1, 0)] and (info.dropped, info.rate_limited) == (0, 0)
    assert exceptions == [] and server.tracebacks() == []


def test_the_class_check_scenario_follows_the_banner_hands_the_check_in_and_the_store_holds_every_answer(
        class_server):
    """scripts/load/class_check.py on the class server (1 student, no floor, no budget): a class started with *Check
    before and after*; the student follows the banner to the check before, hands in its 24 answers as the browser
    submits a form (the verdicts come back), follows the teacher's *Check now* to the check after and hands that in;
    the teacher's page refreshed meanwhile; the store holds the 48 answers."""
    import argparse

    from load import class_check

    server, url = class_server
    args = argparse.Namespace(students=1, interval=0.2, seed=0)
    result = class_check.Result()
    code = asyncio.run(class_check._class(server.url, args, result))
    assert (len(result.opened), len(result.handed), result.answers) == (2, 2, 48)
    assert result.refresh, "the teacher's page refreshed"
    assert class_check.recorded(url, code, 48) == 48
    assert result.exceptions == result.failed == [] and server.tracebacks() == []


def test_the_class_live_scenario_runs_end_to_end(capsys):
    """The whole scenario with 2 students for 3 s per configuration (budgets out of the way: speed is measured by the
    benchmark on a quiet machine, not by tests): the floor, both configurations, the teacher's refreshes, every
    answer found in the store, no exception."""
    import argparse
    import re

    args = argparse.Namespace(url=None, students=2, duration=3.0, interval=1.0, seed=0, rounds=1, ratio_budget=1e9,
                              teacher_budget_ms=1e9, class_store="sqlite", class_store_url=None)
    assert live.run_class_live(args) is True
    out = capsys.readouterr().out
    for label in ("floor: one-widget change", "Check: alone", "Check: in a class",
                  r"teacher's dashboard refresh \(2 s\)"):
        row = re.search(rf"^{label}\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", out, re.M)
        assert row and int(row[1]) >= 1, (label, out)
    sent = re.search(r"in the class (\d+) sent \((\d+) graded\), (\d+) in the store", out)
    assert sent and int(sent[1]) >= 2 and sent[1] == sent[2] == sent[3], out
    assert "exceptions: 0   failed sessions: 0" in out


def test_the_class_steps_scenario_asks_as_the_element_does_and_reports_in_a_class(capsys):
    """A class stepping through the step pages (2 students, 4 s, budgets out of the way): each student's element asks
    for the stages around it as stepper.js does, and in a class reports the step reached through the class's
    reporter; the runs it caused are counted, with no failed session and no exception."""
    import argparse
    import re

    from load.class_steps import run_class_steps

    args = argparse.Namespace(students=2, duration=4.0, interval=0.5, seed=0, rounds=1, against=None, in_class=True)
    assert run_class_steps(args) is True
    out = capsys.readouterr().out
    row = re.search(r"^this\s+([\d.]+)\s+(\d+)\s+(\d+)\s+[\d.]+\s+\d+ / \d+\s+\d+\s+0\s+0$", out, re.M)
    assert row and int(row[2]) >= 2 and int(row[3]) >= 1, out  # steps taken; runs: the entries asked, the reports


# ---------------------------------------------------------------- another version beside this one, and the profile


def test_a_version_is_measured_against_another_commit_in_the_same_run(capsys):
    """``single --against REF``: REF is written out with git archive and served from its own folder, its pages read
    from its own navigation; one page of both, side by side with the floor (budgets out of the way: the verdict is the
    benchmark's, on a quiet machine). REF is HEAD here, so both columns name the same pages."""
    import argparse
    import re

    against = importlib.import_module("load.against")
    folder = against.checkout("HEAD")
    assert (folder / "app.py").exists() and folder != ROOT
    args = argparse.Namespace(against="HEAD", rounds=1, clicks=2, only=["self-attention"], floor_factor=1e9,
                              url=None)
    against.run_single_against(args)
    out = capsys.readouterr().out
    assert re.search(r"^the floor \(one-widget app\), median of the rounds: \d+ ms", out, re.M), out
    row = re.search(r"^self-attention\s+(\d+) / (\d+)\s+(\d+) / (\d+)\s+.*\s(\d+) → (\d+)\s+[\d.]+ → [\d.]+", out, re.M)
    assert row, out
    assert int(row[1]) > 0 and int(row[3]) > 0 and int(row[5]) > 0 and int(row[6]) > 0  # times and messages measured
    assert "tokens" not in out.split("verdict", 1)[1]  # --only: the other pages are not measured


def test_the_profile_says_where_a_click_goes(capsys):
    """``profile``: py-spy samples the real server while one student clicks; the click's time is split by library and
    the page's own functions are listed (what a before / after in the note is read from)."""
    import argparse
    import re

    profile = importlib.import_module("load.profile")
    # 1000 Hz over 6 clicks: ~10 ms of server CPU a click gave 200 Hz over 3 clicks two or three samples, at times
    # none in the script thread (CI, 2026-11-27: no function of ours listed)
    args = argparse.Namespace(against=None, only=["self-attention"], clicks=6, rate=1000, top=8)
    assert profile.run_profile(args) is True
    out = capsys.readouterr().out
    assert re.search(r"^-- self-attention: median \d+ ms, server CPU \d+ ms, \d+ messages", out, re.M), out
    assert re.search(r"^\s+[\d.]+ ms  \w+ \((ui|app_pages|attention_core)/", out, re.M) or "(app.py)" in out, out
    row = re.search(r"^self-attention(\s+[\d.]+){13}$", out, re.M)
    assert row, out


def test_the_profile_sorts_frames_by_library():
    profile = importlib.import_module("load.profile")
    raw = ("run (threading.py:982);_draw_live (ui/stepthrough.py:201);markdown (streamlit/elements/markdown.py:40) 3\n"
           "run (threading.py:982);<module> (alibi.py:12);matmul (torch/functional.py:9) 2\n"
           "_run_once (asyncio/base_events.py:1922);write (tornado/iostream.py:10) 5\n")
    by_library, ours, total = profile.summarise(raw, frozenset({"alibi.py"}))
    assert total == 10
    assert by_library == {"streamlit": 3, "torch": 2, "event loop": 5}
    assert ours == {"_draw_live (ui/stepthrough.py)": 3, "<module> (alibi.py)": 2}
