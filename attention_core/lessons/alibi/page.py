r"""From settings to every number of the *ALiBi* page, in the one step-through protocol.

:func:`build_alibi_walkthrough` projects the sentence's X to Q, K, V (the self-attention page's seeded weights,
d_k wide), gives H heads the same q and k so that they differ only by their slope, runs
:func:`alibi.alibi_attention` and checks it against ``torch.nn.functional.scaled_dot_product_attention`` with the
bias as a float mask and against a direct loop (:func:`alibi.alibi_weights_loop`).

Shape legend: T tokens, D = d_model, d = d_k, H = num_heads. Float32.

Sources: Press et al. 2022 ("Train Short, Test Long", sec. 3 and the reference code's slopes); Vaswani et al.
2017, eq. 1.
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
from attention_core.errors import N_, Message
from attention_core.fields import IntRange, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.tokens import token_labels
from attention_core.latex import Translate, number
from attention_core.lessons.alibi.recipe import alibi_recipe
from attention_core.lessons.alibi.walk import AlibiWalkthrough
from attention_core.masks import causal_mask
from attention_core.modern.alibi import alibi_attention, alibi_weights_loop, slopes
from attention_core.page import Page
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import FLOAT_LOOP, HEAD_FIELD, Panel, Stage, StepThrough, compare, explained_value

#: ALiBi: its heads, 1..MAX_ALIBI_HEADS (each with its own slope).
MAX_ALIBI_HEADS = 8


def build_alibi_walkthrough(settings: SharedSettings, alibi: AlibiSettings,
                            edits: Edits | None = None) -> AlibiWalkthrough:
    """ALiBi with H heads on the settings' sentence, every intermediate, checked against PyTorch and a loop.

    Args:
        settings: validated shared settings: sentence, d_model, d_k, seed, causal.
        alibi: the page's own settings (``settings.alibi``): num_heads H.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell.
    """
    edits = edits or {}
    inputs = build_inputs(settings, edits)
    x = inputs.x
    w = inputs.projections  # the self-attention page's W_q, W_k, W_v (D, d_k), with the learner's edits
    query, key, value = x @ w["w_query"], x @ w["w_key"], x @ w["w_value"]
    t = x.shape[0]
    mask = causal_mask(t) if settings.causal_mask else None
    trace = alibi_attention(query, key, value, alibi.num_heads, mask)
    float_mask = trace.bias if mask is None else trace.bias.masked_fill(~mask, float("-inf"))
    h = alibi.num_heads
    with torch.no_grad():
        reference = F.scaled_dot_product_attention(query.expand(h, t, -1), key.expand(h, t, -1),
                                                   value.expand(h, t, -1), attn_mask=float_mask)
    loop = torch.tensor(alibi_weights_loop(trace.scaled_scores.tolist(), slopes(h), settings.causal_mask))
    checks = (
        compare(trace.attention.output, reference, "F.scaled_dot_product_attention(q, k, v, attn_mask=bias)",
                note=Message(N_("every head's context vectors, the bias (and −∞ where masked) as a float mask"))),
        compare(trace.attention.weights, loop, "alibi_weights_loop(...)  # math.exp, entry by entry",
                note=Message(N_("every head's weights against a direct loop")), against=FLOAT_LOOP),
    )
    return AlibiWalkthrough(settings=settings, inputs=inputs, tokens=inputs.tokens, query=query, key=key, trace=trace,
                            checks=checks)


# ---------------------------------------------------------------- panels

_QUERY, _KEY = Message(N_("query token")), Message(N_("key token"))


def alibi_panels(walk: AlibiWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage``; exactly one is explained (one per head on the per-head stages).

    Raises:
        KeyError: an unknown stage.
    """
    t = walk.trace
    rows = tuple(token_labels(walk.tokens))
    heads = range(len(t.slopes))
    if stage == "slopes":
        return (Panel("m_h", t.slopes[:, None], tuple(f"h{h + 1}" for h in heads), ("m",),
                      Message(N_("head")), ""),)
    if stage == "distance":
        return (Panel("|i − j|", t.distance, rows, rows, _QUERY, _KEY),)
    if stage == "bias":
        return tuple(Panel(Message(N_("Head {h}: bias, slope {m:g}"), h=h + 1, m=float(t.slopes[h])), t.bias[h],
                           rows, rows, _QUERY, _KEY, head=h) for h in heads)
    if stage == "biased_scores":
        return tuple(Panel(Message(N_("Head {h}: q · k / √d + bias"), h=h + 1), t.attention.masked_scores[h],
                           rows, rows, _QUERY, _KEY, head=h) for h in heads)
    if stage == "weights":
        return tuple(Panel(Message(N_("Head {h}: weights"), h=h + 1), t.attention.weights[h], rows, rows, _QUERY,
                           _KEY, head=h) for h in heads)
    raise KeyError(stage)


# ---------------------------------------------------------------- formulas (sympy)

@lru_cache(maxsize=None)
def alibi_formula(stage: str, causal: bool) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines built with sympy.

    Raises:
        KeyError: an unknown stage.
    """
    i, j, h, l_ = sp.symbols("i j h l", integer=True, positive=True)
    big_h, d = sp.symbols("H d", positive=True)
    m, b, a, alpha, q, k = (sp.IndexedBase(s) for s in ("m", "b", "a", r"\alpha", "q", "k"))
    if stage == "slopes":
        return (sp.latex(sp.Eq(m[h], 2 ** (-8 * h / big_h), evaluate=False)) + r", \quad h = 1, \ldots, H",)
    if stage == "distance":
        return (sp.latex(sp.Eq(sp.Symbol("d_{i,j}"), sp.Abs(i - j), evaluate=False)),)
    if stage == "bias":
        return (sp.latex(sp.Eq(b[i, j], -m[h] * sp.Abs(i - j), evaluate=False)),)
    if stage == "biased_scores":
        line = sp.latex(sp.Eq(a[i, j], sp.Sum(q[i, l_] * k[j, l_], (l_, 1, d)) / sp.sqrt(d) + b[i, j], evaluate=False))
        return (line, r"a_{i,j} = -\infty \quad (j > i)") if causal else (line,)
    if stage == "weights":
        upper = i if causal else sp.Symbol("T")
        return (sp.latex(sp.Eq(alpha[i, j], sp.exp(a[i, j]) / sp.Sum(sp.exp(a[i, l_]), (l_, 1, upper)), evaluate=False)),)
    raise KeyError(stage)


# ---------------------------------------------------------------- one entry, with its numbers in

def explain_alibi(walk: AlibiWalkthrough, stage: str, row: int, col: int, head: int = 0,
                  tr: Translate = Message) -> str:
    """One entry (row, col) of ``stage``'s explained panel (of ``head`` on per-head stages), numbers in, as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    t = walk.trace
    value = explained_value(alibi_panels(walk, stage), row, col, head)
    big_h = len(t.slopes)
    i, j = row + 1, col + 1
    if stage == "slopes":
        return f"m_{{{i}}} = 2^{{-8 \\cdot {i} / {big_h}}} = {number(value)}"
    if stage == "distance":
        return f"d_{{{i},{j}}} = |{i} - {j}| = {int(value)}"
    if stage == "bias":
        return (f"b^{{({head + 1})}}_{{{i},{j}}} = -m_{{{head + 1}}} \\cdot |{i} - {j}| = "
                f"-{number(float(t.slopes[head]))} \\cdot {abs(i - j)} = {number(value)}")
    if stage == "biased_scores":
        scaled = float(t.scaled_scores[row, col])
        if value == float("-inf"):
            return f"a^{{({head + 1})}}_{{{i},{j}}} = -\\infty \\quad (j > i)"
        return (entries.scaled_score_entry_latex(row, col, walk.query[row].tolist(), walk.key[col].tolist(),
                                            walk.query.shape[-1], scaled)
                + f"\\qquad a^{{({head + 1})}}_{{{i},{j}}} = {number(scaled)} + "
                + f"\\left({number(float(t.bias[head, row, col]))}\\right) = {number(value)}")
    if stage == "weights":
        return entries.masked_weight_entry_latex(row, col, t.attention.masked_scores[head, row].tolist(), value, head, tr)
    raise KeyError(stage)


def alibi_exercise(walk: AlibiWalkthrough, stage: str, row: int, col: int, head: int = 0) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` (of ``head`` on per-head stages) as an exercise (practice mode): a slope, a
    bias, a biased score, a weight; None for the distances and for scores blocked by the causal mask.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    t = walk.trace
    value = explained_value(alibi_panels(walk, stage), row, col, head)
    big_h = len(t.slopes)
    i, j, r = row + 1, col + 1, head + 1
    if stage == "slopes":
        if abs(value - 2 ** (-8 * i / big_h)) > 1e-6:
            return None  # H not a power of 2: the reference code interleaves two such series
        return practice.value_exercise(f"m_{{{i}}}", f"2^{{-8 \\cdot {i} / H}}", (f"H = {big_h}",), value)
    if stage == "bias":
        return practice.value_exercise(f"b^{{({r})}}_{{{i},{j}}}", f"-m_{{{r}}} \\cdot |i - j|",
                                       (f"m_{{{r}}} = {number(float(t.slopes[head]))}", f"i = {i},\\ j = {j}"), value)
    if stage == "biased_scores":
        if value == float("-inf"):
            return None
        return practice.value_exercise(
            f"a^{{({r})}}_{{{i},{j}}}", f"\\frac{{q_{{{i}}} \\cdot k_{{{j}}}}}{{\\sqrt{{d}}}} + b^{{({r})}}_{{{i},{j}}}",
            (f"\\frac{{q_{{{i}}} \\cdot k_{{{j}}}}}{{\\sqrt{{d}}}} = {number(float(t.scaled_scores[row, col]))}",
             f"b^{{({r})}}_{{{i},{j}}} = {number(float(t.bias[head, row, col]))}"), value)
    if stage == "weights":
        masked = t.attention.masked_scores[head]
        unmasked = t.scaled_scores + t.bias[head]
        return practice.softmax_exercise(
            f"\\alpha^{{({r})}}_{{{i},{j}}}", f"\\frac{{e^{{a^{{({r})}}_{{{i},{j}}}}}}}{{\\sum_l e^{{a^{{({r})}}_{{{i},l}}}}}}",
            f"a^{{({r})}}_{{{i}}}", masked.tolist(), row, col, value,
            unmasked=unmasked.tolist() if bool(torch.isinf(masked).any()) else None)
    return None


def alibi_step_through(walk: AlibiWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in ALIBI_PAGE.stages:
        raise KeyError(stage)
    per_head = stage in ("bias", "biased_scores", "weights")
    return StepThrough(
        page=ALIBI_PAGE,
        stage=Stage(key=stage, panels=alibi_panels(walk, stage),
                    formula=lambda tr: alibi_formula(stage, walk.settings.causal_mask),
                    entry=lambda row, col, head, tr: explain_alibi(walk, stage, row, col, head, tr),
                    exercise=lambda row, col, head: alibi_exercise(walk, stage, row, col, head),
                    code=(alibi_attention, slopes)),
        checks=walk.checks, num_heads=len(walk.trace.slopes) if per_head else 0, head_field=HEAD_FIELD,
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class AlibiSettings:
    """The ALiBi page's own settings (``settings.alibi``).

    Attributes:
        num_heads: H, the heads, each with its own slope (1..MAX_ALIBI_HEADS).
    """

    num_heads: int = 4


ALIBI_PAGE = Page(
    key="alibi", title=N_("ALiBi: linear biases"), icon=":material/trending_down:", section="modern",
    summary=N_("ALiBi: a distance penalty per head instead of a position embedding"),
    stages={
        "slopes": N_("One slope per head: m_h = 2^(−8h/H)"),
        "distance": N_("The distance |i − j| between query and key"),
        "bias": N_("Each head's bias: −m_h · |i − j|"),
        "biased_scores": N_("Scores plus bias (and the causal mask)"),
        "weights": N_("Weights: softmax over the biased scores"),
    },
    build=build_alibi_walkthrough, step_through=alibi_step_through, default_stage="bias",
    default_stage_why=N_("The bias is what ALiBi adds; the slopes and distances it is made of come before."), recipe=alibi_recipe,
    settings=AlibiSettings, fields=(IntRange("num_heads", 1, MAX_ALIBI_HEADS, label(N_("The number of heads"))),),
    legacy={"alibi_num_heads": "num_heads", "alibi_stage": "stage"},
)
