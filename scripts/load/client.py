"""One simulated student: a browser tab, minus the browser, over Streamlit's own protocol.

Each student is a websocket on ``/_stcore/stream`` that speaks Streamlit's own protobufs, as the browser does: a
``BackMsg`` with ``rerun_script`` (the page, the widget states) goes up; ``ForwardMsg``s (``new_session``, deltas,
``script_finished``) come down. No browser is involved, so the numbers are the server's: the time from sending a
change to receiving ``script_finished`` for it. Widgets drawn inside an ``st.fragment`` are changed as the browser
changes them: the rerun request names the fragment, and only it reruns.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
import time
import urllib.request
from typing import Optional

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from load.server import ROOT

STEPPER = "attention_explorer.stepper"  # the step-through element's component name (ui/stepper.py)

RUN_TIMEOUT_S = 90.0  # one script run; the first visit to the trained model loads it (seconds)
FINISHED = (ForwardMsg.FINISHED_SUCCESSFULLY, ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)


@dataclasses.dataclass(frozen=True)
class PageLoad:
    """A page (its URL path) and the widgets a student changes there, by widget key, in turn.

    No widgets named: the page's own (see :meth:`Student.page_widgets`), found on the page as it renders.
    """

    path: str
    widgets: tuple[str, ...] = ()


def _registered_pages() -> tuple[PageLoad, ...]:
    """Every page of the app, from the one registry of page declarations (attention_core/registry.py)."""
    sys.path.insert(0, str(ROOT))
    from attention_core import registry

    return tuple(PageLoad(page.url_path) for page in registry.PAGES)


PAGES = _registered_pages()
FLOOR = PageLoad("", ("floor_number",))


class SessionClosed(Exception):
    """The server (or the proxy) closed this student's websocket."""


class Student:
    """One browser tab, minus the browser: a websocket session that reruns pages and changes widgets."""

    def __init__(self, base_url: str, name: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.name = name
        self.ws = None
        self.cookie = ""
        self.session_id = ""
        # user key -> (element type, proto, fragment id or "") of the widgets on the page now, in their order
        self.widgets: dict[str, tuple[str, object, str]] = {}
        self.main_keys: set[str] = set()  # the keys of those in the page's main area (not the sidebar)
        self.widget_paths: dict[str, tuple[int, ...]] = {}  # user key -> its delta path when last drawn
        self.states: dict[str, object] = {}  # widget id -> WidgetState to send (what the browser holds)
        self.exceptions: list[str] = []
        self.page = ""
        self.page_hash = ""
        self.step = 0
        # widget key -> the value (number) or option index (selectbox) it showed when first seen on this page:
        # the changes walk around it, so every version of the app is sent the same values (whether or not the
        # server marks each widget's value as set by it).
        self.anchors: dict[str, float] = {}
        self.last_fragment = False  # the last change was of a widget inside an st.fragment: only it reran
        # The fragments the browser would rerun on a timer (``st.fragment(run_every=...)``): fragment id -> (interval
        # in seconds, when its timer was armed). As in the frontend (App.tsx): a full run's new_session clears them,
        # the run's auto_rerun messages arm them again (the same interval keeps its countdown), stop_auto_rerun ends one.
        self.auto_reruns: dict[str, tuple[float, float]] = {}
        self.ticked: dict[str, float] = {}  # fragment id -> when its last timer rerun was sent
        self.progress: list[str] = []  # the text of every st.progress this session was sent, in order
        self.last_progress: Optional[str] = None  # the st.progress text of the last finished run (None: none drawn)
        self.metrics: dict[str, str] = {}  # st.metric label -> value, as last drawn (the teacher's class page)
        # component name -> (proto, fragment id) of the Components v2 elements the last run drew (the step-through)
        self.elements: dict[str, tuple[object, str]] = {}
        # The URL's query string the browser sends with each rerun: a link's at first, then what the app writes there
        # (page_info_changed). Only kept when the student opened a link (open_page's ``query``); else "" as before.
        self.query = ""
        self.app_pages: tuple[str, ...] = ()  # the URL paths of the pages the app's navigation lists
        self.run_messages = 0  # ForwardMsgs of the last run (its new_session, deltas, ... script_finished)
        self.run_headings: list[str] = []  # the titles and headers (st.title, st.header, ...) the last run drew
        self.run_bytes = 0  # and their serialised bytes: what the server sent the browser for it

    def _get_cookie(self) -> None:
        """GET the page as a browser does first: a proxy's sticky-session cookie comes with it."""
        with urllib.request.urlopen(f"{self.base_url}/", timeout=30) as response:
            cookies = [c.split(";", 1)[0] for c in response.headers.get_all("Set-Cookie") or []]
        self.cookie = "; ".join(cookies)

    async def connect(self, reconnect: bool = False) -> None:
        if not self.cookie:
            await asyncio.to_thread(self._get_cookie)
        ws_url = self.base_url.replace("http", "ws", 1) + "/_stcore/stream"
        protocols = ["streamlit", "benchmark", self.session_id] if reconnect and self.session_id else ["streamlit"]
        headers = {"Cookie": self.cookie} if self.cookie else {}
        self.ws = await connect(ws_url, subprotocols=protocols, additional_headers=headers, max_size=None,
                                open_timeout=30, ping_interval=None)
        for cookie in self.ws.response.headers.get_all("Set-Cookie"):
            self.cookie = cookie.split(";", 1)[0]  # the proxy moved us to another replica

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()

    async def send_rerun(self, page: str, states: list, fragment_id: str = "", auto: bool = False) -> None:
        msg = BackMsg()
        rerun = msg.rerun_script
        rerun.query_string = self.query
        rerun.page_name = page
        rerun.page_script_hash = self.page_hash if page == self.page else ""
        rerun.widget_states.widgets.extend(states)
        if fragment_id:  # as the browser does for a widget drawn inside an st.fragment
            rerun.fragment_id = fragment_id
        rerun.is_auto_rerun = auto  # a run_every timer's rerun, not a click
        try:
            await self.ws.send(msg.SerializeToString())
        except ConnectionClosed as error:
            raise SessionClosed(str(error)) from error

    async def finish_run(self, fragment: bool = False) -> None:
        """Read ForwardMsgs until this run's ``script_finished``; keep the widgets it rendered.

        A fragment run redraws only the fragment: the page's other widgets stay, as in the browser. A fragment run can
        end in a full run (``st.rerun(scope="app")`` inside it): its new_session, which names no fragment, starts over.
        """
        widgets: dict[str, tuple[str, object, str]] = dict(self.widgets) if fragment else {}
        main = set(self.main_keys) if fragment else set()
        partial = fragment
        sent: set[str] = set()  # the widgets this run drew
        blocks: list[tuple[int, ...]] = []  # the delta paths of the blocks this run drew (a fragment's own included)
        progress: Optional[str] = None
        deadline = time.monotonic() + RUN_TIMEOUT_S
        self.run_messages = self.run_bytes = 0
        self.run_headings = []
        while True:
            try:
                data = await asyncio.wait_for(self.ws.recv(), timeout=max(0.1, deadline - time.monotonic()))
            except ConnectionClosed as error:
                raise SessionClosed(str(error)) from error
            self.run_messages += 1
            self.run_bytes += len(data)
            msg = ForwardMsg()
            msg.ParseFromString(data)
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                partial = bool(msg.metadata.run.fragment_ids) if msg.metadata.HasField("run") else fragment
                widgets = dict(self.widgets) if partial else {}
                main = set(self.main_keys) if partial else set()
                sent, blocks = set(), []
                progress = None
                if not partial:
                    self.auto_reruns.clear()  # the frontend's handleNewSession: a full run drops every timer
                if msg.new_session.HasField("initialize"):
                    self.session_id = msg.new_session.initialize.session_id
            elif kind == "page_info_changed" and self.query:  # the app wrote its link: the browser's URL shows it
                self.query = msg.page_info_changed.query_string
            elif kind == "navigation":  # st.navigation resolved the page: the browser sends its hash from now on
                self.page_hash = msg.navigation.page_script_hash
                self.app_pages = tuple(p.url_pathname for p in msg.navigation.app_pages)
            elif kind == "delta" and msg.delta.WhichOneof("type") == "add_block":
                blocks.append(tuple(msg.metadata.delta_path))
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                etype = element.WhichOneof("type")
                if etype == "exception":
                    self.exceptions.append(f"{element.exception.type}: {element.exception.message}")
                elif etype == "progress":
                    progress = element.progress.text
                    self.progress.append(progress)
                elif etype == "metric":
                    self.metrics[element.metric.label] = element.metric.body
                elif etype == "heading":
                    self.run_headings.append(element.heading.body)
                elif etype == "bidi_component":
                    self.elements[element.bidi_component.component_name] = (element.bidi_component,
                                                                            msg.delta.fragment_id)
                elif etype in ("number_input", "selectbox", "button", "text_input", "checkbox", "radio"):
                    proto = getattr(element, etype)
                    key = proto.id.split("-", 2)[-1]
                    widgets[key] = (etype, proto, msg.delta.fragment_id)
                    self.widget_paths[key] = tuple(msg.metadata.delta_path)
                    sent.add(key)
                    if msg.metadata.delta_path and msg.metadata.delta_path[0] == 0:  # RootContainer.MAIN
                        main.add(key)
            elif kind == "auto_rerun":  # st.fragment(run_every=...) was drawn: the browser arms (or keeps) its timer
                interval, fragment_id = msg.auto_rerun.interval, msg.auto_rerun.fragment_id
                if self.auto_reruns.get(fragment_id, (None, 0.0))[0] != interval:
                    self.auto_reruns[fragment_id] = (interval, time.monotonic())
            elif kind == "stop_auto_rerun":
                for fragment_id in msg.stop_auto_rerun.fragment_ids:
                    self.auto_reruns.pop(fragment_id, None)
            elif kind == "script_finished":
                if msg.script_finished in FINISHED:
                    if partial:  # as the browser does: what the rerun fragments drew before and not now is gone
                        for key in [k for k in widgets if k not in sent]:
                            path = self.widget_paths.get(key, ())
                            if any(path[:len(block)] == block for block in blocks):
                                del widgets[key]
                                main.discard(key)
                    self.widgets, self.main_keys = widgets, main
                    self.last_progress = progress
                    return
                if msg.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                    raise RuntimeError("script compile error")
            elif kind == "session_event" and msg.session_event.HasField("script_compilation_exception"):
                self.exceptions.append(msg.session_event.script_compilation_exception.message)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no script_finished within {RUN_TIMEOUT_S:.0f} s")

    async def open_page(self, page: str, query: str = "") -> float:
        """First render of ``page`` (seconds from the request to ``script_finished``); ``query``: the link's query
        string (``a=1&b=2``), sent as the browser sends it, and followed from then on."""
        if query:
            self.query = query
        self.elements = {}
        start = time.perf_counter()
        await self.send_rerun(page, list(self.states.values()))
        await self.finish_run()
        self.page = page
        self.anchors = {}
        return time.perf_counter() - start

    def page_widgets(self) -> tuple[str, ...]:
        """The page's own widgets, as a student meets them: the number inputs and selectboxes bound to settings
        (``setting_*``) in the main area, in their order; on a page with none, its buttons (the overview's
        "Use this example")."""
        main = [key for key in self.widgets if key in self.main_keys]
        bound = [key for key in main if key.startswith("setting_") and self.widgets[key][0] in ("number_input",
                                                                                                  "selectbox")]
        return tuple(bound or [key for key in main if self.widgets[key][0] == "button"])

    def next_change(self, keys: tuple[str, ...]):
        """The WidgetState a student sends next (the next widget of ``keys`` that is on the page, moved once;
        no keys: of :meth:`page_widgets`) and the id of the fragment that widget is drawn in ("" outside any)."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        keys = keys or self.page_widgets()
        for offset in range(len(keys)):
            key = keys[(self.step + offset) % len(keys)]
            if key in self.widgets and not getattr(self.widgets[key][1], "disabled", False):
                break
        else:
            raise LookupError(f"none of {keys} on page {self.page!r} (it has {sorted(self.widgets)})")
        self.step += 1
        etype, proto, fragment_id = self.widgets[key]
        state = WidgetState(id=proto.id)
        walk = (1, 2, 3, 2, 1, 0)[self.step % 6]  # a few distinct values, back and forth
        if etype == "button":
            state.trigger_value = True
        elif etype == "checkbox":  # a toggle (practice mode): on, off, on, ...
            state.bool_value = bool(self.step % 2)
        elif etype == "selectbox":
            options = list(proto.options)
            if key not in self.anchors:
                current = proto.raw_value if proto.set_value and proto.HasField("raw_value") else None
                self.anchors[key] = (options.index(current) if current in options
                                     else (proto.default[0] if proto.default else 0))
            state.string_value = options[(int(self.anchors[key]) + 1 + walk % 2) % len(options)]
        else:  # number_input
            step = proto.step or 1
            # the value shown: a widget seeded from session state (every bound setting) carries it in ``value``, with
            # or without ``set_value`` depending on the version of the app; ``default`` is then 0, not what it shows
            start = self.anchors.setdefault(key, proto.value if proto.set_value or proto.HasField("value")
                                            else proto.default)
            value = start + (walk - 1) * step
            if proto.has_max and value > proto.max:
                value = start - step
            if proto.has_min and value < proto.min:
                value = start + step
            if proto.data_type == proto.INT:
                state.int_value = int(value)
            else:
                state.double_value = round(value, 6)
        return state, fragment_id

    async def interact(self, keys: tuple[str, ...], drop: bool = False) -> float:
        """Change one widget and wait for the rerun; seconds. ``drop``: close the socket mid-run instead."""
        state, fragment_id = self.next_change(keys)
        return await self.change(state, fragment_id, drop)

    def button(self, label: str):
        """The WidgetState of a click on the main area's button ``label`` (a keyless one, like "Train") and its
        fragment id; LookupError when the page shows no such button or it is disabled."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        for key, (etype, proto, fragment_id) in self.widgets.items():
            if etype == "button" and key in self.main_keys and proto.label == label and not proto.disabled:
                return WidgetState(id=proto.id, trigger_value=True), fragment_id
        raise LookupError(f"no enabled button {label!r} on page {self.page!r}")

    def choose(self, prefix: str, index: int):
        """The WidgetState that picks option ``index`` (modulo their count) of the main area's selectbox whose key is
        ``prefix`` or starts with ``prefix + "__"`` (a picker with a variant per label set), and its fragment id."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        for key, (etype, proto, fragment_id) in self.widgets.items():
            if etype == "selectbox" and key in self.main_keys and (key == prefix or key.startswith(prefix + "__")):
                options = list(proto.options)
                return WidgetState(id=proto.id, string_value=options[index % len(options)]), fragment_id
        raise LookupError(f"no selectbox {prefix!r} on page {self.page!r} (it has {sorted(self.widgets)})")

    def options(self, prefix: str) -> int:
        """How many options the main area's selectbox ``prefix`` (see :meth:`choose`) offers; 0 when it is absent."""
        for key, (etype, proto, _fragment) in self.widgets.items():
            if etype == "selectbox" and key in self.main_keys and (key == prefix or key.startswith(prefix + "__")):
                return len(proto.options)
        return 0

    def number(self, key: str, value: int):
        """The WidgetState that sets the number input ``key`` (an int one) to ``value``, and its fragment id."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        etype, proto, fragment_id = self.widgets[key]
        if etype != "number_input":
            raise LookupError(f"{key} is a {etype}, not a number_input")
        return WidgetState(id=proto.id, int_value=int(value)), fragment_id

    def submit(self, prefix: str, text: str):
        """The WidgetStates of typing ``text`` into the main area's text input whose key starts with ``prefix`` and
        clicking its form's submit button, and the form's fragment id. The browser holds a form's values until it is
        submitted, then sends them in one rerun with the submit button's trigger (``WidgetStateManager.submitForm``).
        LookupError when the page shows no such input in a form, or its form has no submit button."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        for key, (etype, proto, fragment_id) in self.widgets.items():
            if etype == "text_input" and key in self.main_keys and key.startswith(prefix) and proto.form_id:
                for other, (otype, button, _fragment) in self.widgets.items():
                    if otype == "button" and other in self.main_keys and button.form_id == proto.form_id:
                        return [WidgetState(id=proto.id, string_value=text),
                                WidgetState(id=button.id, trigger_value=True)], fragment_id
                raise LookupError(f"form {proto.form_id!r} has no submit button on page {self.page!r}")
        raise LookupError(f"no text input {prefix!r}... in a form on page {self.page!r} (it has {sorted(self.widgets)})")

    def element_data(self, name: str = STEPPER) -> dict:
        """What the last run gave the Components v2 element ``name`` (the step-through's walk-through)."""
        return json.loads(self.elements[name][0].json)

    def element_send(self, event: str, value: object, name: str = STEPPER):
        """The WidgetState of the element ``name`` calling ``setTriggerValue(event, value)`` in the browser (a
        practice answer, a step reached) and its fragment id: the element's trigger widget, as Streamlit's frontend
        sends it (a JSON list of {event, value})."""
        from streamlit.components.v2.bidi_component.main import _make_trigger_id
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        proto, fragment_id = self.elements[name]
        return WidgetState(id=_make_trigger_id(proto.id, "events"),
                           json_trigger_value=json.dumps([{"event": event, "value": value}])), fragment_id

    async def change(self, state, fragment_id: str = "", drop: bool = False) -> float:
        """Send one widget's new state (``state``, a WidgetState; or a list of them sent in the same rerun, like a
        form's submission, :meth:`submit`) and wait for the rerun; seconds."""
        new = state if isinstance(state, list) else [state]
        # What the browser sends: every widget value it holds, the new ones included; a trigger only once.
        ids = {s.id for s in new}
        sent = [s for i, s in self.states.items() if i not in ids] + new
        start = time.perf_counter()
        await self.send_rerun(self.page, sent, fragment_id)
        if drop:
            await self.close()
            return 0.0
        await self.finish_run(fragment=bool(fragment_id))
        self.last_fragment = bool(fragment_id)
        for one in new:
            if one.WhichOneof("value") not in ("trigger_value", "json_trigger_value"):  # a trigger is sent once
                self.states[one.id] = one
        return time.perf_counter() - start

    def next_tick(self) -> Optional[tuple[float, str]]:
        """When the browser's earliest run_every timer fires next (time.monotonic()) and its fragment id; None: none.

        The timer fires every interval from when it was armed. One that fired while this student waited for another
        run (a click, the last tick) is due at once: the browser sent it then, and the server runs it next.
        """
        ticks = []
        for fragment_id, (interval, armed) in self.auto_reruns.items():
            if interval > 0:
                last = max(armed, self.ticked.get(fragment_id, armed))
                ticks.append((armed + interval * ((last - armed + 1e-3) // interval + 1), fragment_id))
        return min(ticks, default=None)

    async def tick(self, fragment_id: str) -> float:
        """The timer of an ``st.fragment(run_every=...)`` fired: rerun that fragment as the browser does (every widget
        state it holds, the fragment's id, ``is_auto_rerun``) and wait for the run; seconds. The fragment may end in a
        full run (``st.rerun(scope="app")``): that is waited for too."""
        self.ticked[fragment_id] = time.monotonic()
        start = time.perf_counter()
        await self.send_rerun(self.page, list(self.states.values()), fragment_id, auto=True)
        await self.finish_run(fragment=True)
        return time.perf_counter() - start
