"""Every chart for everyone (AppTest): the colour-blind-safe palette kept in the link, a text description on
every chart (Vega-Lite's description, the chart's accessible name), and every chart's numbers as a table."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import APP, errors
from streamlit.testing.v1 import AppTest

from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings

#: every page with charts
CHART_PAGES = ["app_pages/tokens.py", "app_pages/self_attention.py", "app_pages/causal.py", "app_pages/dropout.py",
               "app_pages/multi_head.py", "app_pages/cross_attention.py", "app_pages/why_sqrt_dk.py",
               "app_pages/temperature.py", "app_pages/positional_encoding.py", "app_pages/additive.py",
               "app_pages/image_attention.py", "app_pages/encoder_block.py", "app_pages/generation.py",
               "app_pages/gqa.py", "app_pages/rope.py", "app_pages/alibi.py", "app_pages/sliding_window.py",
               "app_pages/flash_attention.py", "app_pages/trained_model.py"]


def _open(path: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    assert not at.error, errors(at)
    return at


def _specs(at: AppTest) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]


def _schemes(spec: dict) -> set[str]:
    found = set()

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("scale"), dict) and "scheme" in node["scale"]:
                found.add(node["scale"]["scheme"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return found


@pytest.mark.parametrize("path", CHART_PAGES)
def test_every_chart_has_a_description_and_a_table_and_no_red_blue_in_the_safe_palette(path):
    at = _open(path, palette="cvd", tables="1")
    specs = _specs(at)
    assert specs, path
    for spec in specs:
        assert spec.get("description"), (path, "a chart without a description")
        assert "redblue" not in _schemes(spec) and "tableau10" not in json.dumps(spec), (path, _schemes(spec))
    # a table under every chart but the picture grids (the trained model's heads, the image's pixels)
    pictures = sum(1 for s in specs if s["description"].startswith(("Grid of", "Image:")))
    assert len(at.dataframe) >= len(specs) - pictures, path


def test_the_palette_follows_the_numbers_and_stays_in_the_link():
    at = _open("app_pages/self_attention.py", palette="cvd", stage="scaled_scores")
    assert _schemes(_specs(at)[0]) == {"blueorange"}  # signed scores: diverging around 0
    at.selectbox(key="setting_stage").set_value("weights").run()
    (spec,) = _specs(at)
    assert _schemes(spec) == {"viridis"} and spec["layer"][0]["encoding"]["color"]["scale"]["domain"][0] == 0.0
    assert at.query_params["palette"] == ["cvd"] or at.query_params["palette"] == "cvd"
    at.radio(key="setting_palette").set_value("classic").run()
    assert _schemes(_specs(at)[0]) == {"redblue"}


def test_the_description_states_the_shape_and_range_and_the_table_the_same_numbers():
    at = _open("app_pages/self_attention.py", stage="weights", tables="1")
    weights = build_walkthrough(Settings()).trace.attention.weights.numpy()
    (spec,) = _specs(at)
    low, high = float(weights.min()), float(weights.max())
    assert spec["description"] == (f"Heatmap: 7 × 7 numbers (query token × key token), from {low:.3g} to {high:.3g}.")
    (frame,) = at.dataframe
    np.testing.assert_allclose(frame.value.to_numpy(), weights, rtol=1e-6)
    assert list(frame.value.index)[:2] == ["1 I", "2 Like"]


def test_a_masked_heatmap_says_how_many_cells_are_blocked():
    at = _open("app_pages/causal.py", causal_stage="masked_scores")
    (spec,) = _specs(at)
    assert "21 cells are blocked (−∞)." in spec["description"]  # 7 tokens: 6 + 5 + … + 1 above the diagonal


def test_tables_are_off_by_default():
    at = _open("app_pages/self_attention.py", stage="weights")
    assert len(at.dataframe) == 0
