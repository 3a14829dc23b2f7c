"""Heatmaps: a matrix drawn as coloured cells with its numbers in them, the same way on every page.

One cell size and number format for every matrix (readable on a projector and a phone; presenter mode larger),
the palette of the settings (red–blue or colour-blind safe), a description and an optional table of its numbers for
screen readers, and a click on a cell that picks the explained entry. A heatmap is made once per server from the same
numbers, labels, options, palette and language and shared (:data:`SHARED_FIGURES`). Here too, beside
:func:`layered_spec`, what every chart of the app is given before Streamlit draws it (:func:`drawable`)."""

from __future__ import annotations

import collections
import functools
import math
import threading
from typing import Any, Callable, Optional, Sequence

import altair as alt
import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st

from ui import builds, i18n, presenter, state
from ui.chart_specs import drawable, layered_spec
from ui.i18n import _

CELL_PX = 56  # heatmap cell size: numbers stay readable on a projector


#: A wide matrix gets narrower cells (and smaller numbers) so that up to 16 columns fit a 1280 px screen.
MIN_CELL_PX, FIT_PX = 40, 680


#: Presenter mode (no sidebar: a 1920 px projector's main area is 1824 px wide) keeps its full cells, and numbers of
#: at least ``presenter.MIN_FONT_PX``, up to 16 columns (the widest matrix: MAX_DIM); narrower past that.
PRESENTER_FIT_PX = 16 * 84


#: The heatmap's font sizes in normal mode: the numbers in the cells (in narrow cells), axis labels, the legend.
NUMBER_FONT, NARROW_NUMBER_FONT, AXIS_FONT, LEGEND_FONT = 15, 11, 15, 13


#: About how wide a colour legend's title ("value") and its padding are, left of a legend under a heatmap.
LEGEND_TITLE_PX = 50


def cell_px(columns: int, scale: float = 1.0) -> int:
    """The width of one heatmap cell for a matrix of ``columns`` columns: CELL_PX, narrower when many; all of them
    ``scale`` times larger (presenter mode: ``ui.presenter.scale()``)."""
    cell, fit = round(CELL_PX * scale), FIT_PX if scale == 1 else max(PRESENTER_FIT_PX, FIT_PX * scale)
    return cell if columns * cell <= fit else max(round(MIN_CELL_PX * scale), int(fit // columns))


def palette_scheme(signed: bool) -> tuple[str, bool]:
    """The Vega colour scheme of the current palette for signed numbers or numbers >= 0, and whether it is
    reversed. Signed numbers get a diverging scheme, white at 0 (classic: red–blue; colour-blind safe: blue–orange);
    numbers >= 0 (weights, probabilities) a sequential one from 0 up (classic: white to blue, as the heads' grids;
    colour-blind safe: viridis), on every page."""
    if state.settings().palette == "cvd":
        return ("blueorange", False) if signed else ("viridis", False)
    return ("redblue", True) if signed else ("blues", False)


def dark_cells(values: np.ndarray, top: float, scheme: str) -> np.ndarray:
    """Where a cell of ``values`` (any shape; −∞ blocked) is dark on ``scheme`` over a scale up to ``top``, and so
    writes its number in white (bool, the same shape)."""
    blocked = np.isneginf(values)
    if scheme == "viridis":  # dark at the low end: white numbers there
        return ~blocked & (np.nan_to_num(values) < 0.55 * top)
    # diverging, light around 0: white numbers at both ends; sequential (blues): at the high end
    return ~blocked & (np.abs(np.nan_to_num(values)) > 0.6 * top)


#: The most significant digits a heatmap cell writes for its matrix's largest |number| (the others: the same decimals).
CELL_DIGITS = 3


def cell_number_format(finite: np.ndarray) -> tuple[int, int]:
    """How a matrix's cells write their numbers: (n, d), each number as value / 10ⁿ with d decimals, so that every
    cell of one matrix has the same decimals and the largest |number| gets :data:`CELL_DIGITS` significant digits
    ("0.939", "6.73", "29.3", "293"). Past 0.1 … 1000 the matrix shares a factor 10ⁿ (its title says so) and its
    cells read "2.73" for 0.00273: "0.00156−0.00112" no longer runs into its neighbour. Exact zeros read "0", and a
    matrix of whole numbers under 1000 (a 0/1 mask, counts) writes them whole: "1", not "1.00".

    Args:
        finite: the matrix's finite numbers (any shape; empty: nothing to write).
    Returns:
        (n, d): the exponent of the shared factor (0: none) and the decimals, 0 ≤ d ≤ CELL_DIGITS.
    """
    top = float(np.abs(finite).max()) if finite.size else 0.0
    if top == 0.0:
        return 0, 0
    lead = math.floor(math.log10(top))
    exponent = lead if lead < -1 or lead >= CELL_DIGITS else 0
    if exponent == 0 and np.array_equal(finite, np.round(finite)):
        return 0, 0
    return exponent, min(CELL_DIGITS, max(0, CELL_DIGITS - 1 - (lead - exponent)))


def cell_labels(values: np.ndarray, exponent: int, decimals: int) -> np.ndarray:
    """What the cells of :func:`cell_number_format` write (as the heatmap's Vega expression does): "−∞" for −inf,
    "0" for 0, else value / 10ⁿ with d decimals and a true minus sign. For the tests and the exports' readers."""
    scaled = np.nan_to_num(np.asarray(values, dtype=float), neginf=0.0) / 10.0 ** exponent
    text = np.char.replace(np.char.mod(f"%.{decimals}f", scaled), "-", "−")
    return np.where(np.isneginf(values), "−∞", np.where(np.asarray(values) == 0, "0", text))


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def weights_scale() -> dict:
    """The Vega-Lite colour scale of attention weights, [0, 1]: the one sequential scale the heatmaps give numbers
    ≥ 0 (:func:`palette_scheme`): white to blue, or viridis in the colour-blind safe palette. A chart sets it whole
    (no per-chart maximum): the same colour is the same weight in every map."""
    scheme, reverse = palette_scheme(signed=False)
    return {"scheme": scheme, "reverse": reverse, "domain": [0.0, 1.0]}


def describe(kind: str, rows: int, cols: int, row_title: str, col_title: str, low: float, high: float,
             blocked: int = 0) -> str:
    """A chart's text description (what is plotted, its shape and range): Vega-Lite's ``description``, which
    the browser gives screen readers as the chart's accessible name."""
    text = _("{kind}: {rows} × {cols} numbers ({row_title} × {col_title}), from {low} to {high}.", kind=kind,
             rows=rows, cols=cols, row_title=row_title or _("rows"), col_title=col_title or _("columns"),
             low=f"{low:.3g}", high=f"{high:.3g}")
    if blocked:
        text += " " + _("{n} cells are blocked (−∞).", n=blocked)
    return text


def table(matrix, row_labels: Sequence[str], col_labels: Sequence[str], key: str) -> None:
    """The numbers of a chart as a table under it (when the *tables* switch is on): for screen readers, copying."""
    if not state.settings().tables:
        return
    m = np.asarray(matrix, dtype=float)
    cols = list(col_labels)
    if len(set(cols)) < len(cols):  # a table needs distinct column names
        cols = [f"{n + 1}: {c}" for n, c in enumerate(cols)]
    st.dataframe(pd.DataFrame(m, index=list(row_labels), columns=cols), key=f"table_{key}",
                 column_config={c: st.column_config.NumberColumn(c, format="%.4g") for c in cols})


def text_table(cells: Sequence[Sequence[str]], row_labels: Sequence[str], col_labels: Sequence[str], key: str,
               always: bool = False) -> None:
    """Like :func:`table`, for a picture whose cells are not numbers (an image's colours as "(r, g, b)"); with
    ``always``, shown whether or not the *tables* switch is on (a table that is the view itself)."""
    if not (always or state.settings().tables):
        return
    st.dataframe(pd.DataFrame([list(row) for row in cells], index=list(row_labels), columns=list(col_labels)),
                 key=f"table_{key}")


#: The Vega expression of a cell's number: −∞ when blocked, 0 for an exact 0, else value / factor with fixed decimals
#: (d3-format writes the true minus sign −). See :func:`cell_labels`, its twin in Python.
LABEL_EXPRESSION = "datum.blocked ? '−∞' : datum.value == 0 ? '0' : format(datum.value / {factor}, '.{decimals}f')"


def _heatmap_spec(clickable: bool, row_title: str, col_title: str, scheme: str = "redblue",
                  reverse: bool = True, scale: float = 1.0) -> dict:
    """The Vega-Lite spec of a heatmap with these axis titles: :func:`_heatmap_template`'s, the titles put in (a fresh
    copy). Altair takes 20–50 ms to build a spec; the titles change from step to step, the rest does not."""
    spec = _heatmap_template(clickable, scheme, reverse, scale)
    for layer in spec["layer"]:
        layer["encoding"]["x"]["title"] = col_title
        layer["encoding"]["y"]["title"] = row_title
    return spec


@builds.spec
def _heatmap_template(clickable: bool, scheme: str = "redblue", reverse: bool = True, scale: float = 1.0) -> dict:
    """The Vega-Lite spec of a heatmap of this kind (its axis titles are put in per call, by :func:`_heatmap_spec`);
    the data is passed per call.

    One Altair build per ``scale`` (:func:`_clickable_heatmap`, 30–50 ms) serves every kind: the kinds differ only in
    the colour scheme, and a heatmap that takes no clicks has no selection parameter (nor the view name that names
    its layer). Building each kind with Altair cost a server's first students 30–50 ms a kind on their first
    heatmaps (tests/app/test_heatmap_specs.py checks that each kind equals :func:`_altair_heatmap`'s own).
    """
    spec = _clickable_heatmap(scale)
    spec["layer"][0]["encoding"]["color"]["scale"].update(scheme=scheme, reverse=reverse)
    if not clickable:
        del spec["params"]
        del spec["layer"][0]["name"]
    return spec


@builds.spec
def _clickable_heatmap(scale: float) -> dict:
    """:func:`_altair_heatmap` of a clickable heatmap in the default colours, built once per ``scale``."""
    return _altair_heatmap(True, "redblue", True, scale)


def _altair_heatmap(clickable: bool, scheme: str, reverse: bool, scale: float) -> dict:
    """A heatmap's Vega-Lite spec as Altair builds it (see :func:`_heatmap_template`).

    Everything that changes with the numbers (colour domain, text colour, the selected
    cell) is a column of the data, so one spec serves every matrix. ``scale``: cells, numbers, labels and legend
    that many times larger (presenter mode), fonts at least ``presenter.MIN_FONT_PX``.
    """
    scaled = scale != 1
    x = alt.X("col:N", sort=alt.EncodingSortField("j"), title="",
              axis=alt.Axis(labelAngle=-40, orient="top", labelOverlap=False, labelLimit=140 * scale))
    # (100 px: the limit of Streamlit's chart theme, set only when scaled so that normal mode's spec stays as it was)
    y = alt.Y("row:N", sort=alt.EncodingSortField("i"), title="",
              **({"axis": alt.Axis(labelLimit=100 * scale)} if scaled else {}))
    # The domain [-max|value|, max|value|] is set per call (see heatmap): 0 stays white, as the
    # text colour rule "dark" assumes.
    shade = alt.Color("shade:Q", scale=alt.Scale(scheme=scheme, reverse=reverse),
                      legend=alt.Legend(title="value", orient="right"))
    color = alt.condition(
        "datum.blocked",
        alt.value("#d0d0d0"),
        # "shade" is the value with 0 for blocked cells: a NaN in a colour field would make
        # Vega-Lite filter the cell out instead of drawing it grey.
        shade,
    )
    base = alt.Chart().encode(x=x, y=y)
    rect = base.mark_rect().encode(color=color, tooltip=["row:N", "col:N", alt.Tooltip("value:Q", format=".6g")])
    # the cells' numbers: set per matrix by heatmap_figure (cell_number_format), this is a placeholder
    label = LABEL_EXPRESSION.format(factor="1", decimals=2)
    text = base.transform_calculate(label=label).mark_text(fontSize=presenter.font_px(NUMBER_FONT, scale)).encode(
        text="label:N",
        color=alt.condition("datum.dark", alt.value("white"), alt.value("black")),
    )
    outline = base.transform_filter("datum.selected").mark_rect(fill=None, stroke="#111", strokeWidth=4 * scale)
    axis_font, legend_font = presenter.font_px(AXIS_FONT, scale), presenter.font_px(LEGEND_FONT, scale)
    # the colour bar scaled too (Vega-Lite's defaults: 16 px thick, at most 200 px long)
    bar = {"gradientThickness": 16 * scale, "gradientLength": 200 * scale} if scaled else {}
    chart = alt.layer(rect, text, outline).properties(
        width=alt.Step(cell_px(1, scale)), height=alt.Step(CELL_PX * 0.75 * scale)
    ).configure_axis(labelFontSize=axis_font, titleFontSize=axis_font).configure_legend(
        labelFontSize=legend_font, titleFontSize=legend_font, **bar)
    if clickable:
        chart = chart.add_params(alt.selection_point(name="cell", fields=["i", "j"], on="click"))
    return layered_spec(chart)


def heatmap_figure(
    matrix,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    selected: Optional[tuple[int, int]] = None,
    clickable: bool = False,
    row_title: str = "",
    col_title: str = "",
    legend: bool = True,
    row_axis: bool = True,
    scale_max: Optional[float] = None,
    scale: float = 1.0,
) -> tuple[pa.Table, dict]:
    """The data and Vega-Lite spec of :func:`heatmap` (also used to export it as PNG / SVG). ``scale``: drawn that
    many times larger (presenter mode; the export is not)."""
    m = np.asarray(matrix, dtype=float)
    ii, jj = np.indices(m.shape)
    ii, jj, values = ii.ravel(), jj.ravel(), m.ravel()
    blocked = np.isneginf(values)
    finite = values[np.isfinite(values)]
    top = float(np.abs(finite).max()) if finite.size else 1.0
    if scale_max is not None and scale_max > 0:
        top = float(scale_max)
    signed = bool(finite.size and finite.min() < 0)
    scheme, reverse = palette_scheme(signed)
    dark = dark_cells(values, top, scheme)
    # A pyarrow table, not a DataFrame: Streamlit sends Arrow as is (a few ms less per heatmap).
    table = pa.table({
        "i": ii,
        "j": jj,
        "row": pa.array(np.asarray(row_labels, dtype=object)[ii], type=pa.string()),
        "col": pa.array(np.asarray(col_labels, dtype=object)[jj], type=pa.string()),
        "value": pa.array(values, mask=blocked),  # null where blocked
        "shade": np.where(blocked, 0.0, values),
        "blocked": blocked,
        "dark": dark,
        "selected": (ii == selected[0]) & (jj == selected[1]) if selected else np.zeros(values.shape, bool),
    })
    spec = _heatmap_spec(clickable, row_title, col_title, scheme, reverse, scale)  # a copy of its own
    cell = cell_px(m.shape[-1] if m.ndim == 2 else 1, scale)
    spec["layer"][0]["encoding"]["color"]["scale"]["domain"] = ([-top or -1.0, top or 1.0] if signed
                                                                else [0.0, top or 1.0])
    exponent, decimals = cell_number_format(finite)
    spec["layer"][1]["transform"][0]["calculate"] = LABEL_EXPRESSION.format(factor=repr(10.0 ** exponent),
                                                                            decimals=decimals)
    if exponent:
        spec["title"] = {"text": _("cells in units of 10{n}", n=str(exponent).translate(_SUPERSCRIPT)),
                         "anchor": "start", "fontSize": presenter.font_px(AXIS_FONT, scale), "fontWeight": "normal"}
    # short column labels ("c1", "d12", "3") stand upright; longer ones (tokens) are tilted to fit their cells
    longest = max((len(str(label)) for label in col_labels), default=0)
    if longest * 0.6 * presenter.font_px(AXIS_FONT, scale) <= cell - 6:
        for layer in spec["layer"]:
            layer["encoding"]["x"]["axis"]["labelAngle"] = 0
    spec["description"] = describe(_("Heatmap"), *m.shape[-2:] if m.ndim == 2 else (1, m.size), row_title, col_title,
                                   float(finite.min()) if finite.size else 0.0,
                                   float(finite.max()) if finite.size else 0.0, int(blocked.sum()))
    spec["layer"][0]["encoding"]["color"]["legend"]["title"] = _("value")
    if not legend:  # side by side: the legend goes under the heatmap (its own scale), not beside it (width)
        # its title stands left of the bar: the bar is that much shorter than the cells' width, so that the legend
        # ends about where the heatmap does and does not make the chart wider than its matrix
        spec["layer"][0]["encoding"]["color"]["legend"].update(
            orient="bottom", direction="horizontal",
            gradientLength=max(80 * scale, min(240 * scale, cell * m.shape[-1] - LEGEND_TITLE_PX * scale)),
            titleOrient="left")
    if not row_axis:
        for layer in spec["layer"]:
            layer["encoding"]["y"]["axis"] = None
    if cell != cell_px(1, scale):  # narrow cells, smaller numbers (not held to presenter.MIN_FONT_PX: they must fit)
        spec["width"] = {"step": cell}
        spec["layer"][1]["mark"]["fontSize"] = NARROW_NUMBER_FONT * scale
    return table, spec


#: How many heatmaps (their data and spec) the server keeps, shared by every session: a class on one link, or a student
#: stepping back, draws the same heatmaps again. Each is a few kB (a 16 × 16 matrix's table and its spec).
SHARED_FIGURES = 512


_FIGURES: collections.OrderedDict = collections.OrderedDict()  # what heatmap_figure draws from -> (table, spec)


_FIGURES_LOCK = threading.Lock()


def _shared_figure(matrix, row_labels: Sequence[str], col_labels: Sequence[str], **options: Any) -> tuple[pa.Table,
                                                                                                           dict]:
    """:func:`heatmap_figure`, or the one made before from the same numbers, labels, options, palette and language:
    both shared by every session, read and never changed (Arrow tables are immutable; Streamlit copies a spec's top
    level before it sets anything in it, and :func:`heatmap` hands the spec straight to it)."""
    m = np.asarray(matrix, dtype=float)
    key = (m.tobytes(), m.shape, tuple(row_labels), tuple(col_labels), tuple(sorted(options.items())),
           state.settings().palette, i18n.language())
    with _FIGURES_LOCK:
        made = _FIGURES.get(key)
        if made is not None:
            _FIGURES.move_to_end(key)
    if made is None:
        table, spec = heatmap_figure(m, row_labels, col_labels, **options)
        made = (table, spec)
        with _FIGURES_LOCK:
            _FIGURES[key] = made
            while len(_FIGURES) > SHARED_FIGURES:
                _FIGURES.popitem(last=False)
    return made


def heatmap(
    matrix,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    key: str,
    selected: Optional[tuple[int, int]] = None,
    clickable: bool = False,
    row_title: str = "",
    col_title: str = "",
    on_cell: Optional[Callable[[int, int], None]] = None,
    legend: bool = True,
    row_axis: bool = True,
    scale_max: Optional[float] = None,
) -> None:
    """A matrix as an Altair (Vega-Lite) heatmap with its numbers written in the cells.

    Clicking a cell (when ``clickable``) sets the explained entry in the settings,
    or calls ``on_cell(row, col)`` instead when given (e.g. to flip a mask cell).
    Values of -inf (blocked by a mask) are drawn grey and labelled −∞.
    ``legend=False`` (the colour legend under the heatmap, not beside it) and ``row_axis=False`` save width when
    heatmaps with the same rows stand side by side; every heatmap keeps a legend of its own colour scale. ``scale_max`` sets the
    colour scale's largest |value| (default: the matrix's own), so that heatmaps shown side
    by side can share one scale. In presenter mode everything is drawn ``presenter.SCALE`` times larger.
    """
    df, spec = _shared_figure(matrix, row_labels, col_labels, selected=selected, clickable=clickable,
                              row_title=row_title, col_title=col_title, legend=legend, row_axis=row_axis,
                              scale_max=scale_max, scale=presenter.scale())
    spec = drawable(spec, df)
    if clickable:
        st.vega_lite_chart(df, spec, key=key, on_select=functools.partial(_on_cell_click, key, on_cell),
                           selection_mode="cell", width="content")
    else:
        st.vega_lite_chart(df, spec, key=key, width="content")
    table(matrix, row_labels, col_labels, key)


def _on_cell_click(key: str, on_cell: Optional[Callable[[int, int], None]] = None) -> None:
    event = st.session_state.get(key)
    points = (event or {}).get("selection", {}).get("cell") or []
    if points:
        row, col = int(points[0]["i"]), int(points[0]["j"])
        if on_cell is not None:
            on_cell(row, col)
        else:
            state.update(entry_row=row, entry_col=col)
