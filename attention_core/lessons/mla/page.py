r"""From settings to every number of the *Multi-head latent attention* page, in the one step-through protocol.

:func:`build_mla_walkthrough` runs :func:`~attention_core.modern.mla.multi_head_latent_attention` on the sentence's X
with seeded weights (:func:`~attention_core.modern.mla.mla_weights`), the absorbed scores, RoPE rotated inside the
content keys (the design MLA rejects) and the KV cache of MHA, GQA, MQA and MLA at the page's sizes and at
DeepSeek-V3's; it checks the output and the weights against transformers' ``DeepseekV3Attention`` (imported on the
first build, ~3 s once per server), the scores against a Python-float loop, and the absorbed scores against the
scores. :func:`mla_step_through` puts one stage, for the chosen head, in a :class:`~attention_core.stepthrough.StepThrough`;
the panels, entry formulas and exercises are in :mod:`attention_core.lessons.mla.entries`.

Shape legend: T tokens, D = d_model, h heads, d_h = head_dim, d_R the RoPE part, d_c / d_c' the latents. Float32.
Every check: rtol = atol = 1e-5 (the measured differences are ~1e-8 against transformers, whose operations are the
same, and ~1e-7 against the loop and for the absorbed scores).

Sources: DeepSeek-V2 (DeepSeek-AI 2024), sec. 2.1.2-2.1.3, eqs. 9-19; DeepSeek-V3 Technical Report, sec. 2.1.1;
transformers' ``models/deepseek_v3/modeling_deepseek_v3.py`` for the reference's conventions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.errors import N_, Message
from attention_core.fields import IntRange, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.lessons.mla.entries import explain_mla, mla_exercise, mla_panels
from attention_core.lessons.mla.formulas import mla_formula
from attention_core.lessons.mla.recipe import mla_recipe
from attention_core.lessons.mla.walk import MLAWalkthrough
from attention_core.modern.mla import (
    DEEPSEEK_V3,
    MAX_MLA_HEADS,
    MAX_MLA_ROPE_DIM,
    V3_GQA_KV_HEADS,
    absorbed_query,
    absorbed_scores,
    cache_numbers,
    check_rope_dim,
    coupled_rope_scores,
    fit_latents,
    loop_scores,
    mla_weights,
    multi_head_latent_attention,
    toy_gqa_kv_heads,
    transformers_mla,
)
from attention_core.modern.rope import rotate
from attention_core.page import Page
from attention_core.shared_settings import MAX_DIM, MAX_HEAD_DIM, SharedSettings
from attention_core.stepthrough import FLOAT_LOOP, OTHER_ROUTE, TRANSFORMERS, Stage, StepThrough, compare

#: The tolerance of every check on this page (float32).
TOLERANCE = 1e-5


def v3_cache() -> torch.Tensor:
    """(4, 2): DeepSeek-V3's numbers per token and layer (MHA 2 h d_h, GQA with 8 key/value heads, MQA, MLA d_c + d_R)
    and the KiB per token over its 61 layers at 2 bytes a number."""
    v3 = DEEPSEEK_V3
    per_layer = cache_numbers(v3["num_heads"], v3["head_dim"], v3["kv_latent"], v3["rope_dim"], V3_GQA_KV_HEADS)
    return torch.stack([per_layer, per_layer * v3["layers"] * 2 / 1024], dim=1)


def build_mla_walkthrough(settings: SharedSettings, mla: MLASettings,
                          edits: Edits | None = None) -> MLAWalkthrough:
    """Multi-head latent attention on the settings' sentence, checked against transformers' ``DeepseekV3Attention``.

    Args:
        settings: validated shared settings: sentence, d_model, seed.
        mla: the page's own settings (``settings.mla``): num_heads, head_dim d_h, rope_dim d_R, kv_latent d_c,
            q_latent d_c', the head shown.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell; an odd d_R (``mla.rope_dim``). A latent wider than d_model is
            narrowed to d_model with a message (``warnings``), not an error.
    """
    inputs = build_inputs(settings, edits or {}, edited=("x",))
    x = inputs.x  # (T, D)
    check_rope_dim(mla.rope_dim)
    kv_latent, q_latent, warnings = fit_latents(x.shape[-1], mla.kv_latent, mla.q_latent)
    w = mla_weights(x.shape[-1], mla.num_heads, mla.head_dim, mla.rope_dim, kv_latent, q_latent, settings.seed)
    trace = multi_head_latent_attention(x, w, num_heads=mla.num_heads, head_dim=mla.head_dim,
                                        rope_dim=mla.rope_dim)
    absorbed = absorbed_scores(trace)
    output_hf, weights_hf = transformers_mla(trace)
    checks = (
        compare(trace.output, output_hf, "transformers…deepseek_v3.DeepseekV3Attention(config, 0)(X, (cos, sin), "
                "causal)  # weights copied in, rope_interleave=False, q_a/kv_a_layernorm = Identity",
                note=Message(N_("the output u = [o_1 … o_h] W_O")), tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(trace.attention.weights, weights_hf, "DeepseekV3Attention(...)[1]  # eager attention's weights",
                note=Message(N_("every head's weights")), tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(trace.attention.scaled_scores, loop_scores(trace),
                "loop_scores(trace)  # Python floats: K^C = c_KV W_UK, then (q^C · k^C + q^R · k^R) / √(d_h + d_R)",
                note=Message(N_("every head's scores before the mask")), tolerance=TOLERANCE, against=FLOAT_LOOP),
        compare(absorbed, trace.attention.scaled_scores, "((q^C W_UKᵀ) c_KVᵀ + q^R k^Rᵀ) / √(d_h + d_R)",
                note=Message(N_("absorption: the scores from the cache alone, K^C never built")), tolerance=TOLERANCE,
                against=OTHER_ROUTE),
    )
    gqa = toy_gqa_kv_heads(mla.num_heads)
    return MLAWalkthrough(
        settings=settings, inputs=inputs, tokens=inputs.tokens, trace=trace, head=min(mla.head, mla.num_heads - 1),
        absorbed_query=absorbed_query(trace), absorbed=absorbed, coupled=coupled_rope_scores(trace),
        gqa_kv_heads=gqa, cache=cache_numbers(mla.num_heads, mla.head_dim, kv_latent, mla.rope_dim, gqa),
        cache_v3=v3_cache(), checks=checks, warnings=warnings)


def mla_step_through(walk: MLAWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` for the chosen head in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in MLA_PAGE.stages:
        raise KeyError(stage)
    t = walk.trace
    remark = None
    code: tuple = (multi_head_latent_attention,)
    if stage == "rope":
        code = (rotate, multi_head_latent_attention)
        remark = Message(N_("Every head gets its own q^R, but all {h} heads share the one k^R: the cache holds d_R = {d} "
                            "numbers per token for the position, not h · d_R = {hd}."), h=t.num_heads, d=t.rope_dim,
                         hd=t.num_heads * t.rope_dim)
    elif stage == "scores":
        remark = Message(N_("The scores are divided by √(d_h + d_R) = √{width}: q and k are d_h + d_R = {width} wide."),
                         width=t.head_dim + t.rope_dim)
    elif stage == "cache":
        code = (cache_numbers,)
        mla, mha = float(walk.cache[3]), float(walk.cache[0])
        v3 = walk.cache_v3[:, 0]
        remark = Message(N_("Per token and layer MLA caches {mla:g} numbers (c_KV and k^R) where multi-head attention "
                            "caches {mha:g}: {ratio:.1f} × fewer here. At DeepSeek-V3's sizes: {v3_mla:,.0f} against "
                            "{v3_mha:,.0f}, {v3_ratio:.0f} × fewer, fewer even than GQA with 8 key/value heads "
                            "({v3_gqa:,.0f}); over its {layers} layers in 16-bit numbers, {kib_mla:,.1f} KiB per token "
                            "against {kib_mha:,.0f} KiB."), mla=mla, mha=mha, ratio=mha / mla, v3_mla=float(v3[3]),
                         v3_mha=float(v3[0]), v3_ratio=float(v3[0] / v3[3]), v3_gqa=float(v3[1]),
                         layers=DEEPSEEK_V3["layers"], kib_mla=float(walk.cache_v3[3, 1]),
                         kib_mha=float(walk.cache_v3[0, 1]))
    elif stage == "absorption":
        code = (absorbed_query, absorbed_scores)
        diff = float((walk.absorbed - t.attention.scaled_scores).abs().max())
        remark = Message(N_("Max |absorbed − scores| = {diff:.1e} over every head: the same scores, computed from the "
                            "cached c_KV (d_c = {d_c} numbers per token) without ever building K^C (h · d_h = {hd})."),
                         diff=diff, d_c=t.latent_kv.shape[-1], hd=t.num_heads * t.head_dim)
    elif stage == "decoupling":
        code = (coupled_rope_scores,)
        mismatch = walk.coupled.difference[walk.head].abs()  # (T, T), this head's
        i, j = divmod(int(mismatch.argmax()), mismatch.shape[-1])
        remark = Message(N_("Head {r}'s largest mismatch is {diff:.3f}, at query {i} and key {j} (key 1, at position 0, "
                            "is not rotated: its column agrees). With RoPE inside k^C, absorption gives wrong scores; "
                            "MLA keeps k^C free of positions and carries them in the separate k^R."),
                         r=walk.head + 1, diff=float(mismatch[i, j]), i=i + 1, j=j + 1)
        if t.head_dim < 2 or len(walk.tokens) < 2:  # no content key is rotated: nothing can go wrong
            remark = Message(N_("Here absorption happens to stay right: with d_h = {d_h} and {n} token(s) no content "
                                "key is rotated (RoPE needs a pair of dimensions and a position after 0). Choose "
                                "d_h ≥ 2 and a sentence of two tokens or more to see it fail."),
                             d_h=t.head_dim, n=len(walk.tokens))
    return StepThrough(
        page=MLA_PAGE,
        stage=Stage(key=stage, panels=mla_panels(walk, stage), formula=lambda tr: mla_formula(stage, tr),
                    entry=lambda row, col, head, tr: explain_mla(walk, stage, row, col, tr),
                    exercise=lambda row, col, head: mla_exercise(walk, stage, row, col),
                    code=code, remark=remark),
        checks=walk.checks, warnings=walk.warnings,
        check_caption=Message(N_("Every check: rtol = atol = 1e-5 in float32. transformers' layer runs without its "
                                 "two RMSNorms on the latents, as the paper's equations (eqs. 9-19) have none.")),
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class MLASettings:
    """The multi-head latent attention page's own settings (``settings.mla``).

    Attributes:
        num_heads: h, 1..MAX_MLA_HEADS. head_dim: d_h (qk_nope_head_dim = v_head_dim), 1..MAX_HEAD_DIM.
        rope_dim: d_R, the decoupled RoPE part, 2..MAX_MLA_ROPE_DIM (odd: a message, RoPE needs pairs).
        kv_latent: d_c, 1..MAX_DIM (above d_model: the page uses d_model, with a message). q_latent: d_c', likewise.
        head: the head shown (0-based; the page keeps it below h).
    """

    num_heads: int = 4
    head_dim: int = 4
    rope_dim: int = 2
    kv_latent: int = 2
    q_latent: int = 3
    head: int = 0


MLA_PAGE = Page(
    key="mla", title=N_("Multi-head latent attention"), icon=":material/compress:", section="modern",
    summary=N_("Multi-head latent attention (DeepSeek): keys and values from one small latent, a much smaller KV cache"),
    stages={
        "latents": N_("The latents: c_KV = X W_DKV and c_Q = X W_DQ"),
        "up": N_("Up-projections: each head's K^C, V and Q^C from the latents"),
        "rope": N_("The decoupled RoPE part: q^R per head, one shared k^R"),
        "scores": N_("Scores: [q^C; q^R] · [k^C; k^R] ÷ √(d_h + d_R), causal"),
        "weights": N_("Softmax and the head's output"),
        "output": N_("All heads together, then W_O"),
        "cache": N_("What the KV cache holds per token: MLA against MHA, GQA, MQA"),
        "absorption": N_("Weight absorption: the scores straight from c_KV"),
        "decoupling": N_("Why RoPE had to be decoupled"),
    },
    build=build_mla_walkthrough, step_through=mla_step_through, recipe=mla_recipe, settings=MLASettings,
    fields=(
        IntRange("num_heads", 1, MAX_MLA_HEADS, label(N_("The number of heads"))),
        IntRange("head_dim", 1, MAX_HEAD_DIM, "d_h"),
        IntRange("rope_dim", 2, MAX_MLA_ROPE_DIM, "d_R"),
        IntRange("kv_latent", 1, MAX_DIM, "d_c"),
        IntRange("q_latent", 1, MAX_DIM, "d_c'"),
        IntRange("head", 0, MAX_MLA_HEADS - 1, label(N_("The head shown")), one_based=True),
    ),
)
