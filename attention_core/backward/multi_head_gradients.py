r"""The backward pass through multi-head attention: back through W_O and the concatenation, then every head alone.

Shape legend: n tokens (T is the target), D = d_model, h = num_heads, head_dim = d_out // h (so
d_out = h · head_dim), d_o the output width (W_O is (d_out, d_o); d_o = d_out in the usual square W_O). dA is ∂L/∂A,
of A's shape.

Forward (Vaswani et al. 2017, sec. 3.2.2 and eq. 1), one sequence, M the causal mask (0 or −∞), head r owning
the columns ``head_columns(d_out, h)[r]`` = r · head_dim ... (r + 1) · head_dim − 1 of Q, K and V:

.. math::
    \operatorname{head}_r = \operatorname{softmax}\!\left(\frac{Q_r K_r^\top}{\sqrt{head\_dim}} + M\right) V_r,
    \quad O = \operatorname{Concat}(\operatorname{head}_1, \dots, \operatorname{head}_h)\, W_O + b_O,
    \quad L = \tfrac12 \lVert O - T \rVert^2

Backward:

.. math::
    dO = O - T,\quad dW_O = \operatorname{Concat}^\top dO,\quad db_O = \textstyle\sum_t dO_{t\cdot},
    \quad d\operatorname{Concat} = dO\, W_O^\top

head r's dO_r is the columns of dConcat that head r wrote; each head then runs the single-head backward pass of
:mod:`gradients` (:func:`gradients.attention_backward`, scale 1 / √head_dim), and the heads' gradients go back
side by side into the same columns:

.. math::
    dQ = [dQ_1 | \dots | dQ_h],\quad dW_q = X^\top dQ = [X^\top dQ_1 | \dots | X^\top dQ_h]
    \text{ (likewise } dW_k, dW_v),\quad dX = dQ\, W_q^\top + dK\, W_k^\top + dV\, W_v^\top

Sources: Vaswani et al. 2017, "Attention Is All You Need", sec. 3.2.2 (multi-head attention) and eq. 1; the
per-head gradients as in :mod:`gradients` (Dao et al. 2022, "FlashAttention", appendix B.2, Algorithm 3). The
forward pass is :func:`multi_head.heads.multi_head_attention`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from attention_core.backward.gradients import (
    FiniteDifference,
    attention_backward,
    check_inputs,
    check_learning_rate,
    check_nudge,
    check_target,
    nudge,
)
from attention_core.errors import N_, InputError, quote
from attention_core.masks import causal_mask
from attention_core.multi_head.heads import multi_head_attention


@dataclass(frozen=True)
class MultiHeadBackwardTrace:
    """Every intermediate of one forward and backward pass through multi-head self-attention.

    All tensors have the inputs' dtype (float32 in the app). Per-head tensors have the head dim first: index r is
    head r, whose columns of Q, K, V, the concatenation and their gradients are r · head_dim ... (r + 1) ·
    head_dim − 1. Shapes:

    Attributes:
        x: X, (n, D). w_query, w_key, w_value: (D, d_out). w_out: W_O, (d_out, d_o). b_out: b_O, (d_o,).
        target: T, (n, d_o).
        num_heads: h. head_dim: d_out // h. scale: 1 / sqrt(head_dim), every head's.
        query, key, value: Q = X W_q, K = X W_k, V = X W_v, (n, d_out).
        query_heads, key_heads, value_heads: Q_r, K_r, V_r, (h, n, head_dim).
        scores: S_r = Q_r K_rᵀ · scale, (h, n, n), −inf where the causal mask blocks (before the softmax).
        weights: P_r = softmax(S_r) row by row, (h, n, n) (after the softmax).
        head_outputs: head_r = P_r V_r, (h, n, head_dim).
        concat: the heads side by side, (n, d_out).
        output: O = concat W_O + b_O, (n, d_o).
        loss: L = ½ ‖O − T‖², summed over every entry (a python float).
        d_output: dO = O − T, (n, d_o).
        d_w_out: concatᵀ dO, (d_out, d_o). d_b_out: dO's column sums, (d_o,).
        d_concat: dO W_Oᵀ, (n, d_out).
        d_head_outputs: d_concat's column blocks, one per head, (h, n, head_dim).
        d_value_heads: dV_r = P_rᵀ d_head_r, (h, n, head_dim).
        d_weights: dP_r = d_head_r V_rᵀ, (h, n, n); finite everywhere.
        row_dot: D_r,i = Σ_j P_r,ij dP_r,ij = d_head_r,i · head_r,i, (h, n).
        d_scores: dS_r = P_r ⊙ (dP_r − D_r), (h, n, n); exactly 0 where blocked.
        d_query_heads: dQ_r = dS_r K_r · scale, (h, n, head_dim). d_key_heads: dK_r = dS_rᵀ Q_r · scale, (h, n, head_dim).
        d_w_query_heads, d_w_key_heads, d_w_value_heads: Xᵀ dQ_r, Xᵀ dK_r, Xᵀ dV_r, (h, D, head_dim): head r's
            columns of dW_q, dW_k, dW_v.
        d_query, d_key, d_value: the heads' dQ_r, dK_r, dV_r side by side, (n, d_out).
        d_w_query, d_w_key, d_w_value: Xᵀ dQ, Xᵀ dK, Xᵀ dV, (D, d_out) (the per-head blocks side by side).
        d_x: dQ W_qᵀ + dK W_kᵀ + dV W_vᵀ, (n, D).
        mask: bool (n, n), True = may attend (the causal mask, the same for every head), or None.
    """

    x: torch.Tensor
    w_query: torch.Tensor
    w_key: torch.Tensor
    w_value: torch.Tensor
    w_out: torch.Tensor
    b_out: torch.Tensor
    target: torch.Tensor
    num_heads: int
    head_dim: int
    scale: float
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    query_heads: torch.Tensor
    key_heads: torch.Tensor
    value_heads: torch.Tensor
    scores: torch.Tensor
    weights: torch.Tensor
    head_outputs: torch.Tensor
    concat: torch.Tensor
    output: torch.Tensor
    loss: float
    d_output: torch.Tensor
    d_w_out: torch.Tensor
    d_b_out: torch.Tensor
    d_concat: torch.Tensor
    d_head_outputs: torch.Tensor
    d_value_heads: torch.Tensor
    d_weights: torch.Tensor
    row_dot: torch.Tensor
    d_scores: torch.Tensor
    d_query_heads: torch.Tensor
    d_key_heads: torch.Tensor
    d_w_query_heads: torch.Tensor
    d_w_key_heads: torch.Tensor
    d_w_value_heads: torch.Tensor
    d_query: torch.Tensor
    d_key: torch.Tensor
    d_value: torch.Tensor
    d_w_query: torch.Tensor
    d_w_key: torch.Tensor
    d_w_value: torch.Tensor
    d_x: torch.Tensor
    mask: Optional[torch.Tensor]

    @property
    def causal(self) -> bool:
        """True when the causal mask was on."""
        return self.mask is not None


def multi_head_backward_trace(
    x: torch.Tensor,
    w_query: torch.Tensor,
    w_key: torch.Tensor,
    w_value: torch.Tensor,
    w_out: torch.Tensor,
    b_out: torch.Tensor,
    target: torch.Tensor,
    num_heads: int,
    causal: bool = False,
) -> MultiHeadBackwardTrace:
    """Multi-head self-attention forward, the loss ½‖O − T‖², and every gradient by the formulas (not autograd).

    The forward pass is :func:`multi_head.heads.multi_head_attention` (Vaswani et al. 2017, sec. 3.2.2); the
    backward pass goes through W_O and b_O, splits d_concat into the heads' columns, runs
    :func:`gradients.attention_backward` on all heads at once (scale 1 / sqrt(head_dim)) and puts the heads'
    gradients back side by side. Equal to ``torch.autograd``'s gradients and to those of
    ``torch.nn.MultiheadAttention`` with the same weights (the tests check it).

    Args:
        x: X, (n, D), floating point (float32 in the app).
        w_query, w_key, w_value: (D, d_out). w_out: W_O, (d_out, d_o). b_out: b_O, (d_o,). One dtype; x @ W.
        target: T, (n, d_o), finite, every |value| <= 1e6.
        num_heads: h, a whole number that divides d_out.
        causal: apply the causal mask (query i attends to keys j <= i) in every head.

    Returns:
        The :class:`MultiHeadBackwardTrace`.

    Raises:
        InputError: if X or a matrix is not a 2-d table (field "x", "W_q", ..., "W_O"), b_O is not a vector of
            d_o entries ("W_O"), the widths do not fit or h does not divide d_out (as
            :func:`multi_head.heads.multi_head_attention`: "W_q", "d_out", "num_heads", ...), or the target has
            the wrong shape, NaN, ±inf or a value above 1e6 in size ("backward.target").
    """
    check_inputs(x, W_q=w_query, W_k=w_key, W_v=w_value, W_O=w_out)
    if not isinstance(b_out, torch.Tensor) or tuple(b_out.shape) != (w_out.shape[-1],):
        raise InputError(N_("The bias of W_O must have one entry per column of W_O ({columns}); got shape {shape}."),
                         field="W_O", columns=w_out.shape[-1],
                         shape=tuple(b_out.shape) if isinstance(b_out, torch.Tensor) else quote(type(b_out).__name__))
    tokens, d_model = x.shape
    mask = causal_mask(tokens) if causal else None
    forward = multi_head_attention(x, x, w_query, w_key, w_value, w_out, b_out=b_out, num_heads=num_heads,
                                   attn_mask=mask)
    att = forward.attention  # every head at once: scores, weights (h, n, n); output (h, n, head_dim)
    d_out, head_dim = forward.query.shape[-1], forward.head_dim
    target = check_target(target, forward.output.shape).to(forward.output.dtype)

    d_output = forward.output - target  # ∂(½‖O − T‖²)/∂O, (n, d_o)
    loss = 0.5 * float((d_output * d_output).sum())
    d_w_out = forward.concat.transpose(-2, -1) @ d_output  # (d_out, n) @ (n, d_o) -> (d_out, d_o)
    d_b_out = d_output.sum(dim=0)  # b_O is added to every row: (n, d_o) -> (d_o,)
    d_concat = d_output @ w_out.transpose(-2, -1)  # (n, d_o) @ (d_o, d_out) -> (n, d_out)
    # Head r wrote columns r * head_dim ... (r + 1) * head_dim - 1 of the concatenation: it gets those back.
    d_head_outputs = d_concat.view(tokens, num_heads, head_dim).transpose(0, 1)  # (n, h, hd) -> (h, n, hd)
    grads = attention_backward(att.query, att.key, att.value, att.weights, d_head_outputs, att.scale, mask)

    def side_by_side(per_head: torch.Tensor) -> torch.Tensor:
        """(h, rows, head_dim) -> (rows, d_out): head r's block in its columns (the inverse of the split)."""
        return per_head.transpose(0, 1).reshape(per_head.shape[1], d_out)  # (rows, h, hd) -> (rows, d_out)

    x_t = x.transpose(-2, -1)  # (D, n)
    d_w_query_heads = x_t @ grads.d_query  # (D, n) @ (h, n, hd) -> (h, D, hd)
    d_w_key_heads = x_t @ grads.d_key
    d_w_value_heads = x_t @ grads.d_value
    d_query, d_key, d_value = (side_by_side(g) for g in (grads.d_query, grads.d_key, grads.d_value))
    # X reaches the loss along three paths (Q, K and V): their gradients add up.
    d_x = (d_query @ w_query.transpose(-2, -1) + d_key @ w_key.transpose(-2, -1)
           + d_value @ w_value.transpose(-2, -1))  # (n, d_out) @ (d_out, D) + ... -> (n, D)
    return MultiHeadBackwardTrace(
        x=x, w_query=w_query, w_key=w_key, w_value=w_value, w_out=w_out, b_out=b_out, target=target,
        num_heads=num_heads, head_dim=head_dim, scale=att.scale,
        query=forward.query, key=forward.key, value=forward.value,
        query_heads=forward.query_heads, key_heads=forward.key_heads, value_heads=forward.value_heads,
        scores=att.masked_scores, weights=att.weights, head_outputs=att.output, concat=forward.concat,
        output=forward.output, loss=loss,
        d_output=d_output, d_w_out=d_w_out, d_b_out=d_b_out, d_concat=d_concat, d_head_outputs=d_head_outputs,
        d_value_heads=grads.d_value, d_weights=grads.d_weights, row_dot=grads.row_dot, d_scores=grads.d_scores,
        d_query_heads=grads.d_query, d_key_heads=grads.d_key,
        d_w_query_heads=d_w_query_heads, d_w_key_heads=d_w_key_heads, d_w_value_heads=d_w_value_heads,
        d_query=d_query, d_key=d_key, d_value=d_value,
        d_w_query=side_by_side(d_w_query_heads), d_w_key=side_by_side(d_w_key_heads),
        d_w_value=side_by_side(d_w_value_heads), d_x=d_x, mask=mask,
    )


#: The matrices :func:`multi_head_finite_difference` can nudge, with their names in messages.
NUDGEABLE = {"w_query": "W_q", "w_key": "W_k", "w_value": "W_v", "w_out": "W_O"}


def _rerun(trace: MultiHeadBackwardTrace, **changes: torch.Tensor) -> MultiHeadBackwardTrace:
    """The forward and backward pass again with some of X, W_q, W_k, W_v, W_O, b_O, target replaced."""
    inputs = {"x": trace.x, "w_query": trace.w_query, "w_key": trace.w_key, "w_value": trace.w_value,
              "w_out": trace.w_out, "b_out": trace.b_out, "target": trace.target, **changes}
    return multi_head_backward_trace(**inputs, num_heads=trace.num_heads, causal=trace.causal)


def multi_head_finite_difference(trace: MultiHeadBackwardTrace, which: str, row: int, col: int,
                                 eps: float = 1e-6) -> FiniteDifference:
    """Nudge W[row, col] by ε: predicted ΔL = ε · dW[row, col], actual ΔL = L(W + ε e_rc) − L(W).

    As :func:`gradients.finite_difference`, for multi-head attention: computed in float64 (every tensor of the
    trace converted), so the two differ by the forward difference's own error ½ ε² ∂²L/∂w², not by float32's
    rounding.

    Args:
        trace: the pass to nudge (any floating dtype; its X, W, b_O, target and mask are reused).
        which: "w_query", "w_key", "w_value" (D, d_out) or "w_out" (d_out, d_o).
        row, col: the entry, from 0. eps: ε, a number above 0.

    Returns:
        The :class:`gradients.FiniteDifference` (python floats).

    Raises:
        InputError: an unknown matrix (field "backward.which"), an entry outside it ("backward.entry"), ε not a
            number above 0 ("backward.eps").
    """
    check_nudge(which, NUDGEABLE, eps)
    names = ("x", "w_query", "w_key", "w_value", "w_out", "b_out", "target")
    before = _rerun(trace, **{name: getattr(trace, name).double() for name in names})
    nudged = nudge(getattr(before, which), NUDGEABLE[which], row, col, eps)
    after = _rerun(before, **{which: nudged})
    gradient = float(getattr(before, f"d_{which}")[row, col])
    return FiniteDifference(loss_before=before.loss, loss_after=after.loss, predicted_change=eps * gradient,
                            actual_change=after.loss - before.loss)


@dataclass(frozen=True)
class MultiHeadStepResult:
    """One gradient-descent step W ← W − η dW on W_q, W_k, W_v, W_O and b_O, and the new forward pass.

    Attributes:
        learning_rate: η.
        before: the :class:`MultiHeadBackwardTrace` the step started from.
        after: the one at the stepped weights.
        loss_before, loss_after: L before and after (python floats).
        weights_before, weights_after: every head's attention weights P_r before and after, (h, n, n).
        weights_change: sign(weights_after − weights_before), int8 (h, n, n): +1 grew, −1 shrank, 0 unchanged.
    """

    learning_rate: float
    before: MultiHeadBackwardTrace
    after: MultiHeadBackwardTrace
    loss_before: float
    loss_after: float
    weights_before: torch.Tensor
    weights_after: torch.Tensor
    weights_change: torch.Tensor


def multi_head_gradient_step(trace: MultiHeadBackwardTrace, learning_rate: float) -> MultiHeadStepResult:
    """W ← W − η dW for W_q, W_k, W_v, W_O and b ← b − η db for b_O; then the forward and backward pass again.

    X and the target stay. For a small enough η the loss goes down; a large one can overshoot.

    Raises:
        InputError: if η is not a number in (0, 10] (field "backward.learning_rate").
    """
    eta = check_learning_rate(learning_rate)
    after = _rerun(trace, **{name: getattr(trace, name) - eta * getattr(trace, f"d_{name}")
                             for name in ("w_query", "w_key", "w_value", "w_out", "b_out")})
    return MultiHeadStepResult(
        learning_rate=eta, before=trace, after=after, loss_before=trace.loss, loss_after=after.loss,
        weights_before=trace.weights, weights_after=after.weights,
        weights_change=torch.sign(after.weights - trace.weights).to(torch.int8),
    )
