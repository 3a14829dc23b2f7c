"""A chart's Vega-Lite spec as Streamlit should be given it: an Altair template made once without data
(:func:`layered_spec`), and a copy fitted to the data it is drawn with (:func:`drawable`: autosize in steps, each
quantitative scale given the data's domain). What the heatmaps, the charts and the step-through's entry charts share."""

from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np
import pandas as pd
import pyarrow as pa


def layered_spec(chart: alt.TopLevelMixin) -> dict:
    """An Altair chart made without data as a Vega-Lite spec for data passed beside it (``st.vega_lite_chart``): the
    one way every chart template of the app is turned into its spec.

    ``alt.Chart()`` without data gives the chart (and each layer) Altair's one-row "empty" placeholder dataset; it is
    dropped, so every layer uses the data passed with the spec. Not validated against the schema (the templates are
    ours, built once).
    """
    spec = chart.to_dict(validate=False)
    spec.pop("datasets", None)
    spec.pop("data", None)
    for layer in spec.get("layer", []):
        layer.pop("data", None)
    return spec


#: The channels whose quantitative scale gets its domain from the data, and the fields that share each one's scale.
_SCALES = {"x": ("x", "x2"), "y": ("y", "y2"), "color": ("color",), "fill": ("fill",), "opacity": ("opacity",),
           "size": ("size",)}


#: Marks whose quantitative x or y (without a second one, x2 or y2) Vega-Lite starts at zero.
_ZERO_BASED = ("bar", "area")


def drawable(spec: dict, data: Any) -> dict:
    """``spec`` as Streamlit should be given it with ``data`` (an Arrow table or a DataFrame; None: the spec as is).

    A copy (the spec's top level, layers and encodings; shared specs stay untouched): ``autosize`` set when the
    chart is sized in steps, and each quantitative scale without a domain given the data's (see the comment above).
    """
    spec = {**spec}
    if "autosize" not in spec:
        fallback = _step_autosize(spec)
        if fallback:
            spec["autosize"] = {"type": fallback, "contains": "padding"}
    if data is None:
        return spec
    units = _units(spec)
    for channel, fields in _SCALES.items():
        defs = [(unit, unit["encoding"][f]) for unit in units for f in fields
                if isinstance(unit.get("encoding", {}).get(f), dict) and unit["encoding"][f].get("field")]
        main = [(unit, d) for unit, d in defs if d.get("type") == "quantitative" and "bin" not in d
                and "aggregate" not in d]
        if not main or any(d.get("type") not in ("quantitative", None) for _unit, d in defs):
            continue
        scales = [d.get("scale") or {} for _unit, d in main]
        if any(s is None or "domain" in s for s in (d.get("scale", {}) for _unit, d in main)):
            continue
        scale_type = next((s["type"] for s in scales if "type" in s), "linear")
        values = np.concatenate([_numbers(data, d["field"]) for _unit, d in defs]) if defs else np.array([])
        values = values[np.isfinite(values)]
        if scale_type == "log":
            values = values[values > 0]
        if not values.size:
            continue
        domain = [float(values.min()), float(values.max())]
        added: dict[str, Any] = {"domain": domain}
        if channel in ("x", "y") and not any("nice" in s for s in scales):
            added["nice"] = True  # Vega-Lite's for x and y from data; off with an explicit domain
        if channel in ("x", "y") and scale_type == "linear" and not any("zero" in s for s in scales):
            added["zero"] = any(_starts_at_zero(unit, channel) for unit, _d in main)
        for unit, d in main:
            encoding = unit["encoding"]
            name = next(f for f in fields if encoding.get(f) is d)
            if name.endswith("2"):
                continue  # x2 and y2 take x's and y's scale
            encoding[name] = {**d, "scale": {**(d.get("scale") or {}), **added}}
    return spec


def _units(spec: dict) -> list[dict]:
    """The spec's unit specs (itself, or its layers), each copied with its encoding, so that they can be changed."""
    if "layer" in spec:
        spec["layer"] = [{**layer, "encoding": {**layer.get("encoding", {})}} for layer in spec["layer"]]
        if "encoding" in spec:  # a layered chart's shared encoding
            spec["encoding"] = {**spec["encoding"]}
            return [spec, *spec["layer"]]
        return spec["layer"]
    if "encoding" in spec:
        spec["encoding"] = {**spec["encoding"]}
        return [spec]
    return []


def _numbers(data: Any, field: str) -> np.ndarray:
    """A column of ``data`` as float numbers (nulls and what is no number as NaN; a missing column: none)."""
    if isinstance(data, pa.Table) and field in data.column_names:
        column = data.column(field).to_pandas()
    elif isinstance(data, pd.DataFrame) and field in data.columns:
        column = data[field]
    else:
        return np.array([])
    return pd.to_numeric(column, errors="coerce").to_numpy(dtype=float)


def _starts_at_zero(unit: dict, channel: str) -> bool:
    """Whether Vega-Lite's default takes zero into a linear x or y scale from this unit's data: a bar or area
    without x2 / y2 always, another mark unless it is a line sorted along that channel's axis (a line's y), where
    Vega-Lite's scale config (zero: true) holds."""
    mark = unit.get("mark")
    kind = mark.get("type") if isinstance(mark, dict) else mark
    other = unit.get("encoding", {})
    if kind in _ZERO_BASED:
        return (channel + "2") not in other
    if kind in ("line", "trail"):
        return channel != "y"
    return True


def _step_autosize(spec: dict) -> str:
    """The autosize type Vega-Lite falls back to from Streamlit's "fit" for a chart sized in steps: "pad" when both
    its width and height are steps, "fit-y" or "fit-x" when one is, "" when neither is."""
    width, height = (isinstance(spec.get(s), dict) and "step" in spec[s] for s in ("width", "height"))
    return "pad" if width and height else "fit-y" if width else "fit-x" if height else ""
