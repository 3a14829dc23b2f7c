"""Every chart for everyone (AppTest): the colour-blind-safe palette kept in the link, a text description on
every chart (Vega-Lite's description, the chart's accessible name), and every chart's numbers as a table."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from conftest import APP, element, errors, has_element, settings, train_and_wait
from streamlit.testing.v1 import AppTest

from attention_core import registry
from attention_core.lessons.image_attention import page as image_patterns
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings
from ui import heatmaps

#: the pages without a chart; every other page of the registry has charts (on the step it opens on)
NO_CHARTS = {"app_pages/overview.py", "app_pages/no_weights.py", "app_pages/check.py"}


def _open(path: str, **params) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(path).run()
    train_and_wait(at)  # Watch attention learn draws its charts once a run has finished
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


@pytest.mark.parametrize("page", registry.PAGES, ids=[page.key for page in registry.PAGES])
def test_every_chart_has_a_description_and_a_table_and_no_red_blue_in_the_safe_palette(page):
    """Every page of the registry (those without charts too: a chart added there is checked), on each of its steps."""
    path = f"app_pages/{page.file}"
    for stage in list(page.stages) or [None]:
        at = _open(path, palette="cvd", tables="1", **({page.stage_field: stage} if stage else {}))
        if stage:
            assert settings(at).get(page.stage_field) == stage, (path, stage)
        if has_element(at):  # the browser's step-through: each matrix an HTML table with its caption and labels
            panels = element(at)["stages"][stage]["panels"]  # a panel that follows the entry: the one of each entry
            for panel in [one for p in panels for one in ([q for rows in p["by_entry"] for q in rows]
                                                          if "by_entry" in p else [p])]:
                assert panel["caption_html"] and len(panel["rows"]) == len(panel["text"]), (path, stage)
                assert all(len(row) == len(panel["cols"]) for row in panel["text"]), (path, stage)
                assert panel["scheme"] in ("blueorange", "viridis"), (path, stage, panel["scheme"])
        specs = _specs(at)
        if stage in (None, page.first_stage) and not has_element(at):  # some later steps show formulas only
            assert specs or path in NO_CHARTS, (path, stage)
        missing = [f"chart {i} of {len(specs)}" for i, spec in enumerate(specs, 1) if not spec.get("description")]
        assert not missing, (path, stage, "charts without a description", missing)
        for spec in specs:
            assert "redblue" not in _schemes(spec) and "tableau10" not in json.dumps(spec), (path, _schemes(spec))
        # a table under every chart, the picture grids too (the trained model's heads, the image's pixels)
        assert len(at.dataframe) >= len(specs), (path, stage)


def _colour_legends(spec: dict) -> list:
    """The colour legends of a heatmap spec (one per colour encoding; None where a legend is switched off)."""
    return [layer["encoding"]["color"].get("legend", "default") for layer in [spec, *spec.get("layer", [])]
            if isinstance(layer.get("encoding", {}).get("color"), dict) and "field" in layer["encoding"]["color"]]


@pytest.mark.parametrize("path, params, side_by_side", [
    ("app_pages/additive.py", {}, True),
    ("app_pages/positional_encoding.py", {}, True),
])
def test_every_heatmap_keeps_a_colour_legend_side_by_side_too(path, params, side_by_side):
    at = _open(path, **params)
    heatmaps = [spec for spec in _specs(at) if spec["description"].startswith("Heatmap")]
    legends = [legend for spec in heatmaps for legend in _colour_legends(spec)]
    assert len(heatmaps) >= 2 and len(legends) >= len(heatmaps), path
    assert None not in legends, path
    under = [legend for legend in legends if legend != "default" and legend.get("orient") == "bottom"]
    # side by side, a heatmap's legend goes under it (no width taken from its neighbour)
    assert bool(under) == side_by_side, (path, legends)


def test_the_head_grid_and_the_image_have_tables_of_their_own():
    from attention_core.minilm import head_findings
    from ui.page_parts import trained_model_data

    at = _open("app_pages/trained_model.py", tables="1")
    data = trained_model_data.sentence_data(Settings().trained_model.sentence, 0)
    focus = head_findings.head_focus(data.run.attentions, data.run.encoding).numpy()
    by_layer = [df.value for df in at.dataframe if list(df.value.index[:2]) == ["layer 1", "layer 2"]]
    # the grid's table (the findings' bars have a layer × head table of their own scores)
    (grid,) = [df for df in by_layer if df.shape == focus.shape and np.allclose(df.to_numpy(), focus, atol=1e-6)]
    assert list(grid.columns[:2]) == ["head 1", "head 2"] and focus.shape == (6, 12)
    assert ((focus > 0) & (focus <= 1)).all()

    at = _open("app_pages/image_attention.py", tables="1")
    colours = [df.value for df in at.dataframe if str(df.value.iloc[0, 0]).startswith("(")]
    assert len(colours) >= 2  # the image and the output, pixel by pixel
    image = colours[0]
    pixels = image_patterns.pattern(Settings().image_attention.source)
    assert image.shape == tuple(pixels.shape[:2]) and all(str(c).count(",") == 2 for c in image.to_numpy().ravel())
    r, g, b = (int(v) for v in pixels[0, 0])
    assert image.iloc[0, 0] == f"({r}, {g}, {b})"  # pixel (0, 0), as drawn


def test_the_palette_follows_the_numbers_and_stays_in_the_link():
    """On the self-attention page's step-through element (its tables take the heatmaps' colours) and on a page of
    heatmaps."""
    at = _open("app_pages/self_attention.py", palette="cvd", stage="scaled_scores")
    (scaled,) = element(at)["stages"]["scaled_scores"]["panels"]
    assert scaled["scheme"] == "blueorange" and scaled["domain"][0] == -scaled["domain"][1]  # signed: around 0
    (weights,) = element(at)["stages"]["weights"]["panels"]
    assert weights["scheme"] == "viridis" and weights["domain"][0] == 0.0
    assert at.query_params["palette"] == ["cvd"] or at.query_params["palette"] == "cvd"
    at.radio(key="setting_palette").set_value("classic").run()
    (weights,) = element(at)["stages"]["weights"]["panels"]  # >= 0: white to blue from 0 (as the heads' grids)
    assert weights["scheme"] == "blues" and weights["domain"][0] == 0.0
    assert element(at)["stages"]["scaled_scores"]["panels"][0]["scheme"] == "redblue"  # signed: diverging around 0
    at = _open("app_pages/no_weights.py", palette="cvd")
    spec = _specs(at)[0]  # the weights, ≥ 0 (a page of heatmaps)
    assert _schemes(spec) == {"viridis"} and spec["layer"][0]["encoding"]["color"]["scale"]["domain"][0] == 0.0
    at.radio(key="setting_palette").set_value("classic").run()
    assert _schemes(_specs(at)[0]) == {"blues"}


def test_the_description_states_the_shape_and_range_and_the_table_the_same_numbers():
    """On a page of heatmaps (the weights of attention without trainable weights: softmax(X Xᵀ), PyTorch's)."""
    at = _open("app_pages/no_weights.py", tables="1")
    x = torch.as_tensor(build_walkthrough(Settings()).trace.x, dtype=torch.float64)
    weights = torch.softmax(x @ x.T, dim=-1).numpy()
    spec = _specs(at)[0]
    low, high = float(weights.min()), float(weights.max())
    assert spec["description"] == f"Heatmap: 7 × 7 numbers (query × key), from {low:.3g} to {high:.3g}."
    frame = at.dataframe[0]
    np.testing.assert_allclose(frame.value.to_numpy(), weights, rtol=1e-5)
    assert list(frame.value.index)[:2] == ["1 I", "2 Like"]


def test_the_elements_matrix_is_a_table_with_its_caption_labels_and_numbers():
    """The step-through element's matrix is the table a screen reader reads: its caption (the stage and its shape),
    the token labels of its rows and columns, each number as the heatmaps write it."""
    at = _open("app_pages/self_attention.py", stage="weights")
    weights = build_walkthrough(Settings()).trace.attention.weights.numpy()
    (panel,) = element(at)["stages"]["weights"]["panels"]
    assert panel["caption_html"].startswith("<strong>Weights") and "7 × 7" in panel["caption_html"]
    assert panel["rows"][:2] == ["1 I", "2 Like"] and panel["cols"] == panel["rows"]
    exponent, decimals = heatmaps.cell_number_format(weights)
    assert panel["text"] == heatmaps.cell_labels(weights, exponent, decimals).tolist()


def test_a_masked_matrix_says_how_many_cells_are_blocked():
    """The causal page's masked scores (a table of the step-through element: its caption says it, as a heatmap's
    description does)."""
    at = _open("app_pages/causal.py", causal_stage="masked_scores")
    (panel,) = element(at)["stages"]["masked_scores"]["panels"]
    assert "21 cells are blocked (−∞)." in panel["caption_html"]  # 7 tokens: 6 + 5 + … + 1 above the diagonal
    assert sum(text == "−∞" for row in panel["text"] for text in row) == 21


def test_tables_are_off_by_default():
    at = _open("app_pages/self_attention.py", stage="weights")
    assert len(at.dataframe) == 0
