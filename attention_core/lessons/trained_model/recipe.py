"""The trained model page's export recipe (:class:`attention_core.recipe.Recipe`): one head of the model recomputed
from its layer's input and its slice of the weights, checked against the model's own attention probabilities.

Sources: Vaswani et al. 2017, eq. 1; Devlin et al. 2019 (BERT's biases and padding mask). Shapes: n tokens,
D = d_model, d_k = head_dim.
"""

from __future__ import annotations

import torch

from attention_core.minilm.model import HeadStep
from attention_core.recipe import ATTEND, Recipe


def trained_model_recipe(step: HeadStep) -> Recipe:
    """The trained model page's recipe for the head ``step`` shows."""
    t = step.trace
    mask = ~torch.isinf(step.additive_mask[0])  # (n,): True = a real token
    return Recipe(
        title=f"one head of the trained model (layer {step.layer + 1}, head {step.head + 1})",
        sources=("Q = X W_q + b_q, K = X W_k + b_k, V = X W_v + b_v, Z = softmax(Q K^T / sqrt(d_k) + M) V",
                 "(Vaswani et al. 2017, eq. 1, with BERT's biases and padding mask: Devlin et al. 2019)"),
        inputs=(("tokens", step.tokens, "the WordPiece tokens, the rows"),
                ("real", mask, "(n,) bool: False for [PAD]"),
                ("X", t.x, "(n, D): the layer's input hidden states"),
                ("W_q", t.w_query, "(D, d_k): the head's slice of the layer's query weight, transposed"),
                ("W_k", t.w_key, "(D, d_k)"), ("W_v", t.w_value, "(D, d_k)"),
                ("b_q", t.b_query, "(d_k,)"), ("b_k", t.b_key, "(d_k,)"), ("b_v", t.b_value, "(d_k,)"),
                ("model_weights", step.model_weights, "(n, n): the model's own attention probabilities")),
        code=(*ATTEND, "",
              "Q, K, V = X @ W_q + b_q, X @ W_k + b_k, X @ W_v + b_v  # (n, d_k) each",
              "n = X.shape[0]",
              "mask = real[None, :].expand(n, n)  # query i may attend key j when j is a real token",
              "M = torch.zeros(n, n).masked_fill(~mask, -inf)  # BERT's additive padding mask",
              "scores = Q @ K.T  # (n, n)",
              "scaled_scores, masked_scores, weights, output = attend(Q, K, V, mask)"),
        panels={"inputs": ("X",), "query": ("Q",), "key": ("K",), "value": ("V",), "scores": ("scores",),
                "scaled_scores": ("scaled_scores",), "mask": ("M",), "masked_scores": ("masked_scores",),
                "weights": ("weights",), "output": ("output",)},
        references=(f"same_as('model(...).attentions[{step.layer}][0, {step.head}] (the model\\'s own weights)', "
                    "weights, model_weights)",),
    )
