r"""From settings to every number of the *Gated attention* page, in the one step-through protocol.

:func:`build_gated_walkthrough` runs :func:`~attention_core.modern.gated.gated_attention` on the sentence's X with
seeded weights (:func:`~attention_core.modern.gated.gated_weights`) and a query that matches nothing through the same
heads and gates; it checks the output and the weights against transformers' ``Qwen3NextAttention`` (imported on the
first build, ~3 s once per server; its QK-norms set to the identity and RoPE to cos = 1, sin = 0, as the page shows
neither), the gated heads against a float64 loop and against PyTorch's ``F.scaled_dot_product_attention`` times
``torch.sigmoid``. :func:`gated_attention_step_through` puts one stage, for the chosen head, in a
:class:`~attention_core.stepthrough.StepThrough`; the panels, entry formulas and exercises are in
:mod:`attention_core.lessons.gated_attention.entries`.

Shape legend: T tokens, D = d_model, h heads, d_h = head_dim. Float32. Every check: rtol = atol = 1e-5 (measured
differences ~1e-7).

Sources: Qiu et al. 2025, "Gated Attention for Large Language Models: Non-linearity, Sparsity, and
Attention-Sink-Free" (NeurIPS 2025); transformers' ``models/qwen3_next/modeling_qwen3_next.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attention_core.errors import N_, Message
from attention_core.fields import FloatRange, IntRange, Switch, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.lessons.gated_attention.entries import explain_gated, gated_exercise, gated_panels
from attention_core.lessons.gated_attention.formulas import gated_formula
from attention_core.lessons.gated_attention.recipe import gated_attention_recipe
from attention_core.lessons.gated_attention.walk import GatedWalkthrough
from attention_core.masks import causal_mask
from attention_core.modern.gated import (
    GATE_SHUT,
    MAX_GATE_SHIFT,
    MIN_GATE_SHIFT,
    gated_attention,
    gated_loop,
    gated_weights,
    null_query_output,
    transformers_gated,
)
from attention_core.page import Page
from attention_core.shared_settings import MAX_HEAD_DIM, SharedSettings
from attention_core.stepthrough import FLOAT_LOOP, PYTORCH, TRANSFORMERS, Stage, StepThrough, compare

#: Gated attention: its heads, 1..MAX_GATED_HEADS; d_h is 1..MAX_HEAD_DIM.
MAX_GATED_HEADS = 8

#: The tolerance of every check on this page (float32).
TOLERANCE = 1e-5


def _gate_warnings(gate: torch.Tensor, shift: float) -> tuple[Message, ...]:
    """A message when every gate is shut or wide open: what the page then shows."""
    if float(gate.max()) < GATE_SHUT:
        return (Message(N_("With b = {b:g} every gate is shut (σ < {shut:g}): every head outputs almost 0, whatever its "
                           "weights, and O is almost 0. Softmax's weights still sum to 1 in every row."),
                        b=shift, shut=GATE_SHUT),)
    if float(gate.min()) > 1 - GATE_SHUT:
        return (Message(N_("With b = {b:g} every gate is wide open (σ > {open:g}): Y′ ≈ Y, ordinary multi-head "
                           "attention."), b=shift, open=1 - GATE_SHUT),)
    return ()


def build_gated_walkthrough(settings: SharedSettings, gated: GatedSettings,
                            edits: Edits | None = None) -> GatedWalkthrough:
    """Gated multi-head attention on the settings' sentence, checked against transformers' ``Qwen3NextAttention``.

    Args:
        settings: validated shared settings: sentence, d_model, seed.
        gated: the page's own settings (``settings.gated_attention``): num_heads, head_dim d_h, headwise, the gate's
            shift b, the head shown.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell; a shift out of range (only when the settings were not validated).
    """
    inputs = build_inputs(settings, edits or {}, edited=("x",))
    x = inputs.x  # (T, D)
    h, d_h = gated.num_heads, gated.head_dim
    w = gated_weights(x.shape[-1], h, d_h, gated.headwise, settings.seed)
    trace = gated_attention(x, w, num_heads=h, head_dim=d_h, headwise=gated.headwise, shift=gated.gate_shift)
    output_hf, weights_hf = transformers_gated(trace)
    t = x.shape[0]
    sdpa = F.scaled_dot_product_attention(trace.query, trace.key, trace.value, attn_mask=causal_mask(t))
    null_weights, null_mean, null_gated = null_query_output(trace)
    checks = (
        compare(trace.output, output_hf, "transformers…qwen3_next.Qwen3NextAttention(config, 0)(X, (1, 0), causal)  "
                "# weights copied in, q_norm = k_norm = Identity, b in q_proj's gate bias",
                note=Message(N_("the output O = [Y′_1 … Y′_h] W_O")), tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(trace.attention.weights, weights_hf, "transformers…Qwen3NextAttention(...)[1]  # eager attention's weights",
                note=Message(N_("every head's weights")), tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(trace.gated, sdpa * torch.sigmoid(trace.gate_logits),
                "F.scaled_dot_product_attention(Q, K, V, causal) * torch.sigmoid(X W_θ + b)",
                note=Message(N_("every head's gated output Y′")), tolerance=TOLERANCE, against=PYTORCH),
        compare(trace.gated, gated_loop(trace), "gated_loop(trace)  # float64: scores, softmax, Σ α v, then · σ(g)",
                note=Message(N_("every head's gated output Y′")), tolerance=TOLERANCE, against=FLOAT_LOOP),
    )
    return GatedWalkthrough(settings=settings, inputs=inputs, tokens=inputs.tokens, trace=trace,
                            head=min(gated.head, h - 1), null_weights=null_weights, null_mean=null_mean,
                            null_gated=null_gated, checks=checks, warnings=_gate_warnings(trace.gate, trace.shift))


def _sink_remark(walk: GatedWalkthrough) -> Message:
    r = walk.head
    mean_norm = walk.null_mean[r].norm(dim=-1)  # (T,)
    gated_norm = walk.null_gated[r].norm(dim=-1)
    last = len(walk.tokens)
    return Message(N_("Every row of these weights sums to 1: a head without a gate must output the mean of its values "
                      "(a trained model parks the weight on the first token instead: the sink, as the attention sinks "
                      "page measures). With the gate, head {r}'s last row shrinks from |ȳ| = {before:.3f} to "
                      "{after:.3f} ({share:.0%}); move b down and it goes to 0 with no key taking the weight."),
                   r=r + 1, before=float(mean_norm[last - 1]), after=float(gated_norm[last - 1]),
                   share=float(gated_norm[last - 1] / mean_norm[last - 1]) if float(mean_norm[last - 1]) else 0.0)


def gated_attention_step_through(walk: GatedWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` for the chosen head in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in GATED_ATTENTION.stages:
        raise KeyError(stage)
    t = walk.trace
    remark = None
    code: tuple = (gated_attention,)
    if stage == "projections":
        remark = Message(N_("The gate's logits come from the same X as the query: Qwen3-Next's q_proj is twice as wide "
                            "and splits into the query and the gate. {what}"),
                         what=Message(N_("Head-wise: one logit per head and token.")) if t.headwise
                         else Message(N_("Element-wise: one logit per head, token and column (the paper's best).")))
    elif stage == "gate":
        shut = float((t.gate[walk.head] < 0.5).float().mean())
        remark = Message(N_("σ squashes each logit into (0, 1): 0 shuts, 1 lets through. In head {r}, {share:.0%} of "
                            "the gates are below ½."), r=walk.head + 1, share=shut)
    elif stage == "output":
        diff = float((t.output - t.ungated_output).abs().max())
        remark = Message(N_("The largest change the gate makes to O: {diff:.3f}. At b = 20 every gate is open and O is "
                            "ordinary multi-head attention's."), diff=diff)
    elif stage == "sink":
        code = (null_query_output,)
        remark = _sink_remark(walk)
    headwise = t.headwise
    return StepThrough(
        page=GATED_ATTENTION,
        stage=Stage(key=stage, panels=gated_panels(walk, stage), formula=lambda tr: gated_formula(stage, headwise, tr),
                    entry=lambda row, col, head, tr: explain_gated(walk, stage, row, col),
                    exercise=lambda row, col, head: gated_exercise(walk, stage, row, col),
                    code=code, remark=remark),
        checks=walk.checks, warnings=walk.warnings,
        check_caption=Message(N_("Every check: rtol = atol = 1e-5 in float32. transformers' layer runs with its "
                                 "QK-norms as the identity and RoPE off (cos = 1, sin = 0): the page shows neither.")),
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class GatedSettings:
    """The gated attention page's own settings (``settings.gated_attention``).

    Attributes:
        num_heads: h, 1..MAX_GATED_HEADS. head_dim: d_h, 1..MAX_HEAD_DIM.
        headwise: one gate per head and token (the paper's head-wise variant) instead of one per element.
        gate_shift: b, added to every gate logit, MIN_GATE_SHIFT..MAX_GATE_SHIFT (−20 shuts every gate, 20 opens it).
        head: the head shown (0-based; the page keeps it below h).
    """

    num_heads: int = 2
    head_dim: int = 4
    headwise: bool = False
    gate_shift: float = 0.0
    head: int = 0


GATED_ATTENTION = Page(
    key="gated_attention", title=N_("Gated attention"), icon=":material/toggle_on:", section="modern",
    summary=N_("Gated attention (Qwen3-Next): a sigmoid gate on each head's output lets a head say nothing"),
    stages={
        "projections": N_("Q, K, V and the gate's logits from X"),
        "attention": N_("Each head's ordinary output Y = softmax(Q Kᵀ / √d_h, causal) V"),
        "gate": N_("The gate σ(G): between 0 (shut) and 1 (open)"),
        "gated": N_("The gated output Y′ = Y ⊙ σ(G)"),
        "output": N_("All heads side by side, then W_O"),
        "sink": N_("Why the gate removes the sink: a query that matches nothing"),
    },
    build=build_gated_walkthrough, step_through=gated_attention_step_through, recipe=gated_attention_recipe,
    settings=GatedSettings, default_stage="gate",
    default_stage_why=N_("The gate is what this page adds; Q, K, V and each head's output before it are multi-head "
                         "attention's."),
    fields=(
        IntRange("num_heads", 1, MAX_GATED_HEADS, label(N_("The number of heads"))),
        IntRange("head_dim", 1, MAX_HEAD_DIM, "d_h"),
        Switch("headwise", label(N_("The head-wise switch"))),
        FloatRange("gate_shift", MIN_GATE_SHIFT, MAX_GATE_SHIFT, "b",
                   malformed=N_("The gate's shift b must be a number; got “{raw}”, using {value:g}."),
                   out_of_range=N_("The gate's shift b must be between {low:g} and {high:g} (beyond, every gate is "
                                   "already shut or open); got {b:g}, using {clamped:g}."),
                   clamp_infinite=True),
        IntRange("head", 0, MAX_GATED_HEADS - 1, label(N_("The head shown")), one_based=True),
    ),
)
