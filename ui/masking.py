"""Widgets of the masking & heads pages: a stage's heatmap panels, the clickable mask, the PyTorch checks.

Pages get panels, masks and checks from ``attention_core.walkthrough_multihead``
and hand them to these; nothing here computes attention.
"""

from __future__ import annotations

import functools
from typing import Optional, Sequence

import pandas as pd
import streamlit as st

from attention_core.errors import Message
from attention_core.formulas_masking import general_latex
from attention_core.walkthrough_multihead import (
    MASK_EDITS,
    MaskParts,
    Panel,
    TorchCheck,
    clamp_entry,
    explain_multihead,
    multihead_panels,
)

from . import state, widgets
from .i18n import _


def app_text(text: str) -> str:
    """A title or label from attention_core: app text (a Message) translated, math and tokens as they are."""
    return _(text) if isinstance(text, Message) else text


def _labels(labels: Sequence[str]) -> list[str]:
    return [app_text(label) for label in labels]


def _select(head: int, row: int, col: int) -> None:
    state.update(entry_row=row, entry_col=col, head=head)


def panels(items: Sequence[Panel], *, key: str, entry: tuple[int, int], head: int = 0, per_row: int = 3) -> None:
    """A stage's heatmaps, side by side (``per_row`` to a row); clicking an explained panel explains that cell.

    The explained cell (and, for per-head panels, only in the chosen head) gets an outline.
    """
    items = list(items)
    # As many side by side as fit the main area (about 1000 px on a 1400 px screen). Side by side,
    # only the first heatmap of a row keeps its row labels (when the rows are the same) and
    # none keeps a colour legend: the numbers are written in the cells.
    widest = max(p.matrix.shape[-1] for p in items)
    cell = widgets.CELL_PX
    per_row = max(1, min(per_row, (1000 - 140) // (widest * cell + 30)))
    for start in range(0, len(items), per_row):
        chunk = items[start:start + per_row]
        single = len(chunk) == 1
        widths = [p.matrix.shape[-1] * cell + (170 if n == 0 else 40) for n, p in enumerate(chunk)]
        columns = [st.container()] if single else st.columns(widths)
        for n, (column, panel) in enumerate(zip(columns, chunk)):
            with column:
                st.markdown(f"**{app_text(panel.title)}**")
                chosen = panel.explained and (panel.head is None or panel.head == head)
                on_cell = None if panel.head is None else functools.partial(_select, panel.head)
                widgets.heatmap(panel.matrix, _labels(panel.row_labels), _labels(panel.col_labels),
                                key=f"{key}_{start + n}", selected=entry if chosen else None,
                                clickable=panel.explained, row_title=app_text(panel.row_title),
                                col_title=app_text(panel.col_title), on_cell=on_cell,
                                legend=single, row_axis=n == 0 or panel.row_labels != chunk[0].row_labels)


def flip_mask_cell(allowed: list[list[bool]], row: int, col: int) -> None:
    """Flip mask cell (row, col) from its current state ``allowed[row][col]`` and explain that cell."""
    state.flip_cell(MASK_EDITS, row, col, allowed[row][col])
    state.update(entry_row=row, entry_col=col)


def mask_grid(mask: MaskParts, labels: Sequence[str], *, entry: tuple[int, int]) -> None:
    """The mask M as a clickable grid: 0 = may attend, −∞ (grey) = blocked; a click flips that cell.

    Below it, the same mask as checkboxes (for keyboards and exact edits) and a reset button.
    """
    allowed = mask.attn_mask.tolist()
    version = state.editor_version(MASK_EDITS)
    widgets.heatmap(mask.additive, labels, labels, key=f"mask_grid_{len(labels)}_{version}", selected=entry,
                    clickable=True, row_title=_("query token"), col_title=_("key token"),
                    on_cell=functools.partial(flip_mask_cell, allowed))
    left, right = st.columns([1, 3])
    left.button(_("Reset the mask"), key="mask_reset", on_click=state.reset_matrix, args=(MASK_EDITS,),
                disabled=not mask.edited, help=_("Forget the cells you flipped; keep the causal and padding masks."))
    right.caption(_("{n} cell(s) flipped by you.", n=len(mask.edited)) if mask.edited else
                  _("Click any cell to flip it between allowed (0) and blocked (−∞)."))
    with st.expander(_("The same mask as checkboxes (ticked = may attend)")):
        frame = pd.DataFrame(allowed, index=list(labels), columns=list(labels))
        editor_key = f"mask_boxes_{len(labels)}_{version}"
        st.data_editor(
            frame, key=editor_key, num_rows="fixed", on_change=_on_boxes, args=(editor_key, list(labels)),
            column_config={c: st.column_config.CheckboxColumn(c) for c in labels},
        )


def _on_boxes(key: str, labels: list[str]) -> None:
    delta = st.session_state[key].get("edited_rows", {})
    cells = {}
    for row, changes in delta.items():
        for col, value in changes.items():
            if col in labels:
                cells[(int(row), labels.index(col))] = 1.0 if value else 0.0
    state.set_cells(MASK_EDITS, cells)
    state.bump_version(MASK_EDITS)  # a fresh editor: its old delta must not be applied to the new mask


def checks(items: Sequence[TorchCheck]) -> None:
    """Each comparison with PyTorch as a success (or error) line, with what was compared."""
    for check in items:
        widgets.torch_check(check.max_abs_diff, check.matches, check.reference)
        if check.note:
            st.caption(_("Compared: {what}.", what=app_text(check.note)))


def notes(warnings: Sequence[str], remarks: Sequence[str] = ()) -> None:
    """Warnings and remarks from attention_core (they may contain the user's tokens, so escaped)."""
    for text in warnings:
        st.warning(widgets.md_escape(app_text(text)), icon=":material/block:")
    for text in remarks:
        st.info(widgets.md_escape(app_text(text)), icon=":material/info:")


def entry_pickers(panel: Panel, row: int, col: int, *, num_heads: int = 0, head_disabled: bool = False) -> None:
    """Row, column (and head) pickers of the explained entry, and which tokens / columns they are.

    The options are shown as plain positions ("1", "2", ...): a bound selectbox keeps its
    displayed text across reruns, so labels that change from stage to stage would go stale.
    """
    columns = st.columns(3 if num_heads else 2)
    with columns[0]:
        state.bind(st.selectbox, _("Row"), "entry_row", options=list(range(len(panel.row_labels))),
                   format_func=lambda i: str(i + 1))
    with columns[1]:
        state.bind(st.selectbox, _("Column"), "entry_col", options=list(range(len(panel.col_labels))),
                   format_func=lambda j: str(j + 1))
    if num_heads:
        with columns[2]:
            state.bind(st.selectbox, _("Head"), "head", options=list(range(num_heads)),
                       format_func=lambda r: str(r + 1), disabled=head_disabled)
    st.caption(_("Row {row}: **{row_label}** ({row_title}), column {col}: **{col_label}** ({col_title}). "
                 "Or click a cell of the heatmap.",
                 row=row + 1, row_label=widgets.md_escape(app_text(panel.row_labels[row])),
                 row_title=app_text(panel.row_title) or _("row"),
                 col=col + 1, col_label=widgets.md_escape(app_text(panel.col_labels[col])),
                 col_title=app_text(panel.col_title) or _("column")))


def clamped_entry(items: Sequence[Panel], num_heads: Optional[int] = None) -> tuple[int, int, int, Panel]:
    """The explained (row, col, head) moved inside this stage's panels (and stored), and the panel it is in.

    ``num_heads=None`` on the one-head pages: the multi-head pages' chosen head is left alone.
    """
    settings = state.settings()
    if num_heads is None:
        row, col, head = clamp_entry(items, settings.entry_row, settings.entry_col, 0)
        changes = {"entry_row": row, "entry_col": col}
    else:
        row, col, head = clamp_entry(items, settings.entry_row, settings.entry_col, settings.head, num_heads)
        changes = {"entry_row": row, "entry_col": col, "head": head}
    if any(getattr(settings, name) != value for name, value in changes.items()):
        state.update(**changes)
    return row, col, head, next(p for p in items if p.explained)


def multihead_steps(walk, kind: str, stage: str, num_heads: int) -> None:
    """The step-through shared by the multi-head ("mha") and cross-attention ("cross") pages.

    The stage's heatmaps, its formula, the explained entry with its pickers, and the PyTorch checks.
    """
    items = multihead_panels(walk, stage)
    row, col, head, target = clamped_entry(items, num_heads)

    with st.expander(_("Formula"), expanded=True):
        for line in general_latex(kind, stage, tr=_):
            st.latex(line)
    panels(items, key=f"{kind}_{stage}", entry=(row, col), head=head, per_row=min(max(num_heads, 2), 4))
    notes(walk.warnings, walk.notes)

    st.subheader(_("Explain this entry"))
    entry_pickers(target, row, col, num_heads=num_heads, head_disabled=all(p.head is None for p in items))
    st.latex(explain_multihead(walk, stage, row, col, head, tr=_))

    checks(walk.checks)
