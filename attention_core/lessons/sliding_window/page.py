r"""From settings to every number of the *Sliding-window attention* page, in the one step-through protocol.

:func:`build_sliding_window_walkthrough` projects the sentence's X to Q, K, V (the self-attention page's seeded weights,
d_k wide), attends with :func:`sliding.window_mask` and checks the result against
``torch.nn.functional.scaled_dot_product_attention`` with the same mask; :func:`sliding_window_step_through` puts one stage in
a :class:`~attention_core.stepthrough.StepThrough`.

Shape legend: T tokens, D = d_model, d = d_k, w = window, L = layers of the receptive-field view. Float32.

Sources: Beltagy et al. 2020 (Longformer, sec. 3.1), Jiang et al. 2023 (Mistral 7B, sec. 2); seed 003
(``003_734755b2d0b981d3.txt``) §1.7 (a CNN's receptive field against self-attention's); Vaswani et al. 2017, eq. 1.
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
from attention_core.inputs.text import MAX_TOKENS
from attention_core.inputs.tokens import token_labels
from attention_core.latex import Translate
from attention_core.lessons.sliding_window.recipe import sliding_window_recipe
from attention_core.lessons.sliding_window.walk import SlidingWalkthrough
from attention_core.modern.sliding import receptive_field, window_mask
from attention_core.page import Page
from attention_core.self_attention.functional import scaled_dot_product_attention
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Panel, Stage, StepThrough, compare, explained_value

#: Sliding-window attention: the layers its receptive-field view stacks, 1..MAX_SLIDING_LAYERS (the window itself
#: is 1..MAX_TOKENS).
MAX_SLIDING_LAYERS = 4


def build_sliding_window_walkthrough(settings: SharedSettings, sliding_window: SlidingWindowSettings,
                                     edits: Edits | None = None) -> SlidingWalkthrough:
    """Sliding-window attention on the settings' sentence, checked against PyTorch.

    Args:
        settings: validated shared settings: sentence, d_model, d_k, seed, causal.
        sliding_window: the page's own settings (``settings.sliding_window``): window w, layers.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell; a window below 1.
    """
    edits = edits or {}
    inputs = build_inputs(settings, edits)
    x = inputs.x
    w = inputs.projections  # the self-attention page's W_q, W_k, W_v (D, d_k), with the learner's edits
    query, key, value = x @ w["w_query"], x @ w["w_key"], x @ w["w_value"]
    mask = window_mask(x.shape[0], sliding_window.window, settings.causal_mask)
    trace = scaled_dot_product_attention(query, key, value, attn_mask=mask)
    with torch.no_grad():
        reference = F.scaled_dot_product_attention(query[None], key[None], value[None], attn_mask=mask)[0]
    checks = (compare(trace.output, reference, "F.scaled_dot_product_attention(q, k, v, attn_mask=window_mask)",
                      note=Message(N_("the context vectors with the same window mask"))),)
    return SlidingWalkthrough(settings=settings, inputs=inputs, tokens=inputs.tokens, mask=mask, trace=trace,
                              reach=receptive_field(mask, sliding_window.layers), checks=checks)


# ---------------------------------------------------------------- panels

_QUERY, _KEY = Message(N_("query token")), Message(N_("key token"))


def sliding_panels(walk: SlidingWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage``; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    t = walk.trace
    rows = tuple(token_labels(walk.tokens))
    if stage == "mask":
        return (Panel(Message(N_("1 where key j is inside query i's window of {w}"), w=walk.window),
                      walk.mask.float(), rows, rows, _QUERY, _KEY),)
    if stage == "masked_scores":
        return (Panel(Message(N_("Scores q · k / √d_k, −∞ outside the window")), t.masked_scores, rows, rows, _QUERY,
                      _KEY),)
    if stage == "weights":
        return (Panel(Message(N_("Weights")), t.weights, rows, rows, _QUERY, _KEY),)
    if stage == "receptive":
        last = walk.reach.shape[0]
        return tuple(Panel(Message(N_("After {layers} layer(s): 1 where input j reaches output i"), layers=n + 1),
                           walk.reach[n].float(), rows, rows, Message(N_("output token")),
                           Message(N_("input token")), explained=n + 1 == last)
                     for n in range(last))
    raise KeyError(stage)


# ---------------------------------------------------------------- formulas (sympy)

@lru_cache(maxsize=None)
def sliding_formula(stage: str, causal: bool) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines built with sympy.

    Raises:
        KeyError: an unknown stage.
    """
    i, j, l_ = sp.symbols("i j l", integer=True, positive=True)
    w, d = sp.symbols("w d_k", positive=True)
    big_l = sp.Symbol("L", integer=True, positive=True)
    m, a, alpha = sp.IndexedBase("M"), sp.IndexedBase("a'"), sp.IndexedBase(r"\alpha")
    inside = sp.And(i - w < j, j <= i) if causal else sp.Abs(i - j) < w
    if stage == "mask":
        return (sp.latex(sp.Eq(m[i, j], sp.Piecewise((0, inside), (-sp.oo, True)), evaluate=False)),)
    if stage == "masked_scores":
        return (sp.latex(sp.Eq(a[i, j], sp.Symbol("a_{i,j}") + m[i, j], evaluate=False)),)
    if stage == "weights":
        # the keys in the window: back to i − w + 1 and, with the causal switch off, on to i + w − 1 (at most T)
        last = i if causal else sp.Min(sp.Symbol("T", integer=True, positive=True), i + w - 1)
        return (sp.latex(sp.Eq(alpha[i, j], sp.exp(a[i, j]) / sp.Sum(sp.exp(a[i, l_]), (l_, sp.Max(1, i - w + 1),
                                                                                         last)), evaluate=False)),)
    if stage == "receptive":
        reach = sp.And(0 <= i - j, i - j <= big_l * (w - 1)) if causal else sp.Abs(i - j) <= big_l * (w - 1)
        return (r"R^{(L)} = R^{(L-1)} \circ M", sp.latex(reach))
    raise KeyError(stage)


# ---------------------------------------------------------------- one entry, with its numbers in

def explain_sliding(walk: SlidingWalkthrough, stage: str, row: int, col: int, tr: Translate = Message) -> str:
    """One entry (row, col) of ``stage``'s explained panel, numbers in, as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    explained_value(sliding_panels(walk, stage), row, col)  # raises outside the panel
    i, j, w = row + 1, col + 1, walk.window
    t = walk.trace
    allowed = bool(walk.mask[row, col])
    if stage == "mask":
        test = f"0 \\le {i} - {j} < {w}" if walk.settings.causal_mask else f"|{i} - {j}| < {w}"
        # KaTeX's own symbols: ✓ and ✗ in \text have no font metrics in KaTeX (a console warning, and a fallback font)
        holds = r"\checkmark" if allowed else r"\times"
        value = "0" if allowed else r"-\infty"
        return f"{test}\\ {holds} \\quad\\Rightarrow\\quad M_{{{i},{j}}} = {value}"
    if stage == "masked_scores":
        return entries.masked_score_entry_latex(row, col, float(t.scaled_scores[row, col]), allowed)
    if stage == "weights":
        return entries.masked_weight_entry_latex(row, col, t.masked_scores[row].tolist(), float(t.weights[row, col]),
                                            None, tr)
    if stage == "receptive":
        layers = walk.reach.shape[0]
        reach = layers * (w - 1)
        distance = f"{i} - {j}" if walk.settings.causal_mask else f"|{i} - {j}|"
        gap = i - j if walk.settings.causal_mask else abs(i - j)
        ok = gap <= reach and (gap >= 0)
        relation = r"\le" if ok else ">"
        return (f"{distance} = {gap} \\;{relation}\\; L (w - 1) = {layers} \\cdot {w - 1} = {reach}"
                f" \\quad\\Rightarrow\\quad R^{{({layers})}}_{{{i},{j}}} = {int(ok)}")
    raise KeyError(stage)


def sliding_exercise(walk: SlidingWalkthrough, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of the weights stage as an exercise (practice mode); None for the mask, the masked scores
    and the receptive field (looked at, not computed).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(sliding_panels(walk, stage), row, col)
    if stage != "weights":
        return None
    t = walk.trace
    i, j = row + 1, col + 1
    return practice.softmax_exercise(
        f"\\alpha_{{{i},{j}}}", f"\\frac{{e^{{a'_{{{i},{j}}}}}}}{{\\sum_l e^{{a'_{{{i},l}}}}}}", f"a'_{{{i}}}",
        t.masked_scores.tolist(), row, col, value, unmasked=t.scaled_scores.tolist())


def sliding_window_step_through(walk: SlidingWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's .
    """
    if stage not in SLIDING_WINDOW.stages:
        raise KeyError(stage)
    remark = None
    if stage == "mask":
        kept, total = int(walk.mask.sum()), walk.mask.numel()
        remark = Message(N_("{kept} of the {total} query-key pairs are scored: at most {per_row} per row, so the work "
                            "grows like T · w instead of T²."), kept=kept, total=total,
                         per_row=int(walk.mask.sum(-1).max()))
    elif stage == "receptive":
        layers = walk.reach.shape[0]
        remark = Message(N_("After {layers} layer(s) the last token depends on {n} input tokens: the window w = {w} "
                            "reaches {step} tokens further back with every layer."), layers=layers,
                         n=int(walk.reach[-1, -1].sum()), w=walk.window, step=walk.window - 1)
    return StepThrough(
        page=SLIDING_WINDOW,
        stage=Stage(key=stage, panels=sliding_panels(walk, stage),
                    formula=lambda tr: sliding_formula(stage, walk.settings.causal_mask),
                    entry=lambda row, col, head, tr: explain_sliding(walk, stage, row, col, tr),
                    exercise=lambda row, col, head: sliding_exercise(walk, stage, row, col),
                    code=(window_mask, receptive_field), remark=remark),
        checks=walk.checks,
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class SlidingWindowSettings:
    """The sliding-window page's own settings (``settings.sliding_window``).

    Attributes:
        window: w, the tokens each query may see, itself included (1..MAX_TOKENS).
        layers: L, the layers of the receptive-field view (1..MAX_SLIDING_LAYERS).
    """

    window: int = 3
    layers: int = 3


SLIDING_WINDOW = Page(
    key="sliding_window", title=N_("Sliding-window attention"), icon=":material/view_week:", section="modern",
    summary=N_("Sliding-window attention: the last w tokens only, a receptive field that grows"),
    stages={
        "mask": N_("The window mask: the last w tokens only"),
        "masked_scores": N_("Scores outside the window: −∞"),
        "weights": N_("Weights: softmax inside the window"),
        "receptive": N_("Stacked layers: the receptive field grows"),
    },
    build=build_sliding_window_walkthrough, step_through=sliding_window_step_through, recipe=sliding_window_recipe,
    settings=SlidingWindowSettings,
    fields=(
        IntRange("window", 1, MAX_TOKENS, label(N_("The window"))),
        IntRange("layers", 1, MAX_SLIDING_LAYERS, label(N_("The number of layers"))),
    ),
    legacy={"window": "window", "sliding_layers": "layers", "sliding_stage": "stage"},
)
