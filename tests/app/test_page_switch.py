"""A widget shows the number its page computes with, whatever page came before and whatever link opened the app.

Every widget bound to a setting has the key ``setting_<field>`` (``ui.state.widget_key``); pages compute with
``Settings.<field>``. Several pages bind the same field to widgets of other labels (the seed is "Seed" on one page,
"Seed of W" on another): Streamlit does not carry a widget's state over to a widget of another identity, so each
page must seed its widgets from the settings. The walk visits every ordered pair of pages of the registry, so a page
added later is covered without editing this file.
"""

from __future__ import annotations

import pytest
from conftest import APP, open_app, page_paths, settings
from streamlit.testing.v1 import AppTest

PAGES = page_paths()  # every page of the registry
KINDS = ("number_input", "toggle", "selectbox", "text_input", "text_area", "radio", "select_slider", "checkbox",
         "slider", "multiselect")


def every_ordered_pair(n: int) -> list[int]:
    """A walk over 0..n-1 that goes from every node to every other exactly once (an Eulerian circuit of the
    complete directed graph, Hierholzer's algorithm): n (n − 1) moves."""
    unused = {v: [w for w in range(n) if w != v] for v in range(n)}
    stack, walk = [0], []
    while stack:
        if unused[stack[-1]]:
            stack.append(unused[stack[-1]].pop())
        else:
            walk.append(stack.pop())
    return walk[::-1]


def test_the_walk_covers_every_ordered_pair():
    walk = every_ordered_pair(len(PAGES))
    moves = list(zip(walk, walk[1:]))
    assert len(moves) == len(set(moves)) == len(PAGES) * (len(PAGES) - 1)


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


def test_every_page_after_every_other_shows_the_settings_it_computes_with():
    walk = every_ordered_pair(len(PAGES))
    at = open_app(PAGES[walk[0]])
    problems, checked = [], 0
    for before, page in zip(walk, walk[1:]):
        at.switch_page(PAGES[page]).run()
        if at.exception:
            problems.append(f"{PAGES[before]} -> {PAGES[page]}: {at.exception[0].message[:200]}")
            continue
        for key, label, shown, used in shown_against_used(at):
            problems.append(f"{PAGES[before]} -> {PAGES[page]}: '{label}' ({key}) shows {shown!r}, the page uses "
                            f"{used!r}")
        checked += sum(1 for kind in KINDS for w in getattr(at, kind) if (w.key or "").startswith("setting_"))
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
