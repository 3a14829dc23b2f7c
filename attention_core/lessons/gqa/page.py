r"""From settings to every number of the *Grouped-query attention* page, in the one step-through protocol.

:func:`build_gqa_walkthrough` runs :func:`gqa.grouped_query_attention` on the sentence's X with seeded weights
and checks it against ``torch.nn.functional.scaled_dot_product_attention(..., enable_gqa=True)``;
:func:`gqa_step_through` puts one stage in a :class:`~attention_core.stepthrough.StepThrough`.
:func:`gqa_formula` writes each stage's general formula with sympy; :func:`explain_gqa` one entry with its
numbers in.

The weights are the *Multi-head attention* page's (``module_weights(d_model, h · head_dim, seed)``), with
W_k and W_v cut to their first num_kv_heads · head_dim columns: with num_kv_heads = h the numbers are exactly
multi-head attention's.

Shape legend: T tokens, D = d_model, h = num_heads (query heads), kv = num_kv_heads, head_dim,
d_out = h · head_dim. Float32.

Sources: Ainslie et al. 2023 (GQA), Shazeer 2019 (MQA), Vaswani et al. 2017 eq. 1 and sec. 3.2.2.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import sympy as sp
import torch
import torch.nn.functional as F

from attention_core import entry_formulas as entries
from attention_core import practice
from attention_core.errors import N_, InputError, Message
from attention_core.fields import IntRange, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import Translate, number
from attention_core.lessons.gqa.recipe import gqa_recipe
from attention_core.lessons.gqa.walk import GQAWalkthrough
from attention_core.masks import causal_mask
from attention_core.modern.gqa import grouped_query_attention, kv_head_of
from attention_core.multi_head.heads import multi_head_attention
from attention_core.page import Page
from attention_core.shared_settings import MAX_DIM, MAX_HEAD_DIM, SharedSettings
from attention_core.stepthrough import HEAD_FIELD, OTHER_ROUTE, Panel, Stage, StepThrough, compare, explained_value
from attention_core.transformer.generation import FLOAT32_BYTES
from attention_core.weights import module_weights

#: Grouped-query attention: query heads h (1..MAX_GQA_HEADS) and head_dim (1..MAX_HEAD_DIM); h · head_dim
#: must stay at most MAX_DIM columns (checked with a message), so Q fits the screen.
MAX_GQA_HEADS = 8


def build_gqa_walkthrough(settings: SharedSettings, gqa: GQASettings,
                          edits: Edits | None = None) -> GQAWalkthrough:
    """Grouped-query self-attention on the settings' sentence, every intermediate, checked against PyTorch.

    Args:
        settings: validated shared settings: sentence, d_model, seed, causal.
        gqa: the page's own settings (``settings.gqa``): num_heads h, num_kv_heads, head_dim.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell; num_kv_heads not dividing num_heads (field ``gqa.num_kv_heads``);
            num_heads · head_dim wider than MAX_DIM (field ``head_dim``).
    """
    edits = edits or {}
    inputs = build_inputs(settings, edits, edited=("x",))
    x = inputs.x  # (T, D)
    h, kv, hd = gqa.num_heads, gqa.num_kv_heads, gqa.head_dim
    kv_head_of(h, kv)  # the message about dividing first
    if h * hd > MAX_DIM:
        raise InputError(N_("num_heads · head_dim = {h} · {hd} = {width} columns do not fit the screen; keep it at "
                            "most {max} (fewer heads or a smaller head_dim)."),
                         field="gqa.head_dim", h=h, hd=hd, width=h * hd, max=MAX_DIM)
    w = module_weights(x.shape[-1], h * hd, settings.seed, out_proj=True)
    t = x.shape[0]
    mask = causal_mask(t) if settings.causal_mask else None
    trace = grouped_query_attention(x, w["w_query"], w["w_key"][:, :kv * hd], w["w_value"][:, :kv * hd],
                                    w["w_out"], b_out=w["b_out"], num_heads=h, num_kv_heads=kv, attn_mask=mask)
    with torch.no_grad():
        reference = F.scaled_dot_product_attention(trace.query_heads[None], trace.key_heads[None],
                                                   trace.value_heads[None], is_causal=settings.causal_mask,
                                                   enable_gqa=True)[0]
    checks = [compare(trace.attention.output, reference,
                      f"F.scaled_dot_product_attention(Q (1, {h}, T, {hd}), K (1, {kv}, T, {hd}), V, "
                      f"is_causal={settings.causal_mask}, enable_gqa=True)",
                      note=Message(N_("every query head's context vectors")))]
    if kv == h:
        mha = multi_head_attention(x, x, w["w_query"], w["w_key"], w["w_value"], w["w_out"], b_out=w["b_out"],
                                   num_heads=h, attn_mask=mask)
        checks.append(compare(trace.output, mha.output, "multi_head_attention(X, X, W_q, W_k, W_v, W_O, num_heads=h)",
                              note=Message(N_("num_kv_heads = num_heads: this is multi-head attention")),
                              against=OTHER_ROUTE))
    return GQAWalkthrough(settings=settings, inputs=inputs, tokens=inputs.tokens, trace=trace, checks=tuple(checks))


# ---------------------------------------------------------------- panels

_TOKEN, _COLUMN = Message(N_("token")), Message(N_("head · column"))
_QUERY_HEAD, _KV_HEAD = Message(N_("query head")), Message(N_("key/value head"))


def _by_head(heads: int, head_dim: int, prefix: str = "h") -> tuple[str, ...]:
    return tuple(f"{prefix}{r + 1}·c{c + 1}" for r in range(heads) for c in range(head_dim))


def gqa_panels(walk: GQAWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage``; exactly one is explained (per head on the per-head stages).

    Raises:
        KeyError: an unknown stage.
    """
    t = walk.trace
    rows = tuple(token_labels(walk.tokens))
    h, kv, hd = t.num_heads, t.num_kv_heads, t.head_dim
    if stage == "inputs":
        return (Panel("X", t.x, rows, tuple(dim_labels("d", t.x.shape[-1])), _TOKEN, Message(N_("dimension"))),)
    if stage == "projections":
        return (Panel(Message(N_("Q = X W_q: {h} query heads"), h=h), t.query, rows, _by_head(h, hd), _TOKEN,
                      _COLUMN, explained=False),
                Panel(Message(N_("K = X W_k: {kv} key heads"), kv=kv), t.key, rows, _by_head(kv, hd, "g"), _TOKEN,
                      _COLUMN),
                Panel(Message(N_("V = X W_v: {kv} value heads"), kv=kv), t.value, rows, _by_head(kv, hd, "g"), _TOKEN,
                      _COLUMN, explained=False))
    if stage == "groups":
        share = torch.zeros(h, kv)
        share[torch.arange(h), torch.tensor(t.groups)] = 1.0
        return (Panel(Message(N_("1 where query head r reads key/value head g")), share,
                      tuple(f"q{r + 1}" for r in range(h)), tuple(f"g{g + 1}" for g in range(kv)), _QUERY_HEAD,
                      _KV_HEAD),)
    if stage == "repeat":
        return tuple(Panel(Message(N_("Query head {r} reads K of group {g}"), r=r + 1, g=t.groups[r] + 1),
                           t.key_repeated[r], rows, tuple(f"c{c + 1}" for c in range(hd)), _TOKEN,
                           Message(N_("column of the head")), head=r)
                     for r in range(h))
    if stage == "weights":
        return tuple(Panel(Message(N_("Query head {r} (K, V of group {g}): weights"), r=r + 1, g=t.groups[r] + 1),
                           t.attention.weights[r], rows, rows, Message(N_("query token")), Message(N_("key token")),
                           head=r)
                     for r in range(h))
    if stage == "output":
        out_cols = tuple(dim_labels("o", t.output.shape[-1]))
        return (Panel("O = Concat(head_1, …, head_h) W_O + b_O", t.output, rows, out_cols, _TOKEN,
                      Message(N_("column"))),)
    if stage == "kv_cache":
        rows_ = walk.cache_rows
        return (Panel(Message(N_("Bytes per token and layer (K and V, float32)")),
                      torch.tensor([[float(b)] for _, _, b in rows_]),
                      tuple(f"{name} ({heads})" for name, heads, _ in rows_), ("bytes",),
                      Message(N_("variant (key/value heads)")), ""),)
    raise KeyError(stage)


# ---------------------------------------------------------------- formulas (sympy)

@lru_cache(maxsize=None)
def gqa_formula(stage: str, causal: bool) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines built with sympy.

    Raises:
        KeyError: an unknown stage.
    """
    i, j, m, r = sp.symbols("i j l r", integer=True, positive=True)  # m is printed as l
    h, kv, hd, big_l, b = sp.symbols(r"h n_{kv} d_{head} L b", integer=True, positive=True)
    x, w, q, k, alpha, a = (sp.IndexedBase(s) for s in ("x", "W", "q", "k", r"\alpha", "a'"))
    g = sp.Function("g")
    if stage == "inputs":
        return (r"X \in \mathbb{R}^{T \times D}",)
    if stage == "projections":
        return (r"Q = X W_q \in \mathbb{R}^{T \times h\, d_{head}}, \quad K = X W_k,\ V = X W_v \in "
                r"\mathbb{R}^{T \times n_{kv}\, d_{head}}",
                sp.latex(sp.Eq(k[i, j], sp.Sum(x[i, m] * w[m, j], (m, 1, sp.Symbol("D"))), evaluate=False)))
    if stage == "groups":
        return (sp.latex(sp.Eq(g(r), sp.floor((r - 1) * kv / h) + 1, evaluate=False)) + r", \quad r = 1, \ldots, h",)
    if stage == "repeat":
        return (r"K^{(r)} = K_{g(r)}, \quad V^{(r)} = V_{g(r)} \qquad (\texttt{repeat\_interleave})",)
    if stage == "weights":
        upper = i if causal else sp.Symbol("T")
        return (sp.latex(sp.Eq(a[i, j], sp.Sum(q[i, m] * k[j, m], (m, 1, hd)) / sp.sqrt(hd), evaluate=False)),
                sp.latex(sp.Eq(alpha[i, j], sp.exp(a[i, j]) / sp.Sum(sp.exp(a[i, m]), (m, 1, upper)), evaluate=False)),
                r"q = Q^{(r)},\quad k = K_{g(r)}")
    if stage == "output":
        return (r"O = \operatorname{Concat}(\mathrm{head}_1, \ldots, \mathrm{head}_h)\, W^{O} + b^{O}",)
    if stage == "kv_cache":
        return (sp.latex(sp.Eq(sp.Symbol(r"B_{\mathrm{token}}"), big_l * 2 * kv * hd * b, evaluate=False)),
                r"\text{MHA: } n_{kv} = h, \quad \text{GQA: } 1 < n_{kv} < h, \quad \text{MQA: } n_{kv} = 1")
    raise KeyError(stage)


# ---------------------------------------------------------------- one entry, with its numbers in

def explain_gqa(walk: GQAWalkthrough, stage: str, row: int, col: int, head: int = 0, tr: Translate = Message) -> str:
    """One entry (row, col) of ``stage``'s explained panel (of query head ``head`` on per-head stages), as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    t = walk.trace
    value = explained_value(gqa_panels(walk, stage), row, col, head)
    if stage == "inputs":
        return f"x_{{{row + 1},{col + 1}}} = {number(value)}"
    if stage == "projections":
        return entries.projection_entry_latex("k", row, col, t.x[row].tolist(), t.w_key[:, col].tolist(), value)
    if stage == "groups":
        group = t.groups[row]
        return (f"g({row + 1}) = \\left\\lfloor \\frac{{({row + 1} - 1) \\cdot {t.num_kv_heads}}}{{{t.num_heads}}}"
                f"\\right\\rfloor + 1 = {group + 1}" + (r" \quad\Rightarrow\quad 1" if group == col else
                                                      r" \ne " + f"{col + 1} \\quad\\Rightarrow\\quad 0"))
    if stage == "repeat":
        g = t.groups[head]
        return (f"k^{{({head + 1})}}_{{{row + 1},{col + 1}}} = K_{{{row + 1},\\,{g * t.head_dim + col + 1}}} = "
                + number(value) + r" \quad \text{(" + f"g({head + 1}) = {g + 1}" + ")}")
    if stage == "weights":
        return entries.masked_weight_entry_latex(row, col, t.attention.masked_scores[head, row].tolist(), value, head, tr)
    if stage == "output":
        return entries.output_entry_latex(row, col, t.concat[row].tolist(), t.w_out[:, col].tolist(),
                                     float(t.b_out[col]), value)
    if stage == "kv_cache":
        name, heads, _ = walk.cache_rows[row]
        return (f"\\text{{{name}}}: 1 \\cdot 2 \\cdot {heads} \\cdot {t.head_dim} \\cdot {FLOAT32_BYTES} = "
                f"{int(value)}")
    raise KeyError(stage)


def gqa_exercise(walk: GQAWalkthrough, stage: str, row: int, col: int, head: int = 0) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` (of query head ``head``) as an exercise (practice mode): a projection, a
    weight, an output; None where numbers are read off or counted (inputs, groups, the repeat, the cache).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    t = walk.trace
    value = explained_value(gqa_panels(walk, stage), row, col, head)
    i, j, r = row + 1, col + 1, head + 1
    if stage == "projections":
        return practice.dot_exercise(f"k_{{{i},{j}}}", f"\\sum_l x_{{{i},l}}\\, W^k_{{l,{j}}}", (f"x_{{{i}}}", t.x[row].tolist()),
                                     (f"W^k_{{:,{j}}}", t.w_key[:, col].tolist()), value)
    if stage == "weights":
        masked = t.attention.masked_scores[head]
        blocked = bool(torch.isinf(masked).any())
        return practice.softmax_exercise(
            f"\\alpha^{{({r})}}_{{{i},{j}}}", f"\\frac{{e^{{a^{{({r})}}_{{{i},{j}}}}}}}{{\\sum_l e^{{a^{{({r})}}_{{{i},l}}}}}}",
            f"a^{{({r})}}_{{{i}}}", masked.tolist(), row, col, value,
            unmasked=t.attention.scaled_scores[head].tolist() if blocked else None)
    if stage == "output":
        return practice.dot_exercise(f"o_{{{i},{j}}}", f"\\sum_l c_{{{i},l}}\\, W^O_{{l,{j}}} + b^O_{{{j}}}",
                                     (f"c_{{{i}}}", t.concat[row].tolist()), (f"W^O_{{:,{j}}}", t.w_out[:, col].tolist()),
                                     value, extra=(f"b^O_{{{j}}} = {number(float(t.b_out[col]))}",))
    return None


def gqa_step_through(walk: GQAWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in GQA_PAGE.stages:
        raise KeyError(stage)
    t = walk.trace
    remark = None
    if stage == "kv_cache":
        remark = Message(N_("This layer's cache holds {kv} key/value heads per token instead of {h}: {ratio:g} × "
                            "smaller than multi-head attention's."), kv=t.num_kv_heads, h=t.num_heads,
                         ratio=t.num_heads / t.num_kv_heads)
    per_head = stage in ("repeat", "weights")
    return StepThrough(
        page=GQA_PAGE,
        stage=Stage(key=stage, panels=gqa_panels(walk, stage),
                    formula=lambda tr: gqa_formula(stage, walk.settings.causal_mask),
                    entry=lambda row, col, head, tr: explain_gqa(walk, stage, row, col, head, tr),
                    exercise=lambda row, col, head: gqa_exercise(walk, stage, row, col, head),
                    code=(grouped_query_attention, kv_head_of), remark=remark),
        checks=walk.checks, num_heads=t.num_heads if per_head else 0, head_field=HEAD_FIELD,
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class GQASettings:
    """The grouped-query attention page's own settings (``settings.gqa``).

    Attributes:
        num_heads: h, the query heads (1..MAX_GQA_HEADS).
        num_kv_heads: the key/value heads (1..MAX_GQA_HEADS); must divide h (checked on the page, with a message).
        head_dim: the width of one head (1..MAX_HEAD_DIM); h · head_dim at most MAX_DIM (checked on the page).
    """

    num_heads: int = 4
    num_kv_heads: int = 2
    head_dim: int = 2


GQA_PAGE = Page(
    key="gqa", title=N_("Grouped-query attention"), icon=":material/group_work:", section="modern",
    summary=N_("Grouped-query attention: query heads sharing key/value heads, a smaller KV cache"),
    stages={
        "inputs": N_("Inputs X"),
        "projections": N_("Projections: h query heads, fewer key/value heads"),
        "groups": N_("Which query heads share which key/value head"),
        "repeat": N_("Repeat K and V: each query head gets its group's"),
        "weights": N_("Weights per query head: softmax(Q Kᵀ / √head_dim + M)"),
        "output": N_("Concat the heads, then W_O"),
        "kv_cache": N_("The KV cache per token: MHA, GQA, MQA"),
    },
    build=build_gqa_walkthrough, step_through=gqa_step_through, default_stage="groups",
    default_stage_why=N_("Which query heads share a key/value head is what this page adds; X and the projections come before."), recipe=gqa_recipe,
    settings=GQASettings,
    fields=(
        IntRange("num_heads", 1, MAX_GQA_HEADS, label(N_("The number of query heads"))),
        IntRange("num_kv_heads", 1, MAX_GQA_HEADS, label(N_("The number of key/value heads"))),
        IntRange("head_dim", 1, MAX_HEAD_DIM, "head_dim"),
    ),
    legacy={"gqa_num_heads": "num_heads", "num_kv_heads": "num_kv_heads", "head_dim": "head_dim", "gqa_stage": "stage"},
)
