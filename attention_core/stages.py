"""One declaration of every step page's stages: key -> title, in order, and the settings field that holds each
page's current stage.

A leaf module (imports only ``errors``): settings validation, the step-through builders and the pages all read
the stages from here. Titles are marked for translation (``N_``); the stepper translates them.
"""

from __future__ import annotations

from attention_core.errors import N_

#: Scaled dot-product self-attention (Vaswani et al. 2017, eq. 1; seed 000, seed 002).
SELF_ATTENTION: dict[str, str] = {
    "inputs": N_("Inputs X"),
    "query": N_("Queries Q = X W_q"),
    "key": N_("Keys K = X W_k"),
    "value": N_("Values V = X W_v"),
    "scores": N_("Scores Q Kᵀ"),
    "scaled_scores": N_("Scaled scores ÷ √d_k"),
    "weights": N_("Weights: softmax"),
    "output": N_("Output: weights · V"),
}

#: Causal attention (seed 001's CausalAttention; seed 004's mask, "softmax, zero, renormalise").
CAUSAL: dict[str, str] = {
    "scaled_scores": N_("Scaled scores Q Kᵀ / √d_k"),
    "mask": N_("The mask: who may look at whom"),
    "masked_scores": N_("Masked scores: −∞ where blocked"),
    "weights": N_("Weights: softmax over the allowed keys"),
    "other_route": N_("Other route: softmax, zero, renormalise"),
    "output": N_("Output: weights · V"),
}

#: Dropout on the attention weights (seed 004).
DROPOUT: dict[str, str] = {
    "weights": N_("Causal weights (each row sums to 1)"),
    "dropout_mask": N_("The dropout mask (seeded)"),
    "dropped_weights": N_("Dropped and rescaled by 1 / (1 − p)"),
    "output": N_("Output: dropped weights · V"),
}

#: Multi-head attention (Vaswani et al. 2017, sec. 3.2.2; seed 001's MultiHeadAttention).
MULTIHEAD: dict[str, str] = {
    "inputs": N_("Inputs X"),
    "projections": N_("Q = X W_q, K = X W_k, V = X W_v (d_out wide)"),
    "split": N_("Split into heads: view, then transpose"),
    "scaled_scores": N_("Each head's scores Q_r K_rᵀ / √head_dim"),
    "masked_scores": N_("Each head's masked scores (−∞ where blocked)"),
    "weights": N_("Each head's weights: softmax"),
    "head": N_("Each head's context vectors"),
    "concat": N_("Concat(head_1, …, head_h)"),
    "output": N_("Output: Concat · W_O + b_O"),
}

#: Cross-attention (seed 003: queries from the decoder, keys and values from the encoder).
CROSS: dict[str, str] = {
    "inputs": N_("Decoder and encoder inputs"),
    "query": N_("Queries from the decoder: Q = X_dec W_q"),
    "key": N_("Keys from the encoder: K = X_enc W_k"),
    "value": N_("Values from the encoder: V = X_enc W_v"),
    "scaled_scores": N_("Scores Q_r K_rᵀ / √head_dim: m × n"),
    "weights": N_("Weights: softmax over the encoder tokens"),
    "head": N_("Each head's context vectors"),
    "output": N_("Output: Concat · W_O + b_O"),
}

#: Every step page: key -> (the settings field holding its current stage, its stages). The encoder block's pre-LN
#: order has the same stages as its post-LN order (in another order).
PAGES: dict[str, tuple[str, dict[str, str]]] = {
    "self_attention": ("stage", SELF_ATTENTION),
    "causal": ("causal_stage", CAUSAL),
    "dropout": ("dropout_stage", DROPOUT),
    "multi_head": ("mha_stage", MULTIHEAD),
    "cross_attention": ("cross_stage", CROSS),
}
