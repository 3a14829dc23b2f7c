"""A widget shows the number its page computes with, whatever page came before and whatever link opened the app.

Every widget bound to a setting has the key ``setting_<field>`` (``ui.state.widget_key``); pages compute with
``Settings.<field>``. Several pages bind the same field to widgets of other labels (the seed is "Seed" on one page,
"Seed of W" on another): Streamlit does not carry a widget's state over to a widget of another identity, so each
page must seed its widgets from the settings. The walk goes over every page of the registry (so a page added later is
covered without editing this file) and then from each page to every page that binds one of its settings to another
widget (another kind, label, options or range), and to each page once from a page that binds one of its settings to
the same widget and once from a page that shares none of its widgets: what can differ after a switch. (Every ordered
pair, 992 switches, took 84 s of a test run; these are ~300.)
"""

from __future__ import annotations

import pytest
from conftest import APP, open_app, page_paths, settings
from streamlit.testing.v1 import AppTest

PAGES = page_paths()  # every page of the registry
KINDS = ("number_input", "toggle", "selectbox", "text_input", "text_area", "radio", "select_slider", "checkbox",
         "slider", "multiselect", "segmented_control")


def shown_against_used(at: AppTest) -> list[tuple[str, str, object, object]]:
    """(key, label, shown, used) of every bound widget on the page whose value is not its setting's."""
    current = settings(at)
    wrong = []
    for kind in KINDS:
        for widget in getattr(at, kind):
            key = widget.key or ""
            if not key.startswith("setting_"):
                continue
            field = key.removeprefix("setting_").split("__")[0]
            if field in current.paths() and widget.value != current.get(field):
                wrong.append((key, widget.label, widget.value, current.get(field)))
    return wrong


def bound_widgets(at: AppTest) -> dict[str, tuple]:
    """The page's bound widgets: key -> what makes a widget another one for Streamlit (kind, label, options, range)."""
    return {widget.key: (kind, widget.label, tuple(getattr(widget, "options", None) or ()),
                         getattr(widget, "min", None), getattr(widget, "max", None), getattr(widget, "step", None))
            for kind in KINDS for widget in getattr(at, kind) if (widget.key or "").startswith("setting_")}


def switches_that_can_differ(widgets: dict[str, dict[str, tuple]]) -> list[tuple[str, str]]:
    """(before, page): every page after each page that binds one of its settings to another widget; and after one
    page that binds one to the same widget and one that shares none of its page's widgets (when there are such)."""
    everywhere = set.intersection(*(set(w) for w in widgets.values()))  # the sidebar's: drawn on every page alike
    moves = []
    for page, mine in widgets.items():
        others = [p for p in widgets if p != page]
        shared = {p: [k for k in mine if k in widgets[p] and k not in everywhere] for p in others}
        moves += [(p, page) for p in others if any(widgets[p][k] != mine[k] for k in shared[p])]
        alike = [p for p in others if shared[p] and all(widgets[p][k] == mine[k] for k in shared[p])]
        moves += [(p, page) for p in ([alike[0]] if alike else []) + [p for p in others if not shared[p]][:1]]
    return moves


def test_the_switches_cover_every_page_after_each_kind_of_page_before_it():
    widgets = {"a": {"setting_seed": ("number_input", "Seed"), "setting_x": ("toggle", "X")},
               "b": {"setting_seed": ("number_input", "Seed of W")},
               "c": {"setting_x": ("toggle", "X")}, "d": {}}
    moves = switches_that_can_differ(widgets)
    assert ("a", "b") in moves and ("b", "a") in moves  # the seed's widgets differ
    assert ("a", "c") in moves and ("c", "a") in moves  # the same widget (once each)
    assert ("a", "d") in moves and ("d", "a") in moves  # none shared (once each)
    assert ("b", "d") not in moves and ("c", "d") not in moves
    assert len(moves) == len(set(moves))


def test_every_page_after_every_page_it_can_differ_after_shows_the_settings_it_computes_with():
    at = open_app(PAGES[0])
    problems, checked, widgets = [], 0, {}

    def switch(before: str, page: str) -> None:
        nonlocal checked
        at.switch_page(page).run()
        if at.exception:
            problems.append(f"{before} -> {page}: {at.exception[0].message[:200]}")
            return
        for key, label, shown, used in shown_against_used(at):
            problems.append(f"{before} -> {page}: '{label}' ({key}) shows {shown!r}, the page uses {used!r}")
        widgets[page] = bound_widgets(at)
        checked += len(widgets[page])

    current = PAGES[0]
    for page in PAGES[1:] + PAGES[:1]:  # every page once, in the registry's order (and their widgets)
        switch(current, page)
        current = page
    moves = switches_that_can_differ(widgets)
    while moves:  # from the current page when a move starts there, else the first one left
        before, page = next(((b, p) for b, p in moves if b == current), moves[0])
        moves.remove((before, page))
        if before != current:
            switch(current, before)
        switch(before, page)
        current = page
    assert checked > 1000, "the walk saw the bound widgets"
    assert not problems, "\n".join(problems)


# A teacher moves settings on one page, opens another and shares its address; a student opens it and goes back.
SHARED_LINKS = [
    ({"preset": "seed000", "sentence": "I Like Machine", "flash_tile": "11"}, "app_pages/flash_attention.py"),
    ({"preset": "seed000", "sentence": "I Like Machine", "entry_row": "6"}, "app_pages/self_attention.py"),
    ({"toy_step": "8"}, "app_pages/generation.py"),
    ({"preset": "seed000", "encoder_block": "5", "num_layers": "2"}, "app_pages/encoder_block.py"),
    ({"preset": "seed000", "sentence": "I Like Machine", "entry_row": "6", "head": "3"}, "app_pages/multi_head.py"),
    ({"preset": "seed000", "sentence": "I Like Machine", "entry_row": "6"}, "app_pages/gqa.py"),
    ({"preset": "seed000", "sentence": "I Like Machine", "entry_row": "6"}, "app_pages/alibi.py"),
]


@pytest.mark.parametrize("params, page", SHARED_LINKS)
def test_a_shared_link_then_another_page(params, page):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(params)
    at.switch_page("app_pages/tokens.py").run()
    assert not at.exception, at.exception
    at.switch_page(page).run()
    assert not at.exception, at.exception[0].message
    assert not shown_against_used(at)


def test_a_setting_changed_after_its_widget_was_drawn_redraws_the_page():
    """state.update of a field whose widget this run already drew cannot write the widget: the page runs again."""

    def script():
        import streamlit as st

        from ui import state

        state.bind(st.number_input, "Seed", "seed", step=1)
        if st.session_state.get("move_seed"):
            st.session_state.move_seed = False
            state.update(seed=state.settings().seed + 1)

    at = AppTest.from_function(script, default_timeout=30).run()
    before = settings(at).seed
    at.session_state["move_seed"] = True
    at.run()
    assert not at.exception, at.exception
    assert settings(at).seed == before + 1
    assert at.number_input(key="setting_seed").value == before + 1


def test_after_a_language_switch_every_widget_shows_its_setting():
    """Every label changes with the language (another widget identity): the widgets must still show the settings."""
    at = open_app(PAGES[0])
    problems = []
    for page in PAGES:
        at.switch_page(page).run()
        for language in ("zh", "en"):
            at.radio(key="setting_language").set_value(language).run()
            assert not at.exception, at.exception
            problems += [f"{page} in {language}: {wrong}" for wrong in shown_against_used(at)]
    assert not problems, "\n".join(map(str, problems))
