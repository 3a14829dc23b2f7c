"""Charts of the experiment pages: log-scale line plots, a compact heatmap, the pixel image.

Each chart's Vega-Lite spec is built once with Altair (``st.cache_data`` on plain
arguments) and the numbers are passed per call as an Arrow table (:mod:`ui.frames`), as ``heatmaps.heatmap``
does: building an Altair chart costs tens of milliseconds, a cached spec nothing. In presenter mode each spec is built
``presenter.SCALE`` times larger (sizes, strokes, fonts: the fonts are in the spec, out of CSS's reach).
Nothing here computes attention; pages hand in numbers from ``attention_core``.
Titles come in already translated; the texts written here (legend and tooltip titles) are
translated by the public functions and passed to the cached spec builders as arguments, so
each language gets its own cached spec.
"""

from __future__ import annotations

import functools
import math
from typing import Callable, Optional, Sequence

import altair as alt
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import streamlit as st

from ui import builds, chart_specs, frames, heatmaps, presenter, state
from ui.i18n import _

AXIS_FONT = 16
TITLE_FONT = 16


def _finish(chart: alt.TopLevelMixin, scale: float = 1.0) -> dict:
    """An Altair chart as a Vega-Lite dict without data (the data comes with each call); its fonts and legend
    ``scale`` times larger (presenter mode)."""
    # The legend goes above the plot, one entry per line: the chart's height includes it, a legend below or beside
    # the plot would squeeze the plot itself, and two columns of long labels ("theory: Var = d_k") were cut at the
    # right edge of a 390 px phone.
    font = functools.partial(presenter.font_px, scale=scale)
    # axis labels' length limit: Streamlit's chart theme's 100 px, scaled (set only when scaled: normal mode's spec
    # stays as it was)
    limit = {"labelLimit": 100 * scale} if scale != 1 else {}
    chart = chart.configure_axis(labelFontSize=font(AXIS_FONT), titleFontSize=font(TITLE_FONT), **limit).configure_legend(
        labelFontSize=font(15), titleFontSize=font(15), labelLimit=320 * scale, orient="top", columns=1,
        symbolSize=160 * scale ** 2,
    ).configure_title(fontSize=font(18))
    return chart_specs.layered_spec(chart)


def _show(data: pa.Table | pd.DataFrame, spec: dict, key: str, **kwargs) -> None:
    st.vega_lite_chart(data, chart_specs.drawable(spec, data), key=key, width=kwargs.pop("width", "content"), **kwargs)


# ---------------------------------------------------------------- line charts on log axes


#: Okabe & Ito's eight colours, told apart with every common colour-vision deficiency (the "cvd" palette's lines).
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]


@builds.spec
def _lines_spec(x_title: str, y_title: str, series_title: str, x_log: bool, x_base: int, y_log: bool,
                y_min: Optional[float], y_max: Optional[float], error_bars: bool, marked: bool, width: int,
                height: int, cvd: bool = False, points: bool = True, x_format: str = "~g",
                scale: float = 1.0, y_format: str = "~g") -> dict:
    x_scale = alt.Scale(type="log", base=x_base) if x_log else alt.Scale()
    y_scale = alt.Scale(type="log") if y_log else alt.Scale(domain=[y_min, y_max]) if y_min is not None else alt.Scale()
    x = alt.X("x:Q", title=x_title, scale=x_scale, axis=alt.Axis(format=x_format, tickCount=12))
    y = alt.Y("y:Q", title=y_title, scale=y_scale, axis=alt.Axis(format=y_format))
    color = alt.Color("series:N", title=None, sort=alt.EncodingSortField("order"),
                      scale=alt.Scale(range=OKABE_ITO) if cvd else alt.Scale(scheme="tableau10"))
    dash = alt.StrokeDash("dashed:N", legend=None, scale=alt.Scale(domain=[False, True], range=[[1, 0], [6, 4]]))
    tooltip = [alt.Tooltip("series:N", title=series_title), alt.Tooltip("x:Q", title=x_title, format=".4~g"),
               alt.Tooltip("y:Q", title=y_title, format=".4~g")]
    base = alt.Chart().encode(x=x, y=y, color=color)
    layers = [
        base.mark_line(strokeWidth=3 * scale).encode(strokeDash=dash),
        base.transform_filter("!datum.dashed").mark_point(filled=True, size=90 * scale ** 2 if points else 0).encode(
            tooltip=tooltip),
    ]
    if error_bars:
        layers.append(base.transform_filter("isValid(datum.lo)").mark_rule(strokeWidth=2 * scale).encode(
            y="lo:Q", y2="hi:Q"))
    if marked:
        layers.append(alt.Chart().transform_filter("datum.marked").mark_rule(color="#222", strokeWidth=2 * scale,
                                                                              strokeDash=[2, 2]).encode(x="x:Q"))
        layers.append(base.transform_filter("datum.marked").mark_point(filled=True, size=260 * scale ** 2, opacity=1,
                                                                         shape="diamond").encode(tooltip=tooltip))
    return _finish(alt.layer(*layers).properties(width=width, height=height * scale), scale)


def lines(
    series: Sequence[dict], *, key: str, x_title: str, y_title: str, x_log: bool = True, x_base: int = 2, y_log: bool = False,
    y_range: Optional[tuple[float, float]] = None, error_bars: bool = False, marked: bool = False,
    width: int = 560, height: int = 340, points: bool = True, x_format: str = "~g", y_format: str = "~g",
) -> None:
    """Lines with points, one per ``series``; dashed series are reference lines (no points).

    ``points=False``: lines only (a long curve; the points stay as invisible tooltip targets). ``x_format``,
    ``y_format``: the axes' d3 formats ("d": whole numbers; ".3~g": 3 digits at most, where "~g" on a linear axis
    lets Vega pick the precision from the tick step and writes 20 as "2e+1").

    The chart fills its column (``width`` is only its size when exported standalone).

    ``series``: one dict per line (:func:`ui.frames.stacked` stacks them), each with the columns x, y and the values
    series (its legend label), order (its place in the legend) and dashed (bool); optional lo, hi (an error bar at each
    point, when ``error_bars``) and marked (bool: a vertical rule and a big point at the marked x, when ``marked``).
    A column is a list (or array) of one value per point; a single value stands for every point of its line.
    """
    data = frames.stacked(series)
    spec = _lines_spec(x_title, y_title, _("series"), x_log, x_base, y_log, y_range[0] if y_range else None,
                       y_range[1] if y_range else None, error_bars, marked, width, height,
                       state.settings().palette == "cvd", points, x_format, presenter.scale(), y_format)
    labels = data.column("series").to_pylist()
    names = list(dict.fromkeys(labels))
    x_range, y_range_shown = pc.min_max(data.column("x")).as_py(), pc.min_max(data.column("y")).as_py()
    description = _("Line chart: {y} against {x}, {n} series ({names}); {x} from {x0} to {x1}, {y} from {y0} to {y1}.",
                    y=y_title, x=x_title, n=len(names), names=", ".join(str(n) for n in names[:6]),
                    x0=f"{x_range['min']:.3g}", x1=f"{x_range['max']:.3g}", y0=f"{y_range_shown['min']:.3g}",
                    y1=f"{y_range_shown['max']:.3g}")
    # Fill the column instead of a fixed width, which spilled over narrow columns (1280 px with the sidebar).
    _show(data, {**spec, "width": "container", "description": description}, key, width="stretch")
    if state.settings().tables:  # one row per x (in the order they come), one column per series
        xs = list(dict.fromkeys(data.column("x").to_pylist()))
        wide = np.full((len(xs), len(names)), np.nan)
        row, col = {x: i for i, x in enumerate(xs)}, {n: j for j, n in enumerate(names)}
        for x, label, y in zip(data.column("x").to_pylist(), labels, data.column("y").to_pylist()):
            wide[row[x], col[label]] = np.nan if y is None else y
        heatmaps.table(wide, [f"{x:.4g}" for x in xs], [str(n) for n in names], key)


# ---------------------------------------------------------------- bars


@builds.spec
def _bars_spec(x_title: str, y_title: str, width: int, height: int, scale: float = 1.0) -> dict:
    y = alt.Y("label:N", sort=alt.EncodingSortField("i"), title=y_title)
    # one bar per label, not stacked: a stacked layer sorts its labels by the sum of i, the text beside it by the
    # minimum, and Vega-Lite warned that the union of the two domains had "conflicting sort properties"
    bars = alt.Chart().mark_bar(color="#4c78a8").encode(
        x=alt.X("value:Q", title=x_title, scale=alt.Scale(domainMin=0), stack=None), y=y,
        tooltip=[alt.Tooltip("label:N", title=y_title), alt.Tooltip("value:Q", title=x_title, format=".4f")])
    text = alt.Chart().mark_text(align="left", dx=6 * scale, fontSize=presenter.font_px(15, scale)).encode(
        x="value:Q", y=y, text=alt.Text("value:Q", format=".3f"))
    limit = alt.Chart().mark_rule(color="#d62728", strokeWidth=3 * scale, strokeDash=[6, 4]).encode(x="limit:Q")
    return _finish(alt.layer(bars, text, limit).properties(width=width * scale, height=height * scale), scale)


def bars(values: Sequence[float], labels: Sequence[str], *, key: str, x_title: str, y_title: str,
         limit: float, width: int = 360) -> None:
    """Horizontal bars with their values written beside them and a dashed rule at ``limit``."""
    df = frames.table({"i": range(len(values)), "label": list(labels), "value": [float(v) for v in values],
                       "limit": float(limit)})
    spec = {**_bars_spec(x_title, y_title, width, max(120, 34 * len(values)), presenter.scale()),
            "description": heatmaps.describe(_("Bar chart"), len(values), 1, y_title, x_title,
                                            float(min(values)), float(max(values)))}
    _show(df, spec, key)
    heatmaps.table(np.asarray(values, dtype=float)[:, None], list(labels), [x_title], key)


# ---------------------------------------------------------------- a compact heatmap (no numbers)


@builds.spec
def _pattern_spec(row_title: str, col_title: str, value_title: str, cell: int, rows: int, cols: int,
                  scheme: str, reverse: bool, labelled: bool = False, scale: float = 1.0) -> dict:
    if labelled:  # every row and column named (the labels are in the data, "1 A", "2 D", ...)
        x = alt.X("j:O", title=col_title, sort=None, axis=alt.Axis(labelAngle=-60, labelOverlap=False,
                                                                  labelFontSize=10 * scale))
        y = alt.Y("i:O", title=row_title, sort=None, axis=alt.Axis(labelOverlap=False, labelFontSize=10 * scale))
    else:
        x = alt.X("j:O", title=col_title, axis=alt.Axis(values=list(range(0, cols, max(1, cols // 8))), labelAngle=0))
        y = alt.Y("i:O", title=row_title, axis=alt.Axis(values=list(range(0, rows, max(1, rows // 8)))))
    rect = alt.Chart().mark_rect().encode(
        x=x, y=y, color=alt.Color("value:Q", scale=alt.Scale(scheme=scheme, reverse=reverse),
                                  legend=None if labelled else alt.Legend(
                                      title=value_title, orient="right", direction="vertical",
                                      gradientLength=min(300 * scale, rows * cell))),
        tooltip=[alt.Tooltip("i:O", title=row_title), alt.Tooltip("j:O", title=col_title),
                 alt.Tooltip("value:Q", title=value_title, format=".4f")])
    return _finish(rect.properties(width=cols * cell, height=rows * cell), scale)


def pattern(matrix, *, key: str, row_title: str, col_title: str, max_width: int = 760,
            labels: Optional[Sequence[str]] = None) -> None:
    """A large matrix as colours only (e.g. positions × d_model), 0-based axis ticks, values in tooltips.

    The palette's scale (``heatmaps.palette_scheme``): signed values diverging around 0, values that are all >= 0
    (weights) sequential from 0. ``labels``: a square
    matrix's row and column names (every one shown) instead of 0-based ticks, and no colour legend (narrow columns
    side by side: say what the colours mean beside them).
    """
    m = np.asarray(matrix, dtype=float)
    rows, cols = m.shape
    scale = presenter.scale()
    cell = int(max(4, min(18, max_width // cols, 520 // rows)) * scale)
    ii, jj = np.indices(m.shape)
    names = np.asarray(list(labels), dtype=object) if labels is not None else None
    df = frames.table({"i": ii.ravel() if names is None else names[ii.ravel()],
                       "j": jj.ravel() if names is None else names[jj.ravel()], "value": m.ravel()})
    top = float(np.abs(m).max()) or 1.0
    signed = bool((m < 0).any())
    spec = _pattern_spec(row_title, col_title, _("value"), cell, rows, cols, *heatmaps.palette_scheme(signed),
                         labels is not None, scale)
    spec["encoding"]["color"]["scale"]["domain"] = [-top, top] if signed else [0.0, top]
    spec["description"] = heatmaps.describe(_("Heatmap"), rows, cols, row_title, col_title, float(m.min()), float(m.max()))
    _show(df, spec, key)
    shown = list(labels) if labels is not None else None
    heatmaps.table(m, shown or [str(i) for i in range(rows)], shown or [str(j) for j in range(cols)], key)


# ---------------------------------------------------------------- attention weights, cells framed

#: A weights map's label font (px, normal mode): readable on a projector, and beside 20 px cells.
MAP_LABEL_FONT = 13
#: Its cells' smallest and largest size (px, normal mode) and how wide its plot is at most.
MAP_CELL_MIN, MAP_CELL_MAX, MAP_PLOT_PX = 22, 44, 400


def map_cell_px(n: int, scale: float = 1.0) -> int:
    """The cell size of an n × n weights map: its plot about :data:`MAP_PLOT_PX` wide, each cell at least
    :data:`MAP_CELL_MIN` (its label fits beside it) and at most :data:`MAP_CELL_MAX`; ``scale`` times that."""
    return int(max(MAP_CELL_MIN, min(MAP_CELL_MAX, MAP_PLOT_PX // max(n, 1))) * scale)


@builds.spec
def _weights_map_spec(row_title: str, col_title: str, value_title: str, cell: int, scale: float = 1.0) -> dict:
    label = presenter.font_px(MAP_LABEL_FONT, scale)
    x = alt.X("key:N", sort=alt.EncodingSortField("j"), title=col_title,
              axis=alt.Axis(orient="top", labelAngle=-45, labelOverlap=False, labelFontSize=label,
                            titleFontSize=presenter.font_px(14, scale)))
    y = alt.Y("query:N", sort=alt.EncodingSortField("i"), title=row_title,
              axis=alt.Axis(labelOverlap=False, labelFontSize=label, titleFontSize=presenter.font_px(14, scale)))
    base = alt.Chart().encode(x=x, y=y)
    tooltip = [alt.Tooltip("query:N", title=row_title), alt.Tooltip("key:N", title=col_title),
               alt.Tooltip("weight:Q", title=value_title, format=".3f")]
    rect = base.mark_rect().encode(
        color=alt.Color("weight:Q", title=value_title, legend=alt.Legend(
            orient="bottom", direction="horizontal", gradientLength=min(240 * scale, 8 * cell), format=".1f",
            labelFontSize=label, titleFontSize=label, titleOrient="left", values=[0, 0.5, 1])),
        tooltip=tooltip)
    # the frames: a black ring with a white line inside, seen on white, dark red and viridis's purple and yellow
    framed = base.transform_filter("datum.framed")
    outer = framed.mark_rect(fill=None, stroke="#000", strokeWidth=4 * scale).encode(tooltip=tooltip)
    inner = framed.mark_rect(fill=None, stroke="#fff", strokeWidth=1.5 * scale).encode(tooltip=tooltip)
    chart = alt.layer(rect, outer, inner).properties(width=alt.Step(cell), height=alt.Step(cell))
    return _finish(chart, scale)


def weights_map(weights, *, key: str, labels: Sequence[str], row_title: str, col_title: str,
                framed: Sequence[tuple[int, int]] = ()) -> None:
    """A head's attention weights (n × n, each in [0, 1]) as colours, every row and column named by ``labels``, a
    colour legend under it, the cells ``framed`` ((row, column), 0-based) outlined; the numbers in tooltips (and in
    a table with the *tables* switch). The app's one scale of weights (:func:`heatmaps.weights_scale`): the same
    colour is the same weight in every map."""
    m = np.asarray(weights, dtype=float)
    n = m.shape[0]
    scale = presenter.scale()
    names = np.asarray(list(labels), dtype=object)
    ii, jj = np.indices(m.shape)
    marked = np.zeros(m.shape, dtype=bool)
    if framed:
        rows, cols = zip(*framed)
        marked[list(rows), list(cols)] = True
    df = frames.table({"i": ii.ravel(), "j": jj.ravel(), "query": names[ii.ravel()], "key": names[jj.ravel()],
                       "weight": m.ravel(), "framed": marked.ravel()})
    spec = _weights_map_spec(row_title, col_title, _("weight"), map_cell_px(n, scale), scale)
    spec["layer"][0]["encoding"]["color"]["scale"] = heatmaps.weights_scale()
    spec["description"] = heatmaps.describe(_("Heatmap"), n, m.shape[1], row_title, col_title, float(m.min()),
                                           float(m.max()))
    if framed:
        spec["description"] += " " + _("{n} cells are framed: the pattern to learn.", n=len(framed))
    _show(df, spec, key)
    heatmaps.table(m, list(labels), list(labels), key)


# ---------------------------------------------------------------- the pixel image


def _hex(pixels: np.ndarray) -> np.ndarray:
    """(N, 3) uint8 -> (N,) "#rrggbb"."""
    return np.array([f"#{r:02x}{g:02x}{b:02x}" for r, g, b in pixels.tolist()], dtype=object)


def _image_titles() -> tuple[str, str, str, str, str, str]:
    """(row, column, token, colour, attention weight, weight) titles of the image chart, translated."""
    return (_("row r"), _("column c"), _("token n = r·W + c"), _("colour"), _("attention weight"), _("weight"))


@builds.spec
def _image_spec(cell: int, height: int, width: int, clickable: bool, overlay: bool, numbers: bool,
                titles: tuple[str, str, str, str, str, str], scale: float = 1.0) -> dict:
    row_t, col_t, token_t, colour_t, attention_t, weight_t = titles
    x = alt.X("c:O", title=col_t, axis=alt.Axis(labelAngle=0))
    y = alt.Y("r:O", title=row_t)
    tooltip = [alt.Tooltip("r:O", title=row_t), alt.Tooltip("c:O", title=col_t),
               alt.Tooltip("n:Q", title=token_t), alt.Tooltip("rgb:N", title=colour_t)]
    if overlay:
        tooltip.append(alt.Tooltip("weight:Q", title=attention_t, format=".4f"))
    base = alt.Chart().encode(x=x, y=y)
    layers = [base.mark_rect().encode(color=alt.Color("fill:N", scale=None), tooltip=tooltip)]
    if overlay:
        layers.append(base.mark_rect(color="#e8000b").encode(
            opacity=alt.Opacity("weight:Q", scale=alt.Scale(range=[0.0, 0.85], zero=True),
                                # under the image, not beside it: beside, in the page's half-width column, the
                                # legend fell outside the column and was cut off (seen at 1400 px)
                                legend=alt.Legend(title=weight_t, orient="bottom", direction="horizontal",
                                                  format=".3f", symbolType="square", symbolSize=260 * scale ** 2)),
            tooltip=tooltip))
    if numbers:
        # presenter mode: at least presenter.MIN_FONT_PX when it fits ("143" is about 1.5 em wide)
        size = max(9, min(14, cell // 3)) if scale == 1 else max(9, min(presenter.font_px(14, scale), cell // 2))
        layers.append(base.mark_text(fontSize=size).encode(
            text="n:Q", color=alt.condition("datum.dark", alt.value("white"), alt.value("black"))))
    layers.append(base.transform_filter("datum.selected").mark_rect(fill=None, stroke="#00e5ff", strokeWidth=5 * scale))
    layers.append(base.transform_filter("datum.selected").mark_rect(fill=None, stroke="#000", strokeWidth=1.5 * scale))
    # Step sizes (per pixel), not a total width: a total would be shared with the legend and squeeze the image.
    chart = alt.layer(*layers).properties(width=alt.Step(cell), height=alt.Step(cell))
    if clickable:
        chart = chart.add_params(alt.selection_point(name="pixel", fields=["r", "c"], on="click"))
    return _finish(chart, scale)


def image(
    pixels, *, key: str, selected: Optional[tuple[int, int]] = None, weights=None, grayscale: bool = False,
    numbers: bool = False, on_pixel: Optional[Callable[[int, int], None]] = None, size_px: int = 430,
) -> None:
    """An (H, W, 3) uint8 image as a grid of coloured cells, one per pixel (token).

    Args:
        pixels: (H, W, 3) uint8 (torch or numpy).
        selected: the (row, col) outlined.
        weights: optional (H, W) attention weights laid over the image in red (more weight,
            more opaque); the image is then drawn in grey so the red reads clearly.
        numbers: write each pixel's token number n = r W + c in it.
        on_pixel: when given, clicking a pixel calls on_pixel(row, col).
    """
    p = np.asarray(pixels, dtype=np.uint8)
    h, w, _channels = p.shape
    flat = p.reshape(h * w, 3)  # (H, W, 3) -> (N, 3), row by row
    rr, cc = np.indices((h, w))
    gray = (flat @ np.array([0.299, 0.587, 0.114])).round().clip(0, 255).astype(np.uint8)
    shown = np.stack([gray] * 3, axis=1) if grayscale else flat
    colours = [f"({r}, {g}, {b})" for r, g, b in flat.tolist()]
    columns = {
        "r": rr.ravel(), "c": cc.ravel(), "n": np.arange(h * w),
        "fill": _hex(shown), "rgb": colours,
        "dark": gray < 110,
        "selected": (rr.ravel() == selected[0]) & (cc.ravel() == selected[1]) if selected else False,
    }
    if weights is not None:
        columns["weight"] = np.asarray(weights, dtype=float).ravel()
        heatmaps.table(np.asarray(weights, dtype=float), [str(r) for r in range(h)], [str(c) for c in range(w)],
                      key)
    else:  # the picture itself: each pixel's colour, row r by column c
        heatmaps.text_table(np.asarray(colours, dtype=object).reshape(h, w).tolist(), [str(r) for r in range(h)],
                           [str(c) for c in range(w)], key)
    df = frames.table(columns)
    scale = presenter.scale()
    cell = int(max(16, min(48, size_px // max(h, w))) * scale)
    spec = {**_image_spec(cell, h, w, on_pixel is not None, weights is not None, numbers, _image_titles(), scale),
            "description": _("Image: {h} × {w} pixels, one token each (token n = r·W + c).", h=h, w=w)
            + (" " + _("Red shows the attention weights, from {low} to {high}.",
                       low=f"{np.asarray(weights, dtype=float).min():.3g}",
                       high=f"{np.asarray(weights, dtype=float).max():.3g}")
               if weights is not None else "")}
    if on_pixel is not None:
        st.vega_lite_chart(df, chart_specs.drawable(spec, df), key=key, on_select=functools.partial(_on_pixel, key, on_pixel),
                           selection_mode="pixel", width="content")
    else:
        _show(df, spec, key)


def _on_pixel(key: str, on_pixel: Callable[[int, int], None]) -> None:
    event = st.session_state.get(key)
    points = (event or {}).get("selection", {}).get("pixel") or []
    if points:
        on_pixel(int(points[0]["r"]), int(points[0]["c"]))


# ---------------------------------------------------------------- the class's charts (ui/classroom/class_dashboard.py)


@builds.spec
def _over_time_spec(x_title: str, y_title: str, series_title: str, domain: tuple[str, str], start_ms: int,
                    end_ms: int, scale: float = 1.0) -> dict:
    chart = alt.Chart().mark_bar().encode(
        # each minute's bar from its start to its end, on an axis of at least a quarter of an hour (over_time_domain)
        x=alt.X("time:T", title=x_title, scale=alt.Scale(domain=[start_ms, end_ms]),
                axis=alt.Axis(format="%H:%M", tickCount=6)),
        x2="end:T",
        y=alt.Y("high:Q", title=y_title, axis=alt.Axis(tickMinStep=1, format="d")),
        y2="low:Q",  # stacked here (right below wrong): a bar with x2 is not stacked by Vega-Lite
        color=alt.Color("verdict:N", title=series_title,
                        scale=alt.Scale(domain=list(domain), range=["#1b9e77", "#d95f02"])),
        tooltip=[alt.Tooltip("time:T", title=x_title, format="%H:%M"), alt.Tooltip("verdict:N", title=series_title),
                 alt.Tooltip("answers:Q", title=y_title)],
    ).properties(height=260 * scale)
    return _finish(chart, scale)


#: The answers-over-time chart shows at least this many minutes.
MIN_MINUTES = 15


def over_time_domain(minutes: Sequence[int], until: Optional[int] = None) -> tuple[int, int]:
    """The time axis of :func:`answers_over_time` in epoch milliseconds: from the minute before the first answer to
    the minute after ``until`` (a minute since the epoch: now, or when the class ended; None: the last answer's), or
    after the last answer if that is later. It ends there: a class that has just started must not see a quarter of
    an hour of the future. The axis spans at least MIN_MINUTES (+ 2), the extra minutes before the first answer."""
    first, last = min(minutes), max(minutes)
    end = max(last, first if until is None else until) + 1
    start = min(first - 1, end - MIN_MINUTES - 2)
    return start * 60_000, end * 60_000


def answers_over_time(minutes: Sequence[int], verdicts: Sequence[str], answers: Sequence[int], *, key: str,
                      x_title: str, y_title: str, series_title: str, domain: tuple[str, str],
                      until: Optional[int] = None) -> None:
    """Stacked bars: answers per minute (``minutes`` since the epoch), right and wrong (``verdicts`` in ``domain``),
    on an axis that ends at ``until`` (:func:`over_time_domain`)."""
    # epoch milliseconds: Vega-Lite reads them as instants and writes them in the teacher's own time zone
    df = pd.DataFrame({"time": [int(m) * 60_000 for m in minutes], "end": [int(m) * 60_000 + 55_000 for m in minutes],
                       "verdict": list(verdicts), "answers": [int(a) for a in answers]})
    df = df.assign(order=df["verdict"].map({domain[0]: 0, domain[1]: 1})).sort_values(["time", "order"])
    df["high"] = df.groupby("time")["answers"].cumsum()
    df["low"] = df["high"] - df["answers"]
    start, end = over_time_domain(minutes, until)
    _show(df, _over_time_spec(x_title, y_title, series_title, domain, start, end, presenter.scale()), key,
          width="stretch")
    if state.settings().tables:
        table = df[["time", "verdict", "answers"]].assign(time=pd.to_datetime(df["time"], unit="ms").dt.strftime("%H:%M UTC"))
        st.dataframe(table.rename(columns={"time": x_title, "verdict": series_title, "answers": y_title}),
                     hide_index=True)


# ---------------------------------------------------------------- the check before and after, per concept


def percent(share: float) -> str:
    """A share in [0, 1] as a whole percentage, halves rounded up (5 of 8 is "63%"), as every table and chart of the
    class's shares writes it."""
    return f"{math.floor(share * 100 + 0.5):d}%"


@builds.spec
def _before_after_spec(x_title: str, y_title: str, series_title: str, domain: tuple[str, str], labels: tuple[str, ...],
                       scale: float = 1.0) -> dict:
    # in the order given (teaching order), each label whole
    # no axis title (the labels say it): on a 390 px phone every pixel goes to the bars
    y = alt.Y("label:N", sort=list(labels), title=None, axis=alt.Axis(labelLimit=260 * scale))
    colour = alt.Color("check:N", title=series_title, scale=alt.Scale(domain=list(domain), range=["#bdbdbd", "#1b9e77"]))
    offset = alt.YOffset("check:N", scale=alt.Scale(domain=list(domain)))
    bars = alt.Chart().mark_bar().encode(
        # room right of 100 % for the bar's number
        x=alt.X("share:Q", title=x_title, scale=alt.Scale(domain=[0, 1.15]),
                axis=alt.Axis(format="%", values=[0, 0.25, 0.5, 0.75, 1])),
        y=y, yOffset=offset, color=colour,
        tooltip=[alt.Tooltip("label:N", title=y_title), alt.Tooltip("check:N", title=series_title),
                 alt.Tooltip("share:Q", title=x_title, format=".0%")])
    # the number as the table beside the chart writes it (percent(): Vega's ".0%" rounds 62.5 % up, Python's down)
    text = alt.Chart().mark_text(align="left", dx=4 * scale, fontSize=presenter.font_px(14, scale)).encode(
        x="share:Q", y=y, yOffset=offset, text="text:N")
    # sized in steps, one per concept: a fixed height holds the legend above the plot too, and one concept's bars were
    # squeezed to nothing (0.25 px) in it
    return _finish(alt.layer(bars, text).properties(height=alt.Step(28 * scale)), scale)


def before_after(labels: Sequence[str], before: Sequence[float], after: Sequence[float], *, key: str, x_title: str,
                 y_title: str, series_title: str, domain: tuple[str, str]) -> None:
    """Per label (a concept), two bars: the share right before and after (0 to 1, written beside each bar); with the
    tables setting, the same numbers as a table."""
    n = len(labels)
    df = pd.DataFrame({"i": list(range(n)) * 2, "label": list(labels) * 2, "check": [domain[0]] * n + [domain[1]] * n,
                       "share": [float(v) for v in before] + [float(v) for v in after]})
    df["text"] = [percent(v) for v in df["share"]]
    _show(df, _before_after_spec(x_title, y_title, series_title, domain, tuple(labels), presenter.scale()), key,
          width="stretch")
    if state.settings().tables:
        st.dataframe(pd.DataFrame({y_title: list(labels), domain[0]: list(before), domain[1]: list(after)}),
                     hide_index=True)
