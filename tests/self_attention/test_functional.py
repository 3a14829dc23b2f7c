"""functional.scaled_dot_product_attention / self_attention / attention_without_weights.

Checked against torch.nn.functional.scaled_dot_product_attention over many
shapes (batch dims, m queries != n keys as in seed 002, d_k != d_v), against a
naive loop reference in the style of rasbt/LLMs-from-scratch ch03, and
against the trace's own documented invariants.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core.errors import InputError
from attention_core.self_attention.functional import (
    attention_without_weights,
    scaled_dot_product_attention,
    self_attention,
)

FAST = settings(max_examples=50, deadline=None)

# rasbt/LLMs-from-scratch ch03 inputs ("Your journey starts with one step"), quoted by seed 004.
JOURNEY = torch.tensor(
    [
        [0.43, 0.15, 0.89],
        [0.55, 0.87, 0.66],
        [0.57, 0.85, 0.64],
        [0.22, 0.58, 0.33],
        [0.77, 0.25, 0.10],
        [0.05, 0.80, 0.55],
    ]
)


# --------------------------------------------------------------------------- strategies


@st.composite
def attention_inputs(draw, *, with_mask: bool = False, allow_blocked_rows: bool = False):
    """(q, k, v, mask) with random batch dims, m != n allowed, d_k != d_v allowed."""
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    m = draw(st.integers(1, 6))
    n = draw(st.integers(1, 6))
    d_k = draw(st.integers(1, 8))
    d_v = draw(st.integers(1, 8))
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    # float32 agrees with torch to 1e-5 only while the scores stay moderate.
    spread = draw(st.sampled_from([0.1, 1.0] if dtype == torch.float32 else [0.1, 1.0, 4.0]))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    q = torch.randn(*batch, m, d_k, generator=g, dtype=dtype) * spread
    k = torch.randn(*batch, n, d_k, generator=g, dtype=dtype) * spread
    v = torch.randn(*batch, n, d_v, generator=g, dtype=dtype) * spread
    mask = None
    if with_mask:
        # Either a full (..., m, n) mask or one (m, n) mask broadcast over the batch.
        mask_shape = (*batch, m, n) if draw(st.booleans()) else (m, n)
        mask = torch.rand(mask_shape, generator=g) < draw(st.sampled_from([0.3, 0.6, 0.9]))
        if not allow_blocked_rows:
            # Open one random key in every row so no row is fully blocked.
            cols = torch.randint(0, n, mask_shape[:-1], generator=g)
            mask.scatter_(-1, cols.unsqueeze(-1), True)
    return q, k, v, mask


# --------------------------------------------------------------------------- against torch


@FAST
@given(attention_inputs())
def test_output_equals_torch_without_mask(inputs):
    q, k, v, _ = inputs
    trace = scaled_dot_product_attention(q, k, v)
    expected = F.scaled_dot_product_attention(q, k, v)
    assert trace.output.shape == (*q.shape[:-1], v.shape[-1])
    torch.testing.assert_close(trace.output, expected, atol=1e-5, rtol=1e-5)
    assert trace.scale == pytest.approx(1 / math.sqrt(q.shape[-1]))
    assert trace.attn_mask is None
    assert not trace.blocked_rows.any()
    assert trace.blocked_rows.shape == q.shape[:-1]


@FAST
@given(attention_inputs(with_mask=True))
def test_output_equals_torch_with_bool_mask(inputs):
    q, k, v, mask = inputs
    trace = scaled_dot_product_attention(q, k, v, attn_mask=mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(trace.output, expected, atol=1e-5, rtol=1e-5)
    full_mask = mask.expand(trace.scores.shape)
    assert torch.equal(trace.attn_mask, full_mask)
    # Blocked entries get exactly zero weight and -inf masked scores.
    assert torch.all(trace.weights[~full_mask] == 0)
    assert torch.all(trace.masked_scores[~full_mask] == float("-inf"))
    torch.testing.assert_close(trace.masked_scores[full_mask], trace.scaled_scores[full_mask])
    assert not trace.blocked_rows.any()


@FAST
@given(attention_inputs(with_mask=True), st.floats(0.0, 3.0))
def test_custom_scale_equals_torch(inputs, scale):
    q, k, v, mask = inputs
    trace = scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    torch.testing.assert_close(trace.output, expected, atol=1e-5, rtol=1e-5)
    assert trace.scale == scale


def test_seed002_m_queries_against_n_keys():
    """Seed 002: Q (m x d_k), K (n x d_k), V (n x d_v) with m != n and d_k != d_v."""
    g = torch.Generator().manual_seed(2)
    q, k, v = torch.randn(2, 5, generator=g), torch.randn(7, 5, generator=g), torch.randn(7, 3, generator=g)
    trace = scaled_dot_product_attention(q, k, v)
    assert trace.scores.shape == (2, 7)
    assert trace.weights.shape == (2, 7)
    assert trace.output.shape == (2, 3)
    torch.testing.assert_close(trace.output, F.scaled_dot_product_attention(q, k, v), atol=1e-6, rtol=1e-6)


# --------------------------------------------------------------------------- trace invariants


@FAST
@given(attention_inputs(with_mask=True), st.one_of(st.none(), st.floats(0.01, 2.0)))
def test_trace_invariants(inputs, scale):
    q, k, v, mask = inputs
    trace = scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    expected_scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    assert trace.scale == pytest.approx(expected_scale, rel=1e-12)
    # scores = Q Kᵀ, computed independently with einsum.
    torch.testing.assert_close(trace.scores, torch.einsum("...id,...jd->...ij", q, k))
    torch.testing.assert_close(trace.scaled_scores, trace.scores * expected_scale, rtol=1e-6, atol=1e-7)
    rows = trace.weights.sum(dim=-1)
    torch.testing.assert_close(rows, torch.ones_like(rows), atol=1e-5, rtol=0)
    assert torch.all(trace.weights >= 0)
    assert trace.dropout_mask is None and trace.dropout_p == 0.0
    assert torch.equal(trace.dropped_weights, trace.weights)
    torch.testing.assert_close(trace.output, torch.einsum("...ij,...jd->...id", trace.weights, v))
    assert trace.query is q and trace.key is k and trace.value is v


@FAST
@given(attention_inputs(with_mask=True, allow_blocked_rows=True))
def test_fully_blocked_rows_give_zero_weights_not_nan(inputs):
    q, k, v, mask = inputs
    trace = scaled_dot_product_attention(q, k, v, attn_mask=mask)
    full = mask.expand(trace.scores.shape)
    blocked = ~full.any(dim=-1)
    assert torch.equal(trace.blocked_rows, blocked)
    assert not torch.isnan(trace.weights).any()
    assert not torch.isnan(trace.output).any()
    assert torch.all(trace.weights[blocked] == 0)
    assert torch.all(trace.output[blocked] == 0)
    open_rows = ~blocked
    sums = trace.weights.sum(dim=-1)[open_rows]
    torch.testing.assert_close(sums, torch.ones_like(sums), atol=1e-5, rtol=0)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(trace.output[open_rows], expected[open_rows], atol=1e-5, rtol=1e-5)


def test_fully_blocked_row_example():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    v = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    mask = torch.tensor([[True, False, True], [False, False, False], [True, True, True]])
    trace = scaled_dot_product_attention(q, q, v, attn_mask=mask)
    assert trace.blocked_rows.tolist() == [False, True, False]
    assert trace.weights[1].tolist() == [0.0, 0.0, 0.0]
    assert trace.output[1].tolist() == [0.0, 0.0]
    assert trace.weights[0, 1] == 0.0
    # Row 0 sees keys 0 and 2 only: scores q0·k0 = 1, q0·k2 = 1 -> equal weights.
    torch.testing.assert_close(trace.weights[0], torch.tensor([0.5, 0.0, 0.5]))
    torch.testing.assert_close(trace.output[0], torch.tensor([3.0, 4.0]))


def test_causal_mask_matches_seed001_masked_fill():
    """Seed 001 / 004: triu(ones, 1) marks the future; True in our mask = may attend."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 5, 4, generator=g)
    causal_block = torch.triu(torch.ones(5, 5), diagonal=1).bool()
    trace = scaled_dot_product_attention(x, x, x, attn_mask=~causal_block)
    scores = (x @ x.transpose(1, 2)).masked_fill(causal_block, -torch.inf)
    weights = torch.softmax(scores / 2.0, dim=-1)
    torch.testing.assert_close(trace.weights, weights)
    torch.testing.assert_close(trace.output, weights @ x)
    assert torch.all(trace.weights[:, 0, 1:] == 0)
    torch.testing.assert_close(trace.weights[:, 0, 0], torch.ones(2))


# --------------------------------------------------------------------------- dropout


def _dropout_case():
    g = torch.Generator().manual_seed(5)
    return (torch.randn(2, 6, 4, generator=g), torch.randn(2, 8, 4, generator=g), torch.randn(2, 8, 3, generator=g))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_scales_kept_weights(p):
    q, k, v = _dropout_case()
    trace = scaled_dot_product_attention(q, k, v, dropout_p=p, generator=torch.Generator().manual_seed(1))
    assert trace.dropout_p == p
    assert trace.dropout_mask.dtype == torch.bool
    assert trace.dropout_mask.shape == trace.weights.shape
    torch.testing.assert_close(trace.dropped_weights, trace.weights * trace.dropout_mask / (1 - p))
    torch.testing.assert_close(trace.output, trace.dropped_weights @ v)
    # The weights before dropout are still the plain softmax.
    torch.testing.assert_close(trace.weights, torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1))
    # With 96 entries, some are kept and some dropped.
    kept = trace.dropout_mask.float().mean().item()
    assert 0.0 < kept < 1.0


def test_dropout_same_seed_same_mask_and_other_seed_other_mask():
    q, k, v = _dropout_case()
    a = scaled_dot_product_attention(q, k, v, dropout_p=0.5, generator=torch.Generator().manual_seed(7))
    b = scaled_dot_product_attention(q, k, v, dropout_p=0.5, generator=torch.Generator().manual_seed(7))
    c = scaled_dot_product_attention(q, k, v, dropout_p=0.5, generator=torch.Generator().manual_seed(8))
    assert torch.equal(a.dropout_mask, b.dropout_mask)
    assert torch.equal(a.output, b.output)
    assert not torch.equal(a.dropout_mask, c.dropout_mask)


def test_dropout_mask_is_drawn_as_documented():
    """Kept = bernoulli(1 - p) draw, nn.Dropout's own call, from the given generator."""
    q, k, v = _dropout_case()
    trace = scaled_dot_product_attention(q, k, v, dropout_p=0.3, generator=torch.Generator().manual_seed(11))
    expected = torch.empty(trace.weights.shape).bernoulli_(0.7, generator=torch.Generator().manual_seed(11)).bool()
    assert torch.equal(trace.dropout_mask, expected)


@pytest.mark.parametrize("p, seed", [(0.5, 123), (0.1, 0), (0.8, 7)])
def test_dropout_mask_equals_nn_dropout_after_manual_seed(p, seed):
    """A generator seeded s gives nn.Dropout's mask after torch.manual_seed(s) (the global RNG, forked)."""
    q, k, v = _dropout_case()
    trace = scaled_dot_product_attention(q, k, v, dropout_p=p, generator=torch.Generator().manual_seed(seed))
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        dropped = torch.nn.Dropout(p).train()(trace.weights)
    torch.testing.assert_close(trace.dropped_weights, dropped)


def test_dropout_of_ones_reproduces_rasbt_printed_example():
    """rasbt/LLMs-from-scratch ch03 (seed 004): torch.manual_seed(123); nn.Dropout(0.5)(torch.ones(6, 6))."""
    printed = torch.tensor([[2., 2., 0., 2., 2., 0.], [0., 0., 0., 2., 0., 2.], [2., 2., 2., 2., 0., 2.],
                            [0., 2., 2., 0., 0., 2.], [0., 2., 0., 2., 0., 2.], [0., 2., 2., 2., 2., 0.]])
    mask = torch.empty(6, 6).bernoulli_(0.5, generator=torch.Generator().manual_seed(123)).bool()
    assert torch.equal(torch.ones(6, 6) * mask / 0.5, printed)


def test_dropout_zero_has_no_mask():
    q, k, v = _dropout_case()
    trace = scaled_dot_product_attention(q, k, v, dropout_p=0.0)
    assert trace.dropout_mask is None
    torch.testing.assert_close(trace.output, F.scaled_dot_product_attention(q, k, v))


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5, float("nan")])
def test_dropout_p_outside_unit_interval_raises(p):
    q, k, v = _dropout_case()
    with pytest.raises(InputError) as err:
        scaled_dot_product_attention(q, k, v, dropout_p=p)
    assert err.value.field == "dropout_p"
    assert "dropout_p" in err.value.message


# --------------------------------------------------------------------------- bad shapes


def test_mismatched_d_k_raises():
    with pytest.raises(InputError) as err:
        scaled_dot_product_attention(torch.randn(3, 4), torch.randn(5, 3), torch.randn(5, 2))
    assert err.value.field == "d_k"
    assert "d_k = 4" in err.value.message and "d_k = 3" in err.value.message


def test_mismatched_number_of_keys_and_values_raises():
    with pytest.raises(InputError) as err:
        scaled_dot_product_attention(torch.randn(3, 4), torch.randn(5, 4), torch.randn(6, 2))
    assert err.value.field == "value"
    assert "5 keys" in err.value.message and "6 values" in err.value.message


def test_non_bool_mask_raises():
    with pytest.raises(InputError) as err:
        scaled_dot_product_attention(torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2), attn_mask=torch.ones(3, 3))
    assert err.value.field == "attn_mask"


def test_self_attention_mismatched_d_model_raises():
    x = torch.randn(4, 3)
    good, bad = torch.randn(3, 2), torch.randn(5, 2)
    for args, name in (((bad, good, good), "W_q"), ((good, bad, good), "W_k"), ((good, good, bad), "W_v")):
        with pytest.raises(InputError) as err:
            self_attention(x, *args)
        assert err.value.field == "d_model"
        assert name in err.value.message


# --------------------------------------------------------------------------- naive loop reference


def naive_attention(q, k, v, scale):
    """rasbt ch03 style: torch.dot loops for the scores, explicit exp / sum softmax, loop weighted sum."""
    m, n, d_v = q.shape[0], k.shape[0], v.shape[1]
    scores = torch.empty(m, n, dtype=q.dtype)
    for i in range(m):
        for j in range(n):
            scores[i, j] = torch.dot(q[i], k[j])
    scaled = scores * scale
    exps = torch.exp(scaled)
    weights = exps / exps.sum(dim=-1, keepdim=True)
    context = torch.zeros(m, d_v, dtype=q.dtype)
    for i in range(m):
        for j in range(n):
            context[i] += weights[i, j] * v[j]
    return scores, weights, context


def test_naive_reference_on_rasbt_inputs_without_weights():
    """rasbt ch03 prints these for query x^(2) ("journey") and all context vectors."""
    scores, weights, context = naive_attention(JOURNEY, JOURNEY, JOURNEY, 1.0)
    trace = attention_without_weights(JOURNEY)
    torch.testing.assert_close(
        scores[1], torch.tensor([0.9544, 1.4950, 1.4754, 0.8434, 0.7070, 1.0865]), atol=1e-4, rtol=0
    )
    torch.testing.assert_close(
        weights[1], torch.tensor([0.1385, 0.2379, 0.2333, 0.1240, 0.1082, 0.1581]), atol=1e-4, rtol=0
    )
    torch.testing.assert_close(context[1], torch.tensor([0.4419, 0.6515, 0.5683]), atol=1e-4, rtol=0)
    torch.testing.assert_close(context[0], torch.tensor([0.4421, 0.5931, 0.5790]), atol=1e-4, rtol=0)
    torch.testing.assert_close(trace.scores, scores, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(trace.weights, weights, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(trace.output, context, atol=1e-6, rtol=1e-6)
    assert trace.scale == 1.0


@FAST
@given(
    st.integers(1, 6), st.integers(1, 6), st.integers(1, 5), st.integers(1, 5), st.integers(0, 2**32 - 1),
    st.sampled_from([None, 1.0, 0.25]),
)
def test_naive_reference_agrees_with_matrix_trace(m, n, d_k, d_v, seed, scale):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(m, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(n, d_k, generator=g, dtype=torch.float64)
    v = torch.randn(n, d_v, generator=g, dtype=torch.float64)
    trace = scaled_dot_product_attention(q, k, v, scale=scale)
    scores, weights, context = naive_attention(q, k, v, 1 / math.sqrt(d_k) if scale is None else scale)
    torch.testing.assert_close(trace.scores, scores)
    torch.testing.assert_close(trace.weights, weights)
    torch.testing.assert_close(trace.output, context)


# --------------------------------------------------------------------------- self_attention


def test_self_attention_projections_and_biases():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 5, 4, generator=g)
    wq, wk, wv = torch.randn(4, 3, generator=g), torch.randn(4, 3, generator=g), torch.randn(4, 2, generator=g)
    bq, bk, bv = torch.randn(3, generator=g), torch.randn(3, generator=g), torch.randn(2, generator=g)
    trace = self_attention(x, wq, wk, wv, b_query=bq, b_key=bk, b_value=bv)
    q, k, v = x @ wq + bq, x @ wk + bk, x @ wv + bv
    torch.testing.assert_close(trace.attention.query, q)
    torch.testing.assert_close(trace.attention.key, k)
    torch.testing.assert_close(trace.attention.value, v)
    torch.testing.assert_close(trace.output, F.scaled_dot_product_attention(q, k, v))
    assert trace.output is trace.attention.output
    assert trace.output.shape == (2, 5, 2)


def test_self_attention_passes_mask_and_scale_through():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(4, 3, generator=g)
    w = torch.randn(3, 3, generator=g)
    mask = torch.tril(torch.ones(4, 4)).bool()
    trace = self_attention(x, w, w, w, attn_mask=mask, scale=0.5)
    q = x @ w
    torch.testing.assert_close(trace.output, F.scaled_dot_product_attention(q, q, q, attn_mask=mask, scale=0.5))
    assert trace.attention.scale == 0.5


def test_attention_without_weights_hello_shiny_sun():
    """Seed 004: Q = K = V = X, unscaled dot products."""
    x = torch.tensor([[0.34, 0.22, 0.54], [0.53, 0.34, 0.98], [0.29, 0.54, 0.93]])
    trace = attention_without_weights(x)
    # shiny · (Hello, shiny, sun), by hand.
    assert trace.scores[1].tolist() == pytest.approx([0.7842, 1.3569, 1.2487], abs=1e-5)
    torch.testing.assert_close(trace.output, F.scaled_dot_product_attention(x, x, x, scale=1.0))
