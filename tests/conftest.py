"""Shared by every test: the repository root, the app, and the AppTest helpers (open a page on a worked example,
read its errors, warnings, formulas, settings and pickers).

The tests mirror ``attention_core``: ``tests/<concept>/`` holds the tests of ``attention_core/<concept>/`` and of
its pages; ``tests/app/`` the app as a whole (every page, both languages, the browser, the real server).
Test modules import these helpers with ``from conftest import ...`` (pytest puts this folder on sys.path).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
from hypothesis import settings
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent

# Property tests draw the same examples on every run and every machine (a red CI is a bug, not a roll of the dice);
# HYPOTHESIS_PROFILE=explore draws fresh ones, to look for new counterexamples on purpose.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
APP = str(ROOT / "app.py")


def page_paths() -> list[str]:
    """Every page of the app, as AppTest opens it (``app_pages/<key>.py``), from the one registry, in its order."""
    from attention_core import registry

    return [f"app_pages/{page.file}" for page in registry.PAGES]


def open_app(page: str = "app_pages/overview.py", preset: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    if preset is not None:
        at.selectbox(key="setting_preset").set_value(preset).run()
    if page != "app_pages/overview.py":
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def shown(markdown: str) -> str:
    """What a reader sees of Markdown source: the backslash escapes of user text (``ui.widgets.md_escape``) undone."""
    return _ESCAPED.sub(r"\1", markdown)


_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>$~])")


def errors(at: AppTest) -> str:
    return " ".join(e.value for e in at.error)


def warnings(at: AppTest) -> str:
    return " ".join(w.value for w in at.warning)


def latex(at: AppTest) -> str:
    return "\n".join(element.value for element in at.latex)


def settings(at: AppTest):
    return at.session_state["settings"]


def charts(at: AppTest) -> list[tuple[dict, pd.DataFrame]]:
    """Every Vega-Lite chart on the page: its spec and its data (one row per mark's datum), in page order."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    return [(json.loads(chart.proto.spec), convert_arrow_bytes_to_pandas_df(chart.proto.data.data))
            for chart in at.get("vega_lite_chart")]


def entry_map(at: AppTest) -> pd.DataFrame:
    """The data of the page's one map whose cells explain their weight when clicked (``ui.model_view.attention_map``)."""
    (found,) = [data for spec, data in charts(at) if '"entry_pick"' in json.dumps(spec)]
    return found


def picker(at: AppTest, label: str):
    """The one selectbox labelled ``label`` (the explained entry's column picker gets a fresh key per label set)."""
    (found,) = [s for s in at.selectbox if s.label == label]
    return found


def train_and_wait(at: AppTest, timeout: float = 120) -> None:
    """On *Watch attention learn*: click Train, wait for the run's ``finished`` event (not a sleep) and run the page
    again, which now shows the run's charts and sections. Other pages: nothing."""
    from attention_core.training.watch import run_key
    from ui import training

    trains = [b for b in at.button if b.label == "Train"]
    if not trains:
        return
    trains[0].click().run()
    run = training.runs().get(run_key(settings(at)))
    assert run is not None and run.finished.wait(timeout), "the run did not finish"
    at.run()
