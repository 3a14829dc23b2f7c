"""A one-page app whose page's body changes what the router draws (the example, one of ``ui.state.ROUTER_FIELDS``):
what ``tests/app/test_load_protocol.py`` runs to check that such a click reruns the whole app (``ui/page_body.py``).
No page of the app does this now (the overview, which did, is all header); the guard stays for the next one."""

import streamlit as st

from attention_core.inputs.presets import PRESETS
from ui import page_body, state

state.router_started()
state.load_link()
state.start_run()
with st.sidebar:  # what the router draws: the example's picker
    state.bind(st.selectbox, "Worked example", "preset", options=list(PRESETS))


def body() -> None:
    st.button("Use the hello example", key="choose_hello", on_click=state.choose_preset, args=("hello",))


try:
    page_body.run(body)
finally:
    state.router_done()
