"""The widgets the backward-pass pages share: the target T of the loss (which one, its token pair or seed, the
learning rate η) and its cell-by-cell editor.

The target itself comes from ``attention_core.backward``; nothing here computes a gradient.
"""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from attention_core.backward.gradients import MAX_BACKWARD_LEARNING_RATE, MAX_BACKWARD_STEPS
from attention_core.backward.walkthrough import TARGETS
from attention_core.inputs.text import MAX_TOKENS
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.page import Page
from ui import charts, heatmaps, state, widgets
from ui.i18n import _


def target_controls(copy_help: str) -> None:
    """The target's widgets on one row: which target, then token i and j (copy) or the seed (random).
    ``copy_help``: what row i of the target becomes on this page (translated)."""
    target = state.settings().backward.target
    c1, c2, c3 = st.columns(3)
    with c1:
        state.bind(st.selectbox, _("Target T for the output"), "backward.target", options=list(TARGETS),
                   format_func={key: _(title) for key, title in TARGETS.items()}.get)
    with c2:
        if target == "copy":
            state.bind(st.number_input, _("Token i (copies)"), "backward.copy_query", step=1, help=copy_help)
        else:
            state.bind(st.number_input, _("Seed of the target"), "backward.target_seed", step=1)
    with c3:
        if target == "copy":
            state.bind(st.number_input, _("Token j (copied)"), "backward.copy_key", step=1,
                       help=_("1 to {high}.", high=MAX_TOKENS))


def learning_rate() -> None:
    """η of the gradient-descent step."""
    state.bind(st.number_input, _("Learning rate η"), "backward.learning_rate", step=0.1, format="%.3f",
               help=_("Above 0, at most {high}.", high=MAX_BACKWARD_LEARNING_RATE))


def target_editor(toggle_key: str, edits_name: str, build_target: Callable, column_prefix: str) -> None:
    """Behind a toggle, the target T cell by cell (edits kept under ``edits_name``); ``build_target(settings,
    settings.backward, edits)`` -> (tokens, the target before the edits). A bad sentence or cell stops here with its
    message."""
    if st.toggle(_("Show and edit the target T"), key=toggle_key,
                 help=_("Any cell: the loss pulls the output toward it. Your cells stay when the sentence changes.")):
        settings = state.settings()
        tokens, base = widgets.build_or_stop(build_target, settings, settings.backward, state.edits())
        widgets.matrix_editor(edits_name, base, token_labels(tokens), dim_labels(column_prefix, base.shape[1]))


def keep_stepping(page: Page, walk: Any) -> Callable[[Any], None]:
    """For ``stepper.live(..., after_checks=...)``: under the step-through element (which steps in the browser, so
    whatever the step), folded, "Keep stepping", after the walk-through's one step: how many steps to take, the loss
    after each (a line), and P after the last step beside P after − P before, every head on the multi-head page. One
    step of η = 0.01 moves P by ~1e-5; twenty move it visibly. ``walk.descent`` depends on no setting of the
    step-through, so the walk-through of the last whole-page run holds it."""

    def draw(_steps: Any) -> None:
        # drawn only while open (a run when it opens): its three charts, drawn again on every setting changed, cost
        # the browser more than the element's whole step did
        box = st.expander(_("Keep stepping: more steps of gradient descent, after the last step"),
                          key=f"keep_stepping_{page.key}", on_change="rerun")
        if box.open:
            with box:
                body()

    def body() -> None:
        descent = walk.descent
        state.bind(st.number_input, _("Steps to take"), "backward.steps", step=1,
                   help=_("1 to {high}: each step starts from the weights the last one left, with the same η.",
                          high=MAX_BACKWARD_STEPS))
        losses = descent.losses
        charts.lines([{"x": range(len(losses)), "y": losses, "series": _("loss L"), "order": 0, "dashed": False}],
                     key=f"descent_{page.key}", x_title=_("steps taken"), y_title=_("loss L"), x_log=False,
                     x_format="d", y_format=".3~g", height=240)
        st.markdown(_("After {n} steps of η = {eta}: the loss went from **{before}** to **{after}**, and the largest "
                      "attention weight moved by **{moved}**.", n=descent.steps, eta=f"{descent.learning_rate:g}",
                      before=f"{losses[0]:.4g}", after=f"{losses[-1]:.4g}", moved=f"{descent.largest_change:.3g}"))
        labels = token_labels(walk.tokens)
        after, before = descent.weights_after, descent.weights_before
        heads = [(after, before, "")] if after.dim() == 2 else [
            (after[r], before[r], _("head {r}", r=r + 1) + ": ") for r in range(after.shape[0])]
        for head_after, head_before, prefix in heads:  # one under the other, as the stage's own panels
            st.markdown("**" + prefix + _("Weights P after {n} steps", n=descent.steps) + "**")
            heatmaps.heatmap(head_after.numpy(), labels, labels, key=f"descent_after_{page.key}_{prefix}",
                            row_title=_("query token"), col_title=_("key token"))
            st.markdown("**" + prefix + _("P after {n} steps − P before", n=descent.steps) + "**")
            heatmaps.heatmap((head_after - head_before).numpy(), labels, labels,
                            key=f"descent_change_{page.key}_{prefix}", row_title=_("query token"),
                            col_title=_("key token"))

    return draw
