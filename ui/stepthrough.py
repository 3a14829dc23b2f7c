"""The one renderer of the step-through protocol (``attention_core.stepthrough``): every page that steps uses it.

``show(steps, explain)`` draws, in order: the stepper (Previous / step picker / Next), what this step does,
the general formula, the stage's heatmaps (or the clickable mask), the stage's remarks, warnings and notes,
the explained entry with its pickers, the checks (each against what it says) and "Show the code". A click on a heatmap
cell, or the pickers, choose the explained entry; it is clamped to the stage's matrix and kept in the settings.
Nothing here computes attention.
"""

from __future__ import annotations

import functools
import zlib
from typing import Any, Callable, Mapping, Optional, Sequence

import streamlit as st

from attention_core.classroom import notebook, scripts
from attention_core.page import Page
from attention_core.stepthrough import (
    Check,
    Panel,
    Stage,
    StepThrough,
    clamp_entry,
)

from . import heatmaps, i18n, masking, practice, presenter, state, widgets, worksheet
from .i18n import _, app_text


def _labels(labels: Sequence[str]) -> list[str]:
    return [app_text(label) for label in labels]


def show(steps: StepThrough, explain: Mapping[str, str], *, layout: str = "stacked", per_row: int = 0,
         with_checks: bool = True, after_panels: Optional[Callable[[], None]] = None,
         after_entry: Optional[Callable[[], None]] = None,
         after_checks: Optional[Callable[[], None]] = None,
         walk: Any = None) -> None:
    """Render a step page's current stage.

    Args:
        steps: from the page's builder in attention_core.
        explain: stage key -> what this step does (English, marked with N_; translated here).
        layout: "stacked" (the formula above the heatmaps) or "beside" (the formula left of a single heatmap).
        per_row: at most this many heatmaps side by side (0: 3, or 2 to 4 by the number of heads).
        with_checks: show the page's checks here (False: the page shows them elsewhere).
        after_panels, after_entry, after_checks: draw what the page adds after the heatmaps, after the
            explained entry, after the checks (before "Show the code").
        walk: the page's walk-through (what its declaration's ``steps`` builds every stage from): given, the
            worksheet and export downloads are offered.
    """
    stage = steps.stage
    tr = i18n.translator()
    practising = widgets.stepper(steps.titles, stage.key, field=steps.field, extra=practice.switch)
    if practising:
        practice.score()
    opened_at(steps)
    st.markdown(_(explain[stage.key]))
    row, col, head = entry(steps)
    exercise = practice.exercise_for(steps, row, col, head) if practising else None
    if practising and exercise is None:
        practice.nothing_to_compute()

    single = len(stage.panels) == 1 and stage.mask is None
    if practice.hidden(steps, exercise, row, col, head):
        with st.expander(_("Formula"), expanded=True):
            for line in stage.formula(tr):
                st.latex(line)
        st.info(_("This step's numbers are hidden until you answer (or ask for the solution)."),
                icon=":material/visibility_off:")
        target = stage.target
        entry_pickers(steps, row, col, clickable=False)
        practice.ask(steps, exercise, row, col, head, _labels(target.row_labels), _labels(target.col_labels))
        notes(steps.warnings, steps.notes)
        if walk is not None:
            _downloads(steps, walk)
        return
    if layout == "beside" and single and _fits_beside(stage.panels[0], col):
        # The heatmap gets two thirds of the width and its colour legend goes under it: at 1280–1400 px with the
        # sidebar, a 7 × 7 heatmap with its legend beside it was wider than the matrix's column (3 / 5), its 7th
        # column and legend cut off (issue 29). The formulas of a stage fit the remaining third.
        formula_col, matrix_col = st.columns([1, 2])
        with formula_col:
            st.markdown("**" + _("Formula") + "**")
            for line in stage.formula(tr):
                st.latex(line)
        with matrix_col:
            _single_panel(steps, stage.panels[0], (row, col), head, legend=False)
    else:
        with st.expander(_("Formula"), expanded=True):
            for line in stage.formula(tr):
                st.latex(line)
        if stage.mask is not None:
            target = stage.target
            if target is not None and target.title:
                st.markdown(f"**{app_text(target.title)}**")
            masking.mask_grid(stage.mask, _labels(target.row_labels), entry=(row, col))
        elif single and not stage.panels[0].title:
            _single_panel(steps, stage.panels[0], (row, col), head)
        else:
            panels(steps, entry=(row, col), head=head,
                   per_row=per_row or (min(max(steps.num_heads, 2), 4) if steps.num_heads else 3))
    if after_panels is not None:
        after_panels()
    if stage.remark:
        st.success(_(stage.remark), icon=":material/check_circle:")
    if stage.details:
        st.markdown("  ".join(_(text) for text in stage.details))
    notes(steps.warnings, steps.notes)

    if stage.entry is not None and stage.target is not None:
        st.subheader(_("Explain this entry"))
        entry_pickers(steps, row, col)
        if exercise is not None:
            practice.verdict_line(steps, exercise, row, col, head)
        st.latex(stage.entry(row, col, head, tr))
    if after_entry is not None:
        after_entry()

    if with_checks:
        checks(steps.checks)
        if steps.check_caption:
            st.caption(_(steps.check_caption))
    if after_checks is not None:
        after_checks()
    if walk is not None:
        _downloads(steps, walk)
    if stage.code:
        widgets.show_code(stage.code, key="stage_code")


def opened_at(steps: StepThrough) -> None:
    """On the stage a page opens on, when that is not its first: which step of how many, and why (the page's
    ``default_stage_why``), and that Previous walks back to the start."""
    page, keys = steps.page, list(steps.titles)
    if page.default_stage_why and steps.stage.key == page.default_stage and page.default_stage in keys[1:]:
        st.caption(_("This page opens at step {n} of {total}. {why} ◀ Previous walks back to step 1.",
                     n=keys.index(page.default_stage) + 1, total=len(keys), why=_(page.default_stage_why)))


def _downloads(steps: StepThrough, walk: Any) -> None:
    """The page's worksheet and exports, from its declaration and its walk-through."""
    worksheet.downloads(steps.page, steps.titles, functools.partial(steps.page.steps, walk),
                        **_exports(steps.page, walk))


def _exports(page: Page, walk: Any) -> dict[str, Callable[[], str]]:
    """The page's self-checking script and notebook (in the interface language), each written when its button is
    clicked (neither for a page without a recipe)."""
    if page.recipe is None:
        return {}
    return {"script": functools.partial(scripts.script_for, page, walk),
            "notebook": functools.partial(notebook.notebook_for, page, walk, i18n.translator())}


# ---------------------------------------------------------------- under a step-through: the downloads


def downloads(page: Page, walk: Any, titles: Mapping[str, str]) -> None:
    """The page's worksheet and exports of every stage (``ui.worksheet``), under its step-through: ``titles``, its
    stages' titles (English, marked for translation)."""
    worksheet.downloads(page, titles, functools.partial(page.steps, walk), **_exports(page, walk))


def _single_panel(steps: StepThrough, panel: Panel, entry: tuple[int, int], head: int, *, legend: bool = True) -> None:
    """One heatmap under the line "**title**: rows × cols"; a large matrix is shown as a window around the entry.
    ``legend=False``: its colour legend under it, not beside it (:func:`heatmaps.heatmap`).

    Windows: at most ``WHOLE`` rows (columns) are shown whole; past that, fixed blocks of ``WINDOW`` (so a
    click inside a block does not move it), chosen by the explained entry.
    """
    rows, cols = panel.matrix.shape
    r0, r1 = window(rows, entry[0])
    c0, c1 = window(cols, entry[1])
    where = ""
    if (r1 - r0, c1 - c0) != (rows, cols):
        where = " " + _("Showing rows {r0}–{r1} and columns {c0}–{c1}; pick another entry below to move.",
                        r0=r0 + 1, r1=r1, c0=c0 + 1, c1=c1)
    st.markdown(_("**{stage}**: {rows} × {cols}.{where} Click a cell to explain it.",
                  stage=_(steps.titles[steps.stage.key]), rows=rows, cols=cols, where=where))
    shown = Panel(panel.title, panel.matrix[r0:r1, c0:c1], panel.row_labels[r0:r1], panel.col_labels[c0:c1],
                  panel.row_title, panel.col_title, panel.head, panel.explained)
    _heatmap(steps, shown, f"{steps.page.key}_{steps.stage.key}_0_{r0}_{c0}", (entry[0] - r0, entry[1] - c0), head,
             legend=legend, offset=(r0, c0))


#: The matrix's column of the "beside" layout at 1280 px with the sidebar (two thirds of the main area), and about how
#: wide a heatmap's row labels and title are: a heatmap wider than that goes under its formula instead.
BESIDE_PX, ROW_LABELS_PX = 540, 140


def _fits_beside(panel: Panel, col: int) -> bool:
    """Whether ``panel``'s heatmap (the columns shown around ``col``) fits the column beside its formula."""
    c0, c1 = window(panel.matrix.shape[-1], col)
    scale = presenter.scale()
    return (c1 - c0) * heatmaps.cell_px(c1 - c0, scale) + ROW_LABELS_PX * scale <= BESIDE_PX * scale


#: A large matrix (the trained model's X is n × 384) is shown in blocks of WINDOW rows and columns; up to
#: WHOLE rows (columns) are shown whole: a block of numbers that stays readable on a projector.
WINDOW, WHOLE = 12, 14


def window(total: int, index: int, size: int = WINDOW) -> tuple[int, int]:
    """The block [start, stop) of rows (or columns) shown around ``index``: all of them up to WHOLE."""
    if total <= WHOLE:
        return 0, total
    start = (min(max(index, 0), total - 1) // size) * size
    return start, min(start + size, total)


def entry(steps: StepThrough) -> tuple[int, int, int]:
    """The explained (row, col, head), moved inside this stage's explained panel (and stored when moved)."""
    settings = state.settings()
    row, col = settings.get(steps.row_field), settings.get(steps.col_field)
    head = settings.get(steps.head_field) if steps.head_field else 0
    new = clamp_entry(steps.stage, row, col, head, steps.num_heads or 1)
    if new != (row, col, head):
        changes = {steps.row_field: new[0], steps.col_field: new[1]}
        if steps.head_field:
            changes[steps.head_field] = new[2]
        state.update(**changes)
    return new


def _select(steps: StepThrough, head: int | None, offset: tuple[int, int], row: int, col: int) -> None:
    changes = {steps.row_field: offset[0] + row, steps.col_field: offset[1] + col}
    if head is not None and steps.head_field:
        changes[steps.head_field] = head
    state.update(**changes)


def _heatmap(steps: StepThrough, panel: Panel, key: str, entry: tuple[int, int], head: int, *,
             legend: bool = True, row_axis: bool = True, offset: tuple[int, int] = (0, 0)) -> None:
    chosen = panel.explained and (panel.head is None or panel.head == head)
    heatmaps.heatmap(panel.matrix, _labels(panel.row_labels), _labels(panel.col_labels), key=key,
                    selected=entry if chosen else None, clickable=panel.explained,
                    row_title=app_text(panel.row_title), col_title=app_text(panel.col_title),
                    on_cell=functools.partial(_select, steps, panel.head, offset), legend=legend, row_axis=row_axis)


#: The main area's width the heatmaps are laid out for: side by side only when both fit (no overlap on a projector).
MAIN_PX = 700


def panels(steps: StepThrough, *, entry: tuple[int, int], head: int = 0, per_row: int = 3) -> None:
    """A stage's heatmaps, side by side (``per_row`` to a row); clicking an explained panel explains that cell.

    The explained cell (and, for per-head panels, only in the chosen head) gets an outline.
    """
    items = list(steps.stage.panels)
    # As many side by side as fit the main area (about 700 px: the centred layout at 1024 px, a projector). Side by side,
    # only the first heatmap of a row keeps its row labels (when the rows are the same) and
    # none keeps a colour legend: the numbers are written in the cells.
    widest = max(p.matrix.shape[-1] for p in items)
    scale = presenter.scale()  # presenter mode: larger heatmaps in a wider main area (no sidebar)
    cell = heatmaps.cell_px(widest, scale)
    per_row = max(1, min(per_row, int((MAIN_PX - 140) * scale) // (widest * cell + int(30 * scale))))
    for start in range(0, len(items), per_row):
        chunk = items[start:start + per_row]
        single = len(chunk) == 1
        widths = [p.matrix.shape[-1] * cell + round((170 if n == 0 else 40) * scale) for n, p in enumerate(chunk)]
        columns = [st.container()] if single else st.columns(widths)
        for n, (column, panel) in enumerate(zip(columns, chunk)):
            with column:
                if panel.title:
                    st.markdown(f"**{app_text(panel.title)}**")
                _heatmap(steps, panel, f"{steps.page.key}_{steps.stage.key}_{start + n}", entry, head, legend=single,
                         row_axis=n == 0 or panel.row_labels != chunk[0].row_labels)


def entry_pickers(steps: StepThrough, row: int, col: int, *, clickable: bool = True) -> None:
    """Row, column (and head) pickers of the explained entry, and which tokens / columns they are.

    The rows are always the query tokens. The column picker is a fresh widget for each set of column labels
    (tokens on one step, a head's columns on the next): a selectbox that keeps its key while its labels change
    keeps showing the old ones.
    """
    stage: Stage = steps.stage
    panel = stage.target
    row_labels, col_labels = _labels(panel.row_labels), _labels(panel.col_labels)
    with_head = bool(steps.num_heads) and steps.head_field is not None
    columns = st.columns(3 if with_head else 2)
    with columns[0]:
        state.bind(st.selectbox, _("Row"), steps.row_field, options=list(range(len(row_labels))),
                   format_func=row_labels.__getitem__)
    with columns[1]:
        state.bind(st.selectbox, _("Column"), steps.col_field, options=list(range(len(col_labels))),
                   format_func=col_labels.__getitem__, variant=_variant(col_labels))
    if with_head:
        with columns[2]:
            state.bind(st.selectbox, _("Head"), steps.head_field, options=list(range(steps.num_heads)),
                       format_func=lambda r: str(r + 1), disabled=not stage.per_head)
    st.caption(_("Row {row}: **{row_label}** ({row_title}), column {col}: **{col_label}** ({col_title}).",
                 row=row + 1, row_label=widgets.md_escape(row_labels[row]),
                 row_title=app_text(panel.row_title) or _("row"),
                 col=col + 1, col_label=widgets.md_escape(col_labels[col]),
                 col_title=app_text(panel.col_title) or _("column"))
               + (" " + _("Or click a cell of the heatmap.") if clickable else ""))


def _variant(labels: Sequence[str]) -> str:
    """A short name of a label set: one widget per set of labels (see :func:`entry_pickers`)."""
    return format(zlib.crc32("\x1f".join(labels).encode()), "08x")


def checks(items: Sequence[Check]) -> None:
    """Each comparison with its reference (PyTorch, transformers, a float loop, a second route: the line says which)
    as a success (or error) line, with what was compared."""
    for check in items:
        widgets.check_line(check.max_abs_diff, check.matches, check.reference, check.against)
        if check.note:
            st.caption(_("Compared: {what}.", what=app_text(check.note)))


def notes(warnings: Sequence[str], remarks: Sequence[str] = ()) -> None:
    """Warnings and remarks from attention_core (their parameters may be the user's tokens: escaped)."""
    for text in warnings:
        st.warning(widgets.message_markdown(text), icon=":material/block:")
    for text in remarks:
        st.info(widgets.message_markdown(text), icon=":material/info:")
