r"""The backward pass through one attention head: every gradient of a squared-error loss, worked out by hand.

Shape legend: n tokens (T is the target), D = d_model, d_k query/key width, d_v value width, ``...`` any leading
dims (the heads of :mod:`multi_head_gradients`). dA is ∂L/∂A, of A's shape.

Forward (Vaswani et al. 2017, eq. 1), one sequence, M the causal mask (0 or −∞):

.. math::
    Q = X W_q,\quad K = X W_k,\quad V = X W_v,\quad S = \frac{Q K^\top}{\sqrt{d_k}} + M,\quad
    P = \operatorname{softmax}(S) \text{ row by row},\quad O = P V,\quad L = \tfrac12 \lVert O - T \rVert^2

Backward, the chain rule one product at a time:

.. math::
    dO = O - T,\quad dV = P^\top dO,\quad dP = dO\, V^\top,\quad
    dS_{i\cdot} = J_i\, dP_{i\cdot} \text{ with } J_i = \operatorname{diag}(p_i) - p_i p_i^\top,
    \text{ i.e. } dS_{ij} = P_{ij} (dP_{ij} - D_i),\; D_i = \textstyle\sum_k P_{ik}\, dP_{ik}

    dQ = dS\, K / \sqrt{d_k},\quad dK = dS^\top Q / \sqrt{d_k},\quad
    dW_q = X^\top dQ,\; dW_k = X^\top dK,\; dW_v = X^\top dV,\quad
    dX = dQ\, W_q^\top + dK\, W_k^\top + dV\, W_v^\top

FlashAttention keeps O but not P, so it gets D from what it keeps:
D_i = Σ_j P_ij (dO_i · v_j) = dO_i · o_i, i.e. D = rowsum(dO ⊙ O) (:func:`flash_shortcut`).

A blocked score is −∞, its weight P_ij is 0, so dS_ij = 0: no gradient flows through a connection the mask cut.
dP_ij there is dO_i · v_j, finite and unused.

Sources: Vaswani et al. 2017, "Attention Is All You Need", eq. 1 and sec. 3.2.3 (the mask); Dao et al. 2022,
"FlashAttention", sec. 3.1 (recomputation in the backward pass), appendix B.2 (the gradients and D_i = do_iᵀ o_i),
Algorithm 3 (the standard attention backward pass) and Algorithm 4 (FlashAttention's); Dao 2023,
"FlashAttention-2", sec. 3.1.2 and Algorithm 2 (D = rowsum(dO ∘ O)).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Optional

import torch

from attention_core.errors import N_, InputError, quote
from attention_core.inputs.edits import MAX_ABS_VALUE
from attention_core.masks import causal_mask
from attention_core.self_attention.functional import self_attention

#: The backward pages' learning rate η (one gradient step W ← W − η dW): the step itself accepts any η above 0 up to
#: MAX_BACKWARD_LEARNING_RATE; the page's field starts at MIN_BACKWARD_LEARNING_RATE.
MIN_BACKWARD_LEARNING_RATE, MAX_BACKWARD_LEARNING_RATE = 0.001, 10

#: The most gradient-descent steps a backward page takes at once (the "Steps to take" setting; more are clamped).
MAX_BACKWARD_STEPS = 50

#: The matrices :func:`finite_difference` can nudge, with their names in messages.
NUDGEABLE = {"w_query": "W_q", "w_key": "W_k", "w_value": "W_v"}


def check_inputs(x, **matrices) -> None:
    """X must be a (n, D) table, n, D >= 1, and each matrix 2-d; InputError (field "x" or "W_q", ...) if not."""
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or 0 in x.shape:
        raise InputError(N_("X must be a table of tokens (n, d_model) with at least one entry; got shape {shape}."),
                         field="x", shape=tuple(x.shape) if isinstance(x, torch.Tensor) else quote(type(x).__name__))
    for name, w in matrices.items():
        if not isinstance(w, torch.Tensor) or w.dim() != 2:
            raise InputError(N_("{name} must be a 2-d table of numbers; got shape {shape}."), field=name, name=name,
                             shape=tuple(w.shape) if isinstance(w, torch.Tensor) else quote(type(w).__name__))


def check_target(target, shape: tuple[int, ...]) -> torch.Tensor:
    """The target T of ½‖O − T‖², returned unchanged: of the output's ``shape``, no NaN, every |value| <= 1e6.

    Raises:
        InputError: field "backward.target", naming both shapes, or the first bad entry (row and column from 1).
    """
    shape = tuple(shape)
    if not isinstance(target, torch.Tensor) or tuple(target.shape) != shape:
        raise InputError(
            N_("The target has shape {shape} but the output has shape {expected}; they must match: one row per token, "
               "one column per output column."),
            field="backward.target", expected=shape,
            shape=tuple(target.shape) if isinstance(target, torch.Tensor) else quote(type(target).__name__),
        )
    values = target.double()
    if torch.isnan(values).any():
        row, col = (int(i) for i in torch.isnan(values).nonzero()[0])
        raise InputError(N_("The target's row {row}, column {col} is not a number (NaN): type a number."),
                         field="backward.target", row=row + 1, col=col + 1)
    too_big = ~(values.abs() <= MAX_ABS_VALUE)  # ±inf included
    if too_big.any():
        row, col = (int(i) for i in too_big.nonzero()[0])
        raise InputError(
            N_("The target's row {row}, column {col} is {value:g}; values must lie between −{limit:g} and {limit:g}."),
            field="backward.target", row=row + 1, col=col + 1, value=float(values[row, col]), limit=MAX_ABS_VALUE,
        )
    return target


def check_learning_rate(learning_rate) -> float:
    """η of W ← W − η dW as a python float; InputError (field "backward.learning_rate") unless in (0, 10]."""
    if isinstance(learning_rate, torch.Tensor) and learning_rate.numel() == 1:
        learning_rate = learning_rate.item()
    is_number = isinstance(learning_rate, numbers.Real) and not isinstance(learning_rate, bool)
    if not (is_number and math.isfinite(learning_rate) and 0 < learning_rate <= MAX_BACKWARD_LEARNING_RATE):
        raise InputError(
            N_("The learning rate must be a number above 0 and at most {high}; got {value}."),
            field="backward.learning_rate", high=MAX_BACKWARD_LEARNING_RATE,
            value=learning_rate if is_number else quote(repr(learning_rate)),
        )
    return float(learning_rate)


@dataclass(frozen=True)
class AttentionGradients:
    """The gradients of O = P V, P = softmax(S), S = Q Kᵀ · scale (masked), given dO.

    Same dtype as the inputs. Shapes (``...`` any leading dims, e.g. heads):

    Attributes:
        d_value: dV = Pᵀ dO, (..., n, d_v).
        d_weights: dP = dO Vᵀ, (..., n, n); finite everywhere, also where the mask blocks (unused there).
        row_dot: D_i = Σ_j P_ij dP_ij, (..., n).
        d_scores: dS = P ⊙ (dP − D), (..., n, n); exactly 0 where the mask blocks.
        d_query: dQ = dS K · scale, (..., n, d_k).
        d_key: dK = dSᵀ Q · scale, (..., n, d_k).
    """

    d_value: torch.Tensor
    d_weights: torch.Tensor
    row_dot: torch.Tensor
    d_scores: torch.Tensor
    d_query: torch.Tensor
    d_key: torch.Tensor


def attention_backward(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, weights: torch.Tensor,
                       d_output: torch.Tensor, scale: float, mask: Optional[torch.Tensor] = None) -> AttentionGradients:
    """From dO back to dQ, dK, dV through the attention weights (Dao et al. 2022, appendix B.2, Algorithm 3).

    The softmax's backward pass row by row: dS_i = J_i dP_i with J_i = diag(p_i) − p_i p_iᵀ, which is
    P_ij (dP_ij − D_i) with D_i = Σ_k P_ik dP_ik. A row whose keys are all blocked has weights 0 and so dS 0.

    Args:
        query: Q, (..., n, d_k). key: K, (..., n, d_k). value: V, (..., n, d_v). One floating dtype.
        weights: P, (..., n, n), the softmax of the masked scaled scores (rows of blocked keys all 0).
        d_output: dO, (..., n, d_v). scale: the scores' factor, 1 / sqrt(d_k).
        mask: optional bool, broadcastable to (..., n, n), True = may attend.

    Returns:
        The :class:`AttentionGradients`.
    """
    d_value = weights.transpose(-2, -1) @ d_output  # (..., n, n)ᵀ @ (..., n, d_v) -> (..., n, d_v)
    d_weights = d_output @ value.transpose(-2, -1)  # (..., n, d_v) @ (..., d_v, n) -> (..., n, n)
    row_dot = (weights * d_weights).sum(dim=-1)  # Σ_k P_ik dP_ik, (..., n)
    d_scores = weights * (d_weights - row_dot.unsqueeze(-1))  # (diag(p) − p pᵀ) dP, row by row
    if mask is not None:
        d_scores = d_scores.masked_fill(~mask, 0.0)  # already 0 · finite there; written +0 exactly
    d_query = (d_scores @ key) * scale  # (..., n, n) @ (..., n, d_k) -> (..., n, d_k)
    d_key = (d_scores.transpose(-2, -1) @ query) * scale  # (..., n, n)ᵀ @ (..., n, d_k) -> (..., n, d_k)
    return AttentionGradients(d_value=d_value, d_weights=d_weights, row_dot=row_dot, d_scores=d_scores,
                              d_query=d_query, d_key=d_key)


@dataclass(frozen=True)
class BackwardTrace:
    """Every intermediate of one forward and backward pass through a single attention head.

    All tensors have the inputs' dtype (float32 in the app; float64 in :func:`finite_difference`). Shapes:

    Attributes:
        x: X, (n, D). w_query, w_key: (D, d_k). w_value: (D, d_v). target: T, (n, d_v).
        query: Q = X W_q, (n, d_k). key: K = X W_k, (n, d_k). value: V = X W_v, (n, d_v).
        scale: 1 / sqrt(d_k).
        scores: S = Q Kᵀ · scale, (n, n), −inf where the causal mask blocks (before the softmax).
        weights: P = softmax(S) row by row, (n, n) (after the softmax; 0 where blocked).
        output: O = P V, (n, d_v).
        loss: L = ½ ‖O − T‖², summed over every entry (a python float).
        d_output: dO = O − T, (n, d_v).
        d_value: dV = Pᵀ dO, (n, d_v).
        d_weights: dP = dO Vᵀ, (n, n); finite everywhere.
        d_scores: dS = P ⊙ (dP − D), (n, n); exactly 0 where blocked.
        row_dot: D_i = Σ_j P_ij dP_ij, (n,); equal to rowsum(dO ⊙ O) (:func:`flash_shortcut`).
        d_query: dQ = dS K / sqrt(d_k), (n, d_k). d_key: dK = dSᵀ Q / sqrt(d_k), (n, d_k).
        d_w_query: Xᵀ dQ, (D, d_k). d_w_key: Xᵀ dK, (D, d_k). d_w_value: Xᵀ dV, (D, d_v).
        d_x: dQ W_qᵀ + dK W_kᵀ + dV W_vᵀ, (n, D): X feeds all three projections.
        mask: bool (n, n), True = may attend (the causal mask), or None.
    """

    x: torch.Tensor
    w_query: torch.Tensor
    w_key: torch.Tensor
    w_value: torch.Tensor
    target: torch.Tensor
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    scale: float
    scores: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor
    loss: float
    d_output: torch.Tensor
    d_value: torch.Tensor
    d_weights: torch.Tensor
    d_scores: torch.Tensor
    row_dot: torch.Tensor
    d_query: torch.Tensor
    d_key: torch.Tensor
    d_w_query: torch.Tensor
    d_w_key: torch.Tensor
    d_w_value: torch.Tensor
    d_x: torch.Tensor
    mask: Optional[torch.Tensor]

    @property
    def causal(self) -> bool:
        """True when the causal mask was on."""
        return self.mask is not None


def backward_trace(x: torch.Tensor, w_query: torch.Tensor, w_key: torch.Tensor, w_value: torch.Tensor,
                   target: torch.Tensor, causal: bool = False) -> BackwardTrace:
    """The forward pass, the loss ½‖O − T‖² and every gradient, by the formulas (not autograd).

    Forward: Vaswani et al. 2017, eq. 1 (:func:`functional.self_attention`). Backward: the module's formulas
    (Dao et al. 2022, appendix B.2 and Algorithm 3). Equal to ``torch.autograd``'s gradients (the tests check it).
    No entry is NaN: the causal mask always allows the diagonal, and a row with every key blocked would get
    weights 0 and gradients 0.

    Args:
        x: X, (n, D), floating point (float32 in the app).
        w_query, w_key: (D, d_k). w_value: (D, d_v). The same dtype. Applied as X @ W.
        target: T, (n, d_v), finite, every |value| <= 1e6.
        causal: apply the causal mask (query i attends to keys j <= i).

    Returns:
        The :class:`BackwardTrace`.

    Raises:
        InputError: if X or a weight is not a 2-d table (field "x", "W_q", ...), the widths do not fit
            (as :func:`functional.self_attention`), or the target has the wrong shape, NaN, ±inf or a value
            above 1e6 in size (field "backward.target").
    """
    check_inputs(x, W_q=w_query, W_k=w_key, W_v=w_value)
    mask = causal_mask(x.shape[0]) if causal else None
    forward = self_attention(x, w_query, w_key, w_value, attn_mask=mask).attention
    target = check_target(target, forward.output.shape).to(forward.output.dtype)

    d_output = forward.output - target  # ∂(½‖O − T‖²)/∂O, (n, d_v)
    loss = 0.5 * float((d_output * d_output).sum())
    grads = attention_backward(forward.query, forward.key, forward.value, forward.weights, d_output,
                               forward.scale, mask)
    d_w_query = x.transpose(-2, -1) @ grads.d_query  # (D, n) @ (n, d_k) -> (D, d_k)
    d_w_key = x.transpose(-2, -1) @ grads.d_key  # (D, n) @ (n, d_k) -> (D, d_k)
    d_w_value = x.transpose(-2, -1) @ grads.d_value  # (D, n) @ (n, d_v) -> (D, d_v)
    # X reaches the loss along three paths (Q, K and V): their gradients add up.
    d_x = (grads.d_query @ w_query.transpose(-2, -1) + grads.d_key @ w_key.transpose(-2, -1)
           + grads.d_value @ w_value.transpose(-2, -1))  # (n, d_k) @ (d_k, D) + ... -> (n, D)
    return BackwardTrace(
        x=x, w_query=w_query, w_key=w_key, w_value=w_value, target=target,
        query=forward.query, key=forward.key, value=forward.value, scale=forward.scale,
        scores=forward.masked_scores, weights=forward.weights, output=forward.output, loss=loss,
        d_output=d_output, d_value=grads.d_value, d_weights=grads.d_weights, d_scores=grads.d_scores,
        row_dot=grads.row_dot, d_query=grads.d_query, d_key=grads.d_key,
        d_w_query=d_w_query, d_w_key=d_w_key, d_w_value=d_w_value, d_x=d_x, mask=mask,
    )


def softmax_jacobian(weights_row: torch.Tensor) -> torch.Tensor:
    """The Jacobian of p = softmax(s) for one row: ∂p_j/∂s_k = p_j (δ_jk − p_k), i.e. diag(p) − p pᵀ.

    Symmetric; each row and column sums to 0 (the weights always sum to 1); a blocked key (p_j = 0) has row and
    column j all 0. Takes p, (n,), one row of the weights P; returns J, (n, n), p's dtype.

    Raises:
        InputError: if p is not a vector (field "backward.row").
    """
    if not isinstance(weights_row, torch.Tensor) or weights_row.dim() != 1:
        raise InputError(N_("The softmax Jacobian takes one row of weights; got shape {shape}."), field="backward.row",
                         shape=tuple(getattr(weights_row, "shape", ())))
    return torch.diag(weights_row) - torch.outer(weights_row, weights_row)  # (n, n) - (n, 1)(1, n)


@dataclass(frozen=True)
class JacobianRow:
    """dS_i = J_i dP_i for one query row i, beside the trace's dS_i.

    Attributes:
        row: i, from 0.
        jacobian: J_i = diag(p_i) − p_i p_iᵀ, (n, n).
        d_weights_row: dP_i, (n,).
        product: J_i dP_i, (n,).
        d_scores_row: the trace's dS_i = P_i ⊙ (dP_i − D_i), (n,).
    """

    row: int
    jacobian: torch.Tensor
    d_weights_row: torch.Tensor
    product: torch.Tensor
    d_scores_row: torch.Tensor

    @property
    def max_difference(self) -> float:
        """max_j |(J_i dP_i)_j − dS_ij|: rounding only (about 1e-7 of the entries' size in float32)."""
        return float((self.product - self.d_scores_row).abs().max())


def jacobian_row(trace: BackwardTrace, row: int) -> JacobianRow:
    """Row i of a :class:`BackwardTrace`'s dS as J_i dP_i (the chain rule through one row's softmax), beside dS_i.

    Raises:
        InputError: if row is not a whole number in [0, n) (field "backward.row").
    """
    tokens = trace.weights.shape[0]
    if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < tokens:
        raise InputError(N_("The row must be a whole number from 0 to {last}; got {row}."), field="backward.row",
                         last=tokens - 1, row=quote(repr(row)))
    jacobian = softmax_jacobian(trace.weights[row])
    product = jacobian @ trace.d_weights[row]  # (n, n) @ (n,) -> (n,)
    return JacobianRow(row=row, jacobian=jacobian, d_weights_row=trace.d_weights[row], product=product,
                       d_scores_row=trace.d_scores[row])


class FlashShortcut(NamedTuple):
    """FlashAttention's way to dS: D from dO and O alone. row_dot: D, (n,); d_scores: dS, (n, n)."""

    row_dot: torch.Tensor
    d_scores: torch.Tensor


def flash_shortcut(trace: BackwardTrace) -> FlashShortcut:
    """D = rowsum(dO ⊙ O) and dS = P ⊙ (dP − D) (Dao et al. 2022, appendix B.2 and Algorithm 4; Dao 2023, Alg. 2).

    D_i = Σ_j P_ij dP_ij = Σ_j P_ij (dO_i · v_j) = dO_i · (Σ_j P_ij v_j) = dO_i · o_i: a dot product of two
    d_v-vectors instead of a T-long sum over P, which FlashAttention never stores. Equal to the trace's
    ``row_dot`` and ``d_scores`` (the Jacobian form) up to rounding. Reads a :class:`BackwardTrace`'s d_output,
    output, weights and d_weights; returns the :class:`FlashShortcut` (row_dot (n,), d_scores (n, n)).
    """
    row_dot = (trace.d_output * trace.output).sum(dim=-1)  # rowsum(dO ⊙ O), (n,)
    d_scores = trace.weights * (trace.d_weights - row_dot.unsqueeze(-1))  # (n, n)
    return FlashShortcut(row_dot=row_dot, d_scores=d_scores)


class FiniteDifference(NamedTuple):
    """W[row, col] nudged by ε: L before and after, the change dW predicts, the change that happened (float64)."""

    loss_before: float
    loss_after: float
    predicted_change: float
    actual_change: float


def finite_difference(x: torch.Tensor, w_query: torch.Tensor, w_key: torch.Tensor, w_value: torch.Tensor,
                      target: torch.Tensor, causal: bool, which: str, row: int, col: int,
                      eps: float = 1e-3) -> FiniteDifference:
    """Nudge W[row, col] by ε: predicted ΔL = ε · dW[row, col], actual ΔL = L(W + ε e_rc) − L(W).

    Computed in float64 (every tensor converted), so the two differ by the forward difference's own error
    ½ ε² ∂²L/∂w² + O(ε³), not by float32's rounding: relatively ε ∂²L/∂w² / (2 dW), about 1e-4 to 1e-3 at
    ε = 1e-3 in the tests' examples, and 100 times smaller for an ε 10 times smaller. The result's floats are
    python floats.

    Args:
        x, w_query, w_key, w_value, target, causal: as :func:`backward_trace` (any floating dtype).
        which: the matrix to nudge: "w_query", "w_key" or "w_value".
        row, col: the entry, from 0.
        eps: ε, a number above 0.

    Returns:
        The :class:`FiniteDifference` (loss_before, loss_after, predicted_change, actual_change).

    Raises:
        InputError: for an unknown matrix (field "backward.which"), an entry outside it ("backward.entry"), ε not
            a number above 0 ("backward.eps"), or as :func:`backward_trace`.
    """
    check_nudge(which, NUDGEABLE, eps)
    check_inputs(x, W_q=w_query, W_k=w_key, W_v=w_value)
    inputs = {"x": x.double(), "w_query": w_query.double(), "w_key": w_key.double(), "w_value": w_value.double()}
    before = backward_trace(**inputs, target=check_target(target, (x.shape[0], w_value.shape[-1])).double(),
                            causal=causal)
    nudged = nudge(inputs[which], NUDGEABLE[which], row, col, eps)
    after = backward_trace(**{**inputs, which: nudged}, target=before.target, causal=causal)
    gradient = float(getattr(before, f"d_{which}")[row, col])
    return FiniteDifference(loss_before=before.loss, loss_after=after.loss, predicted_change=eps * gradient,
                            actual_change=after.loss - before.loss)


def check_nudge(which: str, nudgeable: dict[str, str], eps) -> None:
    """InputError unless ``which`` is a key of ``nudgeable`` (field "backward.which") and ε a number above 0
    ("backward.eps")."""
    if which not in nudgeable:
        raise InputError(N_("Choose the matrix to nudge: {choices}; got {which}."), field="backward.which",
                         choices=", ".join(nudgeable), which=quote(repr(which)))
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not math.isfinite(eps) or eps <= 0:
        raise InputError(N_("The nudge ε must be a number above 0; got {eps}."), field="backward.eps",
                         eps=quote(repr(eps)))


def nudge(matrix: torch.Tensor, name: str, row: int, col: int, eps: float) -> torch.Tensor:
    """A copy of ``matrix`` (rows, cols) with entry (row, col) (from 0) raised by ε; InputError (field
    "backward.entry", naming the matrix ``name``) when there is no such entry."""
    rows, cols = matrix.shape
    whole = not any(isinstance(i, bool) or not isinstance(i, int) for i in (row, col))
    if not (whole and 0 <= row < rows and 0 <= col < cols):
        raise InputError(
            N_("{name} has rows 0 to {last_row} and columns 0 to {last_col}; there is no entry ({row}, {col})."),
            field="backward.entry", name=name, last_row=rows - 1, last_col=cols - 1,
            row=quote(repr(row)), col=quote(repr(col)),
        )
    nudged = matrix.clone()
    nudged[row, col] += eps
    return nudged


@dataclass(frozen=True)
class StepResult:
    """One gradient-descent step W ← W − η dW on W_q, W_k and W_v, and the new forward pass.

    Attributes:
        learning_rate: η.
        before: the :class:`BackwardTrace` the step started from.
        after: the :class:`BackwardTrace` at the new weights (its w_query, w_key, w_value are the stepped ones).
        loss_before, loss_after: L before and after (python floats).
        weights_before, weights_after: the attention weights P before and after, (n, n).
        weights_change: sign(weights_after − weights_before), int8 (n, n): +1 grew, −1 shrank, 0 unchanged
            (blocked entries stay 0).
    """

    learning_rate: float
    before: BackwardTrace
    after: BackwardTrace
    loss_before: float
    loss_after: float
    weights_before: torch.Tensor
    weights_after: torch.Tensor
    weights_change: torch.Tensor


def gradient_step(trace: BackwardTrace, learning_rate: float) -> StepResult:
    """W_q ← W_q − η dW_q, W_k ← W_k − η dW_k, W_v ← W_v − η dW_v; then the forward and backward pass again.

    X and the target stay. For a small enough η the loss goes down (by about η ‖dW‖² summed over the three
    matrices); a large η can overshoot and raise it. Steps from ``trace``; returns the :class:`StepResult`.

    Raises:
        InputError: if η is not a number in (0, 10] (field "backward.learning_rate").
    """
    eta = check_learning_rate(learning_rate)
    after = backward_trace(
        trace.x, trace.w_query - eta * trace.d_w_query, trace.w_key - eta * trace.d_w_key,
        trace.w_value - eta * trace.d_w_value, trace.target, causal=trace.causal,
    )
    return StepResult(
        learning_rate=eta, before=trace, after=after, loss_before=trace.loss, loss_after=after.loss,
        weights_before=trace.weights, weights_after=after.weights,
        weights_change=torch.sign(after.weights - trace.weights).to(torch.int8),
    )


@dataclass(frozen=True)
class Descent:
    """Several gradient-descent steps W ← W − η dW from one start, each from the weights the last one left: how the
    loss and the attention move (one step of η = 0.01 moves P by ~1e-5, too little to see).

    Attributes:
        learning_rate: η of every step.
        losses: L before the first step and after each step (steps + 1 python floats).
        weights_before: P at the start, (n, n) or (h, n, n). weights_after: P after the last step, the same shape.
    """

    learning_rate: float
    losses: tuple[float, ...]
    weights_before: torch.Tensor
    weights_after: torch.Tensor

    @property
    def steps(self) -> int:
        """How many steps were taken."""
        return len(self.losses) - 1

    @property
    def largest_change(self) -> float:
        """max |P after − P before| over every entry (every head)."""
        return float((self.weights_after - self.weights_before).abs().max())


def descend(first: Any, steps: int, step: Callable[[Any, float], Any]) -> Descent:
    """``steps`` steps, the first already taken (``first``: a :class:`StepResult` or
    ``multi_head_gradients.MultiHeadStepResult``), each next one ``step(last.after, η)`` (:func:`gradient_step` or
    ``multi_head_gradient_step``). ``steps`` is clamped to 1 … :data:`MAX_BACKWARD_STEPS`; one forward and backward pass each
    (~0.5 ms for 7 tokens)."""
    last, losses = first, [first.loss_before, first.loss_after]
    for _ in range(min(max(int(steps), 1), MAX_BACKWARD_STEPS) - 1):
        last = step(last.after, first.learning_rate)
        losses.append(last.loss_after)
    return Descent(first.learning_rate, tuple(losses), first.weights_before, last.weights_after)
