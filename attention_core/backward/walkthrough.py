"""From settings to every number of *The backward pass* page, in the one step-through protocol.

:func:`build_backward_walkthrough` takes the self-attention page's sentence, X and weights W_q, W_k, W_v (d_k wide,
the causal switch), a target T for the output (a token that should copy another's value, or a seeded random
matrix), and works out every gradient of L = ½ ‖O − T‖² by hand (:mod:`attention_core.backward.gradients`), checks
each against ``torch.autograd``, a finite difference and one gradient-descent step; :func:`step_through_for_page` puts a
stage in a :class:`~attention_core.stepthrough.StepThrough`.

Shape legend: n tokens (T is the target), D = d_model, d_k = d_v (the self-attention page's width). Float32.

Sources: seed 003 (``003_734755b2d0b981d3.txt``) §1.3: W_q, W_k, W_v are what self-attention learns by
back-propagation; Vaswani et al. 2017, eq. 1; Dao et al. 2022 (FlashAttention), sec. 3.1 and appendix B.2 for
D = rowsum(dO ⊙ O)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import torch

from attention_core.backward import formulas
from attention_core.backward.gradients import (
    BackwardTrace,
    Descent,
    FiniteDifference,
    FlashShortcut,
    StepResult,
    backward_trace,
    descend,
    finite_difference,
    flash_shortcut,
    gradient_step,
    jacobian_row,
)
from attention_core.errors import N_, Message
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import Inputs, apply_edits, build_inputs
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.masks import causal_mask
from attention_core.page import Page
from attention_core.self_attention.functional import scaled_dot_product_attention
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check, Panel, Stage, StepThrough, compare, explained_value

#: The targets the page offers: key -> what it says.
TARGETS = {"copy": N_("Token i should copy token j's value"), "random": N_("A seeded random target")}


#: The gradients each stage computes, checked against torch.autograd on that stage (the step: all three dW).
STAGE_CHECKS = {"loss": ("d_output",), "d_value": ("d_value",), "d_weights": ("d_weights",),
                "d_scores": ("d_scores",), "flash": ("d_scores",), "d_query": ("d_query",), "d_key": ("d_key",),
                "d_w_query": ("d_w_query",), "d_w_key": ("d_w_key",), "d_w_value": ("d_w_value",), "d_x": ("d_x",),
                "step": ("d_w_query", "d_w_key", "d_w_value")}


#: The nudge ε of the finite-difference check: small enough that the forward difference's own error (½ ε² ∂²L/∂w²)
#: stays below the 4 digits shown, even for a gradient near 1e-3 (float64 keeps the loss's change exact enough).
EPSILON = 1e-6


W_STAGES = formulas.W_STAGES


@dataclass(frozen=True)
class BackwardWalkthrough:
    """Every number of *The backward pass* page.

    Attributes:
        settings: the settings it was built from. inputs: the input stage (tokens, X and W with their edits).
        tokens: the T tokens. trace: the forward and backward pass (:class:`BackwardTrace`).
        flash: D and dS the FlashAttention way. step: one gradient-descent step with η.
        descent: ``settings.backward.steps`` such steps, the first being ``step`` (the loss after each, P after the
            last).
        checks: every gradient against ``torch.autograd`` (rtol = atol = 1e-5), in the order of
            :data:`formulas.SYMBOLS` (each stage shows its own: :data:`STAGE_CHECKS`).
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    trace: BackwardTrace
    flash: FlashShortcut
    step: StepResult
    descent: Descent
    checks: tuple[Check, ...]

    def finite_difference(self, which: str, row: int, col: int) -> FiniteDifference:
        """Nudge entry (row, col) of ``which`` ("w_query", "w_key", "w_value") by ε = :data:`EPSILON`: the loss's
        change, and ε times the gradient (float64; they differ by ½ ε² ∂²L/∂w², under 0.1 % at this ε)."""
        t = self.trace
        return finite_difference(t.x, t.w_query, t.w_key, t.w_value, t.target, self.settings.causal_mask, which,
                                 row, col, eps=EPSILON)

    @property
    def jacobian_at(self) -> int:
        """The row whose softmax Jacobian the d_scores stage draws: the explained entry's, inside the sentence."""
        return min(max(self.settings.entry_row, 0), len(self.tokens) - 1)

    def explained(self, stage: str, row: int, col: int, head: int = 0) -> float:
        """Entry (row, col) of ``stage``'s explained panel (IndexError outside it; one head: ``head`` unused)."""
        return explained(self, stage, row, col)

    def head_view(self, head: int = 0) -> formulas.HeadView:
        """The head's tensors as the per-head formulas read them (the one head: the whole trace)."""
        return formulas.HeadView.of(self.trace)


def opening_entry(walk) -> dict[str, int]:
    """The entry a backward page explains before the learner chooses one: the target's row i and column 1 (0-based
    ``entry_row`` = i − 1, clamped to the sentence). The default target changes row i only, and under the causal mask
    row 1 attends to itself alone, so its dS, dQ and softmax Jacobian are 0: entry (1, 1) would explain zeros on most
    steps. Row i's dO, dV, dP, dS, dQ and dK are not 0 (its weights spread over j ≤ i)."""
    return {"entry_row": min(walk.settings.backward.copy_query, len(walk.tokens)) - 1, "entry_col": 0}


def target_for(backward: BackwardSettings, output: torch.Tensor, copied: torch.Tensor) -> torch.Tensor:
    """The target T (n, d_o) the backward pages' settings (``settings.backward``) choose for this forward pass's
    ``output`` O (n, d_o).

    "copy": O with row i replaced by row j of ``copied`` (n, d_o), what token i's output would be if it attended
    only to token j (the single-head page: V; the multi-head page: V W_O + b_O). The other rows are already right,
    so only row i is pulled. "random": N(0, 1) drawn with ``torch.Generator().manual_seed(target_seed)``. i and j
    are clamped to T.
    """
    if backward.target == "random":
        return torch.randn(output.shape, generator=torch.Generator().manual_seed(backward.target_seed))
    rows = output.shape[0]
    i, j = min(backward.copy_query, rows) - 1, min(backward.copy_key, rows) - 1
    target = output.clone()
    target[i] = copied[j]
    return target


def _forward(settings: SharedSettings, backward: BackwardSettings,
             edits: Optional[Edits]) -> tuple[Inputs, torch.Tensor]:
    """The input stage (X and W with their edits; the target's edits are applied later) and the target the
    settings choose for it: :func:`target_for` on this page's forward pass, which has the causal mask when it is on."""
    inputs = build_inputs(settings, edits)
    m = inputs.matrices
    query, key, value = m["x"] @ m["w_query"], m["x"] @ m["w_key"], m["x"] @ m["w_value"]
    mask = causal_mask(query.shape[0]) if settings.causal_mask else None
    output = scaled_dot_product_attention(query, key, value, attn_mask=mask).output
    return inputs, target_for(backward, output, value)


def backward_target(settings: SharedSettings, backward: BackwardSettings,
                    edits: Optional[Edits] = None) -> tuple[tuple[str, ...], torch.Tensor]:
    """(the tokens, the target T (n, d_v)) the settings choose (:func:`target_for`), before the user's edits of T.

    Args:
        settings: validated shared settings, as :func:`build_backward_walkthrough` reads them.
        backward: the page's own settings (``settings.backward``): the target.
        edits: the user's edits of X and W.

    Raises:
        InputError: a bad sentence or cell of X or W (as on the self-attention page).
    """
    inputs, target = _forward(settings, backward, edits)
    return tuple(inputs.tokens), target


def build_backward_walkthrough(settings: SharedSettings, backward: BackwardSettings,
                               edits: Optional[Edits] = None) -> BackwardWalkthrough:
    """The backward pass of the self-attention page's numbers against the settings' target, checked.

    Args:
        settings: validated shared settings: sentence, d_model, d_k, seed, causal_mask.
        backward: the page's own settings (``settings.backward``): the target (which, its token pair or seed), the
            learning rate η, the steps "Keep stepping" takes.
        edits: the user's edits of X, W ("x", "w_query", "w_key", "w_value") and of the target ("target"; cells
            outside today's T × d_v are kept but not applied, as for X).

    Raises:
        InputError: a bad sentence or cell (as on the self-attention page), an empty, non-numeric, NaN, ±inf or
            too large cell of the target (field "target", naming the cell).
    """
    edits = edits or {}
    inputs, target = _forward(settings, backward, edits)
    m = inputs.matrices
    target = apply_edits("target", target, edits.get("target", {}))
    trace = backward_trace(m["x"], m["w_query"], m["w_key"], m["w_value"], target, causal=settings.causal_mask)
    step = gradient_step(trace, backward.learning_rate)
    return BackwardWalkthrough(settings=settings, inputs=inputs, tokens=tuple(inputs.tokens), trace=trace,
                               flash=flash_shortcut(trace), step=step,
                               descent=descend(step, backward.steps, gradient_step),
                               checks=autograd_checks(trace))


def autograd_checks(trace: BackwardTrace) -> tuple[Check, ...]:
    """Every gradient of the trace against ``torch.autograd`` on the same inputs (rtol = atol = 1e-5)."""
    leaves = {name: getattr(trace, name).detach().clone().requires_grad_(True)
              for name in ("x", "w_query", "w_key", "w_value")}
    q, k, v = leaves["x"] @ leaves["w_query"], leaves["x"] @ leaves["w_key"], leaves["x"] @ leaves["w_value"]
    scores = q @ k.T * trace.scale
    if trace.mask is not None:
        scores = scores.masked_fill(~trace.mask, float("-inf"))
    for tensor in (q, k, v, scores):
        tensor.retain_grad()
    weights = torch.softmax(scores, dim=-1)
    weights.retain_grad()
    output = weights @ v
    output.retain_grad()
    (0.5 * ((output - trace.target) ** 2).sum()).backward()
    pairs = (("d_output", output), ("d_value", v), ("d_weights", weights), ("d_scores", scores), ("d_query", q),
             ("d_key", k), ("d_w_query", leaves["w_query"]), ("d_w_key", leaves["w_key"]),
             ("d_w_value", leaves["w_value"]), ("d_x", leaves["x"]))
    return against_autograd(trace, pairs, formulas.SYMBOLS)


def against_autograd(trace, pairs, symbols) -> tuple[Check, ...]:
    """Each (name, tensor) of ``pairs``: the trace's gradient ``name`` against ``tensor.grad`` (autograd's, after
    ``backward()``), labelled with ``symbols[name]`` (rtol = atol = 1e-5)."""
    note = Message(N_("our gradient against torch.autograd's, on the same numbers"))
    return tuple(compare(getattr(trace, name), tensor.grad, f"torch.autograd: {symbols[name]}", note=note)
                 for name, tensor in pairs)


#: The panels' axis titles (both backward pages).
QUERY, KEY = Message(N_("query token")), Message(N_("key token"))


TOKEN, COLUMN, UNIT = Message(N_("token")), Message(N_("column")), Message(N_("input dimension"))


def backward_panels(walk: BackwardWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage``; exactly one is explained (d_scores also draws the Jacobian of row
    ``walk.jacobian_at``).

    Raises:
        KeyError: an unknown stage.
    """
    t = walk.trace
    rows = tuple(token_labels(walk.tokens))
    cols = tuple(dim_labels("c", t.value.shape[-1]))
    dims = tuple(dim_labels("d", t.x.shape[-1]))
    wide = tuple(dim_labels("c", t.query.shape[-1]))

    def pair(title: str, matrix: torch.Tensor, explained: bool = False) -> Panel:
        return Panel(Message(title), matrix, rows, rows, QUERY, KEY, explained=explained)

    def vectors(title: str, matrix: torch.Tensor, explained: bool = False, columns=cols) -> Panel:
        return Panel(Message(title), matrix, rows, columns, TOKEN, COLUMN, explained=explained)

    if stage == "loss":
        return (vectors(N_("Output O = P V"), t.output), vectors(N_("Target T"), t.target),
                vectors(N_("dO = O − T"), t.d_output, True))
    if stage == "d_value":
        return (pair(N_("Weights P"), t.weights), vectors(N_("dO"), t.d_output),
                vectors(N_("dV = Pᵀ dO"), t.d_value, True))
    if stage == "d_weights":
        return (vectors(N_("dO"), t.d_output), vectors(N_("V"), t.value), pair(N_("dP = dO Vᵀ"), t.d_weights, True))
    if stage == "d_scores":
        def jacobian(i: int) -> Panel:
            return Panel(Message(N_("The softmax's Jacobian of row {row}: diag(p) − p pᵀ"), row=i + 1),
                         jacobian_row(t, i).jacobian, rows, rows, Message(N_("score a_ik")),
                         Message(N_("weight p_ij")), explained=False)

        every = (tuple(jacobian(i) for i in range(len(rows))),)  # the element's: the one of the row explained
        return (pair(N_("Weights P"), t.weights), pair(N_("dP"), t.d_weights),
                pair(N_("dS = P ⊙ (dP − D)"), t.d_scores, True),
                replace(every[0][walk.jacobian_at], by_entry=every))
    if stage == "flash":
        both = torch.stack([(t.d_output * t.output).sum(-1), t.row_dot], dim=1)
        return (Panel(Message(N_("D = rowsum(dO ⊙ O), and Σ_j P_ij dP_ij")), both, rows,
                      (Message(N_("rowsum(dO ⊙ O)")), Message(N_("Σ P dP"))), TOKEN, Message(N_("way")),
                      explained=False),
                pair(N_("dS = P ⊙ (dP − D), D from dO ⊙ O"), walk.flash.d_scores, True),
                pair(N_("Difference from the Jacobian form"), walk.flash.d_scores - t.d_scores))
    if stage == "d_query":
        return (pair(N_("dS"), t.d_scores), vectors(N_("K"), t.key, columns=wide),
                vectors(N_("dQ = dS K / √d_k"), t.d_query, True, columns=wide))
    if stage == "d_key":
        return (pair(N_("dS"), t.d_scores), vectors(N_("Q"), t.query, columns=wide),
                vectors(N_("dK = dSᵀ Q / √d_k"), t.d_key, True, columns=wide))
    if stage in W_STAGES:
        name, grad = W_STAGES[stage]
        source = {"w_query": (N_("dQ"), t.d_query), "w_key": (N_("dK"), t.d_key), "w_value": (N_("dV"), t.d_value)}
        title, upstream = source[name]
        symbol = formulas.SYMBOLS[grad]
        return (vectors(N_("X"), t.x, columns=dims), vectors(title, upstream, columns=wide),
                Panel(Message(N_("{symbol} = Xᵀ {upstream}"), symbol=symbol, upstream=title.split(" ")[0]),
                      getattr(t, grad), dims, wide, UNIT, COLUMN, explained=True))
    if stage == "d_x":
        return (vectors(N_("dX = dQ W_qᵀ + dK W_kᵀ + dV W_vᵀ"), t.d_x, True, columns=dims),)
    if stage == "step":
        s = walk.step
        return (Panel(Message(N_("W_q after the step: W_q − η dW_q")), s.after.w_query, dims, wide, UNIT, COLUMN,
                      explained=True),
                pair(N_("Weights P before"), s.weights_before), pair(N_("Weights P after"), s.weights_after),
                pair(N_("P after − P before"), s.weights_after - s.weights_before))
    raise KeyError(stage)


#: Under dS when the causal mask is on (both backward pages): why a masked score gets no gradient.
MASKED_NO_GRADIENT = Message(N_("Masked (−∞) scores get no gradient: their weight P_ij is 0, so dS_ij = P_ij (dP_ij − "
                                "D_i) = 0. A connection the mask cut cannot learn."))


def loss_remark(loss: float) -> Message:
    """The loss stage's result line, L = ½ ‖O − T‖² = ... (6 significant digits)."""
    return Message(N_("L = ½ ‖O − T‖² = {loss}"), loss=f"{loss:.6g}")


def step_through_for_page(walk: BackwardWalkthrough, stage: str, page: Page) -> StepThrough:
    """``page``'s ``stage`` in the one step-through protocol (the backward page's).

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in page.stages:
        raise KeyError(stage)
    panels = backward_panels(walk, stage)
    remark, details = None, ()
    t, s = walk.trace, walk.step
    if stage == "loss":
        remark = loss_remark(t.loss)
    elif stage == "d_scores" and t.mask is not None:
        details = (MASKED_NO_GRADIENT,)
    elif stage == "flash":
        diff = float((walk.flash.d_scores - t.d_scores).abs().max())
        remark = Message(N_("The two ways agree: max |difference| = {diff}. FlashAttention keeps O, not P, so it "
                            "gets D from dO ⊙ O."), diff=f"{diff:.2e}")
    elif stage == "step":
        grew, shrank = int((s.weights_change > 0).sum()), int((s.weights_change < 0).sum())
        remark = Message(N_("One step with η = {eta}: the loss went from {before} to {after}; {grew} weights grew, "
                            "{shrank} shrank."), eta=f"{s.learning_rate:g}", before=f"{s.loss_before:.6g}",
                         after=f"{s.loss_after:.6g}", grew=grew, shrank=shrank)
    return StepThrough(
        page=page,
        stage=Stage(key=stage, panels=panels,
                    formula=lambda tr: formulas.backward_formula(stage, tr),
                    entry=lambda r, c, head, tr: formulas.explain_backward(walk, stage, r, c, tr),
                    exercise=lambda r, c, head: formulas.backward_exercise(walk, stage, r, c),
                    code=(backward_trace, gradient_step) if stage == "step" else (backward_trace,),
                    remark=remark, details=details),
        checks=tuple(walk.checks[tuple(formulas.SYMBOLS).index(name)] for name in STAGE_CHECKS[stage]),
    )


def explained(walk: BackwardWalkthrough, stage: str, row: int, col: int) -> float:
    """The value of entry (row, col) of ``stage``'s explained panel (IndexError outside it)."""
    return explained_value(backward_panels(walk, stage), row, col)


@dataclass(frozen=True)
class BackwardSettings:
    """The backward-pass page's own settings (``settings.backward``).

    Attributes:
        target: a key of :data:`TARGETS`. copy_query, copy_key: "token i should copy token j's value", 1-based
            (clamped to the sentence's length). target_seed: the random target's seed. learning_rate: η of the
            gradient step, in (0, MAX_BACKWARD_LEARNING_RATE]. steps: how many steps "Keep stepping" takes (1 … MAX_BACKWARD_STEPS).
    """

    target: str = "copy"
    copy_query: int = 2
    copy_key: int = 1
    target_seed: int = 0
    learning_rate: float = 0.01
    steps: int = 20
