"""A page's body as a fragment: a click on one of the page's own settings reruns the page, not the whole app.

A page file declares its body as one function and hands it to :func:`run` (``page_body.run(page, header=header)``,
with the title and introduction above it, which a click inside the body does not send again). On a whole-app
run (a page switch, a link, the sidebar) it is drawn in place like any code of the page; a click on a widget inside
it (the page's d_k, seed, heads, …) then reruns only the body, as an ``st.fragment``: not the router, the
navigation, the page config, the styles and the sidebar, which that click cannot change. Measured on the real server
(``scripts/benchmark_load.py``), that is about 18 fewer messages and 3 to 7 ms less server time per such click.

What the router draws must follow the settings, so a change of one of ``ui.state.ROUTER_FIELDS`` (the example, the
language, presenter mode, the colours, the tables switch, the fixed settings) made during a run of the body alone
reruns the whole app: ``ui.state.update`` notes it when the router did not run (``ui.state.router_ran``), and the body
asks before and after it draws (``ui.state.router_stale``). The link
is written at the end of every run of the body, and the note that the edits are too large for a link stands at its
top.

Inside the body, :func:`part` draws a part of it (a model page's heads and its open head; the step-through element and
its practice switch, ``ui.stepper``) as a fragment of its own: a click inside the part that changed only the part's own
settings reruns the part alone, any other change the whole app.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import streamlit as st

from attention_core.settings import Settings, preset_defaults
from ui import runtime, state
from ui.i18n import _


def run(body: Callable[[], None], *, header: Optional[Callable[[], None]] = None,
        footer: Optional[Callable[[], None]] = None) -> None:
    """Draw the page: its ``header`` (title, introduction), its ``body`` as a fragment (see the module's docstring),
    its ``footer``.

    The header and the footer are drawn on whole-app runs only and stay on the page while the body reruns, so what
    they show must not depend on anything a click inside the body changes (the settings but those of
    ``ui.state.ROUTER_FIELDS``, which rerun the whole app): a page's title and introduction, a derivation that is the
    same for every input. A click inside the body then sends none of their elements again (the messages, and the
    browser's markdown and KaTeX, that every click paid for before).
    """
    if header is not None:
        header()
    if footer is None:
        _fragment(body)
        return
    # The footer is drawn before the body, under the place kept for it: a body that stops on bad input (st.stop, which
    # ends the run at the next element) leaves it there, so a body rerun that fixes the input finds it in place.
    place = st.container()
    footer()
    with place:
        _fragment(body)


@st.fragment
def _fragment(body: Callable[[], None]) -> None:
    with runtime.one_run_at_a_time():  # a fragment rerun does not run app.py, which takes the turn otherwise
        if state.router_stale():  # a click inside the body changed what the router draws (the example, ...)
            st.rerun()
        if not state.write_link():
            st.warning(_("Your matrix edits are too large for a link: the address holds the settings only."),
                       icon=":material/link_off:")
        body()
        if state.router_stale():  # the body itself changed it
            st.rerun()
        state.write_link()  # what the body changed (an entry moved into range, a stage) is in the link too


def outer_fingerprint(settings: Settings, edits: Mapping, fragment_fields: Sequence[str]) -> tuple:
    """What a page's whole-page run depends on: every setting except the fragment's own, and the edits.

    Two runs with the same fingerprint draw the same page around the fragment, so a click that
    changed only ``fragment_fields`` (the stage, the explained entry) needs only the fragment rerun.
    """
    defaults = preset_defaults(None)
    kept = settings.set(**{f: defaults.get(f) for f in fragment_fields})
    cells = tuple(sorted((name, tuple(sorted(values.items()))) for name, values in edits.items()))
    return kept, cells


_PART_FULL = "page_body_part_full"  # set by part() on a run of the body, taken by the part's fragment that follows
_PART_OUTER = "page_body_part_outer"  # {part: the fingerprint of what the body drew around it, as of that run}


def part(name: str, draw: Callable[[], None], *, fields: Sequence[str]) -> None:
    """Draw ``draw``, a part of a page's body, as a fragment of its own (nested in the body's).

    A click on a widget inside it reruns the part alone when it changed only ``fields`` (settings' dotted names, e.g.
    ``"modern_lm.layer"``): what the body drew around the part did not change. A click that changed any other setting
    or an edit reruns the whole app, and so does a change of what the router draws (``ui.state.router_stale``). The
    link is written at the end of every run of the part. ``name``: the part's name in the session, one for each
    part of a page (parts may nest: the modern LM page's open head is a part inside its heads' part).
    """
    st.session_state[_PART_FULL] = name
    _part(name, draw, tuple(fields))


@st.fragment
def _part(name: str, draw: Callable[[], None], fields: tuple[str, ...]) -> None:
    with runtime.one_run_at_a_time():  # re-entrant: a run of the body holds it already
        fingerprint = outer_fingerprint(state.settings(), state.edits(), fields)
        outer = st.session_state.setdefault(_PART_OUTER, {})
        if st.session_state.get(_PART_FULL) == name:
            del st.session_state[_PART_FULL]
            outer[name] = fingerprint
        elif outer.get(name) != fingerprint or state.router_stale():
            st.rerun(scope="app")  # the click changed what the body around the part shows
        draw()
        if state.router_stale():
            st.rerun(scope="app")
        state.write_link()
