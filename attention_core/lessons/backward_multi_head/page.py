r"""From settings to every number of *The backward pass, multi-head*, in the one step-through protocol.

:func:`build_backward_multi_head_walkthrough` takes the multi-head page's sentence, X, d_out, num_heads, seed
(W_q, W_k, W_v, W_O, b_O drawn as seed 001's ``MultiHeadAttention`` draws them) and causal switch, and the backward
page's target (a token that should copy another's value, or a seeded random matrix), and works out every gradient of
L = ½ ‖O − T‖² by hand (:mod:`attention_core.backward.multi_head_gradients`): back through W_O and the concatenation,
then every head alone, then the heads' gradients side by side into dW_q, dW_k, dW_v; checks each against
``torch.autograd``, a finite difference and one gradient-descent step. :func:`backward_multi_head_step_through` puts a stage
in a :class:`~attention_core.stepthrough.StepThrough`.

Shape legend: n tokens (T is the target), D = d_model, h = num_heads, head_dim = d_out // h, d_o = d_out (W_O is
square). Float32.

Sources: Vaswani et al. 2017, sec. 3.2.2 and eq. 1; seed 001 (``001_9275b51964da46b3.txt``): MultiHeadAttention;
seed 003 (``003_734755b2d0b981d3.txt``) §1.3: the W matrices are what attention learns by back-propagation.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import torch

from attention_core.backward import formulas
from attention_core.backward.gradients import Descent, FiniteDifference, descend, softmax_jacobian
from attention_core.backward.multi_head_gradients import (
    MultiHeadBackwardTrace,
    MultiHeadStepResult,
    multi_head_backward_trace,
    multi_head_finite_difference,
    multi_head_gradient_step,
)
from attention_core.backward.walkthrough import (
    COLUMN,
    EPSILON,
    KEY,
    MASKED_NO_GRADIENT,
    QUERY,
    TOKEN,
    UNIT,
    BackwardSettings,
    against_autograd,
    loss_remark,
    opening_entry,
    target_for,
)
from attention_core.errors import N_, Message
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import Inputs, apply_edits, build_inputs
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.lessons.backward_multi_head import formulas as mh_formulas
from attention_core.lessons.backward_multi_head.recipe import backward_multi_head_recipe
from attention_core.masks import causal_mask
from attention_core.multi_head.heads import head_columns, head_labels, multi_head_attention
from attention_core.page import Page
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import HEAD_FIELD, Check, Panel, Stage, StepThrough, explained_value
from attention_core.weights import module_weights

#: The edits of this page's target (its own: the single-head page's target is d_k wide, this one d_out).
TARGET_EDITS = "multi_head_target"
#: The gradients each stage computes, checked against torch.autograd on that stage.
STAGE_CHECKS = {"loss": ("d_output",), "d_w_out": ("d_w_out", "d_b_out"), "d_concat": ("d_concat",),
                "d_value": ("d_value_heads",), "d_weights": ("d_weights",), "d_scores": ("d_scores",),
                "d_query": ("d_query_heads",), "d_key": ("d_key_heads",), "d_w_query": ("d_w_query",),
                "d_w_key": ("d_w_key",), "d_w_value": ("d_w_value",), "d_x": ("d_x",),
                "step": ("d_w_query", "d_w_key", "d_w_value", "d_w_out")}


@dataclass(frozen=True)
class BackwardMultiHeadWalkthrough:
    """Every number of *The backward pass, multi-head*.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X).
        tokens: the T tokens. trace: the forward and backward pass (:class:`MultiHeadBackwardTrace`).
        columns: head r owns columns ``columns[r]`` of Q, K, V, the concatenation and dW_q, dW_k, dW_v.
        step: one gradient-descent step with η on W_q, W_k, W_v, W_O, b_O.
        descent: ``settings.backward.steps`` such steps, the first being ``step`` (the loss after each, every head's
            P after the last).
        checks: every gradient against ``torch.autograd`` (rtol = atol = 1e-5), in the order of
            :data:`mh_formulas.SYMBOLS` (each stage shows its own: :data:`STAGE_CHECKS`).
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    trace: MultiHeadBackwardTrace
    columns: tuple[range, ...]
    step: MultiHeadStepResult
    descent: Descent
    checks: tuple[Check, ...]

    def finite_difference(self, which: str, row: int, col: int) -> FiniteDifference:
        """Nudge entry (row, col) of ``which`` ("w_query", "w_key", "w_value", "w_out") by ε = :data:`EPSILON`."""
        return multi_head_finite_difference(self.trace, which, row, col, eps=EPSILON)

    @property
    def jacobian_at(self) -> tuple[int, int]:
        """(head, row) whose softmax Jacobian the d_scores stage draws: the explained entry's, inside the heads
        and the sentence."""
        return (min(max(self.settings.head, 0), self.trace.num_heads - 1),
                min(max(self.settings.entry_row, 0), len(self.tokens) - 1))

    def explained(self, stage: str, row: int, col: int, head: int = 0) -> float:
        """Entry (row, col) of ``stage``'s explained panel, head ``head``'s for a per-head stage (IndexError
        outside it)."""
        return explained_value(backward_multi_head_panels(self, stage), row, col, head)

    def head_view(self, head: int = 0) -> formulas.HeadView:
        """Head ``head``'s tensors as the per-head formulas read them."""
        return formulas.HeadView.of(self.trace, head)


def _forward(settings: SharedSettings, backward: BackwardSettings, edits: Optional[Edits]):
    """The tokens and X (with the user's X edits), the weights of seed 001's MultiHeadAttention, and the target."""
    inputs = build_inputs(settings, edits, edited=("x",))
    x = inputs.x
    head_columns(settings.d_out, settings.num_heads)  # the message that lists the head counts that fit
    w = module_weights(settings.d_model, settings.d_out, settings.seed, out_proj=True)
    mask = causal_mask(x.shape[0]) if settings.causal_mask else None
    forward = multi_head_attention(x, x, w["w_query"], w["w_key"], w["w_value"], w["w_out"], b_out=w["b_out"],
                                   num_heads=settings.num_heads, attn_mask=mask)
    # "token i copies token j": row i becomes v_j W_O + b_O, the output if every head looked only at token j
    return inputs, w, target_for(backward, forward.output, forward.value @ w["w_out"] + w["b_out"])


def backward_multi_head_target(settings: SharedSettings, backward: BackwardSettings,
                               edits: Optional[Edits] = None) -> tuple[tuple[str, ...], torch.Tensor]:
    """(the tokens, the target T (n, d_out)) the settings choose (:func:`target_for`), before the user's edits.

    Args:
        settings: validated shared settings, as :func:`build_backward_multi_head_walkthrough` reads them.
        backward: the backward pages' settings (``settings.backward``, the group this page shares): the target.
        edits: the user's edits of X.

    Raises:
        InputError: a bad sentence or cell of X, or num_heads not dividing d_out.
    """
    inputs, _w, target = _forward(settings, backward, edits)
    return tuple(inputs.tokens), target


def build_backward_multi_head_walkthrough(settings: SharedSettings, backward: BackwardSettings,
                                          edits: Optional[Edits] = None) -> BackwardMultiHeadWalkthrough:
    """The backward pass of the multi-head page's numbers against the settings' target, checked.

    Args:
        settings: validated shared settings: sentence, d_model, seed, d_out, num_heads, causal_mask.
        backward: the backward pages' settings, which this page shares with *The backward pass* (``settings.backward``,
            its declaration's ``group``): the target (which, its token pair or seed), η, the steps "Keep stepping"
            takes.
        edits: the user's edits of X ("x") and of this page's target (:data:`TARGET_EDITS`; cells outside today's
            T × d_out are kept but not applied).

    Raises:
        InputError: a bad sentence or X cell, num_heads not dividing d_out (the message lists the counts that
            fit), an empty, non-numeric, NaN, ±inf or too large cell of the target (naming the cell).
    """
    edits = edits or {}
    inputs, w, target = _forward(settings, backward, edits)
    target = apply_edits(TARGET_EDITS, target, edits.get(TARGET_EDITS, {}))
    trace = multi_head_backward_trace(inputs.x, w["w_query"], w["w_key"], w["w_value"], w["w_out"],
                                      w["b_out"], target, settings.num_heads, causal=settings.causal_mask)
    step = multi_head_gradient_step(trace, backward.learning_rate)
    return BackwardMultiHeadWalkthrough(
        settings=settings, inputs=inputs, tokens=tuple(inputs.tokens), trace=trace,
        columns=head_columns(settings.d_out, settings.num_heads), step=step,
        descent=descend(step, backward.steps, multi_head_gradient_step), checks=autograd_checks(trace))


def autograd_checks(trace: MultiHeadBackwardTrace) -> tuple[Check, ...]:
    """Every gradient of the trace against ``torch.autograd`` on the same inputs (rtol = atol = 1e-5)."""
    leaves = {name: getattr(trace, name).detach().clone().requires_grad_(True)
              for name in ("x", "w_query", "w_key", "w_value", "w_out", "b_out")}
    x = leaves["x"]
    tokens, h, hd = x.shape[0], trace.num_heads, trace.head_dim

    def split(m: torch.Tensor) -> torch.Tensor:  # (n, d_out) -> (h, n, head_dim), as seed 001's view + transpose
        return m.view(tokens, h, hd).transpose(0, 1)
    q, k, v = (split(x @ leaves[name]) for name in ("w_query", "w_key", "w_value"))
    scores = q @ k.transpose(-2, -1) * trace.scale
    if trace.mask is not None:
        scores = scores.masked_fill(~trace.mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    concat = (weights @ v).transpose(0, 1).reshape(tokens, h * hd)
    output = concat @ leaves["w_out"] + leaves["b_out"]
    for tensor in (q, k, v, scores, weights, concat, output):
        tensor.retain_grad()
    (0.5 * ((output - trace.target) ** 2).sum()).backward()
    pairs = (("d_output", output), ("d_w_out", leaves["w_out"]), ("d_b_out", leaves["b_out"]), ("d_concat", concat),
             ("d_value_heads", v), ("d_weights", weights), ("d_scores", scores), ("d_query_heads", q),
             ("d_key_heads", k), ("d_w_query", leaves["w_query"]), ("d_w_key", leaves["w_key"]),
             ("d_w_value", leaves["w_value"]), ("d_x", x))
    return against_autograd(trace, pairs, mh_formulas.SYMBOLS)


# ---------------------------------------------------------------- panels

_BY_HEAD = Message(N_("head · column"))
#: Each per-head stage: its tensor in the trace, its title, whether its columns are keys (else head_dim columns).
_PER_HEAD = {"d_value": ("d_value_heads", N_("head {r}: dV = Pᵀ dO (dO: its columns of dC)"), False),
             "d_weights": ("d_weights", N_("head {r}: dP = dO Vᵀ"), True),
             "d_scores": ("d_scores", N_("head {r}: dS = P ⊙ (dP − D)"), True),
             "d_query": ("d_query_heads", N_("head {r}: dQ = dS K / √head_dim"), False),
             "d_key": ("d_key_heads", N_("head {r}: dK = dSᵀ Q / √head_dim"), False)}


def backward_multi_head_panels(walk: BackwardMultiHeadWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage``: one explained panel, or one per head (each its head's) for a per-head stage;
    d_scores also draws the softmax Jacobian at ``walk.jacobian_at``.

    Raises:
        KeyError: an unknown stage.
    """
    t = walk.trace
    rows = tuple(token_labels(walk.tokens))
    d_out, h = t.concat.shape[-1], t.num_heads
    by_head = head_labels(d_out, h)
    outs = tuple(dim_labels("o", t.output.shape[-1]))
    dims = tuple(dim_labels("d", t.x.shape[-1]))
    head_cols = tuple(dim_labels("c", t.head_dim))

    def vectors(title: str, matrix: torch.Tensor, explained: bool = False, columns=outs, col_title=COLUMN) -> Panel:
        return Panel(Message(title), matrix, rows, columns, TOKEN, col_title, explained=explained)

    if stage == "loss":
        return (vectors(N_("Output O = C W_O + b_O"), t.output), vectors(N_("Target T"), t.target),
                vectors(N_("dO = O − T"), t.d_output, True))
    if stage == "d_w_out":
        return (vectors(N_("C = Concat(head_1, …, head_h)"), t.concat, columns=by_head, col_title=_BY_HEAD),
                vectors(N_("dO"), t.d_output),
                Panel(Message(N_("dW_O = Cᵀ dO")), t.d_w_out, by_head, outs, Message(N_("row of W_O (= column of C)")),
                      COLUMN, explained=True),
                Panel(Message(N_("db_O = column sums of dO")), t.d_b_out.unsqueeze(0), ("b_O",), outs, "", COLUMN,
                      explained=False))
    if stage == "d_concat":
        return (vectors(N_("dO"), t.d_output),
                Panel("W_O", t.w_out, by_head, outs, Message(N_("row of W_O (= column of C)")), COLUMN,
                      explained=False),
                vectors(N_("dC = dO W_Oᵀ: each head's columns go back to it"), t.d_concat, True, by_head, _BY_HEAD))
    if stage in _PER_HEAD:
        name, title, keys = _PER_HEAD[stage]
        matrix = getattr(t, name)
        panels = tuple(Panel(Message(title, r=r + 1), matrix[r], rows, rows if keys else head_cols, QUERY if keys
                             else TOKEN, KEY if keys else COLUMN, head=r) for r in range(h))
        if stage == "d_scores":
            def jacobian(r: int, i: int) -> Panel:
                return Panel(Message(N_("The softmax's Jacobian of head {r}'s row {row}: diag(p) − p pᵀ"), r=r + 1,
                                     row=i + 1),
                             softmax_jacobian(t.weights[r, i]), rows, rows, Message(N_("score a_ik")),
                             Message(N_("weight p_ij")), explained=False)

            every = tuple(tuple(jacobian(r, i) for i in range(len(rows))) for r in range(h))
            r, i = walk.jacobian_at
            panels += (replace(every[r][i], by_entry=every),)
        return panels
    if stage in formulas.W_STAGES:
        name, grad = formulas.W_STAGES[stage]
        source = {"w_query": ("dQ", t.d_query), "w_key": ("dK", t.d_key), "w_value": ("dV", t.d_value)}
        title, upstream = source[name]
        return (vectors(N_("X"), t.x, columns=dims, col_title=UNIT),
                Panel(Message(N_("{upstream}: the heads' side by side"), upstream=title), upstream, rows, by_head,
                      TOKEN, _BY_HEAD, explained=False),
                Panel(Message(N_("{symbol} = Xᵀ {upstream}"), symbol=formulas.SYMBOLS[grad], upstream=title),
                      getattr(t, grad), dims, by_head, UNIT, _BY_HEAD, explained=True))
    if stage == "d_x":
        return (vectors(N_("dX = dQ W_qᵀ + dK W_kᵀ + dV W_vᵀ"), t.d_x, True, columns=dims, col_title=UNIT),)
    if stage == "step":
        s = walk.step
        return (Panel(Message(N_("W_q after the step: W_q − η dW_q")), s.after.w_query, dims, by_head, UNIT,
                      _BY_HEAD, explained=True),
                *(Panel(Message(N_("head {r}: P after − P before"), r=r + 1), s.weights_after[r] - s.weights_before[r],
                        rows, rows, QUERY, KEY, head=r, explained=False) for r in range(h)))
    raise KeyError(stage)


# ---------------------------------------------------------------- the step-through protocol

def backward_multi_head_step_through(walk: BackwardMultiHeadWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in BACKWARD_MULTI_HEAD.stages:
        raise KeyError(stage)
    t, s = walk.trace, walk.step
    panels = backward_multi_head_panels(walk, stage)
    remark, details = None, ()
    if stage == "loss":
        remark = loss_remark(t.loss)
    elif stage == "d_concat":
        details = (Message(N_("Head r wrote columns (r − 1) · head_dim + 1 … r · head_dim of C, so it gets exactly "
                              "those columns of dC back as its own dO (here head_dim = {hd})."), hd=t.head_dim),)
    elif stage == "d_scores" and t.mask is not None:
        details = (MASKED_NO_GRADIENT,)
    elif stage == "step":
        grew, shrank = int((s.weights_change > 0).sum()), int((s.weights_change < 0).sum())
        remark = Message(N_("One step with η = {eta} on W_q, W_k, W_v, W_O and b_O: the loss went from {before} to "
                            "{after}; {grew} weights of the {h} heads grew, {shrank} shrank."),
                         eta=f"{s.learning_rate:g}", before=f"{s.loss_before:.6g}", after=f"{s.loss_after:.6g}",
                         grew=grew, shrank=shrank, h=t.num_heads)
    return StepThrough(
        page=BACKWARD_MULTI_HEAD,
        stage=Stage(key=stage, panels=panels,
                    formula=lambda tr: mh_formulas.multi_head_formula(stage, tr),
                    entry=lambda r, c, head, tr: mh_formulas.explain_multi_head(walk, stage, r, c, head, tr),
                    exercise=lambda r, c, head: mh_formulas.multi_head_exercise(walk, stage, r, c, head),
                    code=(multi_head_backward_trace, multi_head_gradient_step) if stage == "step"
                    else (multi_head_backward_trace,),
                    remark=remark, details=details),
        checks=tuple(walk.checks[tuple(mh_formulas.SYMBOLS).index(name)] for name in STAGE_CHECKS[stage]),
        num_heads=t.num_heads, head_field=HEAD_FIELD,
    )


# ---------------------------------------------------------------- the page

BACKWARD_MULTI_HEAD = Page(
    key="backward_multi_head", title=N_("The backward pass, multi-head"), icon=":material/undo:", section="learning",
    summary=N_("The backward pass through W_O, the concatenation and every head"),
    stages={
        "loss": N_("The loss and dO = O − T"),
        "d_w_out": N_("dW_O = Cᵀ dO and db_O"),
        "d_concat": N_("dC = dO W_Oᵀ: back to the heads"),
        "d_value": N_("Each head's dV = Pᵀ dO"),
        "d_weights": N_("Each head's dP = dO Vᵀ"),
        "d_scores": N_("Each head's dS, through the softmax"),
        "d_query": N_("Each head's dQ = dS K / √head_dim"),
        "d_key": N_("Each head's dK = dSᵀ Q / √head_dim"),
        "d_w_query": N_("dW_q = Xᵀ dQ, the heads side by side"),
        "d_w_key": N_("dW_k = Xᵀ dK"),
        "d_w_value": N_("dW_v = Xᵀ dV"),
        "d_x": N_("dX: X feeds all three"),
        "step": N_("One gradient-descent step"),
    },
    build=build_backward_multi_head_walkthrough, step_through=backward_multi_head_step_through, recipe=backward_multi_head_recipe, opening_entry=opening_entry,
    settings_of="backward",  # the target, η and steps are the backward page's: both pages bind them (ui.page_parts.learning)
)
