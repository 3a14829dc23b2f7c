r"""Every step page as a self-checking PyTorch script: the inputs as literals, every step recomputed, every number
the page shows asserted, and the page's checks against PyTorch's reference repeated.

:func:`script_for` takes the walk-through a step page builds (self-attention, causal attention and dropout,
multi-head and cross-attention, one head of the trained model, the encoder block, generation, GQA, RoPE, ALiBi,
sliding-window, FlashAttention) and returns the text of a Python script that needs only ``torch`` (and ``math``):

1. the inputs, written with ``repr`` of their float32 values, so the script starts from exactly the app's numbers
   (X, the weights, the mask, the dropout keep-mask D, ...);
2. the formulas, as plain torch code, with the source of each (Vaswani et al. 2017, eq. 1, ...) and the shapes;
3. one ``check(...)`` per heatmap of every stage of the page (``[steps_for(k).stage.panels for k in stages]``),
   each holding the app's numbers as a literal: same shape, the same ±∞ cells (masks), the rest equal to
   rtol = atol = 1e-5; it prints one line per matrix and raises ``AssertionError`` at the first that differs;
4. the page's comparisons with PyTorch (``StepThrough.checks``: ``F.scaled_dot_product_attention``,
   ``nn.MultiheadAttention``, ``nn.TransformerEncoderLayer``, ...), with the page's tolerance.

Each page has one *recipe* (:class:`Recipe`: inputs, torch lines, one expression per panel, reference checks);
:func:`write` turns a recipe and the page's panels into the script. Tokens (user text) enter the script only
inside ``repr`` string literals, never in comments or code.

Shape legend (in the scripts' comments): T tokens (m queries, n keys in cross-attention), D = d_model, d_k the width
of q and k, h = num_heads, kv = num_kv_heads, F = dim_feedforward, V = vocabulary size. Everything is float32.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import torch

from attention_core.masking.walkthrough import CausalWalkthrough
from attention_core.modern.alibi_walkthrough import AlibiWalkthrough
from attention_core.modern.flash_walkthrough import FlashWalkthrough
from attention_core.modern.gqa_walkthrough import GQAWalkthrough
from attention_core.modern.rope_walkthrough import BASES, RopeWalkthrough
from attention_core.modern.sliding_walkthrough import SlidingWalkthrough
from attention_core.multi_head.walkthrough import MultiHeadWalkthrough
from attention_core.page import Page
from attention_core.self_attention.walkthrough import Walkthrough
from attention_core.stepthrough import StepThrough
from attention_core.trained_model.pretrained import HeadStep
from attention_core.transformer.generation_walkthrough import GenerationWalkthrough
from attention_core.transformer.walkthrough import EncoderWalkthrough
from attention_core.weights import module_weights

#: The tolerance of every comparison with the app's numbers (and of the PyTorch checks, unless a page states another).
TOLERANCE = 1e-5


@dataclass(frozen=True)
class Recipe:
    """How one page's numbers are recomputed in a script.

    Attributes:
        title: what the page computes (the script's first line).
        sources: the formula and where it comes from, one line each (the script's docstring).
        inputs: (name, value, comment): tensors (float32, bool or int64), numbers, strings (tokens), and lists and
            dicts of them; written as literals. Comments are ours (shapes), never user text.
        code: the torch lines that compute every named intermediate from the inputs.
        panels: stage key -> one Python expression per panel of that stage, in the page's order.
        references: lines comparing our numbers with PyTorch's (``same_as(name, ours, reference, tolerance)``).
    """

    title: str
    sources: tuple[str, ...]
    inputs: tuple[tuple[str, Any, str], ...]
    code: tuple[str, ...]
    panels: Mapping[str, tuple[str, ...]]
    references: tuple[str, ...] = field(default=())


# ---------------------------------------------------------------- the writer

def _literal(value: Any, indent: str = "") -> str:
    """``value`` as Python source: tensors as ``torch.tensor(<repr of its list>)``, one row per line."""
    if isinstance(value, torch.Tensor):
        dtype = ", dtype=torch.bool" if value.dtype == torch.bool else ""
        value = value if value.dtype in (torch.bool, torch.int64) else value.float()
        if value.dim() < 2 or value.numel() <= 12:
            return f"torch.tensor({value.tolist()!r}{dtype})"
        rows = "".join(f"{indent}    {row!r},\n" for row in value.tolist())
        return f"torch.tensor([\n{rows}{indent}]{dtype})"
    if isinstance(value, Mapping):
        items = "".join(f"{indent}    {k!r}: {_literal(v, indent + '    ')},\n" for k, v in value.items())
        return "{\n" + items + indent + "}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, (torch.Tensor, Mapping)) for v in value):
        items = "".join(f"{indent}    {_literal(v, indent + '    ')},\n" for v in value)
        return "[\n" + items + indent + "]"
    if isinstance(value, tuple):
        value = list(value)
    return repr(value)


_HEADER = '''import math

import torch
import torch.nn.functional as F

inf, nan = math.inf, math.nan  # how the app's blocked (-inf) cells are written below
TOLERANCE = {tolerance!r}  # rtol = atol of every comparison with the app's numbers


def check(name, ours, app, tolerance=TOLERANCE):
    """Assert that ``ours`` is the matrix the app showed: same shape, the same +-inf cells, the rest within tolerance."""
    ours = ours.detach().float()
    assert ours.shape == app.shape, f"{{name}}: shape {{tuple(ours.shape)}}, the app showed {{tuple(app.shape)}}"
    infinite = torch.isinf(app)
    assert torch.equal(torch.isinf(ours), infinite) and torch.equal(ours[infinite], app[infinite]), \\
        f"{{name}}: the -inf cells (blocked) differ from the app's"
    finite = ~infinite
    difference = (ours[finite] - app[finite]).abs().max().item() if finite.any() else 0.0
    assert torch.allclose(ours[finite], app[finite], rtol=tolerance, atol=tolerance), \\
        f"{{name}} differs from the app: max |difference| = {{difference:.2e}}"
    print(f"{{name:<22}} {{str(tuple(ours.shape)):<10}} matches the app (max |difference| {{difference:.1e}})")


def same_as(name, ours, reference, tolerance=TOLERANCE):
    """Assert that our numbers equal PyTorch's reference (rtol = atol = tolerance)."""
    difference = (ours - reference).abs().max().item() if ours.numel() else 0.0
    assert torch.allclose(ours, reference, rtol=tolerance, atol=tolerance), \\
        f"{{name}} differs from PyTorch: max |difference| = {{difference:.2e}}"
    print(f"matches {{name}}: max |difference| = {{difference:.2e}}")
'''


def write(recipe: Recipe, steps: Sequence[StepThrough]) -> str:
    """The script of ``recipe``, asserting every panel of ``steps`` (one :class:`StepThrough` per stage, in order).

    Raises:
        KeyError: a stage of ``steps`` the recipe has no expressions for.
        ValueError: a stage whose number of panels differs from the recipe's expressions (the recipe is stale).
    """
    lines = [
        f'"""Attention Explorer export: {recipe.title}, recomputed and checked.',
        "",
        *recipe.sources,
        "",
        "Every matrix the page shows, on every step, is recomputed below from the inputs and compared with the",
        "numbers the app showed; then with PyTorch's own implementation, as the page does.",
        "Run with: python this_file.py  (needs only torch). Any difference raises AssertionError.",
        '"""',
        _HEADER.format(tolerance=TOLERANCE),
        "",
        "# ---------------------------------------------------------------- the inputs (the app's float32 numbers)",
        "",
    ]
    for name, value, comment in recipe.inputs:
        lines.append(f"{name} = {_literal(value)}" + (f"  # {comment}" if comment else ""))
    lines += ["", "# ---------------------------------------------------------------- every step, recomputed", ""]
    lines += list(recipe.code)
    lines += ["", "# ---------------------------------------------------------------- every matrix the page shows"]
    for step in steps:
        key = step.stage.key
        expressions = recipe.panels[key]
        panels = step.stage.panels
        if len(expressions) != len(panels):
            raise ValueError(f"stage {key!r} shows {len(panels)} panels, the recipe has {len(expressions)}")
        lines += ["", f"# {step.titles[key]}"]
        for number, (expression, panel) in enumerate(zip(expressions, panels), start=1):
            name = f"{key} {number}/{len(panels)}"
            lines.append(f"check({name!r}, {expression}, {_literal(panel.matrix.detach())})")
    if recipe.references:
        lines += ["", "# ---------------------------------------------------------------- against PyTorch's reference", ""]
        lines += list(recipe.references)
    lines += ["", "print('Every number matches.')", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- the recipes, one per walk-through type

_ATTEND = '''
def attend(q, k, v, mask=None, bias=None):
    """softmax(q k^T / sqrt(d_k) + bias) v, -inf where mask is False (Vaswani et al. 2017, eq. 1).

    q (..., m, d_k), k (..., n, d_k), v (..., n, d_v); mask bool (..., m, n), True = may attend.
    A row with every key blocked gets weight 0 (softmax over no keys is 0 / 0), as PyTorch's SDPA gives.
    Returns scaled_scores, masked_scores (..., m, n), weights (..., m, n), output (..., m, d_v).
    """
    scaled_scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))  # (..., m, n)
    masked_scores = scaled_scores if bias is None else scaled_scores + bias
    if mask is not None:
        masked_scores = masked_scores.masked_fill(~mask, -inf)
    weights = torch.softmax(masked_scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.expand_as(weights).any(dim=-1, keepdim=True), 0.0)
    return scaled_scores, masked_scores, weights, weights @ v
'''.strip("\n").split("\n")


def _weights(x: torch.Tensor, width: int, seed: int, value: bool = True) -> tuple[tuple[str, Any, str], ...]:
    """The inputs X, W_q, W_k (and W_v) of the pages that draw their W like seed 001's CausalAttention."""
    w = module_weights(x.shape[-1], width, seed, out_proj=False)
    names = ("w_query", "w_key", "w_value") if value else ("w_query", "w_key")
    return (("X", x, "(T, D)"),) + tuple(
        (f"W_{name[2]}", w[name], f"(D, {width}), drawn like nn.Linear after torch.manual_seed({seed})")
        for name in names)


@functools.singledispatch
def recipe_for(walk: Any, page: str) -> Recipe:
    """The :class:`Recipe` of a page's walk-through (one implementation per walk-through type).

    Raises:
        TypeError: a type with no recipe.
    """
    raise TypeError(f"no script for {type(walk).__name__}")


@recipe_for.register
def _(walk: Walkthrough, page: str) -> Recipe:
    t = walk.trace
    return Recipe(
        title="scaled dot-product self-attention",
        sources=("Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V  (Vaswani et al. 2017, eq. 1)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("d_k", t.attention.query.shape[-1], ""),
                ("X", t.x, "(T, D)"), ("W_q", t.w_query, "(D, d_k)"), ("W_k", t.w_key, "(D, d_k)"),
                ("W_v", t.w_value, "(D, d_v)")),
        code=("Q = X @ W_q  # (T, d_k)", "K = X @ W_k  # (T, d_k)", "V = X @ W_v  # (T, d_v)",
              "scores = Q @ K.T  # (T, T): q_i . k_j",
              "scaled_scores = scores * (1.0 / math.sqrt(d_k))",
              "weights = torch.softmax(scaled_scores, dim=-1)  # each row sums to 1",
              "output = weights @ V  # (T, d_v): the context vectors"),
        panels={"inputs": ("X",), "query": ("Q",), "key": ("K",), "value": ("V",), "scores": ("scores",),
                "scaled_scores": ("scaled_scores",), "weights": ("weights",), "output": ("output",)},
        references=("same_as('torch.nn.functional.scaled_dot_product_attention(Q, K, V)', output, "
                    "F.scaled_dot_product_attention(Q, K, V))",),
    )


@recipe_for.register
def _(walk: CausalWalkthrough, page: str) -> Recipe:
    p = walk.dropout_p
    inputs = [("tokens", walk.tokens, "the rows"), ("X", walk.trace.x, "(T, D)"),
              ("W_q", walk.weights["w_query"], "(D, d_k), drawn like CausalAttention's nn.Linear"),
              ("W_k", walk.weights["w_key"], "(D, d_k)"), ("W_v", walk.weights["w_value"], "(D, d_k)"),
              ("mask", walk.mask.attn_mask, "(T, T) bool, True = may attend: causal, padding and clicked cells")]
    if page == "dropout":
        inputs += [("p", p, "dropout_p (0 in eval mode)"), ("dropout_seed", walk.settings.dropout.seed, ""),
                   ("keep", walk.keep, "(T, T) bool, the dropout mask D: True = kept")]
    code = [
        *_ATTEND, "",
        "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d_k) each",
        "T = X.shape[0]",
        "M = torch.zeros(T, T).masked_fill(~mask, -inf)  # the additive mask: 0 = may attend, -inf = blocked",
        "scaled_scores, masked_scores, weights, output = attend(Q, K, V, mask)  # softmax(Q K^T / sqrt(d_k) + M) V",
        "# the other route (seed 004): softmax over all keys, zero the blocked weights, divide by the row sums",
        "unmasked_weights = torch.softmax(scaled_scores, dim=-1)",
        "zeroed_weights = unmasked_weights.masked_fill(~mask, 0.0)",
        "row_sums = zeroed_weights.sum(dim=-1, keepdim=True)  # (T, 1)",
        "empty = row_sums == 0  # rows with every key blocked: 0, not 0 / 0",
        "route_weights = (zeroed_weights / row_sums.masked_fill(empty, 1.0)).masked_fill(empty, 0.0)",
    ]
    if page == "dropout":
        code += ["# dropout (seed 004): keep each weight with probability 1 - p, scale the kept ones by 1 / (1 - p)",
                 "dropped_weights = weights * keep / (1.0 - p)  # (T, T)",
                 "output = dropped_weights @ V  # (T, d_k)"]
    references = []
    if p == 0.0:
        references.append("same_as('torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask)', "
                          "output, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))")
        if torch.equal(walk.mask.attn_mask, torch.ones_like(walk.mask.attn_mask).tril()):
            references.append("same_as('torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=True)', "
                              "output, F.scaled_dot_product_attention(Q, K, V, is_causal=True))")
    else:
        references += [
            "same_as('torch.nn.functional.scaled_dot_product_attention(Q, K, V, attn_mask=mask) (weights before "
            "dropout, times V)', weights @ V, F.scaled_dot_product_attention(Q, K, V, attn_mask=mask))",
            "# nn.Dropout's own draw, bernoulli_(1 - p), made afresh from a generator with the same seed",
            "drawn = torch.empty(T, T).bernoulli_(1 - p, generator=torch.Generator().manual_seed(dropout_seed))",
            "assert torch.equal(drawn.bool(), keep), 'the dropout mask D differs from a fresh draw with the same seed'",
            "same_as('weights * D / (1 - p) @ V with D drawn afresh', output, weights * drawn / (1 - p) @ V)",
        ]
    return Recipe(
        title="dropout on the attention weights" if page == "dropout" else "causal attention",
        sources=("weights = softmax(Q K^T / sqrt(d_k) + M), output = weights V  (Vaswani et al. 2017, eq. 1 and "
                 "sec. 3.2.3; seed 001's CausalAttention)",
                 *(("dropout: weights * D / (1 - p), D kept with probability 1 - p (seed 004, nn.Dropout)",)
                   if page == "dropout" else ())),
        inputs=tuple(inputs), code=tuple(code),
        panels={"scaled_scores": ("scaled_scores",), "mask": ("M",), "masked_scores": ("masked_scores",),
                "weights": ("weights",),
                "other_route": ("unmasked_weights", "zeroed_weights", "route_weights"),
                "dropout_mask": ("keep.float()",),
                "dropped_weights": ("dropped_weights", "dropped_weights.sum(dim=-1, keepdim=True)"),
                "output": ("output",)},
        references=tuple(references),
    )


@recipe_for.register
def _(walk: MultiHeadWalkthrough, page: str) -> Recipe:
    tr, w = walk.trace, walk.weights
    cross = walk.is_cross
    inputs = [("tokens", walk.tokens, "the query rows")]
    if cross:
        inputs += [("encoder_tokens", walk.kv_tokens, "the key/value rows"),
                   ("X", walk.x_query, "(m, D): the decoder's tokens"), ("X_enc", walk.x_kv, "(n, D): the encoder's")]
    else:
        inputs += [("X", walk.x_query, "(T, D)"),
                   ("mask", walk.mask.attn_mask, "(T, T) bool, True = may attend (the causal page's mask)")]
    inputs += [("h", tr.num_heads, "num_heads"), ("W_q", w["w_query"], "(D, d_out), drawn like MultiHeadAttention's"),
               ("W_k", w["w_key"], "(D, d_out)"), ("W_v", w["w_value"], "(D, d_out)"),
               ("W_O", w["w_out"], "(d_out, d_out)"), ("b_O", w["b_out"], "(d_out,)")]
    kv = "X_enc" if cross else "X"
    mask = "None" if cross else "mask"
    code = [
        *_ATTEND, "",
        f"Q, K, V = X @ W_q, {kv} @ W_k, {kv} @ W_v  # (m, d_out), (n, d_out), (n, d_out)",
        "m, n, d_out = Q.shape[0], K.shape[0], Q.shape[1]",
        "head_dim = d_out // h",
        "# split (seed 001): view(m, h, head_dim), then transpose: head r owns columns r * head_dim ... (r + 1) * head_dim",
        "Q_heads = Q.view(m, h, head_dim).transpose(0, 1)  # (h, m, head_dim)",
        "K_heads = K.view(n, h, head_dim).transpose(0, 1)  # (h, n, head_dim)",
        "V_heads = V.view(n, h, head_dim).transpose(0, 1)",
        f"scaled_scores, masked_scores, weights, heads = attend(Q_heads, K_heads, V_heads, {mask})  "
        "# per head, scaled by 1 / sqrt(head_dim)",
        "concat = heads.transpose(0, 1).reshape(m, d_out)  # (h, m, head_dim) -> (m, d_out): Concat(head_1, ..., head_h)",
        "output = concat @ W_O + b_O  # (m, d_out)  (Vaswani et al. 2017, sec. 3.2.2)",
    ]
    per_head = lambda name: tuple(f"{name}[{r}]" for r in range(tr.num_heads))  # noqa: E731
    panels = {"inputs": ("X", "X_enc") if cross else ("X",), "projections": ("Q", "K", "V"),
              "query": ("Q",), "key": ("K",), "value": ("V",), "split": per_head("Q_heads"),
              "scaled_scores": per_head("scaled_scores"), "masked_scores": per_head("masked_scores"),
              "weights": per_head("weights"), "head": per_head("heads"), "concat": ("concat",),
              "output": ("output", "W_O", "b_O[None]")}
    references = [
        "per_head = F.scaled_dot_product_attention(Q_heads, K_heads, V_heads"
        + ("" if cross else ", attn_mask=mask") + ")  # (h, m, head_dim)",
        "same_as('torch.nn.functional.scaled_dot_product_attention(Q_heads, K_heads, V_heads"
        + ("" if cross else ", attn_mask=mask") + ") -> concat . W_O + b_O', output, "
        "per_head.transpose(0, 1).reshape(m, d_out) @ W_O + b_O)",
    ]
    if walk.x_query.shape[-1] == tr.concat.shape[-1]:  # the page compares with nn.MultiheadAttention when D == d_out
        references += [
            "mha = torch.nn.MultiheadAttention(d_out, h, batch_first=True).eval()",
            "with torch.no_grad():",
            "    mha.in_proj_weight.copy_(torch.cat([W_q.T, W_k.T, W_v.T]))  # nn.Linear keeps W^T",
            "    mha.in_proj_bias.zero_()",
            "    mha.out_proj.weight.copy_(W_O.T)",
            "    mha.out_proj.bias.copy_(b_O)",
            f"    ours, theirs = mha(X[None], {kv}[None], {kv}[None], "
            + ("" if cross else "attn_mask=~mask, ") + "average_attn_weights=False)  # torch's mask: True = blocked",
            "keep = " + ("torch.ones(m, dtype=torch.bool)" if cross else "mask.any(dim=-1)")
            + "  # nn.MultiheadAttention gives NaN for a row with every key blocked: left out",
            "same_as('torch.nn.MultiheadAttention(...)[0]', output[keep], ours[0][keep])",
            "same_as('torch.nn.MultiheadAttention(..., average_attn_weights=False)[1]', weights[:, keep], "
            "theirs[0][:, keep])",
        ]
    return Recipe(
        title="cross-attention" if cross else "multi-head attention",
        sources=("head_r = softmax(Q_r K_r^T / sqrt(head_dim) + M) V_r, output = Concat(head_1, ..., head_h) W_O + b_O",
                 "(Vaswani et al. 2017, sec. 3.2.2; seed 001's MultiHeadAttention"
                 + ("; seed 003: queries from the decoder, keys and values from the encoder)" if cross else ")")),
        inputs=tuple(inputs), code=tuple(code), panels=panels, references=tuple(references),
    )


@recipe_for.register
def _(walk: GQAWalkthrough, page: str) -> Recipe:
    t, s = walk.trace, walk.settings
    return Recipe(
        title="grouped-query attention",
        sources=("head_r = softmax(Q_r K_g(r)^T / sqrt(head_dim) + M) V_g(r), g(r) = floor(r * kv / h), "
                 "output = Concat(head_1, ..., head_h) W_O + b_O",
                 "(Ainslie et al. 2023; Shazeer 2019 for kv = 1)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("h", t.num_heads, "query heads"),
                ("kv", t.num_kv_heads, "key/value heads"), ("head_dim", t.head_dim, ""), ("causal", s.causal_mask, ""),
                ("X", t.x, "(T, D)"), ("W_q", t.w_query, "(D, h * head_dim)"),
                ("W_k", t.w_key, "(D, kv * head_dim)"), ("W_v", t.w_value, "(D, kv * head_dim)"),
                ("W_O", t.w_out, "(h * head_dim, d_o)"), ("b_O", t.b_out, "(d_o,)")),
        code=(*_ATTEND, "",
              "T = X.shape[0]",
              "mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else None",
              "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, h * head_dim), (T, kv * head_dim), (T, kv * head_dim)",
              "Q_heads = Q.view(T, h, head_dim).transpose(0, 1)  # (h, T, head_dim)",
              "K_heads = K.view(T, kv, head_dim).transpose(0, 1)  # (kv, T, head_dim)",
              "V_heads = V.view(T, kv, head_dim).transpose(0, 1)",
              "groups = [r // (h // kv) for r in range(h)]  # g(r): the key/value head query head r reads",
              "share = torch.zeros(h, kv)",
              "share[torch.arange(h), torch.tensor(groups)] = 1.0",
              "K_repeated = K_heads.repeat_interleave(h // kv, dim=0)  # (h, T, head_dim)",
              "V_repeated = V_heads.repeat_interleave(h // kv, dim=0)",
              "_, _, weights, heads = attend(Q_heads, K_repeated, V_repeated, mask)  # (h, T, T), (h, T, head_dim)",
              "output = heads.transpose(0, 1).reshape(T, h * head_dim) @ W_O + b_O",
              "# the KV cache per token and layer, float32: 2 (K and V) * key/value heads * head_dim * 4 bytes",
              "cache_bytes = torch.tensor([[2.0 * heads_ * head_dim * 4] for heads_ in (h, kv, 1)])  # MHA, GQA, MQA"),
        panels={"inputs": ("X",), "projections": ("Q", "K", "V"), "groups": ("share",),
                "repeat": tuple(f"K_repeated[{r}]" for r in range(t.num_heads)),
                "weights": tuple(f"weights[{r}]" for r in range(t.num_heads)), "output": ("output",),
                "kv_cache": ("cache_bytes",)},
        references=("same_as('F.scaled_dot_product_attention(Q, K, V, is_causal=causal, enable_gqa=True)', heads, "
                    "F.scaled_dot_product_attention(Q_heads[None], K_heads[None], V_heads[None], is_causal=causal, "
                    "enable_gqa=True)[0])",),
    )


@recipe_for.register
def _(walk: AlibiWalkthrough, page: str) -> Recipe:
    s = walk.settings
    return Recipe(
        title="ALiBi, attention with linear biases",
        sources=("a_ij = q_i . k_j / sqrt(d) - m_h |i - j|, then the causal mask and softmax over j; "
                 "m_h = 2^(-8h/H)  (Press et al. 2022, sec. 3)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("H", len(walk.trace.slopes), "num_heads"),
                ("causal", s.causal_mask, ""),
                *_weights(walk.base.trace.x, s.d_k, s.seed)),
        code=(*_ATTEND, "",
              "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d) each",
              "def alibi_slopes(n):",
              '    """The paper\'s reference code: 2^(-8/n), 2^(-16/n), ..., 2^(-8) for n a power of 2."""',
              "    def power_of_2(k):",
              "        start = 2 ** (-(2 ** -(math.log2(k) - 3)))",
              "        return [start * start ** i for i in range(k)]",
              "    if math.log2(n).is_integer():",
              "        return power_of_2(n)",
              "    closest = 2 ** math.floor(math.log2(n))",
              "    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][:n - closest]",
              "",
              "T = X.shape[0]",
              "mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else None",
              "slopes = torch.tensor(alibi_slopes(H))  # (H,)",
              "positions = torch.arange(T, dtype=torch.float32)",
              "distance = (positions[:, None] - positions[None, :]).abs()  # (T, T): |i - j|",
              "bias = -slopes[:, None, None] * distance  # (H, T, T)",
              "scaled_scores, biased_scores, weights, output = attend(Q.expand(H, T, -1), K.expand(H, T, -1), "
              "V.expand(H, T, -1), mask, bias)"),
        panels={"slopes": ("slopes[:, None]",), "distance": ("distance",),
                "bias": tuple(f"bias[{r}]" for r in range(len(walk.trace.slopes))),
                "biased_scores": tuple(f"biased_scores[{r}]" for r in range(len(walk.trace.slopes))),
                "weights": tuple(f"weights[{r}]" for r in range(len(walk.trace.slopes)))},
        references=(
            "float_mask = bias if mask is None else bias.masked_fill(~mask, -inf)",
            "same_as('F.scaled_dot_product_attention(q, k, v, attn_mask=bias)', output, "
            "F.scaled_dot_product_attention(Q.expand(H, T, -1), K.expand(H, T, -1), V.expand(H, T, -1), "
            "attn_mask=float_mask))",
            "# the weights entry by entry with math.exp: the naive reference",
            "loop = []",
            "for m_h in alibi_slopes(H):",
            "    for i in range(T):",
            "        a = {j: scaled_scores[0, i, j].item() - m_h * abs(i - j) for j in range(T) if not causal or j <= i}",
            "        top = max(a.values())",
            "        total = sum(math.exp(value - top) for value in a.values())",
            "        loop.append([math.exp(a[j] - top) / total if j in a else 0.0 for j in range(T)])",
            "same_as('a loop with math.exp, entry by entry', weights, torch.tensor(loop).view(H, T, T))",
        ),
    )


@recipe_for.register
def _(walk: SlidingWalkthrough, page: str) -> Recipe:
    s = walk.settings
    return Recipe(
        title="sliding-window attention",
        sources=("key j is in query i's window when i - w < j <= i (causal) or |i - j| < w; then softmax(Q K^T / "
                 "sqrt(d_k) + M) V  (Beltagy et al. 2020; Jiang et al. 2023)",),
        inputs=(("tokens", walk.tokens, "the rows"), ("w", s.sliding_window.window, "the window"),
                ("layers", s.sliding_window.layers, ""), ("causal", s.causal_mask, ""),
                *_weights(walk.base.trace.x, s.d_k, s.seed)),
        code=(*_ATTEND, "",
              "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d_k) each",
              "T = X.shape[0]",
              "i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]",
              "window = ((j <= i) & (j > i - w)) if causal else ((i - j).abs() < w)  # (T, T) bool",
              "_, masked_scores, weights, output = attend(Q, K, V, window)",
              "# the receptive field: reach_1 = window, reach_l = reach_(l-1) o window (a boolean matrix product)",
              "reach, step, receptive = window.float(), window.float(), []",
              "for _ in range(layers):",
              "    receptive.append((reach > 0).float())",
              "    reach = (reach @ step).clamp(max=1.0)"),
        panels={"mask": ("window.float()",), "masked_scores": ("masked_scores",), "weights": ("weights",),
                "receptive": tuple(f"receptive[{n}]" for n in range(walk.reach.shape[0]))},
        references=("same_as('F.scaled_dot_product_attention(q, k, v, attn_mask=window_mask)', output, "
                    "F.scaled_dot_product_attention(Q[None], K[None], V[None], attn_mask=window)[0])",),
    )


@recipe_for.register
def _(walk: FlashWalkthrough, page: str) -> Recipe:
    s = walk.settings
    return Recipe(
        title="FlashAttention's tiles and the online softmax",
        sources=("S = Q_i K_j^T / sqrt(d), m' = max(m, rowmax S), P = exp(S - m'), l' = e^(m - m') l + rowsum P,",
                 "O' = e^(m - m') O + P V_j; output = O / l  (Milakov & Gimelshein 2018; Dao et al. 2022)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("B_q", s.flash_attention.block_q, "query block"),
                ("B_k", s.flash_attention.block_k, "key block"), ("causal", s.causal_mask, ""), ("shown", walk.tile, "the tile shown"),
                *_weights(walk.base.trace.x, s.d_k, s.seed)),
        code=("Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d), (T, d), (T, d_v)",
              "T, d = Q.shape",
              "mask = torch.ones(T, T, dtype=torch.bool).tril() if causal else None",
              "tiles, outputs = [], []",
              "for start in range(0, T, B_q):",
              "    rows = slice(start, min(start + B_q, T))",
              "    m = torch.full((rows.stop - start,), -inf)  # the running maximum of each row",
              "    l = torch.zeros(rows.stop - start)  # the running sum",
              "    O = torch.zeros(rows.stop - start, V.shape[1])  # the running (unnormalised) output",
              "    for key_start in range(0, T, B_k):",
              "        cols = slice(key_start, min(key_start + B_k, T))",
              "        S = Q[rows] @ K[cols].T * (1.0 / math.sqrt(d))  # (B_q, B_k)",
              "        if mask is not None:",
              "            S = S.masked_fill(~mask[rows, cols], -inf)",
              "        m_new = torch.maximum(m, S.max(dim=-1).values)",
              "        safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)  # rows with nothing yet",
              "        P = torch.exp(S - safe[:, None])  # exponents <= 0",
              "        rescale = torch.exp(m - safe)  # e^(m - m'), 0 while m = -inf",
              "        l_new = rescale * l + P.sum(dim=-1)",
              "        O_new = rescale[:, None] * O + P @ V[cols]",
              "        tiles.append(dict(S=S, m=m, m_new=m_new, P=P, rescale=rescale, l=l, l_new=l_new, O=O, O_new=O_new))",
              "        m, l, O = m_new, l_new, O_new",
              "    outputs.append(O / l[:, None])",
              "output = torch.cat(outputs)  # (T, d_v)",
              "tile = tiles[shown]",
              "blocks_k = math.ceil(T / B_k)",
              "i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]",
              "tile_number = ((i // B_q) * blocks_k + j // B_k + 1).float()",
              "full = torch.softmax((Q @ K.T / math.sqrt(d)).masked_fill(~mask, -inf) if causal else Q @ K.T / "
              "math.sqrt(d), dim=-1) @ V  # the full T x T way"),
        panels={"tiles": ("tile_number",), "tile_scores": ("tile['S']",),
                "running_max": ("torch.stack([tile['m'], tile['S'].max(dim=-1).values, tile['m_new']], dim=1)",),
                "running_sum": ("tile['P']", "torch.stack([tile['l'], tile['rescale'], tile['P'].sum(dim=-1), "
                                "tile['l_new']], dim=1)"),
                "partial_output": ("tile['O']", "tile['O_new']"),
                "final": ("output", "full", "output - full")},
        references=("same_as('F.scaled_dot_product_attention(q, k, v, is_causal=causal)', output, "
                    "F.scaled_dot_product_attention(Q[None], K[None], V[None], is_causal=causal)[0])",),
    )


@recipe_for.register
def _(walk: RopeWalkthrough, page: str) -> Recipe:
    t = walk.trace
    return Recipe(
        title="RoPE, rotary position embedding",
        sources=("theta_i = base^(-2i/d); the pair (q_i, q_(i+d/2)) at position m is rotated by m theta_i;",
                 "scores = q'_m . k'_n / sqrt(d) depend only on m - n  (Su et al. 2021, RoFormer, eq. 13-16)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("base", t.base, ""), ("shift", t.shift, ""),
                *_weights(walk.base.trace.x, walk.settings.rope.head_dim, walk.settings.seed, value=False)),
        code=("Q, K = X @ W_q, X @ W_k  # (T, d) each: one head's queries and keys",
              "T, d = Q.shape",
              "half = torch.arange(d // 2, dtype=torch.float64)",
              "",
              "def frequencies(b):",
              "    return (b ** (-2 * half / d)).float()  # (d/2,): theta_i, computed in float64",
              "",
              "def angles_at(positions):",
              "    return (positions.double()[:, None] * base ** (-2 * half / d)).float()  # (T, d/2): m theta_i",
              "",
              "def rotate(x, angles):",
              '    """Rotate each pair (i, i + d/2) of every row by its angle (the rotate_half layout of Llama)."""',
              "    first, second = x[:, :d // 2], x[:, d // 2:]",
              "    cos, sin = torch.cos(angles), torch.sin(angles)",
              "    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)",
              "",
              "theta = frequencies(base)",
              "positions = torch.arange(T)",
              "angles = angles_at(positions)",
              "Q_rotated, K_rotated = rotate(Q, angles), rotate(K, angles)",
              "scores = Q_rotated @ K_rotated.T * (1.0 / math.sqrt(d))  # (T, T)",
              "shifted = angles_at(positions + shift)",
              "shifted_scores = rotate(Q, shifted) @ rotate(K, shifted).T * (1.0 / math.sqrt(d))",
              "# the sinusoidal encoding with the same base (Vaswani et al. 2017, sec. 3.5): sin on even, cos on odd",
              "two_i = torch.arange(d, dtype=torch.float64).div(2, rounding_mode='floor') * 2",
              "angle = torch.arange(T, dtype=torch.float64)[:, None] / base ** (two_i / d)",
              "PE = torch.where(torch.arange(d) % 2 == 0, torch.sin(angle), torch.cos(angle)).float()",
              f"bases = sorted(set({list(BASES)!r}) | {{base}})",
              "theta_table = torch.stack([frequencies(b) for b in bases])"),
        panels={"projections": ("Q", "K"), "angles": ("theta[None]", "angles"),
                "sinusoidal": ("PE", "torch.cos(angles)", "torch.sin(angles)"),
                "rotate_query": ("Q", "Q_rotated"), "rotate_key": ("K", "K_rotated"), "scores": ("scores",),
                "relative": ("scores", "shifted_scores", "shifted_scores - scores"), "base": ("theta_table",)},
        references=(
            "# the same rotation written the way transformers' Llama writes it (apply_rotary_pos_emb):",
            "# q * cos + rotate_half(q) * sin, with cos and sin of the angles repeated over both halves",
            "emb = torch.cat([angles, angles], dim=-1)",
            "rotate_half = lambda x: torch.cat([-x[:, d // 2:], x[:, :d // 2]], dim=-1)  # noqa: E731",
            "same_as('apply_rotary_pos_emb(q, k, cos, sin) (the Llama formula)', torch.cat([Q_rotated, K_rotated]), "
            "torch.cat([Q * emb.cos() + rotate_half(Q) * emb.sin(), K * emb.cos() + rotate_half(K) * emb.sin()]))",
        ),
    )


_BLOCK_FIELDS = ("w_query", "w_key", "w_value", "w_out", "b_query", "b_key", "b_value", "b_out", "w_1", "b_1", "w_2",
                 "b_2", "gamma_1", "beta_1", "gamma_2", "beta_2")

_LAYER_NORM = '''
def layer_norm(z, gamma, beta, eps=1e-5):
    """Each row: (z - mu) / sqrt(sigma^2 + eps), then gamma and beta (Ba et al. 2016). Returns stats (T, 2), z_hat, output."""
    mean = z.mean(dim=-1)  # (T,)
    var = z.var(dim=-1, unbiased=False)  # (T,), divided by D as torch does
    normalized = (z - mean[:, None]) / torch.sqrt(var[:, None] + eps)
    return dict(z=z, stats=torch.stack([mean, var], dim=1), normalized=normalized, output=normalized * gamma + beta)
'''.strip("\n").split("\n")

_MULTI_HEAD = '''
def multi_head(x_q, x_kv, w, h, mask=None, prefix=""):
    """Concat(head_1, ..., head_h) W_O + b_O with biased projections (Vaswani et al. 2017, sec. 3.2.2).

    w holds prefix + w_query, w_key, w_value (D, D), w_out (D, D) and their biases (D,); x_q (m, D), x_kv (n, D).
    """
    q = x_q @ w[prefix + "w_query"] + w[prefix + "b_query"]
    k = x_kv @ w[prefix + "w_key"] + w[prefix + "b_key"]
    v = x_kv @ w[prefix + "w_value"] + w[prefix + "b_value"]
    m, n, width = q.shape[0], k.shape[0], q.shape[1]
    split = lambda t, rows: t.view(rows, h, width // h).transpose(0, 1)  # (rows, D) -> (h, rows, head_dim)
    _, _, weights, heads = attend(split(q, m), split(k, n), split(v, n), mask)
    output = heads.transpose(0, 1).reshape(m, width) @ w[prefix + "w_out"] + w[prefix + "b_out"]
    return dict(key=k, value=v, weights=weights, output=output)
'''.strip("\n").split("\n")


@recipe_for.register
def _(walk: EncoderWalkthrough, page: str) -> Recipe:
    s = walk.settings
    blocks = [{name: getattr(b.weights, name) for name in _BLOCK_FIELDS} for b in walk.blocks]
    d_model = walk.x.shape[-1]
    layer_call = (f"torch.nn.TransformerEncoderLayer({d_model}, nhead={s.encoder_block.num_heads}, "
                  f"dim_feedforward={s.encoder_block.dim_feedforward}, dropout=0.0, batch_first=True, norm_first={s.encoder_block.norm_first})")
    references = [
        "def torch_layer(w):",
        '    """torch.nn.TransformerEncoderLayer holding the block\'s weights (nn.Linear keeps W^T)."""',
        "    layer = torch.nn.TransformerEncoderLayer(D, h, dim_feedforward=F_, dropout=0.0, batch_first=True, "
        "norm_first=norm_first).eval()",
        "    with torch.no_grad():",
        "        layer.self_attn.in_proj_weight.copy_(torch.cat([w['w_query'].T, w['w_key'].T, w['w_value'].T]))",
        "        layer.self_attn.in_proj_bias.copy_(torch.cat([w['b_query'], w['b_key'], w['b_value']]))",
        "        layer.self_attn.out_proj.weight.copy_(w['w_out'].T)",
        "        layer.self_attn.out_proj.bias.copy_(w['b_out'])",
        "        layer.linear1.weight.copy_(w['w_1'].T)",
        "        layer.linear1.bias.copy_(w['b_1'])",
        "        layer.linear2.weight.copy_(w['w_2'].T)",
        "        layer.linear2.bias.copy_(w['b_2'])",
        "        for norm, n in ((layer.norm1, 1), (layer.norm2, 2)):",
        "            norm.weight.copy_(w[f'gamma_{n}'])",
        "            norm.bias.copy_(w[f'beta_{n}'])",
        "    return layer",
        "",
        "with torch.no_grad():",
        f"    same_as({layer_call!r}, shown['output'], torch_layer(weights[block])(shown['x'][None])[0])",
        "    ln = shown['norm_1']",
        "    same_as('torch.nn.functional.layer_norm(z, (d_model,), gamma_1, beta_1)', ln['output'], "
        "F.layer_norm(ln['z'], (D,), weights[block]['gamma_1'], weights[block]['beta_1']))",
    ]
    if len(walk.blocks) > 1:
        references += [
            "    out = X[None]",
            "    for w in weights:",
            "        out = torch_layer(w)(out)",
            f"    same_as({(str(len(walk.blocks)) + ' x ' + layer_call)!r}, traces[-1]['output'], out[0])",
        ]
    stack = ("X",) + tuple(f"traces[{k}]['output']" for k in range(len(walk.blocks)))
    norm = lambda n: tuple(f"shown['norm_{n}'][{part!r}]" for part in ("z", "stats", "normalized", "output"))  # noqa: E731
    return Recipe(
        title="the Transformer encoder block (" + ("pre-LN" if s.encoder_block.norm_first else "post-LN") + ")",
        sources=(("pre-LN: H = X + MultiHead(LayerNorm_1(X)), Y = H + FFN(LayerNorm_2(H))  (Xiong et al. 2020)"
                  if s.encoder_block.norm_first else
                  "post-LN: H = LayerNorm_1(X + MultiHead(X)), Y = LayerNorm_2(H + FFN(H))  (Vaswani et al. 2017, "
                  "sec. 3.1)"),
                 "FFN(Z) = ReLU(Z W_1 + b_1) W_2 + b_2  (sec. 3.3, eq. 2); N blocks, each with its own weights"),
        inputs=(("tokens", walk.tokens, "the rows"), ("h", s.encoder_block.num_heads, "num_heads"),
                ("F_", s.encoder_block.dim_feedforward, "dim_feedforward"), ("norm_first", s.encoder_block.norm_first, "True = pre-LN"),
                ("block", walk.block, "the block shown (0-based)"), ("X", walk.x, "(T, D)"),
                ("weights", blocks, "one dict per block: W (applied as x @ W) and biases, gamma and beta")),
        code=(*_ATTEND, "", *_LAYER_NORM, "", *_MULTI_HEAD, "",
              "D = X.shape[1]",
              "",
              "def encoder_block(x, w):",
              '    """One block, every intermediate kept (no dropout)."""',
              "    ffn = lambda z: torch.relu(z @ w['w_1'] + w['b_1'])  # (T, F)",
              "    if norm_first:",
              "        norm_1 = layer_norm(x, w['gamma_1'], w['beta_1'])",
              "        attention_input = norm_1['output']",
              "        attention = multi_head(attention_input, attention_input, w, h)['output']",
              "        residual_1 = x + attention",
              "        hidden = residual_1",
              "        norm_2 = layer_norm(hidden, w['gamma_2'], w['beta_2'])",
              "        ffn_input = norm_2['output']",
              "        ffn_hidden = ffn(ffn_input)",
              "        ffn_output = ffn_hidden @ w['w_2'] + w['b_2']",
              "        residual_2 = hidden + ffn_output",
              "        output = residual_2",
              "    else:",
              "        attention_input = x",
              "        attention = multi_head(x, x, w, h)['output']",
              "        residual_1 = x + attention",
              "        norm_1 = layer_norm(residual_1, w['gamma_1'], w['beta_1'])",
              "        hidden = ffn_input = norm_1['output']",
              "        ffn_hidden = ffn(ffn_input)",
              "        ffn_output = ffn_hidden @ w['w_2'] + w['b_2']",
              "        residual_2 = hidden + ffn_output",
              "        norm_2 = layer_norm(residual_2, w['gamma_2'], w['beta_2'])",
              "        output = norm_2['output']",
              "    return dict(x=x, attention_input=attention_input, attention=attention, residual_1=residual_1,",
              "                norm_1=norm_1, hidden=hidden, norm_2=norm_2, ffn_input=ffn_input, ffn_hidden=ffn_hidden,",
              "                ffn_output=ffn_output, residual_2=residual_2, output=output)",
              "",
              "traces, x = [], X",
              "for w in weights:  # block l's output is block l + 1's input",
              "    traces.append(encoder_block(x, w))",
              "    x = traces[-1]['output']",
              "shown = traces[block]"),
        panels={"inputs": ("shown['x']",), "attention": ("shown['attention_input']", "shown['attention']"),
                "residual_1": ("shown['x']", "shown['attention']", "shown['residual_1']"),
                "norm_1": norm(1), "norm_2": norm(2),
                "ffn_hidden": ("shown['ffn_input']", "shown['ffn_hidden']"),
                "ffn_output": ("shown['ffn_hidden']", "shown['ffn_output']"),
                "residual_2": ("shown['hidden']", "shown['ffn_output']", "shown['residual_2']"),
                "stack": stack},
        references=tuple(references),
    )


@recipe_for.register
def _(walk: GenerationWalkthrough, page: str) -> Recipe:
    from attention_core.transformer.toy_model import DIM_FEEDFORWARD, NUM_HEADS, NUM_LAYERS, VOCAB, load_toy_model

    state = {name: value.detach() for name, value in load_toy_model().state_dict().items()}
    g, s = walk.generation, walk.current
    heads = lambda name: tuple(f"{name}[{r}]" for r in range(NUM_HEADS))  # noqa: E731
    return Recipe(
        title="generating token by token with the trained toy encoder-decoder",
        sources=("X = E[source] sqrt(D) + PE, M = Encoder_N(X); Y = E[START, y_1, ...] sqrt(D) + PE, Z = Decoder_N(Y, M);",
                 "logits = Z[last] W_vocab + b, p = softmax(logits / tau)  (Vaswani et al. 2017, sec. 3; seed 003 sec. 2)"),
        inputs=(("vocabulary", list(VOCAB), "token id = index"), ("source", list(g.source), "the word's ids"),
                ("inputs", list(s.inputs), "START and the tokens chosen before this step"),
                ("tau", g.temperature, "the temperature (0 = greedy: the softmax at tau = 1 is shown)"),
                ("block", walk.layer, "the block shown (0-based)"),
                ("h", NUM_HEADS, "heads"), ("N", NUM_LAYERS, "blocks per stack"),
                ("state", state, "the trained weights (torch.nn layout: Linear weights are W^T)")),
        code=(*_ATTEND, "", *_LAYER_NORM, "", *_MULTI_HEAD, "",
              "E = state['embedding.weight']  # (V, D)",
              "V_, D = E.shape",
              "",
              "def weights_of(prefix):",
              '    """An attention\'s weights as x @ W matrices: in_proj = cat(W_q^T, W_k^T, W_v^T)."""',
              "    w_q, w_k, w_v = state[prefix + 'in_proj_weight'].chunk(3)",
              "    b_q, b_k, b_v = state[prefix + 'in_proj_bias'].chunk(3)",
              "    return dict(w_query=w_q.T, w_key=w_k.T, w_value=w_v.T, b_query=b_q, b_key=b_k, b_value=b_v,",
              "                w_out=state[prefix + 'out_proj.weight'].T, b_out=state[prefix + 'out_proj.bias'])",
              "",
              "def norm(prefix, z):",
              "    return layer_norm(z, state[prefix + '.weight'], state[prefix + '.bias'])['output']",
              "",
              "def ffn(prefix, z):",
              "    hidden = torch.relu(z @ state[prefix + 'linear1.weight'].T + state[prefix + 'linear1.bias'])",
              "    return hidden @ state[prefix + 'linear2.weight'].T + state[prefix + 'linear2.bias']",
              "",
              "# the sinusoidal encoding (sec. 3.5): sin on even columns, cos on odd ones",
              "two_i = torch.arange(D, dtype=torch.float64).div(2, rounding_mode='floor') * 2",
              "angle = torch.arange(max(len(source), len(inputs)), dtype=torch.float64)[:, None] / 10000.0 ** (two_i / D)",
              "PE = torch.where(torch.arange(D) % 2 == 0, torch.sin(angle), torch.cos(angle)).float()",
              "",
              "def embed(ids):",
              "    return E[ids] * math.sqrt(D) + PE[:len(ids)]  # (L, D): E[token] sqrt(D) + PE (sec. 3.4, 3.5)",
              "",
              "# the encoder: N post-LN blocks (the Encoder block page)",
              "X = embed(source)  # (S, D)",
              "encoder, memory = [], X",
              "for n in range(N):",
              "    p = f'encoder.{n}.'",
              "    attention = multi_head(memory, memory, weights_of(p + 'self_attn.'), h)",
              "    hidden = norm(p + 'norm1', memory + attention['output'])",
              "    memory = norm(p + 'norm2', hidden + ffn(p, hidden))",
              "    encoder.append(attention)",
              "M = memory  # (S, D)",
              "",
              "def decoder(ids, past=None):",
              '    """The N decoder blocks on the rows of ids (only the last row when past holds the earlier keys and values)."""',
              "    y = embed(ids)",
              "    total = len(ids)",
              "    rows = y if past is None else y[-1:]",
              "    blocks = []",
              "    for n in range(N):",
              "        p = f'decoder.{n}.'",
              "        w = weights_of(p + 'self_attn.')",
              "        first = total - rows.shape[0]",
              "        mask = torch.ones(total, total, dtype=torch.bool).tril()[first:]  # causal: row i sees tokens 0..i",
              "        q = rows @ w['w_query'] + w['b_query']",
              "        k = rows @ w['w_key'] + w['b_key']",
              "        v = rows @ w['w_value'] + w['b_value']",
              "        if past is not None:  # the KV cache: the earlier tokens' keys and values are read, not recomputed",
              "            k, v = torch.cat([past[n][0], k]), torch.cat([past[n][1], v])",
              "        split = lambda t: t.view(t.shape[0], h, D // h).transpose(0, 1)  # (L, D) -> (h, L, head_dim)",
              "        _, _, self_weights, self_heads = attend(split(q), split(k), split(v), mask)",
              "        self_output = self_heads.transpose(0, 1).reshape(rows.shape[0], D) @ w['w_out'] + w['b_out']",
              "        hidden_1 = norm(p + 'norm1', rows + self_output)",
              "        cross = multi_head(hidden_1, M, weights_of(p + 'multihead_attn.'), h)",
              "        hidden_2 = norm(p + 'norm2', hidden_1 + cross['output'])",
              "        rows = norm(p + 'norm3', hidden_2 + ffn(p, hidden_2))",
              "        blocks.append(dict(self_weights=self_weights, key=k, value=v, cross_weights=cross['weights'],",
              "                           input=y if n == 0 else blocks[-1]['output'], output=rows))",
              "    return y, blocks",
              "",
              "Y, blocks = decoder(inputs)",
              "logits = blocks[-1]['output'][-1] @ state['to_vocab.weight'].T + state['to_vocab.bias']  # (V,)",
              "probabilities = torch.softmax(logits / (tau or 1.0), dim=-1)",
              "shown = blocks[block]"),
        panels={"source": ("X", "M"), "encoder_attention": heads("encoder[block]['weights']"),
                "decoder_input": ("Y",), "self_attention": heads("shown['self_weights']"),
                "cross_attention": heads("shown['cross_weights']"),
                "kv_cache": ("shown['key']", "shown['value']"),
                "logits": ("logits[None]",), "probabilities": ("probabilities[None]",)},
        references=(
            "# the whole trained model as torch.nn modules (its ToyReverser), 4 blocks deep: tolerance 1e-4",
            "embedding = torch.nn.Embedding(V_, D)",
            "encoder_layers = torch.nn.ModuleList(torch.nn.TransformerEncoderLayer(D, h, "
            f"{DIM_FEEDFORWARD}, dropout=0.0, batch_first=True) for _ in range(N))",
            "decoder_layers = torch.nn.ModuleList(torch.nn.TransformerDecoderLayer(D, h, "
            f"{DIM_FEEDFORWARD}, dropout=0.0, batch_first=True) for _ in range(N))",
            "to_vocab = torch.nn.Linear(D, V_)",
            "model = torch.nn.ModuleDict(dict(embedding=embedding, encoder=encoder_layers, decoder=decoder_layers, "
            "to_vocab=to_vocab)).eval()",
            "model.load_state_dict(state)",
            "with torch.no_grad():",
            "    memory_ = torch.tensor([source])",
            "    memory_ = embedding(memory_) * math.sqrt(D) + PE[:len(source)]",
            "    for layer in encoder_layers:",
            "        memory_ = layer(memory_)",
            "    y_ = embedding(torch.tensor([inputs])) * math.sqrt(D) + PE[:len(inputs)]",
            "    causal = torch.nn.Transformer.generate_square_subsequent_mask(len(inputs))",
            "    for n, layer in enumerate(decoder_layers):",
            "        y_ = layer(y_, memory_, tgt_mask=causal, tgt_is_causal=True)",
            "        if n == block:",
            "            same_as(f'torch.nn.TransformerDecoderLayer(D, nhead=h, dim_feedforward="
            f"{DIM_FEEDFORWARD}, dropout=0.0, batch_first=True)(Y, M, tgt_mask=causal) (block {{block + 1}})', "
            "shown['output'], layer(shown['input'][None], M[None], tgt_mask=causal)[0])",
            "    same_as('ToyReverser(source, START + tokens so far)[-1] (the whole model)', logits, "
            "to_vocab(y_)[0, -1], tolerance=1e-4)",
            "# the KV cache: the earlier tokens' keys and values from the previous step, only the new row computed",
            "if len(inputs) > 1:",
            "    _, before = decoder(inputs[:-1])",
            "    _, cached = decoder(inputs, past=[(b['key'], b['value']) for b in before])",
            "    same_as('decoder_block(new row, cache=KV cache) vs decoder_block(all rows)', "
            "torch.stack([b['output'][-1] for b in cached]), torch.stack([b['output'][-1] for b in blocks]))",
        ),
    )


@recipe_for.register
def _(step: HeadStep, page: str) -> Recipe:
    t = step.trace
    mask = ~torch.isinf(step.additive_mask[0])  # (n,): True = a real token
    return Recipe(
        title=f"one head of the trained model (layer {step.layer + 1}, head {step.head + 1})",
        sources=("Q = X W_q + b_q, K = X W_k + b_k, V = X W_v + b_v, Z = softmax(Q K^T / sqrt(d_k) + M) V",
                 "(Vaswani et al. 2017, eq. 1, with BERT's biases and padding mask: Devlin et al. 2019)"),
        inputs=(("tokens", step.tokens, "the WordPiece tokens, the rows"),
                ("real", mask, "(n,) bool: False for [PAD]"),
                ("X", t.x, "(n, D): the layer's input hidden states"),
                ("W_q", t.w_query, "(D, d_k): the head's slice of the layer's query weight, transposed"),
                ("W_k", t.w_key, "(D, d_k)"), ("W_v", t.w_value, "(D, d_k)"),
                ("b_q", t.b_query, "(d_k,)"), ("b_k", t.b_key, "(d_k,)"), ("b_v", t.b_value, "(d_k,)"),
                ("model_weights", step.model_weights, "(n, n): the model's own attention probabilities")),
        code=(*_ATTEND, "",
              "Q, K, V = X @ W_q + b_q, X @ W_k + b_k, X @ W_v + b_v  # (n, d_k) each",
              "n = X.shape[0]",
              "mask = real[None, :].expand(n, n)  # query i may attend key j when j is a real token",
              "M = torch.zeros(n, n).masked_fill(~mask, -inf)  # BERT's additive padding mask",
              "scores = Q @ K.T  # (n, n)",
              "scaled_scores, masked_scores, weights, output = attend(Q, K, V, mask)"),
        panels={"inputs": ("X",), "query": ("Q",), "key": ("K",), "value": ("V",), "scores": ("scores",),
                "scaled_scores": ("scaled_scores",), "mask": ("M",), "masked_scores": ("masked_scores",),
                "weights": ("weights",), "output": ("output",)},
        references=(f"same_as('model(...).attentions[{step.layer}][0, {step.head}] (the model\\'s own weights)', "
                    "weights, model_weights)",),
    )


# ---------------------------------------------------------------- the entry point

def script_for(page: Page, walk: Any) -> str:
    """A self-contained, self-checking Python script (torch only) of every number a step page shows.

    Args:
        page: the step page's declaration (:class:`attention_core.page.Page`): its stages and ``steps``.
        walk: what the page builds and hands its ``steps``: a self-attention ``Walkthrough``,
            ``CausalWalkthrough`` (causal attention, dropout), ``MultiHeadWalkthrough`` (multi-head or
            cross-attention), ``EncoderWalkthrough``, ``GenerationWalkthrough``, ``GQAWalkthrough``,
            ``RopeWalkthrough``, ``AlibiWalkthrough``, ``SlidingWalkthrough``, ``FlashWalkthrough``, or the trained
            model's ``HeadStep``.

    Returns:
        The script's text. Running it prints one line per matrix (``"<stage> <k>/<n> ... matches the app"``,
        every panel of every stage of the page, in this walk-through's order) and per PyTorch check; any number that
        differs by more than rtol = atol = 1e-5 (the page's tolerance where it states another) raises
        ``AssertionError``.

    Raises:
        TypeError: ``walk`` has no recipe.
        ValueError: ``page`` is not a step page.
    """
    if page.steps is None:
        raise ValueError(f"{page.key} is not a step page")
    recipe = recipe_for(walk, page.key)
    order = page.steps(walk, next(iter(page.stages))).titles  # the walk-through's variant decides the order
    return write(recipe, [page.steps(walk, stage) for stage in order])
