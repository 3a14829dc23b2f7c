r"""From settings to every number of the *Differential attention* page, in the one step-through protocol.

:func:`build_differential_walkthrough` runs :func:`~attention_core.modern.differential.differential_attention` on the
sentence's X with seeded weights and λ vectors (:func:`~attention_core.modern.differential.differential_weights`),
and the same noise added to both maps' scores (:func:`~attention_core.modern.differential.common_noise`); it checks
the output and both maps against transformers' ``DiffLlamaAttention`` (imported on the first build, ~3 s once per
server; RoPE off with cos = 1, sin = 0, as the page shows none), the two maps against PyTorch's
``F.scaled_dot_product_attention`` and the heads' outputs against a float64 loop.
:func:`differential_attention_step_through` puts one stage, for the chosen head, in a
:class:`~attention_core.stepthrough.StepThrough`; the panels, entry formulas and exercises are in
:mod:`attention_core.lessons.differential_attention.entries`.

Shape legend: T tokens, D = d_model, h heads, d = head_dim (each half of q and k; values 2d wide). Float32. Every
check: rtol = atol = 1e-5 (measured differences ~1e-7).

Sources: Ye et al. 2025, "Differential Transformer" (ICLR 2025); transformers'
``models/diffllama/modeling_diffllama.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attention_core.errors import N_, Message
from attention_core.fields import FloatRange, IntRange, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.lessons.differential_attention.entries import (
    differential_exercise,
    differential_panels,
    explain_differential,
)
from attention_core.lessons.differential_attention.formulas import differential_formula
from attention_core.lessons.differential_attention.recipe import differential_attention_recipe
from attention_core.lessons.differential_attention.walk import DifferentialWalkthrough
from attention_core.masks import causal_mask
from attention_core.modern.differential import (
    MAX_LAYER,
    MAX_NOISE,
    common_noise,
    differential_attention,
    differential_loop,
    differential_weights,
    lambda_init,
    rms_norm,
    transformers_differential,
)
from attention_core.page import Page
from attention_core.shared_settings import MAX_HEAD_DIM, SharedSettings
from attention_core.stepthrough import FLOAT_LOOP, PYTORCH, TRANSFORMERS, Stage, StepThrough, compare

#: Differential attention: its heads, 1..MAX_DIFFERENTIAL_HEADS (each runs two maps); d is 1..MAX_HEAD_DIM.
MAX_DIFFERENTIAL_HEADS = 4

#: The tolerance of every check on this page (float32).
TOLERANCE = 1e-5


def build_differential_walkthrough(settings: SharedSettings, differential: DifferentialSettings,
                                   edits: Edits | None = None) -> DifferentialWalkthrough:
    """Differential attention on the settings' sentence, checked against transformers' ``DiffLlamaAttention``.

    Args:
        settings: validated shared settings: sentence, d_model, seed.
        differential: the page's own settings (``settings.differential_attention``): num_heads, head_dim d, the
            layer l, the noise's size, the head shown.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell; a layer or a noise out of range (only when the settings were not
            validated).
    """
    inputs = build_inputs(settings, edits or {}, edited=("x",))
    x = inputs.x  # (T, D)
    h, d = differential.num_heads, differential.head_dim
    w = differential_weights(x.shape[-1], h, d, settings.seed)
    trace = differential_attention(x, w, num_heads=h, head_dim=d, layer=differential.layer)
    output_hf, weights_hf = transformers_differential(trace)
    mask = causal_mask(x.shape[0])
    first = F.scaled_dot_product_attention(trace.query1, trace.key1, trace.value, attn_mask=mask)
    second = F.scaled_dot_product_attention(trace.query2, trace.key2, trace.value, attn_mask=mask)
    checks = (
        compare(trace.output, output_hf, "transformers…diffllama.DiffLlamaAttention(config, l - 1)(X, (1, 0), causal)"
                "  # weights and λ's vectors copied in, the page's head r as its heads r and h + r",
                note=Message(N_("the output u = [o_1 … o_h] W_O")), tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(torch.cat([trace.first.weights, trace.second.weights]), weights_hf,
                "transformers…DiffLlamaAttention(...)[1]  # eager attention's weights: A1's heads, then A2's",
                note=Message(N_("both maps of every head")), tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(trace.head_output, (1 - trace.lambda_init) * rms_norm(first - trace.lam * second),
                "(1 - λ_init) * RMSNorm(F.scaled_dot_product_attention(Q1, K1, V) - λ F.scaled_dot_product_attention"
                "(Q2, K2, V))", note=Message(N_("every head's output")), tolerance=TOLERANCE, against=PYTORCH),
        compare(trace.head_output, differential_loop(trace),
                "differential_loop(trace)  # float64: both softmaxes, A1 − λ A2, Σ D v, RMSNorm, (1 − λ_init)",
                note=Message(N_("every head's output")), tolerance=TOLERANCE, against=FLOAT_LOOP),
    )
    return DifferentialWalkthrough(settings=settings, inputs=inputs, tokens=inputs.tokens, trace=trace,
                                   head=min(differential.head, h - 1),
                                   noise=common_noise(trace, differential.noise, settings.seed), checks=checks)


def _cancel_remark(walk: DifferentialWalkthrough) -> Message:
    n, r, t = walk.noise, walk.head, walk.trace
    first, diff = float(n.first_change[r]), float(n.difference_change[r])
    return Message(N_("The same noise moved A1's weights by up to {first:.3f} but the difference by only {diff:.3f} "
                      "({ratio:.1f} × less): what both maps share cancels. λ = {lam:.2f} here; the deeper the layer, "
                      "the larger λ_init and the more cancels (try l = 1, then l = 24)."),
                   first=first, diff=diff, ratio=first / diff if diff else float("inf"), lam=t.lam)


def differential_attention_step_through(walk: DifferentialWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` for the chosen head in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in DIFFERENTIAL_ATTENTION.stages:
        raise KeyError(stage)
    t = walk.trace
    remark = None
    code: tuple = (differential_attention,)
    if stage == "lambda":
        code = (lambda_init, differential_attention)
        remark = Message(N_("λ is learned through four small vectors, so that it can move freely around its starting "
                            "value λ_init = {init:.3f} (layer {l}); here λ = {lam:.3f}."),
                         init=t.lambda_init, l=t.layer, lam=t.lam)
    elif stage == "difference":
        sums = t.difference[walk.head].sum(-1)
        remark = Message(N_("Every row of D sums to 1 − λ = {total:.3f} (here {low:.3f} … {high:.3f}); {negative} of "
                            "its entries are negative: differential attention can subtract a token's value."),
                         total=1 - t.lam, low=float(sums.min()), high=float(sums.max()),
                         negative=int((torch.tril(t.difference[walk.head]) < 0).sum()))
    elif stage == "norm":
        code = (rms_norm, differential_attention)
        remark = Message(N_("Each head's row is divided by its root mean square, so every head's output has the same "
                            "size whatever λ; then all of them are scaled by 1 − λ_init = {scale:.3f}."),
                         scale=1 - t.lambda_init)
    elif stage == "cancel":
        code = (common_noise,)
        remark = _cancel_remark(walk)
    return StepThrough(
        page=DIFFERENTIAL_ATTENTION,
        stage=Stage(key=stage, panels=differential_panels(walk, stage),
                    formula=lambda tr: differential_formula(stage, tr),
                    entry=lambda row, col, head, tr: explain_differential(walk, stage, row, col, tr),
                    exercise=lambda row, col, head: differential_exercise(walk, stage, row, col),
                    code=code, remark=remark),
        checks=walk.checks,
        check_caption=Message(N_("Every check: rtol = atol = 1e-5 in float32. transformers' layer runs with RoPE off "
                                 "(cos = 1, sin = 0): the page shows none.")),
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class DifferentialSettings:
    """The differential attention page's own settings (``settings.differential_attention``).

    Attributes:
        num_heads: h, 1..MAX_DIFFERENTIAL_HEADS. head_dim: d, each half of q and k (values 2d wide), 1..MAX_HEAD_DIM.
        layer: l, 1..MAX_LAYER: λ_init = 0.8 − 0.6 exp(−0.3 (l − 1)).
        noise: the size of the noise added to both maps' scores in the last stage, 0..MAX_NOISE.
        head: the head shown (0-based; the page keeps it below h).
    """

    num_heads: int = 2
    head_dim: int = 2
    layer: int = 12
    noise: float = 1.0
    head: int = 0


DIFFERENTIAL_ATTENTION = Page(
    key="differential_attention", title=N_("Differential attention"), icon=":material/exposure:", section="modern",
    summary=N_("Differential attention: two softmax maps, one subtracted, so that noise they share cancels"),
    stages={
        "split": N_("Q and K split in two halves per head"),
        "maps": N_("The two softmax maps side by side"),
        "lambda": N_("λ from its four vectors and λ_init"),
        "difference": N_("The difference A1 − λ A2: rows sum to 1 − λ"),
        "values": N_("The difference times V"),
        "norm": N_("Each head's RMSNorm and the (1 − λ_init) scale"),
        "output": N_("All heads side by side, then W_O"),
        "cancel": N_("The same noise in both maps cancels"),
    },
    build=build_differential_walkthrough, step_through=differential_attention_step_through,
    recipe=differential_attention_recipe, settings=DifferentialSettings, default_stage="difference",
    default_stage_why=N_("The difference of the two maps is what this page adds; the maps before it are ordinary "
                         "softmax attention."),
    fields=(
        IntRange("num_heads", 1, MAX_DIFFERENTIAL_HEADS, label(N_("The number of heads"))),
        IntRange("head_dim", 1, MAX_HEAD_DIM, "d"),
        IntRange("layer", 1, MAX_LAYER, label(N_("The layer l"))),
        FloatRange("noise", 0.0, MAX_NOISE, "noise",
                   malformed=N_("The noise's size must be a number; got “{raw}”, using {value:g}."),
                   out_of_range=N_("The noise's size must be between {low:g} and {high:g}; got {noise:g}, using "
                                   "{clamped:g}."),
                   clamp_infinite=True),
        IntRange("head", 0, MAX_DIFFERENTIAL_HEADS - 1, label(N_("The head shown")), one_based=True),
    ),
)
