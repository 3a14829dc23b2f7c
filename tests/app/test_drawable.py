"""ui/chart_specs.drawable: what a chart's spec is given before Streamlit draws it. Streamlit runs a chart once with its data sets
empty before it inserts the data: a scale whose domain came from the data met no value there ("Infinite extent",
"Log scale domain includes zero" in the browser's console), and Streamlit's autosize "fit" on a chart sized in steps
was dropped with a warning. The browser test (test_browser_every_page.py) reads the console of every page; here,
that the specs hold what the warnings lacked and draw the very same picture as before (vl-convert's SVG)."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from ui import chart_specs, charts, heatmaps


def _svg(spec: dict, data: pa.Table) -> str:
    """The chart as SVG with its data inline, as Streamlit would autosize it (its "fit" unless the spec says)."""
    import vl_convert

    spec = copy.deepcopy(spec)
    spec.setdefault("autosize", {"type": "fit", "contains": "padding"})
    if spec.get("width") == "container":
        spec["width"] = 600
    spec["data"] = {"values": json.loads(data.to_pandas().to_json(orient="records"))}
    return re.sub(r"gradient_\d+", "gradient", vl_convert.vegalite_to_svg(spec))  # its ids count up per call


def _domains(spec: dict) -> dict[str, list]:
    """Each quantitative encoding's scale domain, by channel (a layer's own, the last one read)."""
    return {name: (enc.get("scale") or {}).get("domain") for layer in spec.get("layer", [spec])
            for name, enc in layer.get("encoding", {}).items()
            if isinstance(enc, dict) and enc.get("type") == "quantitative"}


def test_a_log_log_line_chart_gets_its_domains_from_the_data_and_draws_the_same():
    """The Why divide by √d_k? page's Var(q · k) against d_k: log x, log y, error bars (lo, hi)."""
    spec = charts._lines_spec("d_k", "Var", "series", True, 2, True, None, None, True, False, 560, 340)
    d = np.array([1.0, 4.0, 16.0, 64.0])
    data = pa.table({"x": np.concatenate([d, d]), "y": np.concatenate([d * 1.1, d]),
                     "series": ["measured"] * 4 + ["Var = d_k"] * 4, "order": [0] * 4 + [1] * 4,
                     "dashed": [False] * 4 + [True] * 4,
                     "lo": [0.9, 3.5, 15.0, 60.0] + [None] * 4, "hi": [1.3, 5.0, 20.0, 80.0] + [None] * 4})
    assert _domains(spec)["x"] is None  # from the data, on Streamlit's first (empty) run: infinite
    drawn = chart_specs.drawable(spec, data)
    domains = _domains(drawn)
    assert domains["x"] == [1.0, 64.0] and domains["y"] == [0.9, 80.0]  # the error bars' ends included
    assert "autosize" not in drawn  # sized by its container: Streamlit's "fit" is right
    assert _svg(drawn, data) == _svg(spec, data)
    assert _domains(spec)["x"] is None  # the shared spec stays as built


def test_a_linear_axis_keeps_zero_and_its_round_ends():
    """Temperature's sweep (y linear, from the data) and its bars (one per row, not stacked: a stacked layer's
    labels sorted by another operation than its text's, and Vega-Lite warned of "conflicting sort properties")."""
    spec = charts._lines_spec("τ", "entropy", "series", True, 10, False, None, None, False, True, 560, 340)
    data = pa.table({"x": [0.01, 0.1, 1.0, 10.0, 100.0], "y": [0.15, 0.4, 1.1, 1.8, 1.94], "series": ["row"] * 5,
                     "order": [0] * 5, "dashed": [False] * 5, "marked": [False, False, True, False, False]})
    drawn = chart_specs.drawable(spec, data)
    assert _domains(drawn)["y"] == [0.15, 1.94]
    assert _svg(drawn, data) == _svg(spec, data)
    bars = charts._bars_spec("entropy", "row", 360, 200)
    assert bars["layer"][0]["encoding"]["x"]["stack"] is None
    values = pa.table({"i": [0, 1, 2], "label": ["a", "b", "c"], "value": [0.05, 1.2, 1.9], "limit": [2.0] * 3})
    drawn = chart_specs.drawable(bars, values)
    assert _domains(drawn)["x"] == [0.05, 2.0]
    assert _svg(drawn, values) == _svg(bars, values)


def test_a_heatmap_sized_in_cells_is_padded_not_fit():
    matrix = np.array([[1.0, 0.0], [0.5, -2.0]])
    table, spec = heatmaps.heatmap_figure(matrix, ["a", "b"], ["c", "d"])
    drawn = chart_specs.drawable(spec, table)
    assert drawn["autosize"] == {"type": "pad", "contains": "padding"}  # what Vega-Lite fell back to, warning
    assert _domains(drawn)["color"] == [-2.0, 2.0]  # its own, set by heatmap_figure: left as it is
    assert _svg(drawn, table) == _svg(spec, table)
    assert "autosize" not in spec


@pytest.mark.parametrize("width, height, fallback", [({"step": 20}, {"step": 20}, "pad"),
                                                     ({"step": 20}, 200, "fit-y"), (300, {"step": 20}, "fit-x"),
                                                     (300, 200, None)])
def test_the_autosize_is_what_vega_lite_falls_back_to(width, height, fallback):
    spec = chart_specs.drawable({"mark": "rect", "width": width, "height": height}, None)
    assert spec.get("autosize", {}).get("type") == fallback


def test_a_scale_with_its_own_domain_or_without_data_is_left_as_it_is():
    spec = {"mark": "point", "encoding": {"x": {"field": "x", "type": "quantitative", "scale": {"domain": [0, 9]}},
                                          "y": {"field": "y", "type": "quantitative"}}}
    drawn = chart_specs.drawable(spec, pd.DataFrame({"x": [1.0, 2.0], "y": [np.nan, np.nan]}))
    assert drawn["encoding"]["x"]["scale"] == {"domain": [0, 9]} and "scale" not in drawn["encoding"]["y"]
