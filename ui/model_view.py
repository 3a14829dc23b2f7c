"""Widgets of the trained model's page: the clickable grid of every head and one head's attention map.

Every head of every layer is one small picture (its n × n attention weights, white = 0,
dark blue = 1) in one Vega-Lite chart of image marks: one row of data per head instead
of n² per head, and at most :data:`PICTURE` × PICTURE pixels (longer texts are averaged
over blocks of tokens: :func:`pool`), so a 512-token text stays as fast as a 10-token one.
Clicking a picture opens that head. Nothing here computes attention: the pictures are made
from the model's attention probabilities that the page passes in.
"""

from __future__ import annotations

import base64
import functools
import io
from typing import Callable, Optional, Sequence

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st
import torch
import torch.nn.functional as F
from PIL import Image

from . import presenter, widgets
from .i18n import _

#: Colour stops of the weights' scale (Vega's "blues"), value in [0, 1] -> RGB.
_STOPS = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
_RGB = np.array([[247, 251, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]], dtype=float)

#: 256 colours along the stops: level k (= 255·√weight) -> RGB.
_LUT = np.stack([np.interp(np.linspace(0, 1, 256), _STOPS, _RGB[:, c]) for c in range(3)], axis=-1).astype(np.uint8)

GRID_CELL_PX = 74  # the grid's row height: a head's picture is at most this tall (plus a gap)
#: A head's picture is at most PICTURE × PICTURE pixels: about what the grid shows of it (0.9 · GRID_CELL_PX = 66 px).
PICTURE = 64


def pool(weights: np.ndarray, side: int = PICTURE) -> np.ndarray:
    """(..., n, n) weights as (..., side, side) block means when n > side (else unchanged, as float32).

    Pixel (a, b) is the mean of rows ⌊a·n/side⌋ … ⌈(a+1)·n/side⌉ − 1 and the same columns (torch's
    ``adaptive_avg_pool2d``; neighbouring blocks overlap by a row when side does not divide n). Each row of
    weights sums to 1, so a pixel is the average weight of a block of queries on a block of keys.
    """
    tensor = torch.as_tensor(np.asarray(weights, dtype=np.float32))
    if tensor.shape[-1] <= side and tensor.shape[-2] <= side:
        return tensor.numpy()
    lead = tensor.shape[:-2]
    pooled = F.adaptive_avg_pool2d(tensor.reshape(-1, 1, *tensor.shape[-2:]), side)  # one call for every head
    return pooled.reshape(*lead, side, side).numpy()


def _png_data_url(weights: np.ndarray) -> str:
    """An n × n matrix of weights in [0, 1] as an n × n-pixel PNG data URL.

    The colour follows √weight (as the large map's scale does), so that a weight of 0.1 is
    still visible next to 1. The chart scales the picture up without smoothing (sharp cells).
    """
    levels = np.rint(np.sqrt(np.clip(weights, 0.0, 1.0)) * 255).astype(np.uint8)  # (n, n): √weight in 0..255
    rgb = _LUT[levels]  # (n, n, 3)
    buffer = io.BytesIO()
    Image.fromarray(rgb, mode="RGB").save(buffer, format="PNG", compress_level=1)  # fast; a few kB each
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def head_pictures(attentions: np.ndarray, side: int = PICTURE) -> pd.DataFrame:
    """One row per head: layer and head (1-based) and the picture of its weights, at most ``side`` pixels a side
    (block means of longer texts: :func:`pool`).

    Args:
        attentions: (L, H, n, n) attention probabilities.
    """
    layers, heads = attentions.shape[:2]
    small = pool(attentions, side)  # (L, H, ≤ side, ≤ side), all heads at once
    rows = [
        {"layer": layer + 1, "head": head + 1, "url": _png_data_url(small[layer, head])}
        for layer in range(layers) for head in range(heads)
    ]
    return pd.DataFrame(rows)


@st.cache_data(show_spinner=False)
def _grid_spec(head_title: str, layer_title: str, height: int = 6 * GRID_CELL_PX, scale: float = 1.0) -> dict:
    """The grid's spec with its (translated) axis titles and its height in pixels (before ``scale``); cached once per
    language, height and scale (presenter mode)."""
    x = alt.X("head:O", title=head_title, axis=alt.Axis(orient="top", labelAngle=0))
    y = alt.Y("layer:O", title=layer_title)
    base = alt.Chart().encode(x=x, y=y)
    # The chart takes the page's width (12 columns of bandwidth('x') each); each picture is a square
    # that fills 90 % of the smaller of its column's width and its row's height.
    side = alt.ExprRef("0.9 * min(bandwidth('x'), bandwidth('y'))")
    pictures = base.mark_image(width=side, height=side, smooth=False, cursor="pointer").encode(
        url="url:N", tooltip=[alt.Tooltip("layer:O", title=layer_title), alt.Tooltip("head:O", title=head_title)])
    outline = base.transform_filter("datum.selected").mark_point(
        shape="square", filled=False, color="#d62728", strokeWidth=5, opacity=1,
        size=alt.ExprRef("pow(0.9 * min(bandwidth('x'), bandwidth('y')) + 8, 2)"))  # size = area in px²
    chart = alt.layer(pictures, outline).properties(
        width="container", height=height * scale
    ).configure_axis(labelFontSize=presenter.font_px(16, scale), titleFontSize=presenter.font_px(16, scale), grid=False,
                     domain=False, ticks=False
                     ).configure_view(strokeWidth=0)
    chart = chart.add_params(alt.selection_point(name="head_pick", fields=["layer", "head"], on="click"))
    spec = chart.to_dict(validate=False)
    spec.pop("datasets", None)  # the data is passed per call
    for layer in spec["layer"]:
        layer.pop("data", None)
    return spec


def head_grid(pictures: pd.DataFrame, selected: tuple[int, int], *, key: str,
              on_pick: Callable[[int, int], None], focus=None, row_px: int = GRID_CELL_PX) -> None:
    """Every head as a small picture; clicking one calls ``on_pick(layer, head)`` (0-based).

    Args:
        pictures: from :func:`head_pictures` (cached by the page).
        selected: the open head (layer, head), 0-based; outlined in red.
        focus: optional (L, H) numbers, each head's mean largest weight (``head_findings.head_focus``): the grid's
            table (under it when the *tables* switch is on) and its description.
        row_px: a layer's row height in pixels (the pictures are at most this tall).
    """
    df = pictures.assign(selected=(pictures["layer"] == selected[0] + 1) & (pictures["head"] == selected[1] + 1))
    layers, heads = int(pictures["layer"].max()), pictures["head"].nunique()
    spec = {**_grid_spec(_("head"), _("layer"), layers * row_px, presenter.scale()),
            "description": _("Grid of {layers} layers × {heads} heads: each picture is one head's attention weights "
                             "(darker: more weight). Click one to open it.", layers=layers, heads=heads)
            + ("" if focus is None else " " + _("Its table gives each head's focus: the mean over the tokens of the "
                                                 "largest weight (1: each token looks at one token)."))}
    st.vega_lite_chart(df, spec, key=key,
                       on_select=functools.partial(_on_pick, key, on_pick),
                       selection_mode="head_pick", width="stretch")
    if focus is not None:
        widgets.table(focus, [_("layer {n}", n=n) for n in range(1, layers + 1)],
                      [_("head {n}", n=n) for n in sorted(pictures["head"].unique())], key)


def _on_pick(key: str, on_pick: Callable[[int, int], None]) -> None:
    points = ((st.session_state.get(key) or {}).get("selection", {}).get("head_pick")) or []
    if points:
        on_pick(int(points[0]["layer"]) - 1, int(points[0]["head"]) - 1)


# ---------------------------------------------------------------- one head's attention map


def map_cell_px(n: int) -> int:
    """Cell size of an n × n attention map: large with numbers for short texts; the map stays ≤ 720 px."""
    return int(min(48, max(5, 680 // max(n, 1))))


@st.cache_data(show_spinner=False)
def _map_spec(cell_px: int, numbers: bool, titles: tuple[str, str, str, str, str], scale: float = 1.0) -> dict:
    """The map's spec; ``titles`` (translated): key axis, query axis, weight, query, key. ``cell_px`` is already
    scaled; the fonts are ``scale`` times larger (presenter mode)."""
    key_axis, query_axis, weight_t, query_t, key_t = titles
    label_size = int(min(16 * scale, max(10, cell_px - 2)))
    # Labels smaller than their font: Vega drops the overlapping ones (every other, ...); the tooltip names all.
    overlap = "parity" if cell_px < label_size else False
    x = alt.X("key:N", sort=alt.EncodingSortField("j"), title=key_axis,
              axis=alt.Axis(orient="top", labelAngle=-60, labelOverlap=overlap, labelFontSize=label_size,
                            labelLimit=160 * scale))
    y = alt.Y("query:N", sort=alt.EncodingSortField("i"), title=query_axis,
              axis=alt.Axis(labelOverlap=overlap, labelFontSize=label_size, labelLimit=160 * scale))
    base = alt.Chart().encode(x=x, y=y)
    rect = base.mark_rect(cursor="pointer").encode(
        color=alt.Color("weight:Q", scale=alt.Scale(type="sqrt", scheme="blues", domain=[0, 1]),
                        legend=alt.Legend(title=weight_t, orient="right")),
        tooltip=[alt.Tooltip("query:N", title=query_t), alt.Tooltip("key:N", title=key_t),
                 alt.Tooltip("weight:Q", title=weight_t, format=".4f")],
    )
    layers = [rect]
    if numbers:
        layers.append(base.mark_text(fontSize=presenter.font_px(14, scale)).encode(
            text=alt.Text("weight:Q", format=".2f"),
            color=alt.condition("datum.weight > 0.3", alt.value("white"), alt.value("black"))))
    layers.append(base.transform_filter("datum.selected").mark_rect(fill=None, stroke="#d62728", strokeWidth=3 * scale))
    legend_font = presenter.font_px(13, scale)
    chart = alt.layer(*layers).properties(width=alt.Step(cell_px), height=alt.Step(cell_px)).configure_axis(
        titleFontSize=presenter.font_px(15, scale)).configure_legend(labelFontSize=legend_font,
                                                                     titleFontSize=legend_font)
    chart = chart.add_params(alt.selection_point(name="entry_pick", fields=["i", "j"], on="click"))
    spec = chart.to_dict(validate=False)
    spec.pop("datasets", None)
    for layer in spec["layer"]:
        layer.pop("data", None)
    return spec


def attention_map(weights: np.ndarray, labels: Sequence[str], *, key: str,
                  selected: Optional[tuple[int, int]], on_cell: Callable[[int, int], None]) -> None:
    """One head's n × n weights with token labels; numbers in the cells when they fit.

    Clicking a cell calls ``on_cell(row, col)`` (0-based).
    """
    n = weights.shape[0]
    scale = presenter.scale()
    cell = int(map_cell_px(n) * scale)
    ii, jj = np.indices(weights.shape)
    ii, jj = ii.ravel(), jj.ravel()
    labels_arr = np.asarray(labels, dtype=object)
    df = pd.DataFrame({
        "i": ii, "j": jj, "query": labels_arr[ii], "key": labels_arr[jj],
        "weight": np.asarray(weights, dtype=float).ravel(),
        "selected": (ii == selected[0]) & (jj == selected[1]) if selected else np.zeros(ii.shape, bool),
    })
    titles = (_("key token (attended to)"), _("query token (attending)"), _("weight"), _("query"), _("key"))
    w = np.asarray(weights, dtype=float)
    spec = {**_map_spec(cell, cell >= 40 * scale, titles, scale),
            "description": widgets.describe(_("Heatmap"), n, n, titles[1], titles[0], float(w.min()), float(w.max()))}
    st.vega_lite_chart(df, spec, key=key, on_select=functools.partial(_on_entry, key, on_cell),
                       selection_mode="entry_pick", width="content")
    widgets.table(w, labels, labels, key)


def _on_entry(key: str, on_cell: Callable[[int, int], None]) -> None:
    points = ((st.session_state.get(key) or {}).get("selection", {}).get("entry_pick")) or []
    if points:
        on_cell(int(points[0]["i"]), int(points[0]["j"]))
