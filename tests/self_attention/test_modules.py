"""modules.SelfAttentionV1 / SelfAttentionV2: the seed articles' printed numbers, and trace == forward.

The printed outputs are rasbt/LLMs-from-scratch ch03's, which seed 001 and
seed 004 (004_56c592a3d25bc184.txt) reproduce: ``torch.manual_seed(123)``
then ``SelfAttention_v1(3, 2)``, and ``torch.manual_seed(789)`` then
``SelfAttention_v2(3, 2)``, on the six "Your journey starts with one step" inputs.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attention_core.self_attention.modules import SelfAttentionV1, SelfAttentionV2

JOURNEY = torch.tensor(
    [
        [0.43, 0.15, 0.89],  # Your
        [0.55, 0.87, 0.66],  # journey
        [0.57, 0.85, 0.64],  # starts
        [0.22, 0.58, 0.33],  # with
        [0.77, 0.25, 0.10],  # one
        [0.05, 0.80, 0.55],  # step
    ]
)

V1_PRINTED = torch.tensor(
    [[0.2996, 0.8053], [0.3061, 0.8210], [0.3058, 0.8203], [0.2948, 0.7939], [0.2927, 0.7891], [0.2990, 0.8040]]
)
V2_PRINTED = torch.tensor(
    [
        [-0.0739, 0.0713], [-0.0748, 0.0703], [-0.0749, 0.0702],
        [-0.0760, 0.0685], [-0.0763, 0.0679], [-0.0754, 0.0693],
    ]
)


def _seeded(cls, seed, *args, **kwargs):
    """Build a module after torch.manual_seed(seed), without leaking the global RNG state."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return cls(*args, **kwargs)


def test_v1_prints_the_seed_numbers():
    sa = _seeded(SelfAttentionV1, 123, 3, 2)
    with torch.no_grad():
        out = sa(JOURNEY)
    torch.testing.assert_close(out, V1_PRINTED, atol=1e-4, rtol=0)


def test_v2_prints_the_seed_numbers():
    sa = _seeded(SelfAttentionV2, 789, 3, 2)
    with torch.no_grad():
        out = sa(JOURNEY)
    torch.testing.assert_close(out, V2_PRINTED, atol=1e-4, rtol=0)


def test_v1_parameters_drawn_in_seed_order():
    """W_query, W_key, W_value = torch.rand(d_in, d_out), in that order (seed 001)."""
    sa = _seeded(SelfAttentionV1, 123, 3, 2)
    g = torch.Generator().manual_seed(123)
    expected = [torch.rand(3, 2, generator=g) for _ in range(3)]
    for param, want in zip((sa.W_query, sa.W_key, sa.W_value), expected):
        assert param.shape == (3, 2)
        assert torch.equal(param.detach(), want)


@pytest.mark.parametrize("seed, d_in, d_out", [(123, 3, 2), (0, 4, 3), (7, 5, 5), (42, 2, 6)])
def test_v1_trace_equals_forward(seed, d_in, d_out):
    sa = _seeded(SelfAttentionV1, seed, d_in, d_out)
    x = torch.randn(6, d_in, generator=torch.Generator().manual_seed(seed + 1))
    trace = sa.trace(x)
    with torch.no_grad():
        expected = sa(x)
    torch.testing.assert_close(trace.output, expected, atol=1e-6, rtol=1e-6)
    assert torch.equal(trace.w_query, sa.W_query.detach())
    assert torch.equal(trace.w_key, sa.W_key.detach())
    assert torch.equal(trace.w_value, sa.W_value.detach())
    assert trace.b_query is None and trace.b_key is None and trace.b_value is None
    assert trace.attention.scale == pytest.approx(1 / math.sqrt(d_out))
    assert not trace.output.requires_grad


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("seed, d_in, d_out", [(789, 3, 2), (1, 4, 3), (5, 6, 2)])
def test_v2_trace_equals_forward(seed, d_in, d_out, qkv_bias):
    sa = _seeded(SelfAttentionV2, seed, d_in, d_out, qkv_bias=qkv_bias)
    x = torch.randn(5, d_in, generator=torch.Generator().manual_seed(seed + 1))
    trace = sa.trace(x)
    with torch.no_grad():
        expected = sa(x)
    torch.testing.assert_close(trace.output, expected, atol=1e-6, rtol=1e-6)
    # nn.Linear stores Wᵀ: the trace's W is (d_in, d_out).
    assert trace.w_query.shape == (d_in, d_out)
    assert torch.equal(trace.w_query, sa.W_query.weight.detach().T)
    assert torch.equal(trace.w_key, sa.W_key.weight.detach().T)
    assert torch.equal(trace.w_value, sa.W_value.weight.detach().T)
    with torch.no_grad():
        torch.testing.assert_close(trace.attention.query, sa.W_query(x))
        torch.testing.assert_close(trace.attention.key, sa.W_key(x))
        torch.testing.assert_close(trace.attention.value, sa.W_value(x))
    if qkv_bias:
        assert torch.equal(trace.b_query, sa.W_query.bias.detach())
        assert torch.equal(trace.b_key, sa.W_key.bias.detach())
        assert torch.equal(trace.b_value, sa.W_value.bias.detach())
    else:
        assert trace.b_query is None and trace.b_key is None and trace.b_value is None
    assert not trace.output.requires_grad


def test_v2_with_bias_on_journey_differs_from_without_and_matches_torch():
    sa = _seeded(SelfAttentionV2, 789, 3, 2, qkv_bias=True)
    trace = sa.trace(JOURNEY)
    with torch.no_grad():
        q, k, v = sa.W_query(JOURNEY), sa.W_key(JOURNEY), sa.W_value(JOURNEY)
        expected = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(trace.output, expected, atol=1e-6, rtol=1e-6)
    # The biases are drawn too, so the numbers are not the bias-free ones.
    assert not torch.allclose(trace.output, V2_PRINTED, atol=1e-3)


def test_v2_weights_are_nn_linear_default_init():
    sa = _seeded(SelfAttentionV2, 789, 3, 2)
    with torch.random.fork_rng():
        torch.manual_seed(789)
        reference = [nn.Linear(3, 2, bias=False) for _ in range(3)]
    for layer, ref in zip((sa.W_query, sa.W_key, sa.W_value), reference):
        assert layer.bias is None
        assert torch.equal(layer.weight, ref.weight)
        assert layer.weight.abs().max() <= 1 / math.sqrt(3)


def test_modules_are_trainable():
    """The weights are parameters: forward builds a graph and gradients reach all three."""
    sa = _seeded(SelfAttentionV1, 123, 3, 2)
    sa(JOURNEY).sum().backward()
    for p in (sa.W_query, sa.W_key, sa.W_value):
        assert p.grad is not None and p.grad.shape == (3, 2)
        assert torch.isfinite(p.grad).all()
    assert len(list(sa.parameters())) == 3
