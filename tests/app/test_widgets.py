"""Shared widgets under AppTest: ``build_or_stop`` returns what it builds, or shows the message and stops."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _script():
    import streamlit as st

    from attention_core.errors import N_, InputError
    from ui import widgets

    def build(a, b, *, scale):
        if b == 0:
            raise InputError(N_("Cannot divide {a} by zero."), field="b", a=a)
        return a / b * scale

    b = st.session_state.get("b", 2)
    value = widgets.build_or_stop(build, 6, b, scale=10)
    st.markdown(f"value {value}")
    st.markdown("after the build")


def test_build_or_stop_returns_the_built_value():
    at = AppTest.from_function(_script, default_timeout=60).run()
    assert not at.exception and not at.error
    assert [m.value for m in at.markdown] == ["value 30.0", "after the build"]


def test_build_or_stop_shows_the_message_and_stops_the_page():
    at = AppTest.from_function(_script, default_timeout=60)
    at.session_state["b"] = 0
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["Cannot divide 6 by zero."]
    # under the message, only the way back: nothing after the failed build ran
    assert [m.value for m in at.markdown] == ["**Back to a working page**"]
    assert {b.key for b in at.button} == {"way_back_example", "way_back_all"}


def _bug():
    from ui import widgets

    widgets.build_or_stop(lambda: 1 / 0)


def test_build_or_stop_lets_other_exceptions_through():
    at = AppTest.from_function(_bug, default_timeout=60).run()
    assert at.exception and at.exception[0].proto.type == "ZeroDivisionError"


def test_the_step_through_fragment_reruns_alone_only_when_nothing_outside_it_changed():
    """``page_body.outer_fingerprint``: the stage and the explained entry are the fragment's own;
    any other setting, or an edit (a flipped mask cell), changes what the whole page draws."""
    from attention_core.settings import Settings
    from ui.page_body import outer_fingerprint

    own = ["causal.stage", "entry_row", "entry_col"]
    base = outer_fingerprint(Settings(), {}, own)
    assert outer_fingerprint(Settings(entry_row=2, entry_col=1).set(**{"causal.stage": "weights"}), {}, own) == base
    assert outer_fingerprint(Settings(padding=1), {}, own) != base
    assert outer_fingerprint(Settings().set(**{"self_attention.stage": "weights"}), {}, own) != base  # another page's stage
    assert outer_fingerprint(Settings(), {"mask": {(0, 3): 1.0}}, own) != base
    assert outer_fingerprint(Settings(), {"mask": {(0, 3): 1.0}}, own) == outer_fingerprint(
        Settings(), {"mask": {(0, 3): 1.0}}, own)


def test_build_or_stop_shares_what_it_built_for_equal_plain_values():
    import torch

    from attention_core.settings import Settings
    from ui import widgets

    calls = []

    def build(settings, edits, *, dropout=False):
        calls.append((settings.d_k, dict(edits), dropout))
        edits["changed by the builder"] = {}  # changes its own copy, never the caller's or the shared key
        return [settings.d_k]

    edits = {"w_query": {(0, 1): 1.5}}
    first = widgets.build_or_stop(build, Settings(d_k=2), edits, dropout=True)
    again = widgets.build_or_stop(build, Settings(d_k=2), {"w_query": {(0, 1): 1.5}}, dropout=True)
    assert again is first and len(calls) == 1  # another session with the same numbers: not rebuilt
    assert edits == {"w_query": {(0, 1): 1.5}}
    others = [widgets.build_or_stop(build, Settings(d_k=2), {"w_query": {(0, 1): 2.5}}, dropout=True),  # an edit
              widgets.build_or_stop(build, Settings(d_k=3), edits, dropout=True),  # a setting
              widgets.build_or_stop(build, Settings(d_k=2), edits)]  # a keyword
    assert len(calls) == 4 and all(other is not first for other in others)
    assert calls[0] == (2, {"w_query": {(0, 1): 1.5}}, True)  # the builder got the values back, not the key

    tensor_calls = []
    x = torch.ones(2)
    keep = tensor_calls.append  # one builder for both calls
    for _ in range(2):  # a tensor keys by identity: the very same tensor (from a shared build) is not rebuilt
        widgets.build_or_stop(keep, x)
    assert len(tensor_calls) == 1 and tensor_calls[0] is x
    widgets.build_or_stop(keep, torch.ones(2))  # equal numbers in another tensor: built (never compared by value)
    assert len(tensor_calls) == 2

    objects = []
    for _ in range(2):  # not a plain value nor a tensor: built every time
        widgets.build_or_stop(objects.append, object())
    assert len(objects) == 2


def _page_script():
    import streamlit as st

    from ui import page_body

    def body():
        st.markdown("body")
        if st.session_state.get("stop"):
            st.error("bad input")
            st.stop()
        st.markdown("end of body")

    page_body.run(body, header=lambda: st.markdown("header"), footer=lambda: st.markdown("footer"))
    st.markdown("after the page")


def test_a_page_draws_its_header_body_and_footer_in_order():
    at = AppTest.from_function(_page_script, default_timeout=60).run()
    assert not at.exception and not at.error
    assert [m.value for m in at.markdown] == ["header", "body", "end of body", "footer", "after the page"]


def test_a_body_that_stops_keeps_its_footer_under_its_message():
    """The footer is drawn once per whole-app run and stays while the body reruns alone (ui/page_body.py): drawn under
    a body that stopped on bad input too, so that a body rerun that fixes the input finds it there; the page stops."""
    at = AppTest.from_function(_page_script, default_timeout=60)
    at.session_state["stop"] = True
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["bad input"]
    assert [m.value for m in at.markdown] == ["header", "body", "footer"]


def _code_script():
    import streamlit as st

    from attention_core.self_attention import formulas
    from ui import widgets

    widgets.show_code((formulas.entry_latex,), key="code")
    st.markdown("after the code")


def test_show_the_code_sends_the_source_only_while_it_is_open():
    """Closed (as it opens), the expander holds nothing and the page goes on; opened, it holds the function's source
    as a Python code block; closed again, nothing again."""
    import inspect

    from attention_core.self_attention import formulas

    at = AppTest.from_function(_code_script, default_timeout=60).run()
    assert not at.exception
    assert [e.label for e in at.expander] == ["Show the code"] and len(at.code) == 0
    assert [m.value for m in at.markdown] == ["after the code"]
    at.session_state["code"] = True
    at.run()
    assert [c.value for c in at.code] == [inspect.getsource(formulas.entry_latex).rstrip("\n")]  # (st.code strips it)
    assert at.code[0].language == "python"
    at.session_state["code"] = False
    at.run()
    assert len(at.code) == 0
