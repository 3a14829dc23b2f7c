r"""From settings to every number of the *DeepSeek sparse attention* page, in the one step-through protocol.

:func:`build_sparse_walkthrough` runs :func:`~attention_core.modern.sparse.sparse_attention` on the sentence's X with
MLA's weights drawn as the MLA page draws them (:func:`~attention_core.modern.mla.mla_weights`; with the MLA page's
default sizes, the same seed gives that page's numbers) and the indexer's own seeded weights; it checks the kept keys against transformers' ``DeepseekV32Indexer``,
the output and the weights against its ``DeepseekV32Attention`` (imported on the first build, once per server; its
norms set to the identity, as the page shows none), the index scores against a float64 loop, and each head's sparse
output against a float64 loop and PyTorch's ``F.scaled_dot_product_attention`` with the sparse mask.
:func:`sparse_attention_step_through` puts one stage, for the chosen MLA head, in a
:class:`~attention_core.stepthrough.StepThrough`; the panels, entry formulas and exercises are in
:mod:`attention_core.lessons.sparse_attention.entries`.

Shape legend: T tokens, D = d_model, h MLA heads, H_I indexer heads of width d_I, k the keys each query keeps. Float32.
Every check: rtol = atol = 1e-5 (measured differences ~1e-7); the kept keys exactly.

Sources: DeepSeek-AI 2025, "DeepSeek-V3.2-Exp", sec. 2.1, eqs. 1-2; transformers' ``models/deepseek_v32``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attention_core.errors import N_, Message
from attention_core.fields import IntRange, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.text import MAX_TOKENS
from attention_core.lessons.sparse_attention.entries import explain_sparse, sparse_exercise, sparse_panels
from attention_core.lessons.sparse_attention.formulas import sparse_formula
from attention_core.lessons.sparse_attention.recipe import sparse_attention_recipe
from attention_core.lessons.sparse_attention.walk import SparseWalkthrough
from attention_core.masks import causal_mask
from attention_core.modern.mla import MAX_MLA_HEADS, MAX_MLA_ROPE_DIM, check_rope_dim, fit_latents, mla_weights
from attention_core.modern.sparse import (
    DEEPSEEK_V32,
    LONG_CONTEXT,
    fit_index_dim,
    indexer_loop,
    indexer_weights,
    kept_keys,
    lightning_indexer,
    pairs_scored,
    sparse_attention,
    sparse_loop,
    ties_at_the_cut,
    transformers_dsa,
)
from attention_core.page import Page
from attention_core.shared_settings import MAX_DIM, MAX_HEAD_DIM, SharedSettings
from attention_core.stepthrough import FLOAT_LOOP, PYTORCH, TRANSFORMERS, Stage, StepThrough, compare

#: The indexer's heads H_I and width d_I, 1..MAX_INDEX_HEADS and 1..MAX_INDEX_DIM (d_I below MLA's d_R: widened, with a
#: message).
MAX_INDEX_HEADS = 8

MAX_INDEX_DIM = 8

#: The tolerance of every check on this page (float32).
TOLERANCE = 1e-5


def build_sparse_walkthrough(settings: SharedSettings, own: SparseSettings,
                             edits: Edits | None = None) -> SparseWalkthrough:
    """DeepSeek sparse attention on the settings' sentence, checked against transformers' ``DeepseekV32Attention``.

    Args:
        settings: validated shared settings: sentence, d_model, seed.
        own: the page's own settings (``settings.sparse_attention``): MLA's sizes (num_heads h, head_dim d_h,
            rope_dim d_R, kv_latent d_c, q_latent d_c'; the MLA page's defaults, so that the same seed gives the MLA
            page's numbers), index_heads H_I, index_dim d_I, top_k k, the MLA head shown.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell; an odd d_R (``sparse_attention.rope_dim``). A latent wider than d_model
            or an indexer narrower than d_R is changed to fit with a message (``warnings``), not an error.
    """
    inputs = build_inputs(settings, edits or {}, edited=("x",))
    x = inputs.x  # (T, D)
    m = own
    check_rope_dim(m.rope_dim, field="sparse_attention.rope_dim")
    kv_latent, q_latent, warnings = fit_latents(x.shape[-1], m.kv_latent, m.q_latent)
    index_dim, index_warnings = fit_index_dim(own.index_dim, m.rope_dim)
    w = mla_weights(x.shape[-1], m.num_heads, m.head_dim, m.rope_dim, kv_latent, q_latent, settings.seed)
    iw = indexer_weights(x.shape[-1], q_latent, own.index_heads, index_dim, settings.seed)
    trace = sparse_attention(x, w, iw, num_heads=m.num_heads, head_dim=m.head_dim, rope_dim=m.rope_dim,
                             index_heads=own.index_heads, index_dim=index_dim, top_k=own.top_k)
    chosen_hf, output_hf, weights_hf = transformers_dsa(trace)
    t = x.shape[0]
    loop_scores = indexer_loop(trace.indexer)
    finite = torch.isfinite(loop_scores)
    sdpa = F.scaled_dot_product_attention(trace.sparse.query, trace.sparse.key, trace.sparse.value,
                                          attn_mask=trace.indexer.kept)
    checks = (
        compare(trace.indexer.kept.float(), kept_keys(chosen_hf, t).float(),
                "transformers…deepseek_v32.DeepseekV32Indexer(config, 0)(X, c_Q, (cos, sin), causal)  # top-k indices",
                note=Message(N_("the keys each query keeps")), tolerance=0.0, against=TRANSFORMERS),
        compare(trace.sparse.output, output_hf, "transformers…DeepseekV32Attention(config, 0)(X, (cos, sin), causal)  "
                "# weights copied in, its norms = Identity", note=Message(N_("the output u = [o_1 … o_h] W_O")),
                tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(trace.sparse.attention.weights, weights_hf, "DeepseekV32Attention(...)[1]  # eager attention's weights",
                note=Message(N_("every head's weights over the kept keys")), tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(trace.indexer.scores.double()[finite], loop_scores[finite],
                "indexer_loop(trace)  # float64: Σ_j w_j · max(0, q · k / √d_I)",
                note=Message(N_("the index scores I")), tolerance=TOLERANCE, against=FLOAT_LOOP),
        compare(trace.sparse.attention.output.double(), sparse_loop(trace),
                "sparse_loop(trace)  # float64: softmax and Σ α v over the kept keys",
                note=Message(N_("every head's output o")), tolerance=TOLERANCE, against=FLOAT_LOOP),
        compare(trace.sparse.attention.output, sdpa, "F.scaled_dot_product_attention(q, k, V, attn_mask=kept)",
                note=Message(N_("every head's output o")), tolerance=TOLERANCE, against=PYTORCH),
    )
    if own.top_k >= t:
        warnings += (Message(N_("k = {k} ≥ T = {t}: every query keeps every key it may see, so this is dense "
                                "attention (what was lost: nothing). Make k smaller than {t} to drop keys."),
                             k=own.top_k, t=t),)
    return SparseWalkthrough(settings=settings, inputs=inputs, tokens=inputs.tokens, trace=trace,
                             head=min(own.head, m.num_heads - 1), checks=checks,
                             warnings=warnings + index_warnings)


def _topk_remark(walk: SparseWalkthrough) -> Message:
    ix = walk.trace.indexer
    t = len(walk.tokens)
    ties = [row + 1 for row in range(t) if ties_at_the_cut(ix, row)[1]]
    first = min(ix.top_k, t)
    text = Message(N_("Queries 1 to {first} keep every key they may see (t ≤ k = {k}); each later query keeps its {k} "
                      "largest scores and drops {dropped} key(s) in all."), first=first, k=ix.top_k,
                   dropped=int(causal_mask(t).sum() - ix.kept.sum()))
    if ties:
        return Message(N_("{text} Rows {rows} had a tie at the cut (equal scores, often 0: every head's ReLU cut "
                          "them): torch.topk, which DeepSeek's code calls, chose among them."),
                       text=text, rows=", ".join(map(str, ties)))
    return text


def sparse_attention_step_through(walk: SparseWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` for the chosen MLA head in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in SPARSE_ATTENTION.stages:
        raise KeyError(stage)
    t = walk.trace
    remark = None
    code: tuple = (sparse_attention,)
    if stage in ("indexer", "scores"):
        code = (lightning_indexer,)
        if stage == "indexer":
            remark = Message(N_("The indexer is small: {h_i} heads of width {d_i} here; DeepSeek-V3.2 has {v_h} of "
                                "{v_d} against MLA's 128 heads of 192, and runs it in FP8."), h_i=t.indexer.index_heads,
                             d_i=t.indexer.index_dim, v_h=DEEPSEEK_V32["index_heads"], v_d=DEEPSEEK_V32["index_dim"])
    elif stage == "topk":
        code = (lightning_indexer, ties_at_the_cut)
        remark = _topk_remark(walk)
    elif stage == "lost":
        remark = Message(N_("Max |u − u_dense| = {diff:.4f}; the most weight a query lost was {mass:.1%} (head {r}, "
                            "query {i}). A trained indexer learns to keep the keys the main attention weighs most."),
                         diff=t.max_difference, mass=float(t.dropped_mass.max()),
                         r=int(t.dropped_mass.max(dim=1).values.argmax()) + 1,
                         i=int(t.dropped_mass.max(dim=0).values.argmax()) + 1)
    elif stage == "work":
        code = (pairs_scored,)
        dense, sparse = t.work[1].tolist()
        remark = Message(N_("At {tokens:,} tokens with k = {k:,} the main attention scores {sparse:,.0f} pairs instead "
                            "of {dense:,.0f}: {ratio:.0f} × fewer, and the gap grows with T (T · k against T²/2). The "
                            "indexer still scores every pair, with few small heads."),
                         tokens=LONG_CONTEXT, k=DEEPSEEK_V32["top_k"], sparse=sparse, dense=dense, ratio=dense / sparse)
    panels = sparse_panels(walk, stage)
    return StepThrough(
        page=SPARSE_ATTENTION,
        stage=Stage(key=stage, panels=panels, formula=lambda tr: sparse_formula(stage, tr),
                    entry=lambda row, col, head, tr: explain_sparse(walk, stage, row, col, tr, panels),
                    exercise=lambda row, col, head: sparse_exercise(walk, stage, row, col, panels),
                    code=code, remark=remark),
        checks=walk.checks, warnings=walk.warnings,
        check_caption=Message(N_("Every check: rtol = atol = 1e-5 in float32; the kept keys exactly. transformers' "
                                 "layer runs without its LayerNorm on the indexer's key and its RMSNorms on MLA's "
                                 "latents: the page shows none of them.")),
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class SparseSettings:
    """The DeepSeek sparse attention page's own settings (``settings.sparse_attention``).

    Attributes:
        num_heads, head_dim, rope_dim, kv_latent, q_latent: MLA's sizes h, d_h, d_R, d_c, d_c', with the MLA page's
            ranges and defaults (:class:`attention_core.lessons.mla.page.MLASettings`; a test holds them equal).
        index_heads: H_I, 1..MAX_INDEX_HEADS. index_dim: d_I, 1..MAX_INDEX_DIM (below d_R: d_R, with a message).
        top_k: k, the keys each query keeps, 1..MAX_TOKENS (k ≥ T: every key, dense attention, with a message).
        head: MLA's head shown (0-based; the page keeps it below h).
    """

    num_heads: int = 4
    head_dim: int = 4
    rope_dim: int = 2
    kv_latent: int = 2
    q_latent: int = 3
    index_heads: int = 4
    index_dim: int = 4
    top_k: int = 3
    head: int = 0


SPARSE_ATTENTION = Page(
    key="sparse_attention", title=N_("DeepSeek sparse attention"), icon=":material/filter_alt:", section="modern",
    summary=N_("DeepSeek sparse attention (V3.2): a small indexer picks the k keys each query attends to"),
    stages={
        "indexer": N_("The lightning indexer's queries, keys and head weights"),
        "scores": N_("Index scores I = Σ_j w_j · ReLU(q^I_j · k^I), causal"),
        "topk": N_("Each query keeps its top-k keys"),
        "weights": N_("MLA's softmax over the kept keys only"),
        "output": N_("The heads' outputs over the kept keys, then W_O"),
        "lost": N_("What was lost against dense attention"),
        "work": N_("The work: T · k pairs against T²"),
    },
    build=build_sparse_walkthrough, step_through=sparse_attention_step_through, recipe=sparse_attention_recipe,
    settings=SparseSettings, default_stage="topk",
    default_stage_why=N_("The top-k choice is what this page adds: the indexer's scores lead to it and MLA's attention "
                         "over the kept keys follows from it."),
    fields=(
        IntRange("num_heads", 1, MAX_MLA_HEADS, label(N_("The number of heads"))),
        IntRange("head_dim", 1, MAX_HEAD_DIM, "d_h"),
        IntRange("rope_dim", 2, MAX_MLA_ROPE_DIM, "d_R"),
        IntRange("kv_latent", 1, MAX_DIM, "d_c"),
        IntRange("q_latent", 1, MAX_DIM, "d_c'"),
        IntRange("index_heads", 1, MAX_INDEX_HEADS, "H_I"),
        IntRange("index_dim", 1, MAX_INDEX_DIM, "d_I"),
        IntRange("top_k", 1, MAX_TOKENS, "k"),
        IntRange("head", 0, MAX_MLA_HEADS - 1, label(N_("The head shown")), one_based=True),
    ),
)
