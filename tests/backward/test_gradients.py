"""Tests of the backward pass through attention (attention_core/backward): every gradient worked out by hand equals
torch.autograd's, with and without the causal mask, for one head and several; the softmax Jacobian and
FlashAttention's shortcut give the same dS; a nudged weight changes the loss as its gradient predicts; a gradient
step lowers the loss; bad inputs are refused with a message for the right field.

Inputs are drawn uniformly from [-spread, spread] with spread <= 1, at most 8 tokens and width 6: the float32
rounding of a gradient grows with its size (our sums run in another order than autograd's). With these bounds the
largest difference in 800 random single-head draws was 6% of rtol = atol = 1e-5, in 400 multi-head draws 12%;
inputs from randn · 2 reach gradients of 1e3 and differ from autograd by ~1e-4, which says nothing about the
formulas.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attention_core.backward.gradients import (
    MAX_BACKWARD_LEARNING_RATE,
    MAX_BACKWARD_STEPS,
    BackwardTrace,
    backward_trace,
    finite_difference,
    flash_shortcut,
    gradient_step,
    jacobian_row,
    softmax_jacobian,
)
from attention_core.backward.multi_head_gradients import MultiHeadBackwardTrace, multi_head_backward_trace
from attention_core.errors import InputError
from attention_core.lessons.backward.page import BACKWARD
from attention_core.lessons.backward_multi_head.page import BACKWARD_MULTI_HEAD

TOL = dict(rtol=1e-5, atol=1e-5)
#: The gradients of one head, each compared with autograd's.
SINGLE_GRADIENTS = ("d_output", "d_value", "d_weights", "d_scores", "d_query", "d_key",
                    "d_w_query", "d_w_key", "d_w_value", "d_x")
#: The multi-head trace's gradients, the per-head ones included.
MULTI_GRADIENTS = ("d_output", "d_w_out", "d_b_out", "d_concat", "d_head_outputs", "d_value_heads", "d_weights",
                   "d_scores", "d_query_heads", "d_key_heads", "d_query", "d_key", "d_value",
                   "d_w_query", "d_w_key", "d_w_value", "d_x")


def draw(seed: int, *shapes: tuple[int, ...], spread: float = 1.0) -> list[torch.Tensor]:
    """float32 tensors of the given shapes, uniform in [-spread, spread], reproducible from the seed."""
    generator = torch.Generator().manual_seed(seed)
    return [spread * (2 * torch.rand(*shape, generator=generator) - 1) for shape in shapes]


def single_example(seed, tokens, d_model, d_k, d_v, spread=1.0):
    """x (T, D), W_q, W_k (D, d_k), W_v (D, d_v), target (T, d_v)."""
    return draw(seed, (tokens, d_model), (d_model, d_k), (d_model, d_k), (d_model, d_v), (tokens, d_v),
                spread=spread)


def multi_example(seed, tokens, d_model, num_heads, head_dim, spread=1.0):
    """x (T, D), W_q, W_k, W_v (D, d_out), W_O (d_out, d_out), b_O (d_out,), target (T, d_out)."""
    d_out = num_heads * head_dim
    return draw(seed, (tokens, d_model), (d_model, d_out), (d_model, d_out), (d_model, d_out), (d_out, d_out),
                (d_out,), (tokens, d_out), spread=spread)


def blocked(tokens: int) -> torch.Tensor:
    """True above the diagonal: the keys the causal mask blocks (built here with triu, not with masks.causal_mask)."""
    return torch.ones(tokens, tokens, dtype=torch.bool).triu(diagonal=1)


def autograd_single(x, w_query, w_key, w_value, target, causal):
    """The same forward pass written out in torch, and autograd's gradient of every intermediate (retain_grad)."""
    leaves = [t.clone().requires_grad_() for t in (x, w_query, w_key, w_value)]
    x_, wq, wk, wv = leaves
    query, key, value = x_ @ wq, x_ @ wk, x_ @ wv
    scores = query @ key.T / math.sqrt(query.shape[-1])
    if causal:
        scores = scores.masked_fill(blocked(x.shape[0]), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    output = weights @ value
    for t in (query, key, value, scores, weights, output):
        t.retain_grad()
    loss = 0.5 * ((output - target) ** 2).sum()
    loss.backward()
    return {
        "scores": scores.detach(), "weights": weights.detach(), "output": output.detach(), "loss": loss.item(),
        "d_output": output.grad, "d_value": value.grad, "d_weights": weights.grad, "d_scores": scores.grad,
        "d_query": query.grad, "d_key": key.grad, "d_w_query": wq.grad, "d_w_key": wk.grad,
        "d_w_value": wv.grad, "d_x": x_.grad,
    }


def autograd_multi(x, w_query, w_key, w_value, w_out, b_out, target, num_heads, causal):
    """Multi-head attention written head by head with column slices, and autograd's gradients (retain_grad)."""
    leaves = [t.clone().requires_grad_() for t in (x, w_query, w_key, w_value, w_out, b_out)]
    x_, wq, wk, wv, wo, bo = leaves
    tokens, d_out = x.shape[0], w_query.shape[1]
    head_dim = d_out // num_heads
    query, key, value = x_ @ wq, x_ @ wk, x_ @ wv

    def split(t):  # head r: columns r * head_dim ... (r + 1) * head_dim - 1
        return torch.stack([t[:, r * head_dim:(r + 1) * head_dim] for r in range(num_heads)])

    q_heads, k_heads, v_heads = split(query), split(key), split(value)
    scores = q_heads @ k_heads.transpose(-2, -1) / math.sqrt(head_dim)
    if causal:
        scores = scores.masked_fill(blocked(tokens), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    heads = weights @ v_heads
    concat = torch.cat(list(heads), dim=-1)
    output = concat @ wo + bo
    for t in (query, key, value, q_heads, k_heads, v_heads, scores, weights, heads, concat, output):
        t.retain_grad()
    loss = 0.5 * ((output - target) ** 2).sum()
    loss.backward()
    return {
        "scores": scores.detach(), "weights": weights.detach(), "head_outputs": heads.detach(),
        "output": output.detach(), "loss": loss.item(),
        "d_output": output.grad, "d_w_out": wo.grad, "d_b_out": bo.grad, "d_concat": concat.grad,
        "d_head_outputs": heads.grad, "d_value_heads": v_heads.grad, "d_weights": weights.grad,
        "d_scores": scores.grad, "d_query_heads": q_heads.grad, "d_key_heads": k_heads.grad,
        "d_query": query.grad, "d_key": key.grad, "d_value": value.grad,
        "d_w_query": wq.grad, "d_w_key": wk.grad, "d_w_value": wv.grad, "d_x": x_.grad,
    }


def assert_matches(trace, reference: dict, names: tuple[str, ...]) -> None:
    torch.testing.assert_close(trace.scores, reference["scores"], **TOL)  # -inf at the same places
    torch.testing.assert_close(trace.weights, reference["weights"], **TOL)
    torch.testing.assert_close(trace.output, reference["output"], **TOL)
    assert trace.loss == pytest.approx(reference["loss"], rel=1e-5, abs=1e-5)
    for name in names:
        ours, theirs = getattr(trace, name), reference[name]
        assert ours.shape == theirs.shape, name
        torch.testing.assert_close(ours, theirs, **TOL, msg=lambda m, name=name: f"{name}: {m}")


def assert_no_nan(trace) -> None:
    for field in dataclasses.fields(trace):
        value = getattr(trace, field.name)
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            assert not torch.isnan(value).any(), field.name
        elif isinstance(value, float):
            assert not math.isnan(value), field.name


# ---------------------------------------------------------------- one head against autograd

SINGLE_SHAPES = [(0, 1, 1, 1, 1), (1, 3, 2, 2, 2), (2, 4, 3, 2, 3), (3, 5, 4, 3, 2), (4, 6, 3, 4, 4),
                 (5, 8, 6, 4, 4)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seed, tokens, d_model, d_k, d_v", SINGLE_SHAPES)
def test_every_single_head_gradient_equals_autograds(seed, tokens, d_model, d_k, d_v, causal):
    inputs = single_example(seed, tokens, d_model, d_k, d_v)
    trace = backward_trace(*inputs, causal=causal)
    assert_matches(trace, autograd_single(*inputs, causal), SINGLE_GRADIENTS)
    assert trace.d_w_query.shape == (d_model, d_k) and trace.d_x.shape == (tokens, d_model)
    assert trace.row_dot.shape == (tokens,) and trace.scale == pytest.approx(1 / math.sqrt(d_k))
    assert (trace.mask is not None) == causal and trace.x.dtype == torch.float32


@settings(max_examples=60, deadline=None)
@given(tokens=st.integers(1, 8), d_model=st.integers(1, 6), d_k=st.integers(1, 4), d_v=st.integers(1, 4),
       seed=st.integers(0, 10_000), spread=st.sampled_from([0.25, 0.5, 1.0]), causal=st.booleans())
def test_single_head_gradients_equal_autograds_on_random_inputs(tokens, d_model, d_k, d_v, seed, spread, causal):
    inputs = single_example(seed, tokens, d_model, d_k, d_v, spread)
    trace = backward_trace(*inputs, causal=causal)
    assert_matches(trace, autograd_single(*inputs, causal), SINGLE_GRADIENTS)
    assert_no_nan(trace)


def test_the_causal_mask_blocks_the_gradient_and_leaves_no_nan():
    inputs = single_example(7, 6, 4, 3, 2)
    trace = backward_trace(*inputs, causal=True)
    future = blocked(6)
    assert torch.isneginf(trace.scores[future]).all() and torch.isfinite(trace.scores[~future]).all()
    assert (trace.weights[future] == 0).all()
    assert (trace.d_scores[future] == 0).all()  # exactly 0: no gradient through a blocked connection
    assert torch.isfinite(trace.d_weights).all()  # dP = dO Vᵀ is finite there, and unused
    assert (trace.d_weights[future] != 0).any()  # ... and not 0: it is the mask that stops the gradient
    assert (trace.d_scores[~future] != 0).sum() > 6  # the allowed entries do get gradient (row 0's one does not:
    assert trace.d_scores[0, 0] == 0  # with a single key its weight is 1 whatever the score)
    assert_no_nan(trace)
    unmasked = backward_trace(*inputs)
    assert (unmasked.d_scores[future] != 0).all()


# ---------------------------------------------------------------- several heads against autograd and nn.MultiheadAttention

MULTI_SHAPES = [(0, 4, 3, 1, 2), (1, 5, 4, 2, 2), (2, 6, 3, 4, 1), (3, 3, 5, 2, 3), (4, 8, 6, 4, 2)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seed, tokens, d_model, num_heads, head_dim", MULTI_SHAPES)
def test_every_multi_head_gradient_equals_autograds(seed, tokens, d_model, num_heads, head_dim, causal):
    inputs = multi_example(seed, tokens, d_model, num_heads, head_dim)
    trace = multi_head_backward_trace(*inputs, num_heads, causal=causal)
    reference = autograd_multi(*inputs, num_heads, causal)
    torch.testing.assert_close(trace.head_outputs, reference["head_outputs"], **TOL)
    assert_matches(trace, reference, MULTI_GRADIENTS)
    assert trace.d_scores.shape == (num_heads, tokens, tokens) and trace.row_dot.shape == (num_heads, tokens)
    assert trace.d_w_query_heads.shape == (num_heads, d_model, head_dim)
    assert trace.scale == pytest.approx(1 / math.sqrt(head_dim))  # per head, not 1 / sqrt(d_out)


@settings(max_examples=40, deadline=None)
@given(tokens=st.integers(1, 8), d_model=st.integers(1, 6), num_heads=st.sampled_from([1, 2, 4]),
       head_dim=st.integers(1, 3), seed=st.integers(0, 10_000), spread=st.sampled_from([0.25, 0.5, 1.0]),
       causal=st.booleans())
def test_multi_head_gradients_equal_autograds_on_random_inputs(tokens, d_model, num_heads, head_dim, seed, spread,
                                                               causal):
    inputs = multi_example(seed, tokens, d_model, num_heads, head_dim, spread)
    trace = multi_head_backward_trace(*inputs, num_heads, causal=causal)
    assert_matches(trace, autograd_multi(*inputs, num_heads, causal), MULTI_GRADIENTS)
    assert_no_nan(trace)


@pytest.mark.parametrize("num_heads, causal", [(1, False), (2, True), (4, False), (4, True)])
def test_multi_head_gradients_equal_those_of_torch_multihead_attention(num_heads, causal):
    d_out = 8
    x, w_query, w_key, w_value, w_out, b_out, target = multi_example(11 + num_heads, 5, d_out, num_heads,
                                                                            d_out // num_heads)
    trace = multi_head_backward_trace(x, w_query, w_key, w_value, w_out, b_out, target, num_heads, causal=causal)

    mha = nn.MultiheadAttention(d_out, num_heads, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w_query.T, w_key.T, w_value.T]))  # nn.Linear stores Wᵀ
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(w_out.T)
        mha.out_proj.bias.copy_(b_out)
    x_ = x.clone().requires_grad_()
    output, _ = mha(x_[None], x_[None], x_[None], attn_mask=blocked(5) if causal else None, need_weights=False)
    (0.5 * ((output[0] - target) ** 2).sum()).backward()

    torch.testing.assert_close(trace.output, output[0].detach(), **TOL)
    d_in_proj = torch.cat([trace.d_w_query.T, trace.d_w_key.T, trace.d_w_value.T])
    torch.testing.assert_close(d_in_proj, mha.in_proj_weight.grad, **TOL)
    torch.testing.assert_close(trace.d_w_out.T, mha.out_proj.weight.grad, **TOL)
    torch.testing.assert_close(trace.d_b_out, mha.out_proj.bias.grad, **TOL)
    torch.testing.assert_close(trace.d_x, x_.grad, **TOL)


@pytest.mark.parametrize("causal", [False, True])
def test_one_head_with_identity_output_projection_is_the_single_head_pass(causal):
    x, w_query, w_key, w_value, _, _, target = multi_example(3, 5, 4, 1, 3)
    multi = multi_head_backward_trace(x, w_query, w_key, w_value, torch.eye(3), torch.zeros(3), target, 1,
                                      causal=causal)
    single = backward_trace(x, w_query, w_key, w_value, target, causal=causal)
    for name in ("d_w_query", "d_w_key", "d_w_value", "d_x", "d_query", "d_key", "d_value"):
        torch.testing.assert_close(getattr(multi, name), getattr(single, name), **TOL)
    torch.testing.assert_close(multi.d_scores[0], single.d_scores, **TOL)
    torch.testing.assert_close(multi.d_b_out, single.d_output.sum(dim=0), **TOL)
    assert multi.loss == pytest.approx(single.loss, rel=1e-6)


def test_each_heads_weight_gradients_are_its_columns_of_the_whole():
    x, w_query, w_key, w_value, w_out, b_out, target = multi_example(9, 6, 4, 4, 2)
    trace = multi_head_backward_trace(x, w_query, w_key, w_value, w_out, b_out, target, 4, causal=True)
    for r in range(4):
        columns = slice(2 * r, 2 * r + 2)
        assert torch.equal(trace.d_w_query[:, columns], trace.d_w_query_heads[r])
        assert torch.equal(trace.d_w_value[:, columns], trace.d_w_value_heads[r])
        assert torch.equal(trace.d_head_outputs[r], trace.d_concat[:, columns])
        torch.testing.assert_close(trace.d_w_key_heads[r], x.T @ trace.d_key[:, columns], **TOL)


# ---------------------------------------------------------------- the softmax Jacobian and FlashAttention's shortcut


def test_softmax_jacobian_equals_autograds_jacobian_of_softmax():
    scores = torch.tensor([0.3, -1.2, 2.0, 0.0])
    weights = torch.softmax(scores, dim=0)
    jacobian = softmax_jacobian(weights)
    expected = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, dim=0), scores)
    torch.testing.assert_close(jacobian, expected, rtol=1e-6, atol=1e-7)
    assert torch.equal(jacobian, jacobian.T)
    torch.testing.assert_close(jacobian.sum(dim=1), torch.zeros(4), rtol=0, atol=1e-7)
    # A blocked key (p = 0) has its row and column all 0.
    masked = softmax_jacobian(torch.tensor([0.25, 0.75, 0.0]))
    assert (masked[2] == 0).all() and (masked[:, 2] == 0).all()
    torch.testing.assert_close(masked[:2, :2], torch.tensor([[0.1875, -0.1875], [-0.1875, 0.1875]]))


@pytest.mark.parametrize("causal", [False, True])
def test_jacobian_times_d_weights_is_the_traces_row_of_d_scores(causal):
    trace = backward_trace(*single_example(4, 6, 3, 2, 3), causal=causal)
    for row in range(6):
        check = jacobian_row(trace, row)
        torch.testing.assert_close(check.product, trace.d_scores[row], rtol=1e-5, atol=1e-6)
        assert check.max_difference < 1e-6
        assert torch.equal(check.d_weights_row, trace.d_weights[row])
        assert check.jacobian.shape == (6, 6)
        if causal:
            assert (check.product[row + 1:] == 0).all()
    assert (trace.d_scores.abs().sum(dim=1) > 0).sum() >= 5  # not a vacuous comparison of zeros


@settings(max_examples=40, deadline=None)
@given(tokens=st.integers(1, 8), d_model=st.integers(1, 6), d_k=st.integers(1, 4), d_v=st.integers(1, 4),
       seed=st.integers(0, 10_000), causal=st.booleans())
def test_flash_attentions_row_dot_equals_the_jacobian_form(tokens, d_model, d_k, d_v, seed, causal):
    trace = backward_trace(*single_example(seed, tokens, d_model, d_k, d_v), causal=causal)
    row_dot, d_scores = flash_shortcut(trace)
    assert row_dot.shape == (tokens,) and d_scores.shape == (tokens, tokens)
    expected_row_dot = (trace.weights * trace.d_weights).sum(dim=-1)  # Σ_j P_ij dP_ij, written out again
    torch.testing.assert_close(row_dot, expected_row_dot, **TOL)
    torch.testing.assert_close(trace.row_dot, expected_row_dot, **TOL)
    torch.testing.assert_close(d_scores, trace.d_scores, **TOL)
    if causal:
        assert (d_scores[blocked(tokens)] == 0).all()


def test_flash_identity_holds_per_head():
    trace = multi_head_backward_trace(*multi_example(5, 6, 4, 2, 3), 2, causal=True)
    torch.testing.assert_close((trace.d_head_outputs * trace.head_outputs).sum(dim=-1), trace.row_dot, **TOL)
    assert trace.row_dot.abs().max() > 1e-3


# ---------------------------------------------------------------- finite differences (float64)

#: x, W_q, W_k, W_v with entries in [-1, 1] and a target far from the output (entries in [-4, 4]).
FD_EXAMPLE = [*single_example(21, 5, 3, 2, 2)[:4], *draw(121, (5, 2), spread=4.0)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("which", ["w_query", "w_key", "w_value"])
def test_a_nudged_weight_changes_the_loss_as_its_gradient_predicts(which, causal):
    """Every entry, relative tolerance 2e-3 at ε = 1e-3 in float64.

    The forward difference's own error is ½ ε² ∂²L/∂w², relatively ε ∂²L/∂w² / (2 dW): on this example 2e-6 to
    1.5e-3 (the largest for W_k's entries, whose gradients are small, 0.06); a wrong dW fails by far more.
    """
    gradients = getattr(backward_trace(*FD_EXAMPLE, causal=causal), f"d_{which}")
    rows, cols = gradients.shape
    for row in range(rows):
        for col in range(cols):
            result = finite_difference(*FD_EXAMPLE, causal, which, row, col, eps=1e-3)
            assert abs(result.actual_change) > 1e-5, (row, col)  # a real change, not 0 ≈ 0
            assert result.predicted_change == pytest.approx(result.actual_change, rel=2e-3), (row, col)
            assert result.actual_change == result.loss_after - result.loss_before
            assert result.predicted_change == pytest.approx(1e-3 * float(gradients[row, col]), rel=1e-4)
    reference = backward_trace(*(t.double() for t in FD_EXAMPLE), causal=causal)
    assert result.loss_before == reference.loss  # computed in float64: not float32's loss
    assert result.loss_before != backward_trace(*FD_EXAMPLE, causal=causal).loss


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("which", ["w_query", "w_key", "w_value"])
def test_the_finite_difference_error_is_second_order(which, causal):
    """With the exact gradient the discrepancy shrinks like ε²: 100-fold for a 10-fold smaller ε (exactly so for
    W_v, on which L is quadratic). A gradient off by δ would leave ε δ, shrinking only 10-fold."""
    for row in range(3):
        for col in range(2):
            errors = [abs(r.predicted_change - r.actual_change)
                      for r in (finite_difference(*FD_EXAMPLE, causal, which, row, col, eps=eps)
                                for eps in (1e-2, 1e-3))]
            assert 80 < errors[0] / errors[1] < 125, (row, col)


# ---------------------------------------------------------------- a gradient step


def test_a_small_gradient_step_lowers_the_loss():
    trace = backward_trace(*single_example(2, 5, 4, 3, 2), causal=True)
    step = gradient_step(trace, 0.05)
    assert step.loss_after < step.loss_before == trace.loss
    assert step.loss_after == step.after.loss
    torch.testing.assert_close(step.after.w_query, trace.w_query - 0.05 * trace.d_w_query)
    torch.testing.assert_close(step.after.w_value, trace.w_value - 0.05 * trace.d_w_value)
    assert torch.equal(step.weights_change, torch.sign(step.weights_after - step.weights_before).to(torch.int8))
    assert (step.weights_change[blocked(5)] == 0).all()  # blocked weights stay 0
    assert (step.weights_change == 1).any() and (step.weights_change == -1).any()
    # First order: the loss drops by about η ‖dW‖².
    squared = sum(float((g * g).sum()) for g in (trace.d_w_query, trace.d_w_key, trace.d_w_value))
    assert step.loss_before - step.loss_after == pytest.approx(0.05 * squared, rel=0.3)


@pytest.mark.parametrize("causal", [False, True])
def test_a_target_copying_token_js_value_into_row_i_raises_weight_p_ij(causal):
    """Row i's target is v_j, every other row's target its current output: the step moves P_ij up."""
    x, w_query, w_key, w_value, _ = single_example(13, 5, 4, 3, 3)
    i, j = 4, 1
    start = backward_trace(x, w_query, w_key, w_value, torch.zeros(5, 3), causal=causal)
    target = start.output.clone()
    target[i] = start.value[j]
    trace = backward_trace(x, w_query, w_key, w_value, target, causal=causal)
    assert trace.d_output[:i].abs().max() == 0  # only row i is wrong
    assert trace.d_scores[i, j] < 0  # descent raises the score S_ij ...
    step = gradient_step(trace, 0.1)
    assert step.loss_after < step.loss_before
    assert step.weights_after[i, j] > step.weights_before[i, j]  # ... and so the weight P_ij
    assert step.weights_change[i, j] == 1


# ---------------------------------------------------------------- bad inputs


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), 1e7, -1e7])
def test_a_bad_target_value_is_refused(bad):
    x, w_query, w_key, w_value, target = single_example(0, 3, 2, 2, 2)
    target[1, 0] = bad
    with pytest.raises(InputError) as error:
        backward_trace(x, w_query, w_key, w_value, target)
    assert error.value.field == "backward.target"
    assert "row 2, column 1" in str(error.value)
    assert ("NaN" if math.isnan(bad) else "between") in str(error.value)
    multi = multi_example(0, 3, 2, 2, 1)
    multi[-1][0, 1] = bad
    with pytest.raises(InputError) as error:
        multi_head_backward_trace(*multi, 2)
    assert error.value.field == "backward.target"


def test_a_target_of_the_largest_allowed_size_is_accepted():
    x, w_query, w_key, w_value, target = single_example(0, 3, 2, 2, 2)
    target[0, 0] = -1e6
    assert backward_trace(x, w_query, w_key, w_value, target).loss > 1e11


@pytest.mark.parametrize("shape", [(3, 3), (2, 2), (3,), (4, 2)])
def test_a_target_of_the_wrong_shape_names_both_shapes(shape):
    x, w_query, w_key, w_value, _ = single_example(0, 3, 2, 2, 2)
    with pytest.raises(InputError) as error:
        backward_trace(x, w_query, w_key, w_value, torch.zeros(shape))
    assert error.value.field == "backward.target"
    assert str(shape) in str(error.value) and "(3, 2)" in str(error.value)
    with pytest.raises(InputError) as error:
        multi_head_backward_trace(*multi_example(0, 3, 2, 2, 1)[:-1], torch.zeros(shape), 2)
    assert error.value.field == "backward.target" and str(shape) in str(error.value)


@pytest.mark.parametrize("rate", [0, 0.0, -0.1, -5, float("nan"), float("inf"), 11, 10.5, "0.1", None, True])
def test_a_bad_learning_rate_is_refused(rate):
    trace = backward_trace(*single_example(0, 3, 2, 2, 2))
    with pytest.raises(InputError) as error:
        gradient_step(trace, rate)
    assert error.value.field == "backward.learning_rate"
    assert "at most 10" in str(error.value)


def test_the_learning_rate_may_be_exactly_the_maximum():
    trace = backward_trace(*single_example(0, 3, 2, 2, 2))
    assert gradient_step(trace, MAX_BACKWARD_LEARNING_RATE).learning_rate == 10.0


@pytest.mark.parametrize("kwargs, field", [
    (dict(which="w_out", row=0, col=0), "backward.which"),
    (dict(which="w_query", row=5, col=0), "backward.entry"),
    (dict(which="w_value", row=0, col=-1), "backward.entry"),
    (dict(which="w_key", row=0, col=0, eps=0.0), "backward.eps"),
    (dict(which="w_key", row=0, col=0, eps=float("nan")), "backward.eps"),
])
def test_finite_difference_refuses_what_it_cannot_nudge(kwargs, field):
    with pytest.raises(InputError) as error:
        finite_difference(*FD_EXAMPLE, False, **kwargs)
    assert error.value.field == field


def test_wrong_widths_and_head_counts_are_refused_with_their_field():
    x, w_query, w_key, w_value, target = single_example(0, 3, 2, 2, 2)
    with pytest.raises(InputError) as error:
        backward_trace(x[0], w_query, w_key, w_value, target)
    assert error.value.field == "x"
    with pytest.raises(InputError) as error:
        backward_trace(x, w_query[:1], w_key, w_value, target)
    assert error.value.field == "d_model"
    with pytest.raises(InputError) as error:
        multi_head_backward_trace(*multi_example(0, 3, 2, 2, 3), 4)  # d_out = 6 is not a multiple of 4
    assert error.value.field == "num_heads"
    multi = multi_example(0, 3, 2, 2, 1)
    multi[5] = torch.zeros(3)
    with pytest.raises(InputError) as error:
        multi_head_backward_trace(*multi, 2)
    assert error.value.field == "W_O"


def test_the_traces_are_frozen():
    trace = backward_trace(*single_example(0, 3, 2, 2, 2))
    multi = multi_head_backward_trace(*multi_example(0, 3, 2, 2, 1), 2)
    assert isinstance(trace, BackwardTrace) and isinstance(multi, MultiHeadBackwardTrace)
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.loss = 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        multi.loss = 0.0


def test_the_jacobian_helpers_refuse_a_row_that_is_not_there():
    trace = backward_trace(*single_example(0, 3, 2, 2, 2))
    for row in (3, -1, 1.0, True):
        with pytest.raises(InputError) as error:
            jacobian_row(trace, row)
        assert error.value.field == "backward.row"
    with pytest.raises(InputError) as error:
        softmax_jacobian(trace.weights)  # a whole (T, T) table, not one row
    assert error.value.field == "backward.row"


def test_several_steps_are_the_one_step_repeated_and_attention_visibly_moves():
    """descend: step k + 1 starts from the weights step k left, with the same η; twenty steps of η = 0.01 on the
    default example lower the loss every step and move P by ~0.1 where one step moved it by ~1e-5."""
    from attention_core.backward.gradients import descend, gradient_step
    from attention_core.backward.multi_head_gradients import multi_head_gradient_step
    from attention_core.settings import Settings

    walk = BACKWARD.walkthrough(Settings())
    assert walk.descent.steps == 20 and walk.descent.losses[:2] == (walk.step.loss_before, walk.step.loss_after)
    trace, losses = walk.trace, [walk.trace.loss]
    for _ in range(20):  # by hand: the same update, 20 times
        trace = backward_trace(trace.x, trace.w_query - 0.01 * trace.d_w_query, trace.w_key - 0.01 * trace.d_w_key,
                               trace.w_value - 0.01 * trace.d_w_value, trace.target, causal=trace.causal)
        losses.append(trace.loss)
    assert walk.descent.losses == pytest.approx(losses, rel=1e-5)
    torch.testing.assert_close(walk.descent.weights_after, trace.weights, rtol=1e-5, atol=1e-6)
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert float((walk.step.weights_after - walk.step.weights_before).abs().max()) < 1e-3 < 0.05 < (
        walk.descent.largest_change)
    assert descend(walk.step, 10 ** 6, gradient_step).steps == MAX_BACKWARD_STEPS and descend(walk.step, 0, gradient_step).steps == 1
    multi = BACKWARD_MULTI_HEAD.walkthrough(Settings())
    assert multi.descent.weights_after.shape == multi.step.weights_after.shape  # (h, T, T)
    again = descend(multi.step, 3, multi_head_gradient_step)
    assert again.losses == multi.descent.losses[:4]
