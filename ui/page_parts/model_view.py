"""Widgets of the trained model's page: the clickable grid of every head and one head's attention map.

Every head of every layer is one small picture (its n × n attention weights, white = 0,
dark blue = 1) in one Vega-Lite chart of image marks: one row of data per head instead
of n² per head, and at most :data:`PICTURE` × PICTURE pixels (longer texts are averaged
over blocks of tokens: :func:`pool`), so a 512-token text stays as fast as a 10-token one.
Clicking a picture opens that head. Nothing here computes attention: the pictures are made
from the model's attention probabilities that the page passes in.

The open head's map (:func:`attention_map`) draws one mark per weight: whole up to
:data:`MAP_WINDOW` tokens; past that, a block of MAP_WINDOW rows and columns (at most
MAP_WINDOW² marks, not 262,144 at 512 tokens) around the explained entry, in fixed blocks as
the step-through's panels are (``ui.stepthrough.window``), with pickers to move it.
"""

from __future__ import annotations

import base64
import functools
import io
from typing import Callable, Optional, Sequence

import altair as alt
import numpy as np
import pyarrow as pa
import streamlit as st
import torch
from PIL import Image

from attention_core.minilm import head_findings
from ui import builds, chart_specs, frames, heatmaps, presenter, stepthrough
from ui.i18n import _

#: Colour stops of the weights' scale, value in [0, 1] -> RGB, per palette: the scales the heatmaps give numbers
#: >= 0 (``heatmaps.palette_scheme``): Vega's "blues" (classic) and "viridis" (colour-blind safe).
_STOPS = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
_RGB = {
    "classic": np.array([[247, 251, 255], [198, 219, 239], [107, 174, 214], [33, 113, 181], [8, 48, 107]], dtype=float),
    "cvd": np.array([[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]], dtype=float),
}

#: 256 colours along each palette's stops: level k (= 255·√weight) -> RGB.
_LUTS = {name: np.stack([np.interp(np.linspace(0, 1, 256), _STOPS, rgb[:, c]) for c in range(3)],
                        axis=-1).astype(np.uint8) for name, rgb in _RGB.items()}
_LUT = _LUTS["classic"]

GRID_CELL_PX = 74  # the grid's row height: a head's picture is at most this tall (plus a gap)
#: A head's picture is at most PICTURE × PICTURE pixels: about what the grid shows of it (0.9 · GRID_CELL_PX = 66 px).
PICTURE = 64


def pool(weights: np.ndarray, side: int = PICTURE) -> np.ndarray:
    """(..., n, n) weights as (..., side, side) float32 block means when n > side (``head_findings.block_means``)."""
    return head_findings.block_means(torch.as_tensor(np.asarray(weights, dtype=np.float32)), side).numpy()


def _png_data_url(weights: np.ndarray, palette: str = "classic") -> str:
    """An n × n matrix of weights in [0, 1] as an n × n-pixel PNG data URL, in the ``palette``'s colours of weights
    ("classic": white to blue; "cvd": viridis).

    The colour follows √weight (as the large map's scale does), so that a weight of 0.1 is
    still visible next to 1. The chart scales the picture up without smoothing (sharp cells).
    """
    levels = np.rint(np.sqrt(np.clip(weights, 0.0, 1.0)) * 255).astype(np.uint8)  # (n, n): √weight in 0..255
    rgb = _LUTS.get(palette, _LUT)[levels]  # (n, n, 3)
    buffer = io.BytesIO()
    Image.fromarray(rgb, mode="RGB").save(buffer, format="PNG", compress_level=1)  # fast; a few kB each
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def head_pictures(attentions: np.ndarray, side: int = PICTURE, palette: str = "classic") -> pa.Table:
    """One row per head: layer and head (1-based) and the picture of its weights, at most ``side`` pixels a side
    (block means of longer texts: :func:`pool`), in the ``palette``'s colours of weights.

    Args:
        attentions: (L, H, n, n) attention probabilities.
    """
    layers, heads = attentions.shape[:2]
    small = pool(attentions, side)  # (L, H, ≤ side, ≤ side), all heads at once
    return frames.table({
        "layer": [layer + 1 for layer in range(layers) for _head in range(heads)],
        "head": [head + 1 for _layer in range(layers) for head in range(heads)],
        "url": [_png_data_url(small[layer, head], palette) for layer in range(layers) for head in range(heads)],
    })


def pictures_of(pictures: pa.Table, layers: tuple[int, int], kv_head: Optional[int] = None) -> pa.Table:
    """The rows of :func:`head_pictures` (or a table with its columns) for layers ``layers[0] + 1`` to ``layers[1]``
    (1-based, as the table counts them), and of key/value head ``kv_head`` (1-based; its ``kv_head`` column) when
    given."""
    layer = pictures.column("layer").to_numpy()
    keep = (layer > layers[0]) & (layer <= layers[1])
    if kv_head is not None:
        keep &= pictures.column("kv_head").to_numpy() == kv_head
    return pictures.filter(pa.array(keep))


@builds.spec
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
    return chart_specs.layered_spec(chart)  # the data is passed per call


def head_grid(pictures: pa.Table, selected: tuple[int, int], *, key: str,
              on_pick: Callable[[int, int], None], focus=None, row_px: int = GRID_CELL_PX) -> None:
    """Every head as a small picture; clicking one calls ``on_pick(layer, head)`` (0-based).

    Args:
        pictures: from :func:`head_pictures` (cached by the page).
        selected: the open head (layer, head), 0-based; outlined in red.
        focus: optional (L, H) numbers, each head's mean largest weight (``head_findings.head_focus``): the grid's
            table (under it when the *tables* switch is on) and its description.
        row_px: a layer's row height in pixels (the pictures are at most this tall).
    """
    layer, head = pictures.column("layer").to_numpy(), pictures.column("head").to_numpy()
    df = pictures.append_column("selected", pa.array((layer == selected[0] + 1) & (head == selected[1] + 1)))
    shown_layers = sorted(set(layer.tolist()))  # all of them, or a block (layer_block)
    shown_heads = sorted(set(head.tolist()))
    layers, heads = len(shown_layers), len(shown_heads)
    spec = {**_grid_spec(_("head"), _("layer"), layers * row_px, presenter.scale()),
            "description": _("Grid of {layers} layers × {heads} heads: each picture is one head's attention weights "
                             "(darker: more weight). Click one to open it.", layers=layers, heads=heads)
            + ("" if focus is None else " " + _("Its table gives each head's focus: the mean over the tokens of the "
                                                 "largest weight (1: each token looks at one token)."))}
    st.vega_lite_chart(df, chart_specs.drawable(spec, df), key=key,
                       on_select=functools.partial(_on_pick, key, on_pick),
                       selection_mode="head_pick", width="stretch")
    if focus is not None:
        heatmaps.table(focus, [_("layer {n}", n=n) for n in shown_layers],
                      [_("head {n}", n=n) for n in shown_heads], key)


#: A tall model's grid shows this many layers at a time (SmolLM2's 30 layers at once left each picture ~20 px).
LAYER_BLOCK = 10


def layer_block(layers: int, open_layer: int, *, key: str, size: int = LAYER_BLOCK) -> tuple[int, int]:
    """Which layers [l0, l1) (0-based) a grid of ``layers`` layers shows: a picker of blocks of ``size`` ("Layers
    1–10", …), on the open head's block whenever the open head moves to another block (a click in the findings),
    otherwise where the learner left it. All of them, and no picker, up to ``size`` layers."""
    if layers <= size:
        return 0, layers
    blocks = list(range(0, layers, size))
    opened = (open_layer // size) * size
    seen = f"{key}_opened"
    if st.session_state.get(seen) != opened:  # the open head moved to another block (or first run): follow it
        st.session_state[seen] = opened
        st.session_state[key] = opened
    start = st.segmented_control(_("Layers"), blocks, key=key, required=True,
                                 format_func=lambda b: _("{first}–{last}", first=b + 1, last=min(b + size, layers)))
    start = opened if start is None else start
    return start, min(start + size, layers)


def _on_pick(key: str, on_pick: Callable[[int, int], None]) -> None:
    points = ((st.session_state.get(key) or {}).get("selection", {}).get("head_pick")) or []
    if points:
        on_pick(int(points[0]["layer"]) - 1, int(points[0]["head"]) - 1)


# ---------------------------------------------------------------- one head's attention map


def map_cell_px(n: int) -> int:
    """Cell size of an n × n attention map: large with numbers for short texts; the map stays ≤ 720 px."""
    return int(min(48, max(5, 680 // max(n, 1))))


@builds.spec
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
    return chart_specs.layered_spec(chart)


#: The open head's map is shown whole up to MAP_WINDOW tokens, else a block of MAP_WINDOW rows and columns: 64² marks
#: of about 10 px (``map_cell_px``), a map of ~700 px like a 64-token text's.
MAP_WINDOW = 64


def map_window(n: int, row: int, col: int, size: int = MAP_WINDOW) -> tuple[tuple[int, int], tuple[int, int]]:
    """The rows [r0, r1) and columns [c0, c1) of an n × n map shown around cell (row, col): all of them up to
    ``size``, else the fixed block of ``size`` holding each (``ui.stepthrough.window``; the last block may be
    shorter), so that a click inside the block does not move it."""
    rows = (0, n) if n <= size else stepthrough.window(n, row, size)
    cols = (0, n) if n <= size else stepthrough.window(n, col, size)
    return rows, cols


def map_focus(steps, labels: Sequence[str], row: int, col: int) -> tuple[int, int]:
    """The cell of the open head's map the window goes around on this stage: the explained entry when the stage's
    columns are the tokens too (the scores, the mask, the weights), else the entry's row on the diagonal (the
    columns are a head's features then)."""
    panel = steps.stage.target if steps.stage.target is not None else steps.stage.panels[0]
    return (row, col) if tuple(panel.col_labels) == tuple(labels) else (row, row)


def map_data(weights: np.ndarray, labels: Sequence[str], rows: tuple[int, int], cols: tuple[int, int],
             selected: Optional[tuple[int, int]]) -> pa.Table:
    """The map's marks for rows [r0, r1) and columns [c0, c1) of ``weights``: one per cell, with its global (0-based)
    row i and column j, its tokens, its weight and whether it is the ``selected`` (global) cell."""
    (r0, r1), (c0, c1) = rows, cols
    ii, jj = np.meshgrid(np.arange(r0, r1), np.arange(c0, c1), indexing="ij")
    ii, jj = ii.ravel(), jj.ravel()
    labels_arr = np.asarray(labels, dtype=object)
    return frames.table({
        "i": ii, "j": jj, "query": labels_arr[ii], "key": labels_arr[jj],
        "weight": np.asarray(weights, dtype=float)[ii, jj],
        "selected": (ii == selected[0]) & (jj == selected[1]) if selected else np.zeros(ii.shape, bool),
    })


def attention_map(weights: np.ndarray, labels: Sequence[str], *, key: str,
                  selected: Optional[tuple[int, int]], on_cell: Callable[[int, int], None],
                  around: Optional[tuple[int, int]] = None) -> None:
    """One head's n × n weights with token labels; numbers in the cells when they fit.

    Past :data:`MAP_WINDOW` tokens only a block around ``around`` (global row, column; default ``selected``, else
    the first cell) is drawn (:func:`map_window`), with a line saying which and pickers of the row and column blocks.
    Clicking a cell calls ``on_cell(row, col)`` (0-based, global: the cell's place in the whole map), and so does
    picking a block: with the cell at the same place in the new block.
    """
    n = weights.shape[0]
    focus = around or selected or (0, 0)
    focus = (min(max(focus[0], 0), n - 1), min(max(focus[1], 0), n - 1))
    (r0, r1), (c0, c1) = map_window(n, *focus)
    scale = presenter.scale()
    cell = int(map_cell_px(max(r1 - r0, c1 - c0)) * scale)
    titles = (_("key token (attended to)"), _("query token (attending)"), _("weight"), _("query"), _("key"))
    shown = np.asarray(weights, dtype=float)[r0:r1, c0:c1]
    description = heatmaps.describe(_("Heatmap"), r1 - r0, c1 - c0, titles[1], titles[0], float(shown.min()),
                                   float(shown.max()))
    if (r1 - r0, c1 - c0) != (n, n):
        where = _("Showing rows {r0}–{r1} and columns {c0}–{c1} of the {n} × {n} weights.", r0=r0 + 1, r1=r1,
                  c0=c0 + 1, c1=c1, n=n)
        description += " " + where
        st.caption(where + " " + _("Pick other blocks here, or another entry below, to move it."))
        _block_pickers(n, focus, (r0, c0), key, on_cell)
    spec = {**_map_spec(cell, cell >= 40 * scale, titles, scale), "description": description}
    chart_key = key if (r1 - r0, c1 - c0) == (n, n) else f"{key}_{r0}_{c0}"  # a fresh chart per block
    data = map_data(weights, labels, (r0, r1), (c0, c1), selected)
    st.vega_lite_chart(data, chart_specs.drawable(spec, data), key=chart_key,
                       on_select=functools.partial(_on_entry, chart_key, on_cell),
                       selection_mode="entry_pick", width="content")
    heatmaps.table(shown, labels[r0:r1], labels[c0:c1], chart_key)


def _block_pickers(n: int, focus: tuple[int, int], start: tuple[int, int], key: str,
                   on_cell: Callable[[int, int], None]) -> None:
    """The row block and the column block the map shows, as two pickers; picking one calls ``on_cell`` with the
    focused cell at the same place in the new block (at most the last row or column)."""
    starts = list(range(0, n, MAP_WINDOW))
    names = {s: f"{s + 1}–{min(s + MAP_WINDOW, n)}" for s in starts}
    left, right, _space = st.columns([1, 1, 2])
    for column, label, axis in ((left, _("Rows shown"), 0), (right, _("Columns shown"), 1)):
        picker = f"{key}_block_{axis}"
        st.session_state[picker] = start[axis]  # follows the entry, however it moved
        column.selectbox(label, starts, format_func=names.get, key=picker,
                         on_change=_on_block, args=(picker, axis, n, focus, start, on_cell),
                         help=_("Moves the map to this block and explains the weight at the same place in it."))


def _on_block(picker: str, axis: int, n: int, focus: tuple[int, int], start: tuple[int, int],
              on_cell: Callable[[int, int], None]) -> None:
    cell = list(focus)
    cell[axis] = min(st.session_state[picker] + focus[axis] - start[axis], n - 1)
    on_cell(cell[0], cell[1])


def _on_entry(key: str, on_cell: Callable[[int, int], None]) -> None:
    points = ((st.session_state.get(key) or {}).get("selection", {}).get("entry_pick")) or []
    if points:
        on_cell(int(points[0]["i"]), int(points[0]["j"]))
