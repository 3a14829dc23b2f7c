"""Tests of multi-head attention: the seed modules, the traced function, and torch's references."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attention_core.errors import InputError
from attention_core.masks import causal_mask, combine_masks, key_padding_mask
from attention_core.multi_head.heads import head_columns, multi_head_attention
from attention_core.multi_head.modules import MultiHeadAttention
from attention_core.self_attention.functional import scaled_dot_product_attention
from attention_core.self_attention.modules import CausalAttention, SelfAttentionV2

# rasbt/LLMs-from-scratch ch03 (seed 004): "Your journey starts with one step".
INPUTS = torch.tensor(
    [[0.43, 0.15, 0.89], [0.55, 0.87, 0.66], [0.57, 0.85, 0.64],
     [0.22, 0.58, 0.33], [0.77, 0.25, 0.10], [0.05, 0.80, 0.55]]
)
BATCH = torch.stack((INPUTS, INPUTS))  # (2, 6, 3)

CAUSAL_PRINTED = torch.tensor(
    [[-0.4519, 0.2216], [-0.5874, 0.0058], [-0.6300, -0.0632],
     [-0.5675, -0.0843], [-0.5526, -0.0981], [-0.5299, -0.1081]]
)
MHA_PRINTED = torch.tensor(
    [[0.3190, 0.4858], [0.2943, 0.3897], [0.2856, 0.3593],
     [0.2693, 0.3873], [0.2639, 0.3928], [0.2575, 0.4028]]
)


# ---------------------------------------------------------------- the seed modules


def test_causal_attention_reproduces_the_printed_output():
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, 6, 0.0)
    out = ca(BATCH)
    assert out.shape == (2, 6, 2)
    assert torch.allclose(out[0], CAUSAL_PRINTED, atol=1e-4)
    assert torch.allclose(out[1], CAUSAL_PRINTED, atol=1e-4)


def test_multi_head_attention_reproduces_the_printed_output():
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)
    out = mha(BATCH)
    assert out.shape == (2, 6, 2)
    assert torch.allclose(out[0], MHA_PRINTED, atol=1e-4)
    assert torch.allclose(out[1], MHA_PRINTED, atol=1e-4)


def test_parameter_creation_order_matches_the_seed():
    torch.manual_seed(123)
    v2 = SelfAttentionV2(3, 4, qkv_bias=True)
    torch.manual_seed(123)
    ca = CausalAttention(3, 4, 6, 0.1, qkv_bias=True)
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 4, 6, 0.1, num_heads=2, qkv_bias=True)
    for name in ("W_query", "W_key", "W_value"):
        assert torch.equal(getattr(v2, name).weight, getattr(ca, name).weight)
        assert torch.equal(getattr(v2, name).weight, getattr(mha, name).weight)
    assert list(dict(mha.named_parameters())) == [
        "W_query.weight", "W_query.bias", "W_key.weight", "W_key.bias",
        "W_value.weight", "W_value.bias", "out_proj.weight", "out_proj.bias",
    ]
    assert mha.out_proj.bias is not None and mha.head_dim == 2
    assert torch.equal(ca.mask, torch.triu(torch.ones(6, 6), diagonal=1))
    assert torch.equal(mha.mask, ca.mask) and "mask" in dict(mha.named_buffers())


@pytest.mark.parametrize("qkv_bias", [False, True])
@pytest.mark.parametrize("num_tokens", [1, 4, 6])
def test_trace_output_equals_forward(qkv_bias, num_tokens):
    x = BATCH[:, :num_tokens]
    torch.manual_seed(1)
    ca = CausalAttention(3, 4, 6, 0.0, qkv_bias=qkv_bias)
    torch.manual_seed(2)
    mha = MultiHeadAttention(3, 4, 6, 0.5, num_heads=2, qkv_bias=qkv_bias).eval()
    with torch.no_grad():
        assert torch.allclose(ca.trace(x).output, ca(x), atol=1e-6)
        assert torch.allclose(mha.trace(x).output, mha(x), atol=1e-6)
        # An unbatched sentence (T, d_in) traces like a batch of one.
        assert torch.allclose(mha.trace(x[0]).output, mha(x[:1])[0], atol=1e-6)
    trace = ca.trace(x)
    assert torch.equal(trace.attention.attn_mask, causal_mask(num_tokens).expand(2, -1, -1))
    assert trace.attention.weights.triu(diagonal=1).eq(0).all()


def test_causal_attention_weights_match_the_seed_tensor_by_tensor():
    torch.manual_seed(123)
    ca = CausalAttention(3, 2, 6, 0.0)
    trace = ca.trace(INPUTS)
    with torch.no_grad():
        q, k = ca.W_query(INPUTS), ca.W_key(INPUTS)
        scores = (q @ k.T).masked_fill(ca.mask.bool(), -torch.inf)
        weights = torch.softmax(scores / 2 ** 0.5, dim=-1)
    assert torch.allclose(trace.attention.weights, weights, atol=1e-6)
    assert torch.allclose(trace.output, CAUSAL_PRINTED, atol=1e-4)


def test_one_head_is_causal_attention_then_out_proj():
    """The ladder: MultiHeadAttention with one head = CausalAttention + W_O."""
    torch.manual_seed(7)
    ca = CausalAttention(3, 4, 6, 0.0)
    torch.manual_seed(7)
    mha = MultiHeadAttention(3, 4, 6, 0.0, num_heads=1)
    with torch.no_grad():
        assert torch.allclose(mha(BATCH), mha.out_proj(ca(BATCH)), atol=1e-6)


def test_trace_in_training_mode_uses_the_generator():
    torch.manual_seed(0)
    mha = MultiHeadAttention(3, 4, 6, 0.5, num_heads=2)  # training mode by default
    a = mha.trace(BATCH, generator=torch.Generator().manual_seed(5))
    b = mha.trace(BATCH, generator=torch.Generator().manual_seed(5))
    assert a.attention.dropout_p == 0.5
    assert a.attention.dropout_mask.shape == (2, 2, 6, 6)
    assert torch.equal(a.output, b.output)
    kept = a.attention.dropout_mask
    assert torch.allclose(a.attention.dropped_weights, a.attention.weights * kept * 2)
    assert mha.eval().trace(BATCH).attention.dropout_mask is None


@pytest.mark.parametrize("d_out,num_heads", [(3, 2), (5, 4), (2, 0)])
def test_heads_must_divide_d_out(d_out, num_heads):
    with pytest.raises(InputError, match="num_heads|heads"):
        MultiHeadAttention(3, d_out, 6, 0.0, num_heads=num_heads)
    with pytest.raises(ValueError):  # InputError is a ValueError, like the seed's assert was an error
        head_columns(d_out, num_heads)


def test_too_many_tokens_for_the_context_length():
    torch.manual_seed(0)
    mha = MultiHeadAttention(3, 2, 4, 0.0, num_heads=2)
    with pytest.raises(InputError, match="context_length"):
        mha.trace(BATCH)
    with pytest.raises(InputError, match="context_length"):
        CausalAttention(3, 2, 4, 0.0).trace(BATCH)


# ---------------------------------------------------------------- head bookkeeping


def test_head_columns():
    assert head_columns(6, 3) == (range(0, 2), range(2, 4), range(4, 6))
    assert head_columns(4, 1) == (range(0, 4),)
    cols = [c for r in head_columns(12, 4) for c in r]
    assert cols == list(range(12))


def _random_weights(g, d_in, d_kv, d_out, d_o, bias):
    w = dict(
        w_query=torch.randn(d_in, d_out, generator=g),
        w_key=torch.randn(d_kv, d_out, generator=g),
        w_value=torch.randn(d_kv, d_out, generator=g),
        w_out=torch.randn(d_out, d_o, generator=g),
    )
    b = dict(
        b_query=torch.randn(d_out, generator=g), b_key=torch.randn(d_out, generator=g),
        b_value=torch.randn(d_out, generator=g), b_out=torch.randn(d_o, generator=g),
    ) if bias else {}
    return w, b


def test_heads_are_the_column_slices_loop_first():
    """Loop over heads with the plain function on column slices; the batched trace must agree."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 5, 4, generator=g)
    w, b = _random_weights(g, 4, 4, 6, 4, bias=True)
    trace = multi_head_attention(x, x, **w, **b, num_heads=3, attn_mask=causal_mask(5))
    assert trace.head_dim == 2 and trace.scale == pytest.approx(1 / math.sqrt(2))
    assert trace.query_heads.shape == (2, 3, 5, 2) and trace.concat.shape == (2, 5, 6)
    for i, cols in enumerate(head_columns(6, 3)):
        sl = slice(cols.start, cols.stop)
        assert torch.equal(trace.query_heads[:, i], trace.query[..., sl])
        assert torch.equal(trace.key_heads[:, i], trace.key[..., sl])
        assert torch.equal(trace.value_heads[:, i], trace.value[..., sl])
        alone = scaled_dot_product_attention(
            trace.query[..., sl], trace.key[..., sl], trace.value[..., sl], attn_mask=causal_mask(5)
        )
        head = trace.heads[i]
        assert head.scale == pytest.approx(1 / math.sqrt(2))  # 1/sqrt(head_dim), not 1/sqrt(d_out)
        for field in ("scores", "scaled_scores", "masked_scores", "weights", "output"):
            assert torch.allclose(getattr(head, field), getattr(alone, field), atol=1e-6), field
        assert torch.equal(head.attn_mask, alone.attn_mask)
        assert torch.equal(trace.concat[..., sl], head.output)
    expected = trace.concat @ w["w_out"] + b["b_out"]
    assert torch.allclose(trace.output, expected, atol=1e-6)


# ---------------------------------------------------------------- against torch's SDPA


def _reference_sdpa(x_q, x_kv, w, b, h, mask, is_causal=False):
    """Multi-head attention with torch's fused kernel, for comparison."""
    q = x_q @ w["w_query"] + b.get("b_query", 0)
    k = x_kv @ w["w_key"] + b.get("b_key", 0)
    v = x_kv @ w["w_value"] + b.get("b_value", 0)
    *batch, m, d_out = q.shape
    n = k.shape[-2]
    split = lambda t, T: t.view(*batch, T, h, d_out // h).transpose(-3, -2)  # noqa: E731
    if mask is not None:
        mask = mask.unsqueeze(-3)
    out = F.scaled_dot_product_attention(split(q, m), split(k, n), split(v, n),
                                         attn_mask=mask, is_causal=is_causal)
    concat = out.transpose(-3, -2).reshape(*batch, m, d_out)
    return concat, concat @ w["w_out"] + b.get("b_out", 0)


@settings(max_examples=40, deadline=None)
@given(
    batch=st.lists(st.integers(1, 3), max_size=2),
    m=st.integers(1, 6),
    n=st.integers(1, 6),
    num_heads=st.integers(1, 4),
    head_dim=st.integers(1, 4),
    d_in=st.integers(1, 5),
    d_kv=st.integers(1, 5),
    mask_kind=st.sampled_from(["none", "causal", "random", "random_batched", "padding"]),
    cross=st.booleans(),
    bias=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_matches_torch_sdpa(batch, m, n, num_heads, head_dim, d_in, d_kv, mask_kind, cross, bias, seed):
    g = torch.Generator().manual_seed(seed)
    if not cross:
        n, d_kv = m, d_in
    d_out = num_heads * head_dim
    x_q = torch.randn(*batch, m, d_in, generator=g)
    x_kv = torch.randn(*batch, n, d_kv, generator=g) if cross else x_q
    w, b = _random_weights(g, d_in, d_kv, d_out, 3, bias)
    if mask_kind == "none":
        mask = None
    elif mask_kind == "causal":
        mask = causal_mask(n, m)
    elif mask_kind == "random":
        mask = torch.rand(m, n, generator=g) < 0.6
    elif mask_kind == "random_batched":
        mask = torch.rand(*batch, m, n, generator=g) < 0.6
    else:
        lengths = torch.randint(0, n + 1, (math.prod(batch),), generator=g)
        mask = key_padding_mask(lengths, n).view(*batch, 1, n)  # (b, 1, n) for every batch dim

    trace = multi_head_attention(x_q, x_kv, **w, **b, num_heads=num_heads, attn_mask=mask)
    assert trace.is_self_attention == (not cross)
    assert trace.weights.shape == (*batch, num_heads, m, n)
    assert trace.output.shape == (*batch, m, 3)
    assert len(trace.heads) == num_heads
    for out in (trace.output, trace.concat, trace.weights):
        assert not torch.isnan(out).any()

    concat, output = _reference_sdpa(x_q, x_kv, w, b, num_heads, mask)
    blocked = trace.attention.blocked_rows[..., 0, :]  # (b, m): the mask is the same for every head
    assert torch.equal(blocked, trace.attention.blocked_rows.any(-2))
    assert torch.allclose(trace.concat[~blocked], concat[~blocked], atol=1e-5)
    assert torch.allclose(trace.output[~blocked], output[~blocked], atol=1e-5)
    assert torch.all(trace.concat[blocked] == 0)  # a fully blocked query gets the zero vector
    if mask_kind == "causal":
        _, causal_output = _reference_sdpa(x_q, x_kv, w, b, num_heads, None, is_causal=True)
        assert torch.allclose(trace.output, causal_output, atol=1e-5)


# ---------------------------------------------------------------- against nn.MultiheadAttention


def _torch_mha(w, b, embed_dim, num_heads):
    """nn.MultiheadAttention holding our weights: in_proj = cat of the Wᵀ, out_proj.weight = W_Oᵀ."""
    mha = nn.MultiheadAttention(embed_dim, num_heads, bias=bool(b), batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([w["w_query"].T, w["w_key"].T, w["w_value"].T]))
        mha.out_proj.weight.copy_(w["w_out"].T)
        if b:
            mha.in_proj_bias.copy_(torch.cat([b["b_query"], b["b_key"], b["b_value"]]))
            mha.out_proj.bias.copy_(b["b_out"])
    return mha.eval()


@settings(max_examples=40, deadline=None)
@given(
    bsz=st.integers(1, 3),
    m=st.integers(1, 6),
    n=st.integers(1, 6),
    num_heads=st.integers(1, 4),
    head_dim=st.integers(1, 3),
    mask_kind=st.sampled_from(["none", "causal", "random", "random_batched"]),
    padding=st.booleans(),
    cross=st.booleans(),
    bias=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_matches_torch_multihead_attention(bsz, m, n, num_heads, head_dim, mask_kind, padding, cross, bias, seed):
    g = torch.Generator().manual_seed(seed)
    if not cross:
        n = m
    embed_dim = num_heads * head_dim
    x_q = torch.randn(bsz, m, embed_dim, generator=g)
    x_kv = torch.randn(bsz, n, embed_dim, generator=g) if cross else x_q
    w, b = _random_weights(g, embed_dim, embed_dim, embed_dim, embed_dim, bias)
    mha = _torch_mha(w, b, embed_dim, num_heads)

    mask = {"none": None, "causal": causal_mask(n, m),
            "random": torch.rand(m, n, generator=g) < 0.6,
            "random_batched": torch.rand(bsz, m, n, generator=g) < 0.6}[mask_kind]
    lengths = torch.randint(1, n + 1, (bsz,), generator=g) if padding else None
    if mask is not None:
        mask[..., 0] = True  # torch's MultiheadAttention gives NaN for a fully blocked query
    # torch's convention is the opposite: True = NOT allowed, and a per-example
    # mask has one copy per head: (bsz * num_heads, m, n).
    torch_mask = None if mask is None else ~mask
    if mask_kind == "random_batched":
        torch_mask = torch_mask.repeat_interleave(num_heads, dim=0)
    torch_padding = None if lengths is None else ~key_padding_mask(lengths, n)[:, 0]  # (bsz, n)

    with torch.no_grad():
        expected, expected_weights = mha(
            x_q, x_kv, x_kv, attn_mask=torch_mask, key_padding_mask=torch_padding,
            need_weights=True, average_attn_weights=False,
        )
    ours_mask = combine_masks(mask, None if lengths is None else key_padding_mask(lengths, n))
    trace = multi_head_attention(x_q, x_kv, **w, **b, num_heads=num_heads, attn_mask=ours_mask)
    assert torch.allclose(trace.output, expected, atol=1e-5)
    assert torch.allclose(trace.weights, expected_weights, atol=1e-5)


# ---------------------------------------------------------------- masks, cross-attention, dropout, errors


def test_fully_blocked_row_is_zero_and_flagged():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 4, 4, generator=g)
    w, b = _random_weights(g, 4, 4, 4, 4, bias=True)
    mask = causal_mask(4).clone()
    mask[2] = False  # query 2 may look at nothing
    trace = multi_head_attention(x, x, **w, **b, num_heads=2, attn_mask=mask)
    assert trace.attention.blocked_rows[0, :, 2].all()
    assert trace.attention.blocked_rows.sum() == 2  # one row in each of the two heads
    assert trace.heads[1].blocked_rows[0].tolist() == [False, False, True, False]
    assert not any(torch.isnan(t).any() for t in (trace.weights, trace.concat, trace.output))
    assert torch.all(trace.weights[0, :, 2] == 0) and torch.all(trace.concat[0, 2] == 0)
    assert torch.allclose(trace.output[0, 2], b["b_out"])  # only W_O's bias is left
    # key_padding_mask with a zero length blocks a whole sequence the same way.
    padded = multi_head_attention(x, x, **w, num_heads=2, attn_mask=key_padding_mask([0], 4))
    assert padded.attention.blocked_rows.all() and torch.all(padded.output == 0)


def test_cross_attention_shapes_and_no_mask():
    g = torch.Generator().manual_seed(1)
    decoder = torch.randn(3, 5, generator=g)  # m = 3 queries, d_in = 5
    encoder = torch.randn(7, 2, generator=g)  # n = 7 keys/values, d_kv = 2
    w, _ = _random_weights(g, 5, 2, 4, 6, bias=False)
    trace = multi_head_attention(decoder, encoder, **w, num_heads=2)
    assert not trace.is_self_attention
    assert trace.query.shape == (3, 4) and trace.key.shape == (7, 4) and trace.value.shape == (7, 4)
    assert trace.query_heads.shape == (2, 3, 2) and trace.key_heads.shape == (2, 7, 2)
    assert trace.weights.shape == (2, 3, 7) and trace.heads[0].weights.shape == (3, 7)
    assert torch.allclose(trace.weights.sum(-1), torch.ones(2, 3))
    assert trace.output.shape == (3, 6) and trace.attention.attn_mask is None
    # Stopping before W_O leaves the concatenation.
    no_out = multi_head_attention(decoder, encoder, w["w_query"], w["w_key"], w["w_value"], None, num_heads=2)
    assert torch.equal(no_out.output, no_out.concat)


def test_dropout_is_reproducible_and_per_head():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 4, 6, generator=g)
    w, _ = _random_weights(g, 6, 6, 6, 6, bias=False)

    def run(seed):
        return multi_head_attention(x, x, **w, num_heads=3, attn_mask=causal_mask(4), dropout_p=0.25,
                                    generator=torch.Generator().manual_seed(seed))

    a, b = run(9), run(9)
    assert torch.equal(a.output, b.output) and not torch.equal(a.output, run(10).output)
    assert a.attention.dropout_mask.shape == (2, 3, 4, 4)
    assert torch.equal(a.heads[1].dropout_mask, a.attention.dropout_mask[:, 1])
    assert torch.allclose(a.heads[1].output, a.heads[1].dropped_weights @ a.value_heads[:, 1], atol=1e-6)


def test_scale_uses_head_dim_not_d_out():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(5, 8, generator=g)
    w, _ = _random_weights(g, 8, 8, 8, 8, bias=False)
    trace = multi_head_attention(x, x, **w, num_heads=4)
    assert trace.scale == pytest.approx(1 / math.sqrt(2))
    assert torch.allclose(trace.attention.scaled_scores, trace.attention.scores / math.sqrt(2))
    wrong = torch.softmax(trace.attention.scores / math.sqrt(8), dim=-1)
    assert not torch.allclose(trace.weights, wrong, atol=1e-3)


@pytest.mark.parametrize(
    "change,field",
    [
        (dict(w_key=torch.zeros(3, 4)), "W_k"),  # 3 rows, inputs have width 4
        (dict(w_value=torch.zeros(4, 6)), "d_out"),  # d_out differs from W_q's
        (dict(num_heads=3), "num_heads"),
        (dict(num_heads=0), "num_heads"),
        (dict(w_out=torch.zeros(2, 4)), "W_O"),
        (dict(b_query=torch.zeros(3)), "W_q"),
        (dict(b_out=torch.zeros(5)), "W_O"),
        (dict(attn_mask=torch.ones(5, 5, dtype=torch.bool)), "attn_mask"),
        (dict(attn_mask=torch.ones(4, 2, 5, 5, dtype=torch.bool)), "attn_mask"),
        (dict(attn_mask=torch.ones(5, 5)), "attn_mask"),
        (dict(x_kv=torch.zeros(3, 5, 4)), "x"),
        (dict(dropout_p=1.0), "dropout_p"),
    ],
)
def test_bad_arguments_raise_input_error(change, field):
    args = dict(x_query=torch.zeros(2, 5, 4), x_kv=torch.zeros(2, 5, 4), w_query=torch.zeros(4, 4),
                w_key=torch.zeros(4, 4), w_value=torch.zeros(4, 4), w_out=torch.zeros(4, 4),
                num_heads=2, attn_mask=causal_mask(5))
    if field == "attn_mask" and change["attn_mask"].shape == (5, 5) and change["attn_mask"].dtype == torch.bool:
        args["x_kv"] = torch.zeros(2, 4, 4)  # 5 x 5 mask but only 4 keys
    args.update(change)
    with pytest.raises(InputError) as info:
        multi_head_attention(**args)
    assert info.value.field == field and info.value.message


# ---------------------------------------------------------------- formulas_multi_head


def test_general_formulas_of_every_stage():
    from attention_core.multi_head import formulas as fm
    for stage in fm.FORMULA_STAGES:
        matrix, element = fm.multi_head_formula(stage)
        assert matrix and element
    assert r"\sqrt{d_{head}}" in fm.multi_head_formula("head")[0]  # never sqrt(d_out)
    assert r"-\infty" in fm.multi_head_formula("masked_scores")[1]
    assert r"\left(r - 1\right) d_{head} + c" in fm.multi_head_formula("split")[1]
    assert "W_{O}" in fm.multi_head_formula("output")[0]
    assert fm.mask_latex(causal_mask(2)) == r"M = \left[\begin{matrix}0 & -\infty\\0 & 0\end{matrix}\right]"
    with pytest.raises(KeyError):
        fm.multi_head_formula("nope")


def test_entry_formulas_end_with_the_traced_number():
    from attention_core.multi_head import formulas as fm
    torch.manual_seed(123)
    mha = MultiHeadAttention(3, 4, 6, 0.0, num_heads=2)
    trace = mha.trace(INPUTS[:4])
    assert fm.multi_head_entry_latex(trace, "masked_scores", 0, 2, head=1) == r"{a'}_{1,3} = -\infty"
    allowed = fm.multi_head_entry_latex(trace, "masked_scores", 2, 1, head=0)
    assert allowed.startswith(r"{a'}_{3,2} = {a}_{3,2} = ")
    assert float(allowed.rsplit("=", 1)[1]) == pytest.approx(float(trace.heads[0].scaled_scores[2, 1]), abs=1e-3)
    assert fm.multi_head_entry_latex(trace, "split", 1, 1, head=1).startswith(r"{q^{(2)}}_{2,2} = {q}_{2,4} = ")
    cases = [("split", 1, 1, 1, trace.query[1, 3]), ("head", 2, 0, 1, trace.heads[1].output[2, 0]),
             ("concat", 1, 3, 0, trace.concat[1, 3]), ("output", 0, 1, 0, trace.output[0, 1])]
    for stage, row, col, head, expected in cases:
        text = fm.multi_head_entry_latex(trace, stage, row, col, head)
        assert float(text.rsplit("=", 1)[1]) == pytest.approx(float(expected), abs=1e-3), stage
    # The written-out sum of the output entry has one product per concat column, plus the bias.
    assert fm.multi_head_entry_latex(trace, "output", 0, 1).count(r"\cdot") == 4
    with pytest.raises(IndexError):
        fm.multi_head_entry_latex(trace, "concat", 4, 0)
    with pytest.raises(IndexError):
        fm.multi_head_entry_latex(trace, "head", 0, 0, head=2)
    with pytest.raises(ValueError):
        fm.multi_head_entry_latex(mha.trace(BATCH), "output", 0, 0)
