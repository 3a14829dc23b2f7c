"""Classroom features under AppTest: shareable links, presenter mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import element, element_entry, element_latex, shows_number
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def open_link(params: dict, page: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(params)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def latex(at: AppTest) -> str:
    return "\n".join(e.value for e in at.latex)


def test_a_link_reproduces_the_numbers():
    # rasbt ch03: SelfAttention_v1 (seed 123), context vector of "journey" = [0.3061, 0.8210]
    at = open_link({"preset": "journey_v1", "stage": "output", "entry_row": "1", "entry_col": "1"},
                   "app_pages/self_attention.py")
    s = at.session_state["settings"]
    assert (s.preset, s.self_attention.stage, s.entry_row, s.entry_col) == ("journey_v1", "output", 1, 1)
    assert "{z}_{2,2}" in element_entry(at) and shows_number(element_entry(at), 0.8210, before="= ")
    assert element(at)["position"] == {"stage": "output", "row": 1, "col": 1, "head": 0}


def test_the_url_follows_the_state_and_round_trips_with_edits():
    at = open_link({}, "app_pages/self_attention.py")
    at.number_input(key="setting_d_k").set_value(2).run()
    at.session_state["edits"] = {"seed000": {"x": {(0, 0): 0.5}}}
    at.run()
    params = dict(at.query_params)
    assert params["d_k"] == "2" and params["edit_x"] == "0,0,0.5"
    shown = element_latex(at)
    student = open_link(params, "app_pages/self_attention.py")
    assert student.session_state["settings"] == at.session_state["settings"]
    assert student.session_state["edits"]["seed000"]["x"] == {(0, 0): 0.5}
    assert element_latex(student) == shown


@pytest.mark.parametrize("params", [
    {"d_k": "banana"},
    {"preset": "../../etc/passwd", "stage": "<script>"},
    {"seed": "1e999", "entry_row": "-1", "presenter": "maybe"},
    {"edit_x": "0,0,nan;;1", "edit_w_key": "x"},
    {"language": "klingon", "sentence": ""},
])
def test_tampered_links_never_crash(params):
    at = open_link(params, "app_pages/self_attention.py")
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning) + " ".join(e.value for e in at.error)
    assert warnings, "a bad parameter is reported"


def test_presenter_mode_hides_the_sidebar_and_offers_the_way_back():
    at = open_link({"presenter": "1"}, "app_pages/self_attention.py")
    assert at.session_state["settings"].presenter
    assert any("[data-testid=\"stSidebar\"]" in m.value for m in at.markdown)
    at.button(key="presenter_exit").click().run()
    assert not at.session_state["settings"].presenter
    assert not any("[data-testid=\"stSidebar\"]" in m.value for m in at.markdown)


def test_edits_too_large_for_a_link_are_said():
    at = open_link({"preset": "custom", "d_model": "16"}, "app_pages/tokens.py")
    at.session_state["edits"] = {"custom": {"x": {(i, j): 123456.789012 for i in range(12) for j in range(16)}}}
    at.run()
    assert any("too large for a link" in w.value for w in at.warning)


def _font_sizes(node) -> list[float]:
    """Every font size set in a Vega-Lite spec: marks' fontSize, axes' and legends' label and title font sizes."""
    if isinstance(node, dict):
        return [value for key, value in node.items() if key.lower().endswith("fontsize")
                and isinstance(value, (int, float))] + [s for value in node.values() for s in _font_sizes(value)]
    if isinstance(node, list):
        return [s for value in node for s in _font_sizes(value)]
    return []


@pytest.mark.parametrize("page", ["app_pages/backward.py", "app_pages/temperature.py",
                                  "app_pages/why_sqrt_dk.py"])
def test_presenter_mode_draws_the_charts_with_numbers_of_at_least_22_px(page):
    """The charts' fonts are in their Vega-Lite specs (CSS cannot reach them): presenter mode builds them larger,
    every font at least 22 px (issue 29); normal mode keeps its own (15 px numbers, 13 px legends)."""
    import json

    from ui import presenter

    def specs(params):
        at = open_link(params, page)
        if "backward" in page:  # its charts are Keep stepping's, drawn once it is opened
            at.session_state["keep_stepping_backward"] = True
            at.run()
        return [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]

    normal, large = specs({}), specs({"presenter": "1"})
    assert normal and len(large) == len(normal)
    for spec in large:
        sizes = _font_sizes(spec)
        assert sizes and min(sizes) >= presenter.MIN_FONT_PX, (page, spec.get("description"), sorted(set(sizes)))
    assert max(s for spec in normal for s in _font_sizes(spec)) < presenter.MIN_FONT_PX
