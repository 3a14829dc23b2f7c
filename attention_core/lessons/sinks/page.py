r"""From settings to every number of the *Attention sinks* page's step-through, in the one step-through protocol.

:func:`build_sinks_walkthrough` projects the sentence's X to Q, K, V (the self-attention page's seeded weights,
d_k wide), and computes: causal softmax attention (every row of weights sums to 1); a query that matches nothing
(every score 0), with and without a sink; gpt-oss's learned sink (one logit b in every row's denominator) and its
output; and checks the sink's weights and output against transformers' ``GptOssAttention`` and its
``eager_attention_forward`` (imported on the first build, about 3 s once per server), the plain softmax against
``F.scaled_dot_product_attention``. :func:`sinks_step_through` puts one stage in a
:class:`~attention_core.stepthrough.StepThrough`. The page's SmolLM2 parts (every head's weight on the first token,
StreamingLLM's losses) are :mod:`attention_core.smollm2.sinks`, run by the page through ``ui.page_parts.sink_data``.

Shape legend: T tokens, D = d_model, d = d_k = d_v. Float32. Every check: rtol = atol = 1e-5 (measured differences
~1e-7).

Sources: Xiao et al. 2024 (StreamingLLM) §3.1; OpenAI 2025, gpt-oss model card; transformers'
``models/gpt_oss/modeling_gpt_oss.py``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F

from attention_core import practice
from attention_core.entry_formulas import masked_weight_entry_latex, weighted_sum_entry_latex
from attention_core.errors import N_, Message
from attention_core.fields import FloatRange, IntRange, OneBasedIndex, Switch, Text, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import Translate, factor, number, terms_lines
from attention_core.lessons.sinks.formulas import sinks_formula
from attention_core.lessons.sinks.recipe import sinks_recipe
from attention_core.lessons.sinks.walk import SinksWalkthrough
from attention_core.masks import causal_mask
from attention_core.modern.sinks import (
    MAX_SINK_LOGIT,
    MIN_SINK_LOGIT,
    gpt_oss_reference,
    overflow_shift,
    sink_softmax,
    sink_weight_exercise,
    uniform_query,
)
from attention_core.page import Page
from attention_core.self_attention.functional import scaled_dot_product_attention
from attention_core.shared_settings import SharedSettings
from attention_core.smollm2.model import MODERN_LM_HEADS, MODERN_LM_LAYERS, MODERN_LM_MAX_CHARS
from attention_core.stepthrough import TRANSFORMERS, Panel, Stage, StepThrough, compare, explained_value

#: StreamingLLM on SmolLM2: the sinks kept (s, 0 … MAX_SINKS), the window w (1 … MAX_STREAM_WINDOW, at least s), the
#: text's tokens (a longer text is cut, with a message; one eager pass at 1024 tokens holds 9 × 1024² weights per
#: layer, 38 MB, for a moment) and the characters of a pasted text.
MAX_SINKS = 16

MAX_STREAM_WINDOW = 1024

SINKS_MAX_CHARS = 8000

#: The tolerance of every check on this page (float32; the measured differences are ~1e-7).
TOLERANCE = 1e-5


def build_sinks_walkthrough(settings: SharedSettings, sinks: SinksSettings,
                            edits: Edits | None = None) -> SinksWalkthrough:
    """Softmax's weights, a query with nothing to find, and gpt-oss's learned sink on the settings' sentence.

    Args:
        settings: validated shared settings: sentence, d_model, d_k, seed.
        sinks: the page's own settings (``settings.sinks``): sink_logit b (its model's settings, the prompt, the
            window, ..., are the page's, not read here).
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell; a sink logit out of range (only when the settings were not validated).
    """
    b = sinks.sink_logit
    inputs = build_inputs(settings, edits or {})
    x = inputs.x
    w = inputs.projections  # the self-attention page's W_q, W_k, W_v (D, d_k), with the learner's edits
    query, key, value = x @ w["w_query"], x @ w["w_key"], x @ w["w_value"]  # (T, d) each
    t, d = query.shape
    trace = scaled_dot_product_attention(query, key, value, attn_mask=causal_mask(t))
    scores = trace.masked_scores
    sink = sink_softmax(scores, b)
    sink_output = sink.weights @ value
    uniform_weights, uniform_output = uniform_query(value)
    uniform_sink_weights, uniform_sink_output = uniform_query(value, b)
    reference = gpt_oss_reference(x, w["w_query"], w["w_key"], w["w_value"], b)
    torch_output = F.scaled_dot_product_attention(query[None], key[None], value[None], is_causal=True)[0]
    checks = (
        compare(trace.output, torch_output, "F.scaled_dot_product_attention(Q, K, V, is_causal=True)",
                note=Message(N_("softmax attention's output, no sink")), tolerance=TOLERANCE),
        compare(sink.weights, reference.module_weights,
                "transformers GptOssAttention(GptOssConfig(num_attention_heads=1, head_dim=d), sinks=[b])(X)[1]",
                note=Message(N_("the weights with the sink: W_q, W_k, W_v and b copied into the module, RoPE off")),
                tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(sink.weights, reference.eager_weights,
                "transformers…gpt_oss.eager_attention_forward(module, Q, K, V, causal mask, scaling=1/√d)[1]",
                note=Message(N_("the weights with the sink")), tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(sink_output, reference.eager_output,
                "transformers…gpt_oss.eager_attention_forward(module, Q, K, V, causal mask, scaling=1/√d)[0]",
                note=Message(N_("the output with the sink")), tolerance=TOLERANCE, against=TRANSFORMERS),
    )
    return SinksWalkthrough(
        settings=settings, inputs=inputs, tokens=inputs.tokens, query=query, key=key, value=value, scores=scores,
        weights=trace.weights, output=trace.output, uniform_weights=uniform_weights, uniform_output=uniform_output,
        uniform_sink_weights=uniform_sink_weights, uniform_sink_output=uniform_sink_output, sink=sink,
        sink_output=sink_output, checks=checks)


# ---------------------------------------------------------------- panels

_QUERY, _KEY, _TOKEN = Message(N_("query token")), Message(N_("key token")), Message(N_("token"))
_VALUE_DIM = Message(N_("component of the value"))


def sinks_panels(walk: SinksWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage``; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    rows = tuple(token_labels(walk.tokens))
    values = tuple(dim_labels("v", walk.value.shape[-1]))
    b = f"b = {walk.sink_logit:g}"
    if stage == "weights":
        return (Panel("S = Q Kᵀ / √d_k", walk.scores, rows, rows, _QUERY, _KEY, explained=False),
                Panel("W = softmax(S)", walk.weights, rows, rows, _QUERY, _KEY),
                Panel("Σ_j w_ij", walk.weights.sum(-1, keepdim=True), rows, ("Σ",), _QUERY, "", explained=False))
    if stage == "nothing":
        return (Panel(Message(N_("Weights of a query that matches nothing (every score 0)")), walk.uniform_weights,
                      rows, rows, _QUERY, _KEY, explained=False),
                Panel(Message(N_("Its output: the mean of the values it sees")), walk.uniform_output, rows, values,
                      _QUERY, _VALUE_DIM),
                Panel(Message(N_("The same query with a sink ({b}): its output"), b=b), walk.uniform_sink_output, rows,
                      values, _QUERY, _VALUE_DIM, explained=False))
    if stage == "sink_weights":
        sums = torch.stack([walk.sink.weights.sum(-1), walk.sink.share], dim=1)  # (T, 2)
        return (Panel("S = Q Kᵀ / √d_k", walk.scores, rows, rows, _QUERY, _KEY, explained=False),
                Panel(Message(N_("Weights with the sink ({b})"), b=b), walk.sink.weights, rows, rows, _QUERY, _KEY),
                Panel(Message(N_("Where each row's 1 went")), sums, rows, ("Σ_j w_ij", "sink"), _QUERY, "",
                      explained=False))
    if stage == "sink_output":
        return (Panel(Message(N_("Output with the sink: O = W V ({b})"), b=b), walk.sink_output, rows, values, _QUERY,
                      _VALUE_DIM),
                Panel(Message(N_("Output without the sink (softmax)")), walk.output, rows, values, _QUERY, _VALUE_DIM,
                      explained=False))
    raise KeyError(stage)


def explain_sinks(walk: SinksWalkthrough, stage: str, row: int, col: int, tr: Translate) -> str:
    """Entry (row, col) of ``stage``'s explained panel with its numbers in, as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(sinks_panels(walk, stage), row, col)
    i, c = row + 1, col + 1
    if stage == "weights":
        text = masked_weight_entry_latex(row, col, walk.scores[row].tolist(), value, tr=tr)
        return text.replace("\\alpha", "w").replace("a'", "s")  # the helper's α and a′ are this page's w and s
    if stage == "nothing":
        column = walk.value[: row + 1, col].tolist()
        terms = [factor(v) for v in column]  # \big, not \left … \right: a line break inside \left … \right is lost
        return ("\\begin{aligned} " + f"o_{{{i},{c}}} &= \\frac{{1}}{{{i}}} \\textstyle\\sum_{{j \\leq {i}}} v_{{j,{c}}}"
                f" = \\frac{{1}}{{{i}}} \\big({terms_lines(terms)}\\big) \\\\ &= {number(value)} \\end{{aligned}}")
    if stage == "sink_weights":
        b = walk.sink_logit
        scores = walk.scores[row].tolist()
        m = overflow_shift(scores, b)
        minus = f" - {number(m)}" if m else ""
        terms = [f"e^{{{number(s - m)}}}" for s in scores[: row + 1]] + [f"e^{{{number(b - m)}}}"]
        total = math.fsum([math.exp(s - m) for s in scores[: row + 1]] + [math.exp(b - m)])
        if col > row:  # a future key: its score is −∞ (the causal mask)
            return (f"w_{{{i},{c}}} = \\frac{{e^{{s_{{{i},{c}}}}}}}{{\\sum_l e^{{s_{{{i},l}}}} + e^{{b}}}} = "
                    f"\\frac{{e^{{-\\infty}}}}{{{number(total * math.exp(m))}}} = 0")
        numerator = math.exp(scores[col] - m)
        return ("\\begin{aligned} " + f"\\textstyle\\sum_{{l \\leq {i}}} e^{{s_{{{i},l}}{minus}}} + e^{{b{minus}}} &= "
                f"{terms_lines(terms)} \\\\ &= {number(total)} \\\\[6pt] w_{{{i},{c}}} &= "
                f"\\frac{{e^{{s_{{{i},{c}}}{minus}}}}}{{\\sum_l e^{{s_{{{i},l}}{minus}}} + e^{{b{minus}}}}} = "
                f"\\frac{{{number(numerator)}}}{{{number(total)}}} = {number(value)} \\end{{aligned}}")
    if stage == "sink_output":
        seen = slice(0, row + 1)  # the keys row i sees (the others have weight 0)
        return weighted_sum_entry_latex(row, col, walk.sink.weights[row, seen].tolist(),
                                        walk.value[seen, col].tolist(), value, weight_symbol="w").replace("z_{", "o_{", 1)
    raise KeyError(stage)


# ---------------------------------------------------------------- practice


def _mistake(key: str, value: float, template: str, **params: object) -> practice.Mistake:
    return practice.Mistake(key, value, Message(template, value=f"{value:.4g}", **params))


def sinks_exercise(walk: SinksWalkthrough, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` as an exercise (practice mode); None for weights above the diagonal (0 by the
    mask).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(sinks_panels(walk, stage), row, col)
    i, c = row + 1, col + 1
    scores = walk.scores.tolist()
    if stage == "weights":
        if col > row:
            return None
        return practice.softmax_exercise(f"w_{{{i},{c}}}", f"\\frac{{e^{{s_{{{i},{c}}}}}}}{{\\sum_{{l \\leq {i}}} "
                                         f"e^{{s_{{{i},l}}}}}}", f"s_{{{i}}}", scores, row, col, value)
    if stage == "nothing":
        column = walk.value[: row + 1, col].tolist()
        mistakes = [_mistake("nothing_is_zero", 0.0, N_("That is 0: a query that finds nothing still hands out all its "
                                                        "weight, 1/i to each key it sees. Its output is their values' "
                                                        "mean, not 0.")),
                    _mistake("nothing_sum_not_mean", math.fsum(column),
                             N_("That is {value}, the sum of the values: each has weight 1/i, so divide by i = {i}."),
                             i=i)]
        return practice.Exercise(f"o_{{{i},{c}}}", f"\\frac{{1}}{{{i}}} \\sum_{{j \\leq {i}}} v_{{j,{c}}}",
                                 (practice.vector(f"v_{{1..{i},{c}}}", column),), value,
                                 practice._kept(value, mistakes))
    if stage == "sink_weights":
        if col > row:
            return None
        return sink_weight_exercise(scores[row][: row + 1], walk.sink_logit, i, c, value)
    if stage == "sink_output":
        weights = walk.sink.weights[row].tolist()
        column = walk.value[:, col].tolist()
        exercise = practice.weighted_sum_exercise(f"o_{{{i},{c}}}", "\\sum_j w_{ij} v_{jc}",
                                                  (f"w_{{{i}}}", weights), (f"v_{{:,{c}}}", column), value)
        plain = float(walk.output[row, col])
        forgotten = _mistake("sink_forgotten", plain, N_("That is {value}, the output of the plain softmax's weights: "
                                                         "use the weights with the sink, which sum to less than 1."))
        return dataclasses.replace(exercise, mistakes=practice._kept(value, [*exercise.mistakes, forgotten]))
    return None


def sinks_step_through(walk: SinksWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in SINKS.stages:
        raise KeyError(stage)
    t = len(walk.tokens)
    remark, code = None, ()
    if stage == "weights":
        code = (scaled_dot_product_attention,)
        remark = Message(N_("Every row sums to 1 (max |Σ − 1| = {diff:.1e}). Row 1 has only itself to look at: "
                            "w_11 = 1, whatever its score."),
                         diff=float((walk.weights.sum(-1) - 1).abs().max()))
    elif stage == "nothing":
        code = (uniform_query,)
        shrink = t / (t + math.exp(walk.sink_logit))
        remark = Message(N_("Token {t}'s output is the mean of {t} values: length {norm:.3f}, not 0. With the sink b = "
                            "{b} the same query keeps only {t}/({t} + e^b) = {shrink:.3f} of it."), t=t,
                         norm=float(walk.uniform_output[-1].norm()), b=f"{walk.sink_logit:g}", shrink=shrink)
    elif stage == "sink_weights":
        code = (sink_softmax,)
        remark = Message(N_("With b = {b} the sink takes {first:.3f} of row 1's weight and {last:.3f} of row {t}'s: "
                            "a head can now give weight to nothing."), b=f"{walk.sink_logit:g}",
                         first=float(walk.sink.share[0]), last=float(walk.sink.share[-1]), t=t)
    else:
        code = (sink_softmax, gpt_oss_reference)
        remark = Message(N_("The sink has no value: the output is the values weighted by less than 1 in all, so it "
                            "shrinks toward 0 (length of the last row: {with_sink:.3f} with the sink, {without:.3f} "
                            "without)."), with_sink=float(walk.sink_output[-1].norm()),
                         without=float(walk.output[-1].norm()))
    return StepThrough(
        page=SINKS,
        stage=Stage(key=stage, panels=sinks_panels(walk, stage), formula=lambda tr: sinks_formula(stage, tr),
                    entry=lambda row, col, head, tr: explain_sinks(walk, stage, row, col, tr),
                    exercise=lambda row, col, head: sinks_exercise(walk, stage, row, col),
                    code=code, remark=remark),
        checks=walk.checks,
        check_caption=Message(N_("Every check: rtol = atol = 1e-5 in float32. transformers' gpt-oss attention runs with "
                                 "one head, the page's W_q, W_k, W_v and b copied in, RoPE off (cos = 1, sin = 0).")),
    )


# ---------------------------------------------------------------- the page

#: The page's default prompt for SmolLM2 (every head's weight on the first token).
SINKS_PROMPT = "When a head has nothing to look for, where does its attention go? To the very first token."


def _last_row(walk: SinksWalkthrough) -> dict[str, int]:
    """The page opens on the last token's weight on token 1: the row with the most keys, the sink's column."""
    return {"entry_row": len(walk.tokens) - 1, "entry_col": 0}


@dataclass(frozen=True)
class SinksSettings:
    """The attention-sinks page's own settings (``settings.sinks``).

    Attributes:
        sink_logit: b, gpt-oss's sink logit for the page's one head (MIN_SINK_LOGIT … MAX_SINK_LOGIT).
        prompt: SmolLM2's prompt for the first-token heatmap (any Unicode; cut like the modern LM page's).
        own_text: whether StreamingLLM reads ``text`` instead of the bundled chapter. text: the pasted text.
        window: w, the sliding window's tokens (1 … MAX_STREAM_WINDOW; at least ``sinks``, or a message).
        sinks: s, the first tokens kept (0 … MAX_SINKS).
        layer, head: the head whose first-token weights are written out (0-based; layer 19, head 7 parks nearly all
            of its weight on token 1 for the default prompt).
    """

    sink_logit: float = 1.0
    prompt: str = SINKS_PROMPT
    own_text: bool = False
    text: str = ""
    window: int = 128
    sinks: int = 4
    layer: int = 18
    head: int = 6


SINKS = Page(
    key="sinks", title=N_("Attention sinks"), icon=":material/anchor:", section="modern",
    summary=N_("Attention sinks: where softmax puts weight it has no use for, StreamingLLM and gpt-oss's learned sink"),
    stages={
        "weights": N_("Softmax's weights: every row sums to 1"),
        "nothing": N_("A query that matches nothing still spends its 1"),
        "sink_weights": N_("gpt-oss's learned sink: one more logit in the denominator"),
        "sink_output": N_("The output with the sink: weight given to nothing"),
    },
    build=build_sinks_walkthrough, step_through=sinks_step_through, recipe=sinks_recipe, settings=SinksSettings, opening_entry=_last_row,
    fields=(
        FloatRange("sink_logit", MIN_SINK_LOGIT, MAX_SINK_LOGIT, "b",
                   malformed=N_("The sink logit b must be a number; got “{raw}”, using {value:g}."),
                   out_of_range=N_("The sink logit b must be between {low:g} and {high:g} (beyond, e^b takes all of "
                                   "the weight or none of it); got {b:g}, using {clamped:g}."),
                   clamp_infinite=True),
        Text("prompt", N_("SmolLM2's prompt must be text; restored the example prompt."),
             max_chars=MODERN_LM_MAX_CHARS, what=label(N_("Your prompt"))),
        Switch("own_text", label(N_("The switch for your own text"))),
        Text("text", N_("The long text must be text; restored an empty one."), max_chars=SINKS_MAX_CHARS,
             what=label(N_("Your text"))),
        IntRange("window", 1, MAX_STREAM_WINDOW, label(N_("The window w"))),
        IntRange("sinks", 0, MAX_SINKS, label(N_("The number of sink tokens s"))),
        OneBasedIndex("layer", MODERN_LM_LAYERS, N_("The model has layers 1 to {count}; got layer {shown}, using layer "
                                                    "1.")),
        OneBasedIndex("head", MODERN_LM_HEADS, N_("The model has heads 1 to {count}; got head {shown}, using head 1.")),
    ),
)
