"""From settings to every number on the cross-attention page: the decoder's tokens ask, the encoder's answer.

Queries come from the decoder sentence X_dec (m tokens), keys and values from the encoder sentence X_enc (n tokens);
the rest is the multi-head page's machinery (:mod:`attention_core.multi_head.walkthrough`): its panels, entries and
step-through, with no mask (every query may look at every encoder token).

Shape legend: m decoder tokens, n encoder tokens, D = d_model, d_out = h · head_dim, h = num_heads.
Sources: seed 003 (003_734755b2d0b981d3.txt), sec. 2 (queries from the decoder, keys and values from the
encoder); Vaswani et al. 2017, sec. 3.2.3.
"""

from __future__ import annotations

from typing import Optional

import torch

from attention_core.errors import N_, InputError, Message
from attention_core.inputs.edits import Edits
from attention_core.inputs.presets import PRESETS
from attention_core.inputs.stage import Inputs, base_matrices, build_inputs
from attention_core.inputs.text import MAX_TOKENS
from attention_core.inputs.tokens import Vocabulary, seed000_tables, tokenize
from attention_core.masking.user_mask import (
    check_context_length,
)
from attention_core.multi_head.heads import head_columns, multi_head_attention
from attention_core.multi_head.recipe import multi_head_recipe
from attention_core.multi_head.walkthrough import (
    MultiHeadWalkthrough,
    _reshape_chain,
    _torch_mha_checks,
    step_through_for_page,
)
from attention_core.page import Page
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import StepThrough
from attention_core.weights import module_weights


def encoder_inputs(settings: SharedSettings, inputs: Inputs) -> tuple[tuple[str, ...], torch.Tensor]:
    """The encoder sentence's tokens and embeddings X_enc (n, D), from the same table as the decoder's.

    Fixed vocabularies (seed 000's dictionary, the articles' word vectors) give
    each word the same vector in both sentences. With a vocabulary built from
    the sentence, the encoder's new words get the next ids and the next rows of
    the same seeded table (drawn after everything else, so the decoder's X is
    unchanged); the user's X edits apply to the decoder only.

    Raises:
        InputError: an empty encoder sentence, more than MAX_TOKENS tokens, or
            words outside a fixed vocabulary (field "encoder_sentence").
    """
    raw = tokenize(settings.encoder_sentence)
    if not raw:
        raise InputError(N_("The encoder sentence is empty: type a few words (the tokens the decoder looks at)."),
                         field="encoder_sentence")
    if len(raw) > MAX_TOKENS:
        raise InputError(
            N_("The encoder sentence has {num_tokens} tokens; this page shows at most {max_tokens} "
               "(a grid of {max_tokens} × {max_tokens} numbers is the most that stays readable). Shorten it."),
            field="encoder_sentence", num_tokens=len(raw), max_tokens=MAX_TOKENS,
        )
    preset = PRESETS[settings.preset]
    if preset.vocabulary is not None or preset.table is not None:
        try:
            words, ids = inputs.vocabulary.encode(raw)
        except InputError as error:
            raise InputError(N_("Encoder sentence: {problem}"), field="encoder_sentence",
                             problem=error.message) from None
        return words, base_matrices(settings, ids, inputs.vocabulary)["x"]
    extended = Vocabulary.from_tokens(inputs.tokens + raw)  # the decoder's words keep their ids
    words, ids = extended.encode(raw)
    extra = extended.num_rows - inputs.vocabulary.num_rows
    table = seed000_tables(settings.seed, inputs.vocabulary.num_rows, settings.d_model, settings.d_k)[0]
    if extra:
        # seed000_tables' generator, continued: the same draws, then `extra` more rows.
        g = torch.Generator().manual_seed(settings.seed)
        torch.randn(inputs.vocabulary.num_rows - 1, settings.d_model, generator=g)
        for _i in range(3):
            torch.randn(settings.d_model, settings.d_k, generator=g)
        torch.randn(1, settings.d_model, generator=g)
        table = torch.cat([table, torch.randn(extra, settings.d_model, generator=g)])
    return words, table[torch.tensor(ids)]


def build_cross_attention_walkthrough(settings: SharedSettings, edits: Optional[Edits] = None) -> MultiHeadWalkthrough:
    """Cross-attention: the decoder sentence's queries attend to the encoder sentence's keys and values.

    Queries come from ``settings.sentence`` (m tokens, its X with the user's
    edits), keys and values from ``settings.encoder_sentence`` (n tokens); the
    weights are m × n per head, m ≠ n is fine, and there is no mask (every
    decoder token may look at every encoder token). Weights as
    ``MultiHeadAttention(D, d_out, context_length, 0.0, num_heads)``.

    Raises:
        InputError: a bad decoder or encoder sentence, either longer than the
            context length, or num_heads not dividing d_out.
    """
    edits = edits or {}
    inputs = build_inputs(settings, edits, edited=("x",))
    check_context_length(len(inputs.tokens), settings.context_length, "decoder")
    enc_tokens, x_enc = encoder_inputs(settings, inputs)
    check_context_length(len(enc_tokens), settings.context_length, "encoder")
    columns = head_columns(settings.d_out, settings.num_heads)
    x_dec = inputs.x  # (m, D)
    w = module_weights(settings.d_model, settings.d_out, settings.seed, out_proj=True)
    trace = multi_head_attention(x_dec, x_enc, w["w_query"], w["w_key"], w["w_value"], w["w_out"],
                                 b_out=w["b_out"], num_heads=settings.num_heads)
    m, n = len(inputs.tokens), len(enc_tokens)
    checks = _torch_mha_checks(trace, w, x_dec, x_enc, None, torch.zeros(m, dtype=torch.bool))
    notes = []
    if m != n:
        notes.append(Message(N_("m = {m} decoder tokens attend to n = {n} encoder tokens: every head's weights are "
                                "{m} × {n}, not square, and each row still sums to 1 over the {n} encoder tokens."),
                             m=m, n=n))
    if settings.d_model != settings.d_out:
        notes.append(Message(
            N_("torch.nn.MultiheadAttention needs queries as wide as d_out (its embed_dim); here d_model = "
               "{d_model} ≠ d_out = {d_out}, so the check uses scaled_dot_product_attention per head."),
            d_model=settings.d_model, d_out=settings.d_out))
    return MultiHeadWalkthrough(
        settings=settings, inputs=inputs, tokens=inputs.tokens, kv_tokens=enc_tokens, x_query=x_dec, x_kv=x_enc,
        weights=w, mask=None, trace=trace, columns=columns, shapes=_reshape_chain(m, settings.d_out,
                                                                                   settings.num_heads),
        blocked_rows=(), checks=tuple(checks), warnings=(), notes=tuple(notes),
    )
def cross_attention_step_through(walk: MultiHeadWalkthrough, stage: str) -> StepThrough:
    """The cross-attention page's ``stage`` in the one step-through protocol (the multi-head page's machinery).

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    return step_through_for_page(walk, stage, CROSS_ATTENTION)


CROSS_ATTENTION = Page(
    key="cross_attention", title=N_("Cross-attention"), icon=":material/compare_arrows:", section="masking",
    summary=N_("Cross-attention: a decoder sentence attends to an encoder sentence"),
    stages={
        "inputs": N_("Decoder and encoder inputs"),
        "query": N_("Queries from the decoder: Q = X_dec W_q"),
        "key": N_("Keys from the encoder: K = X_enc W_k"),
        "value": N_("Values from the encoder: V = X_enc W_v"),
        "scaled_scores": N_("Scores Q_r K_rᵀ / √head_dim: m × n"),
        "weights": N_("Weights: softmax over the encoder tokens"),
        "head": N_("Each head's context vectors"),
        "output": N_("Output: Concat · W_O + b_O"),
    },
    build=build_cross_attention_walkthrough, step_through=cross_attention_step_through, default_stage="weights",
    default_stage_why=N_("The weights, decoder tokens over encoder tokens, are what this page is about; the projections and scores that make them come before."), recipe=multi_head_recipe,
    legacy={"cross_stage": "stage"},
)
