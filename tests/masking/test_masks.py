"""Tests of attention_core.masks: conventions, errors, and the two masking routes."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attention_core.errors import InputError
from attention_core.masks import (
    additive_mask,
    causal_mask,
    combine_masks,
    key_padding_mask,
    mask_after_softmax,
)
from attention_core.self_attention.functional import scaled_dot_product_attention


def test_causal_mask_is_lower_triangle():
    expected = torch.tensor(
        [[True, False, False], [True, True, False], [True, True, True]]
    )
    assert torch.equal(causal_mask(3), expected)
    assert causal_mask(3).dtype == torch.bool


def test_causal_mask_is_the_flipped_seed_buffer():
    buffer = torch.triu(torch.ones(6, 6), diagonal=1)  # seed 001: 1 = future (blocked)
    assert torch.equal(causal_mask(4), ~buffer.bool()[:4, :4])


@pytest.mark.parametrize("m,n", [(1, 1), (2, 5), (5, 2), (4, 4)])
def test_causal_mask_matches_sdpa_is_causal(m, n):
    g = torch.Generator().manual_seed(m * 10 + n)
    q, k, v = (torch.randn(2, t, 3, generator=g) for t in (m, n, n))
    mask = causal_mask(n, m)
    assert mask.shape == (m, n)
    ours = scaled_dot_product_attention(q, k, v, attn_mask=mask).output
    theirs = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.allclose(ours, theirs, atol=1e-6)


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "3"])
def test_causal_mask_rejects_bad_sizes(bad):
    with pytest.raises(InputError):
        causal_mask(bad)
    with pytest.raises(InputError):
        causal_mask(3, bad)


def test_key_padding_mask_from_lengths_and_from_flags():
    mask = key_padding_mask([2, 4, 0], 4)
    assert mask.shape == (3, 1, 4) and mask.dtype == torch.bool
    assert mask[:, 0].tolist() == [
        [True, True, False, False],
        [True, True, True, True],
        [False, False, False, False],
    ]
    pad = ~mask[:, 0]
    assert torch.equal(key_padding_mask(pad), mask)
    assert torch.equal(key_padding_mask(torch.tensor([2, 4, 0]), 4), mask)
    assert key_padding_mask([1, 3]).shape == (2, 1, 3)  # n defaults to the longest


@pytest.mark.parametrize(
    "args",
    [([], None), ([1, 5], 4), ([-1], 3), ([1.5], 3), ([1], 0), (torch.tensor([1.0]), 3),
     (torch.zeros(3, dtype=torch.bool), None), (torch.zeros(2, 3, dtype=torch.bool), 4), (5, None)],
)
def test_key_padding_mask_rejects_bad_args(args):
    with pytest.raises(InputError):
        key_padding_mask(*args)


def test_combine_masks_is_and_with_broadcast():
    combined = combine_masks(causal_mask(4), None, key_padding_mask([4, 2], 4))
    assert combined.shape == (2, 4, 4)
    assert torch.equal(combined[0], causal_mask(4))
    assert combined[1].tolist() == [
        [True, False, False, False],
        [True, True, False, False],
        [True, True, False, False],
        [True, True, False, False],
    ]
    assert combine_masks() is None and combine_masks(None) is None
    with pytest.raises(InputError):
        combine_masks(causal_mask(3), causal_mask(4))
    with pytest.raises(InputError):
        combine_masks(torch.ones(3, 3))


def test_combined_padding_mask_matches_sdpa():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 5, 4, generator=g) for _ in range(3))
    mask = combine_masks(causal_mask(5), key_padding_mask([5, 3], 5))
    ours = scaled_dot_product_attention(q, k, v, attn_mask=mask).output
    assert torch.allclose(ours, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-6)


def test_additive_mask_is_zero_or_minus_inf_never_nan():
    mask = causal_mask(3)
    added = additive_mask(mask)
    assert not torch.isnan(added).any()
    assert torch.equal(added == float("-inf"), ~mask) and torch.equal(added == 0, mask)
    scores = torch.randn(3, 3)
    assert torch.allclose(torch.softmax(scores + added, -1),
                          torch.softmax(scores.masked_fill(~mask, float("-inf")), -1))
    # Seed 004's one-liner for the same mask multiplies 0 by -inf: NaN.
    assert torch.isnan(torch.triu(torch.ones(3, 3), diagonal=1) * float("-inf")).any()
    with pytest.raises(InputError):
        additive_mask(torch.zeros(2, 2))


@settings(max_examples=40, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), max_size=2),
    m=st.integers(1, 6),
    n=st.integers(1, 6),
    kind=st.sampled_from(["causal", "random"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_mask_after_softmax_equals_minus_inf_route(batch, m, n, kind, seed):
    g = torch.Generator().manual_seed(seed)
    scaled = torch.randn(*batch, m, n, generator=g) * 3
    mask = causal_mask(n, m) if kind == "causal" else torch.rand(*batch, m, n, generator=g) < 0.6
    # The -inf route of functional.scaled_dot_product_attention: with K = I and
    # scale 1 its scaled scores are exactly `scaled`.
    route = scaled_dot_product_attention(
        scaled, torch.eye(n), torch.zeros(n, 1), attn_mask=mask, scale=1.0
    )
    assert torch.equal(route.scaled_scores, scaled)
    trace = mask_after_softmax(scaled, mask)
    assert not torch.isnan(trace.weights).any()
    assert torch.allclose(trace.weights, route.weights, atol=1e-6)
    assert torch.equal(trace.blocked_rows, route.blocked_rows)
    blocked = trace.blocked_rows
    assert not trace.underflow_rows.any()
    assert torch.allclose(trace.unmasked_weights.sum(-1), torch.ones(()), atol=1e-5)
    sums = trace.weights.sum(-1)
    assert torch.allclose(sums[~blocked], torch.ones(()), atol=1e-5)
    assert torch.all(sums[blocked] == 0)


def test_mask_after_softmax_on_the_causal_example():
    """The rasbt ch03 route: softmax over all keys, zero the future, divide by row sums."""
    scores = torch.tensor([[0.2, 1.0, 3.0], [0.5, -0.5, 2.0], [1.0, 1.0, 1.0]])
    trace = mask_after_softmax(scores, causal_mask(3))
    assert trace.weights[0].tolist() == [1.0, 0.0, 0.0]
    e0, e1 = math.exp(0.5), math.exp(-0.5)
    assert trace.weights[1, :2].tolist() == pytest.approx([e0 / (e0 + e1), e1 / (e0 + e1)], abs=1e-6)
    assert trace.weights[2].tolist() == pytest.approx([1 / 3] * 3, abs=1e-6)
    assert trace.row_sums.shape == (3, 1)


def test_mask_after_softmax_flags_underflow():
    # The future key's score is so large that the allowed weight rounds to 0 in float32.
    scores = torch.tensor([[0.0, 200.0]])
    trace = mask_after_softmax(scores, causal_mask(2, 1))
    assert trace.underflow_rows.tolist() == [True]
    assert trace.weights.tolist() == [[0.0, 0.0]]
    # The -inf route has no such problem.
    assert torch.softmax(scores.masked_fill(~causal_mask(2, 1), float("-inf")), -1).tolist() == [[1.0, 0.0]]


def test_mask_after_softmax_rejects_bad_masks():
    with pytest.raises(InputError):
        mask_after_softmax(torch.zeros(3, 3), torch.ones(3, 3))
    with pytest.raises(InputError):
        mask_after_softmax(torch.zeros(3, 3), causal_mask(4))
