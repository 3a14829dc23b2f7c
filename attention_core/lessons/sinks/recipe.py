"""The *attention sinks* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.sinks.walk import SinksWalkthrough
from attention_core.recipe import ATTEND, Recipe, projection_inputs


def sinks_recipe(walk: SinksWalkthrough) -> Recipe:
    """The attention-sinks page's recipe: causal softmax (rows sum to 1), a query that matches nothing, gpt-oss's
    learned sink (one more logit b in every row's denominator, no value) and its output; checked against
    transformers' gpt-oss eager attention where transformers is installed."""
    s = walk.settings
    return Recipe(
        title="attention sinks: softmax's 1 and gpt-oss's learned sink",
        sources=("w_ij = e^(s_ij) / sum_l e^(s_il); a query matching nothing (s = 0) gets 1/i per key  "
                 "(Xiao et al. 2024, StreamingLLM, sec. 3.1)",
                 "w_ij = e^(s_ij) / (sum_l e^(s_il) + e^b), sink share = e^b / (...)  (OpenAI 2025, gpt-oss model "
                 "card; transformers' modeling_gpt_oss.eager_attention_forward)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("b", float(s.sinks.sink_logit), "the sink logit"),
                *projection_inputs(walk.inputs)),
        code=(*ATTEND, "",
              "Q, K, V = X @ W_q, X @ W_k, X @ W_v  # (T, d) each",
              "T, d = Q.shape",
              "causal = torch.ones(T, T, dtype=torch.bool).tril()",
              "_, S, W, O = attend(Q, K, V, causal)  # S: scaled scores, -inf above the diagonal",
              "row_sums = W.sum(dim=-1, keepdim=True)  # every row sums to 1",
              "",
              "# a query that matches nothing: every score 0, so 1/i on each of the i keys it sees",
              "zeros = torch.zeros(T, T).masked_fill(~causal, -inf)",
              "W0 = torch.softmax(zeros, dim=-1)",
              "O0 = W0 @ V",
              "",
              "def with_sink(scores, b):",
              "    combined = torch.cat([scores, torch.full((scores.shape[0], 1), b)], dim=-1)  # one more logit",
              "    probs = torch.softmax(combined, dim=-1)",
              "    return probs[:, :-1], probs[:, -1]  # the keys' weights, the sink's share",
              "",
              "W_sink, share = with_sink(S, b)",
              "O0_sink = with_sink(zeros, b)[0] @ V",
              "sums = torch.stack([W_sink.sum(dim=-1), share], dim=1)  # (T, 2): they add up to 1",
              "O_sink = W_sink @ V  # the sink has no value"),
        panels={"weights": ("S", "W", "row_sums"), "nothing": ("W0", "O0", "O0_sink"),
                "sink_weights": ("S", "W_sink", "sums"), "sink_output": ("O_sink", "O")},
        references=(
            "same_as('F.scaled_dot_product_attention(Q, K, V, is_causal=True)', O, "
            "F.scaled_dot_product_attention(Q[None], K[None], V[None], is_causal=True)[0])",
            "try:",
            "    from transformers.models.gpt_oss.modeling_gpt_oss import eager_attention_forward",
            "except ImportError:",
            "    print('transformers is not installed: its gpt-oss attention is not compared')",
            "else:",
            "    class Head(torch.nn.Module):  # what eager_attention_forward reads of its module",
            "        num_key_value_groups = 1",
            "        training = False",
            "        sinks = torch.tensor([b])",
            "    mask = torch.zeros(T, T).masked_fill(~causal, -inf)[None, None]",
            "    theirs_out, theirs_w = eager_attention_forward(Head(), Q[None, None], K[None, None], V[None, None], "
            "mask, scaling=d ** -0.5)",
            "    same_as('transformers gpt_oss eager_attention_forward: weights', W_sink, theirs_w[0, 0])",
            "    same_as('transformers gpt_oss eager_attention_forward: output', O_sink, theirs_out[0, :, 0])",
        ),
    )
