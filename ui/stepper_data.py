"""What the step-through element is sent (``ui.stepper`` draws it): a stage's panels with their colours and
token labels, the blocks a large matrix is sent in (:func:`blocks`), the explained entries, exercises and charts
a row at a time, the checks, and the whole payload of a page's walk-through, its parts shared between the
sessions that show the same numbers (:func:`payload`). Plain data: nothing here draws."""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import threading
import zlib
from typing import Any, Callable, Collection, Mapping, Optional

import numpy as np
from markdown_it import MarkdownIt

from attention_core.page import Page
from attention_core.stepthrough import Panel, StepThrough, as_of, clamp_entry, explained_panel
from ui import chart_specs, heatmaps, i18n, state, stepthrough, widgets
from ui.classroom import class_live, practice
from ui.i18n import _, app_text

#: In a class, the most often the element reports the step reached (one script run each: ~10 ms of the server's CPU),
#: in milliseconds; it reports only a step other than the one the server last heard of (a request for entries carries
#: the step too). 100 students stepping every ~3 s: scripts/load/class_steps.py.
REPORT_MS = 10_000

#: Vega's continuous colour schemes, as its charts (and so the heatmaps) draw them: the colours Vega interpolates
#: between, evenly spaced from the low end (vega-scale's scheme table, as bundled by Streamlit's frontend).
SCHEMES = {
    "redblue": "8c0d25bf363adf745ef4ae91fbdbc9f2efeed2e5ef9dcae15da2cb2f78b3134b85",
    "blueorange": "134b852f78b35da2cb9dcae1d2e5eff2f0ebfce0bafbbf74e8932fc5690d994a07",
    "blues": "cfe1f2bed8eca8cee58fc1de74b2d75ba3cf4592c63181bd206fb2125ca40a4a90",
    "viridis": "440154470e61481a6c482575472f7d443a834144873d4e8a39568c35608d31688e2d708e2a788e27818e23888e21918d1f"
               "988b1fa08822a8842ab07f35b77943bf7154c56866cc5d7ad1518fd744a5db36bcdf27d2e21be9e51afde725",
}


BLOCKED = "#d0d0d0"  # a −∞ cell, as the heatmaps draw it


_MARKDOWN = MarkdownIt("commonmark", {"html": False})  # raw HTML in a text is shown as text, never run


@functools.lru_cache(maxsize=4096)
def markdown_html(text: str) -> str:
    """Markdown (our texts, user text in them already escaped by ``widgets.message_markdown``) as HTML, with the
    paragraph around a single paragraph dropped. Kept by text, shared by every session (a page's captions and texts
    come again at each change of a setting: a third of the time the backward page's 12 steps took to build)."""
    html = _MARKDOWN.render(text).strip()
    if html.startswith("<p>") and html.endswith("</p>") and html.count("<p>") == 1:
        html = html[3:-4]
    return html


@functools.lru_cache(maxsize=None)
def _stops(scheme: str, reverse: bool) -> np.ndarray:
    """A scheme's colours as an (n, 3) array of 0-255 floats, from its low end (reversed: from its high end)."""
    stops = SCHEMES[scheme]
    rgb = np.array([[int(stops[k + n: k + n + 2], 16) for n in (0, 2, 4)] for k in range(0, len(stops), 6)], float)
    return rgb[::-1].copy() if reverse else rgb


_HEX = np.array([f"{v:02x}" for v in range(256)], dtype=object)  # a byte as two hex digits


def colours(values: np.ndarray, scheme: str, reverse: bool, low: float, high: float) -> np.ndarray:
    """The fill colour of each value on ``scheme`` over [low, high] (clamped), as "#rrggbb"; −∞ grey.

    Vega interpolates a continuous scheme linearly in RGB between its colours (:data:`SCHEMES`).
    """
    rgb = _stops(scheme, reverse)
    finite = np.isfinite(values)
    t = np.clip((np.where(finite, values, low) - low) / ((high - low) or 1.0), 0.0, 1.0) * (len(rgb) - 1)
    lower = np.minimum(np.floor(t).astype(int), len(rgb) - 2)
    frac = (t - lower)[..., None]
    mixed = _HEX[np.rint(rgb[lower] * (1 - frac) + rgb[lower + 1] * frac).astype(int)]
    hexes = "#" + mixed[..., 0] + mixed[..., 1] + mixed[..., 2]
    return np.where(np.isneginf(values), BLOCKED, hexes)


def panel_data(panel: Panel, stage_title: str, explained_hint: bool,
               block: Optional[tuple[int, int, int, int]] = None) -> dict[str, Any]:
    """One matrix for the element: labels, the numbers as the heatmaps write them, colours and text colours as they
    draw them (``ui.heatmaps.heatmap_figure``'s rules), and its caption. A panel that follows the explained entry
    (``Panel.by_entry``: the softmax Jacobian of the row explained) is the panel of every entry, ``by_entry[head]
    [row]``: the element shows the one of its position.

    ``block``: (first row, row after the last, first column, column after the last) of a large matrix (the model
    pages' n × 384 inputs, 512 × 512 weights) sent a block at a time (:func:`blocks`): only that block's numbers,
    labels and colours, coloured and written on the block's own scale (as the server's renderer drew its window: a
    hidden state's few huge features would leave every other block white); with ``offset`` (its first row and column), ``shape`` (the whole matrix's) and, for the explained
    panel's pickers, every row's and column's label (``all_rows``, ``all_cols``)."""
    if panel.by_entry:
        return {"head": None, "explained": False,
                "by_entry": [[panel_data(p, stage_title, explained_hint) for p in head] for head in panel.by_entry]}
    m = np.asarray(panel.matrix, dtype=float)
    rows, cols = m.shape
    r0, r1, c0, c1 = block if block is not None else (0, rows, 0, cols)
    shown = m[r0:r1, c0:c1]
    finite = shown[np.isfinite(shown)]
    top = float(np.abs(finite).max()) if finite.size else 1.0
    signed = bool(finite.size and finite.min() < 0)
    scheme, reverse = heatmaps.palette_scheme(signed)
    low, high = (-(top or 1.0), top or 1.0) if signed else (0.0, top or 1.0)
    exponent, decimals = heatmaps.cell_number_format(finite)
    dark = heatmaps.dark_cells(shown, top, scheme)
    title = app_text(panel.title) if panel.title else stage_title
    if title.endswith((".", "。")):  # a title that is a sentence (the mask's): the size after it in brackets
        caption = _("**{stage}** ({rows} × {cols}).", stage=widgets.md_escape(title), rows=rows, cols=cols)
    else:
        caption = _("**{stage}**: {rows} × {cols}.", stage=widgets.md_escape(title), rows=rows, cols=cols)
    if (r1 - r0, c1 - c0) != (rows, cols):  # as the server's renderer said it
        caption += " " + _("Showing rows {r0}–{r1} and columns {c0}–{c1}; pick another entry below to move.",
                           r0=r0 + 1, r1=r1, c0=c0 + 1, c1=c1)
    if exponent:
        caption += " " + _("Cells in units of 10{n}.", n=str(exponent).translate(heatmaps._SUPERSCRIPT))
    blocked = int(np.isneginf(m).sum())  # in the whole matrix, whose size the caption gives
    if blocked:  # as a heatmap's description says it
        caption += " " + _("{n} cells are blocked (−∞).", n=blocked)
    if explained_hint and panel.explained:
        caption += " " + _("Click a cell to explain it.")
    data = {
        "rows": [app_text(label) for label in panel.row_labels[r0:r1]],
        "cols": [app_text(label) for label in panel.col_labels[c0:c1]],
        "row_title": app_text(panel.row_title), "col_title": app_text(panel.col_title),
        "text": heatmaps.cell_labels(shown, exponent, decimals).tolist(),
        "fill": colours(shown, scheme, reverse, low, high).tolist(),
        "dark": dark.astype(int).tolist(),
        "head": panel.head, "explained": panel.explained,
        "caption_html": markdown_html(caption),
        "scheme": scheme, "domain": [low, high],  # what the colours were read from (the tests read them too)
    }
    if block is not None:
        data.update(offset=[r0, c0], shape=[rows, cols])
        if panel.explained:
            data.update(all_rows=[app_text(label) for label in panel.row_labels],
                        all_cols=[app_text(label) for label in panel.col_labels])
    return data


def blocks(steps: StepThrough, row: int, col: int, head: int) -> tuple[tuple[int, int, int, int], ...]:
    """The block of each of a stage's panels shown around the entry (row, col, head) (moved inside the stage's
    explained panel first, as the element does): (first row, row after the last, first column, column after the
    last), by ``ui.stepthrough.window`` (up to ``WHOLE`` rows or columns whole, else blocks of ``WINDOW``), as the
    server's renderer showed a model page's matrices."""
    row, col, _head = clamp_entry(steps.stage, row, col, head, steps.num_heads or 1)
    found = []
    for panel in steps.stage.panels:
        rows, cols = np.shape(panel.matrix)
        r0, r1 = stepthrough.window(rows, min(row, rows - 1))
        c0, c1 = stepthrough.window(cols, min(col, cols - 1))
        found.append((r0, r1, c0, c1))
    return tuple(found)


#: The most explained entries of a stage sent at once, on the stage's first visit (each is ~3 ms of sympy on a quiet
#: machine, 10-40 ms on a busy one). A stage with more (12 tokens: 144 scores; 12 × 16: 192 queries) is sent a row at
#: a time, the row of the cell shown: one round trip of ~16 entries instead of one of several seconds.
ENTRIES_AT_ONCE = 64


#: Rows beyond any matrix a step page shows (the model pages' 512 tokens): a request for one is ignored.
MAX_ROWS = 1024


def entry_cells(steps: StepThrough, rows: Optional[Collection[int]] = None,
                cols: Optional[Collection[int]] = None) -> list[tuple[int, int, int]]:
    """(row, col, head) of every explained entry of a stage (of ``rows`` only, and ``cols`` only, when given)."""
    stage = steps.stage
    if stage.entry is None or stage.target is None:
        return []
    cells = []
    for head in (range(steps.num_heads or 1) if stage.per_head else (0,)):
        panel = explained_panel(stage.panels, head)
        if panel is None:
            continue
        n_rows, n_cols = panel.matrix.shape
        # only the rows and columns asked for are walked (a model page's 512 × 512 weights: 12 of them, not 262,144)
        row_range = range(n_rows) if rows is None else sorted(r for r in set(rows) if 0 <= r < n_rows)
        col_range = range(n_cols) if cols is None else sorted(c for c in set(cols) if 0 <= c < n_cols)
        cells += [(row, col, head) for row in row_range for col in col_range]
    return cells


def entries(steps: StepThrough, rows: Optional[Collection[int]] = None,
            cols: Optional[Collection[int]] = None) -> dict[str, str]:
    """The explained entries of a stage (every one, or those of ``rows`` and ``cols``), by "row,col,head": the entry
    formula with its numbers in (LaTeX)."""
    tr = i18n.translator()
    return {f"{row},{col},{head}": steps.stage.entry(row, col, head, tr)
            for row, col, head in entry_cells(steps, rows, cols)}


def exercises(steps: StepThrough, rows: Optional[Collection[int]] = None,
              cols: Optional[Collection[int]] = None) -> dict[str, Optional[dict]]:
    """Practice mode: the exercise of each explained entry of a stage (every one, or those of ``rows`` and
    ``cols``), by "row,col,head" (``ui.classroom.practice.exercise_data``; None where there is nothing to compute)."""
    return {f"{row},{col},{head}": exercise_html(practice.exercise_data(steps, row, col, head))
            for row, col, head in entry_cells(steps, rows, cols)}


def exercise_html(data: Optional[dict]) -> Optional[dict]:
    """An exercise for the element (``ui.classroom.practice.exercise_data``) with its prediction's question as HTML."""
    if data is not None and data["predict"] is not None:
        data["predict"]["question_html"] = markdown_html(data["predict"].pop("question"))
    return data


@dataclasses.dataclass(frozen=True)
class EntryChart:
    """A chart that follows the explained entry (RoPE's pair of the entry, before and after its rotation), made by a
    page for (steps, row, col, head): its title (Markdown, in the interface language), its Vega-Lite spec and data as
    ``st.vega_lite_chart`` draws them, and its numbers as a table (``numbers``, rows × columns, float; one label per
    row and per column), which a screen reader reads."""

    title: str
    spec: dict
    data: Any
    rows: tuple[str, ...]
    cols: tuple[str, ...]
    numbers: tuple[tuple[float, ...], ...]

    @property
    def table(self) -> Panel:
        """The chart's numbers as a panel that explains nothing."""
        return Panel("", np.asarray(self.numbers, dtype=float), self.rows, self.cols, "", "", explained=False)


#: A page's charts that follow the explained entry: (steps, row, col, head) -> the chart there, or None.
EntryCharts = Callable[[StepThrough, int, int, int], Optional[EntryChart]]


def chart_data(chart: EntryChart) -> dict[str, Any]:
    """An entry's chart for the element: the spec with its data in it (drawn by Vega-Lite in the browser, the same
    spec as the server's chart), its title and its table."""
    spec = chart_specs.drawable(chart.spec, chart.data)
    spec = {**spec, "data": {"values": chart.data.to_pylist()}}
    return {"title_html": markdown_html(f"**{chart.title}**"), "spec": spec,
            "table": panel_data(chart.table, _("The chart's numbers"), False)}


def charts(steps: StepThrough, entry_chart: EntryCharts, rows: Optional[Collection[int]] = None,
           cols: Optional[Collection[int]] = None) -> dict[str, Any]:
    """The charts of a stage's explained entries (every one, or those of ``rows`` and ``cols``) that have one, by
    "row,col,head"."""
    made = {f"{row},{col},{head}": entry_chart(steps, row, col, head)
            for row, col, head in entry_cells(steps, rows, cols)}
    return {key: chart_data(chart) for key, chart in made.items() if chart is not None}


def check_lines(steps: StepThrough) -> list[dict[str, Any]]:
    """The stage's checks, each a line (HTML) and whether it holds, as :func:`ui.stepthrough.checks` says them."""
    lines = []
    for check in steps.checks:
        text = widgets.check_text(check.max_abs_diff, check.matches, check.reference, check.against)
        if check.note:
            text += "  \n" + _("Compared: {what}.", what=app_text(check.note))
        lines.append({"ok": check.matches, "html": markdown_html(text)})
    return lines


def stage_data(steps: StepThrough, explain: Mapping[str, str],
               shown: Optional[tuple[tuple[int, int, int, int], ...]] = None) -> dict[str, Any]:
    """A stage for the element, without its entries; its ``sig`` changes when anything else of it does (the element
    keeps the section it built for a stage while its sig is the same). ``shown``: a large stage's block of each panel
    (:func:`blocks`); its entries are then sent a row of the block at a time (``by_row``)."""
    stage, tr = steps.stage, i18n.translator()
    title = _(steps.titles[stage.key])
    data = {
        "explain_html": markdown_html(_(explain[stage.key])),
        "opened_html": markdown_html(_("This page opens at step {n} of {total}. {why} ◀ Previous walks back to step 1.",
                                       n=list(steps.titles).index(stage.key) + 1, total=len(steps.titles),
                                       why=_(steps.page.default_stage_why)))
        if steps.page.default_stage_why and stage.key == steps.page.default_stage else "",  # said there only
        "formula": list(stage.formula(tr)),
        "panels": [panel_data(p, title, stage.mask is None, shown[k] if shown else None)
                   for k, p in enumerate(stage.panels)],
        "remark_html": markdown_html(_(stage.remark)) if stage.remark else "",
        "details_html": markdown_html("  ".join(_(text) for text in stage.details)) if stage.details else "",
        "has_entry": stage.entry is not None and stage.target is not None,
        # its entries are sent a row at a time (a large stage's: a row of the block shown)
        "by_row": shown is not None or len(entry_cells(steps)) > ENTRIES_AT_ONCE,
        "code": [widgets.source(function) for function in stage.code],
        "per_head": stage.per_head,
        "checks_html": check_lines(steps),  # a stage's own (the backward pages check each gradient at its step)
        "entries": None,
        # a mask a click edits (the causal page's): a click on a cell flips it on the server (an edit: new numbers)
        "mask": None if stage.mask is None else {
            "text": (_("{n} cell(s) flipped by you.", n=len(stage.mask.edited)) if stage.mask.edited else
                     _("Click any cell to flip it between allowed (0) and blocked (−∞).")),
            "edited": len(stage.mask.edited),
            "reset": _("Reset the mask"),
            "reset_help": _("Forget the cells you flipped; keep the causal and padding masks."),
        },
    }
    data["sig"] = format(zlib.crc32(json.dumps(data, sort_keys=True).encode()), "08x")
    return data


#: How many stages' parts (their step-throughs, data and entries) the server keeps, shared by every session (least
#: recently used dropped): a class on every page in both languages keeps ~28 pages × ~7 stages × 2-3 parts.
SHARED_PARTS = 768


_PARTS: collections.OrderedDict = collections.OrderedDict()


_PARTS_LOCK = threading.Lock()


def same_numbers(walk: Any, other: Any) -> bool:
    """Whether two walk-throughs are one shared build: the same object, or copies of it that differ in their settings
    alone (``attention_core.stepthrough.as_of``: the stage or the explained entry moved, no number changed)."""
    if walk is other:
        return True
    if type(walk) is not type(other) or not dataclasses.is_dataclass(walk):
        return False
    return all(getattr(walk, f.name) is getattr(other, f.name) for f in dataclasses.fields(walk) if f.name != "settings")


def _shared(key: tuple, walk: Any, make) -> Any:
    """``make()``, kept for ``key`` while ``walk`` is the same shared build (:func:`same_numbers`). What is kept
    depends on the numbers alone (a panel that follows the explained entry is sent for every entry:
    ``Panel.by_entry``)."""
    with _PARTS_LOCK:
        hit = _PARTS.get(key)
        if hit is not None and same_numbers(hit[0], walk):
            _PARTS.move_to_end(key)
            return hit[1]
    value = make()
    with _PARTS_LOCK:
        _PARTS[key] = (walk, value)
        _PARTS.move_to_end(key)
        while len(_PARTS) > SHARED_PARTS:
            _PARTS.popitem(last=False)
    return value


def _view() -> tuple:
    settings = state.settings()
    return settings.language, settings.palette, settings.presenter


def payload(page: Page, walk: Any, explain: Mapping[str, str], loaded: Mapping[str, set[int]],
            entry_chart: Optional[EntryCharts] = None, practising: bool = False, *, windowed: bool = False,
            with_checks: bool = True) -> dict[str, Any]:
    """What the element is given: every stage of ``walk``, with the entries the element asked for (``loaded``: stage
    -> the rows asked for; a stage of at most :data:`ENTRIES_AT_ONCE` entries is sent whole, a larger one the rows
    asked for, ``rows_loaded``), and for the current stage the explained entry when it is not among them (the
    element asks for the rest after its paint); the labels in the interface language, the checks, the position the
    server knows and its token. ``practising``: practice mode; each entry sent comes with its exercise, and the
    session's answers on the page come along (:func:`practice_data`). ``windowed``: each stage's matrices a block
    around the position (:func:`blocks`: the model pages' 512-token heads), the entries of the rows asked for in that
    block; the element asks for another block when the learner moves out of it (one round trip).
    ``with_checks``: each stage's checks in its section (False: the page shows them elsewhere, as the model pages do
    beside the head's map).
    """
    settings = state.settings()
    stage_key = settings.get(page.stage_field)
    first = page.step_through(as_of(walk, settings), stage_key)
    order = list(first.titles)
    view = _view()
    at = (settings.get(first.row_field), settings.get(first.col_field),
          settings.get(first.head_field) if first.head_field else 0)
    stages = {}
    for key in order:  # each stage's step-through is built once per shared build, not on every click
        steps = _shared((page.key, key, "steps"), walk, functools.partial(page.step_through, walk, key))
        shown = blocks(steps, *at) if windowed else None
        part = _shared((page.key, key, "stage", shown) + view, walk,
                       functools.partial(stage_data, steps, explain, shown))
        if not with_checks:
            part = {**part, "checks_html": []}
        if key in loaded and not part["by_row"]:
            part = {**part, "entries": _shared((page.key, key, "entries", view[0]), walk,
                                               functools.partial(entries, steps))}
            if entry_chart is not None:
                part["charts"] = _shared((page.key, key, "charts") + view, walk,
                                         functools.partial(charts, steps, entry_chart))
            if practising:
                part["exercises"] = _shared((page.key, key, "exercises", view[0]), walk,
                                            functools.partial(exercises, steps))
        elif key in loaded:
            rows = sorted(loaded[key])
            cols: Optional[range] = None
            if shown is not None:  # the rows of the block shown, its columns
                target = explained_panel(steps.stage.panels, at[2])
                r0, r1, c0, c1 = next(b for p, b in zip(steps.stage.panels, shown) if p is target)
                rows, cols = [row for row in rows if r0 <= row < r1], range(c0, c1)
            block = cols.start if cols is not None else None
            sent: dict[str, str] = {}
            drawn: dict[str, Any] = {}
            asked: dict[str, Optional[dict]] = {}
            for row in rows:
                sent.update(_shared((page.key, key, "entries", view[0], row, block), walk,
                                    functools.partial(entries, steps, (row,), cols)))
                if entry_chart is not None:
                    drawn.update(_shared((page.key, key, "charts", row, block) + view, walk,
                                         functools.partial(charts, steps, entry_chart, (row,), cols)))
                if practising:
                    asked.update(_shared((page.key, key, "exercises", view[0], row, block), walk,
                                         functools.partial(exercises, steps, (row,), cols)))
            part = {**part, "entries": sent, "partial": True, "rows_loaded": rows}
            if entry_chart is not None:
                part["charts"] = drawn
            if practising:
                part["exercises"] = asked
        stages[key] = part
    codes: list[str] = []  # each function's source once (a model page's 10 stages show the same two: 26 of 85 kB)
    for key, part in stages.items():
        indices = []
        for source in part["code"]:
            if source not in codes:
                codes.append(source)
            indices.append(codes.index(source))
        stages[key] = {**part, "code": indices}
    row, col, head = clamp_entry(first.stage, settings.get(first.row_field), settings.get(first.col_field),
                                 settings.get(first.head_field) if first.head_field else 0, first.num_heads or 1)
    shown = f"{row},{col},{head}"
    if stages[stage_key]["has_entry"] and shown not in (stages[stage_key].get("entries") or {}):
        # the one entry shown: a setting changed answers at once (the stage's every entry took ~0.1-0.4 s of sympy)
        stages[stage_key] = {**stages[stage_key], "partial": True,
                             "entries": {**(stages[stage_key].get("entries") or {}),
                                         shown: first.stage.entry(row, col, head, i18n.translator())}}
        chart = entry_chart(first, row, col, head) if entry_chart is not None else None
        if chart is not None:
            stages[stage_key]["charts"] = {**(stages[stage_key].get("charts") or {}), shown: chart_data(chart)}
        if practising:
            stages[stage_key]["exercises"] = {**(stages[stage_key].get("exercises") or {}),
                                              shown: exercise_html(practice.exercise_data(first, row, col, head))}
    warnings = [markdown_html(widgets.message_markdown(text)) for text in first.warnings]
    notes = [markdown_html(widgets.message_markdown(text)) for text in first.notes]
    return {
        "static": "app/static/",
        "layout": "beside",
        "presenter": bool(settings.presenter),
        "order": order,
        "titles": {key: f"{n} / {len(order)}: {_(first.titles[key])}" for n, key in enumerate(order, start=1)},
        "default_stage": page.default_stage,
        "stages": stages,
        "codes": codes,  # the sources a stage's "code" indexes
        "check_caption_html": markdown_html(_(first.check_caption)) if first.check_caption else "",
        "warnings_html": warnings,
        "notes_html": notes,
        "num_heads": first.num_heads,
        "position": {"stage": stage_key, "row": row, "col": col, "head": head},
        "token": state.position_token(),
        "fields": {"stage": page.stage_field, "row": first.row_field, "col": first.col_field,
                   "head": first.head_field},
        # what a teacher's link fixed (``ui.state.locked``): the element does not move it (the server would not)
        "locked": {part: bool(field) and field in state.locked() for part, field in (
            ("stage", page.stage_field), ("row", first.row_field), ("col", first.col_field),
            ("head", first.head_field))},
        "practice": practice_data(page, walk) if practising else None,
        "report": class_live.member() is not None,
        "report_ms": REPORT_MS,
        "labels": {"previous": _("◀ Previous"), "next": _("Next ▶"), "step": _("Step"), "formula": _("Formula"),
                   "explain": _("Explain this entry"), "row": _("Row"), "column": _("Column"), "head": _("Head"),
                   "loading": _("Typesetting this step's entries…"), "code": _("Show the code"),
                   "scroll": _("scroll →")},
    }


def practice_data(page: Page, walk: Any) -> dict[str, Any]:
    """Practice mode's part of what the element is sent: the session's score, its answers on this page (their
    verdicts, what is revealed, the predictions: ``ui.classroom.practice.status``, as HTML) and the words the element shows."""
    said = practice.status(page.key, functools.partial(page.step_through, walk))
    for entry in said.values():
        for name in ("error", "correct", "verdict"):
            if name in entry:
                entry[name] = markdown_html(entry[name])
        if "hints" in entry:
            entry["hints"] = [markdown_html(text) for text in entry["hints"]]
    return {
        "score_html": markdown_html(practice.score_text()),
        "status": said,
        "labels": {
            "hidden": _("This step's numbers are hidden until you answer (or ask for the solution)."),
            "your_turn": _("Your turn: compute this entry"), "pick": _("Pick an entry for me"), "with": _("with"),
            "answer": _("Your answer"), "check": _("Check"), "reveal": _("Show the solution"),
            "accepted": _("Accepted: within ±0.005 or ±0.5 % of the answer, whichever is larger (so rounding to 2 "
                          "decimals is fine)."),
            "answer_help": widgets.number_help(),
            "choose": _("Key with the most weight"),
            "worked": _("The worked solution, with the numbers in:"),
            "nothing_html": markdown_html(_(
                "No exercise at this step: its numbers are read off or set, not calculated (or the sum is too long "
                "to add up by hand). Look, then go on with **Next**.")),
        },
    }
