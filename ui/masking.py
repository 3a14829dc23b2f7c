"""The clickable attention mask of the causal page's "mask" stage (drawn by ``ui.stepthrough``).

A click on a cell flips it between allowed (0) and blocked (−∞); the same mask as checkboxes below it.
The mask itself comes from ``attention_core.masking.walkthrough.build_mask``; nothing here computes attention.
"""

from __future__ import annotations

import functools
from typing import Sequence

import pandas as pd
import streamlit as st

from attention_core.masking.user_mask import MASK_EDITS, MaskParts

from . import heatmaps, state
from .i18n import _


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
    heatmaps.heatmap(mask.additive, labels, labels, key=f"mask_grid_{len(labels)}_{version}", selected=entry,
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
