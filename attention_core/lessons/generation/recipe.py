"""The *generating token by token* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.generation.walk import GenerationWalkthrough
from attention_core.recipe import ATTEND, Recipe
from attention_core.transformer.recipe_blocks import LAYER_NORM, MULTI_HEAD


def generation_recipe(walk: GenerationWalkthrough) -> Recipe:
    """The generation page's recipe: the trained toy reverser recomputed, the KV cache checked against no cache."""
    from attention_core.transformer.toy_model import DIM_FEEDFORWARD, NUM_HEADS, NUM_LAYERS, VOCAB, load_toy_model

    state = {name: value.detach() for name, value in load_toy_model().state_dict().items()}
    g, s = walk.generation, walk.current
    heads = lambda name: tuple(f"{name}[{r}]" for r in range(NUM_HEADS))  # noqa: E731
    return Recipe(
        title="generating token by token with the trained toy encoder-decoder",
        sources=("X = E[source] sqrt(D) + PE, M = Encoder_N(X); Y = E[START, y_1, ...] sqrt(D) + PE, Z = Decoder_N(Y, M);",
                 "logits = Z[last] W_vocab + b, p = softmax(logits / tau)  (Vaswani et al. 2017, sec. 3; Hung-yi Lee's "
                 "Transformer lecture)"),
        inputs=(("vocabulary", list(VOCAB), "token id = index"), ("source", list(g.source), "the word's ids"),
                ("inputs", list(s.inputs), "START and the tokens chosen before this step"),
                ("tau", g.temperature, "the temperature (0 = greedy: the softmax at tau = 1 is shown)"),
                ("block", walk.layer, "the block shown (0-based)"),
                ("h", NUM_HEADS, "heads"), ("N", NUM_LAYERS, "blocks per stack"),
                ("state", state, "the trained weights (torch.nn layout: Linear weights are W^T)")),
        code=(*ATTEND, "", *LAYER_NORM, "", *MULTI_HEAD, "",
              "E = state['embedding.weight']  # (V, D)",
              "V_, D = E.shape",
              "",
              "def weights_of(prefix):",
              '    """An attention\'s weights as x @ W matrices: in_proj = cat(W_q^T, W_k^T, W_v^T)."""',
              "    w_q, w_k, w_v = state[prefix + 'in_proj_weight'].chunk(3)",
              "    b_q, b_k, b_v = state[prefix + 'in_proj_bias'].chunk(3)",
              "    return dict(w_query=w_q.T, w_key=w_k.T, w_value=w_v.T, b_query=b_q, b_key=b_k, b_value=b_v,",
              "                w_out=state[prefix + 'out_proj.weight'].T, b_out=state[prefix + 'out_proj.bias'])",
              "",
              "def norm(prefix, z):",
              "    return layer_norm(z, state[prefix + '.weight'], state[prefix + '.bias'])['output']",
              "",
              "def ffn(prefix, z):",
              "    hidden = torch.relu(z @ state[prefix + 'linear1.weight'].T + state[prefix + 'linear1.bias'])",
              "    return hidden @ state[prefix + 'linear2.weight'].T + state[prefix + 'linear2.bias']",
              "",
              "# the sinusoidal encoding (sec. 3.5): sin on even columns, cos on odd ones",
              "two_i = torch.arange(D, dtype=torch.float64).div(2, rounding_mode='floor') * 2",
              "angle = torch.arange(max(len(source), len(inputs)), dtype=torch.float64)[:, None] / 10000.0 ** (two_i / D)",
              "PE = torch.where(torch.arange(D) % 2 == 0, torch.sin(angle), torch.cos(angle)).float()",
              "",
              "def embed(ids):",
              "    return E[ids] * math.sqrt(D) + PE[:len(ids)]  # (L, D): E[token] sqrt(D) + PE (sec. 3.4, 3.5)",
              "",
              "# the encoder: N post-LN blocks (the Encoder block page)",
              "X = embed(source)  # (S, D)",
              "encoder, memory = [], X",
              "for n in range(N):",
              "    p = f'encoder.{n}.'",
              "    attention = multi_head(memory, memory, weights_of(p + 'self_attn.'), h)",
              "    hidden = norm(p + 'norm1', memory + attention['output'])",
              "    memory = norm(p + 'norm2', hidden + ffn(p, hidden))",
              "    encoder.append(attention)",
              "M = memory  # (S, D)",
              "",
              "def decoder(ids, past=None):",
              '    """The N decoder blocks on the rows of ids (only the last row when past holds the earlier keys and values)."""',
              "    y = embed(ids)",
              "    total = len(ids)",
              "    rows = y if past is None else y[-1:]",
              "    blocks = []",
              "    for n in range(N):",
              "        p = f'decoder.{n}.'",
              "        w = weights_of(p + 'self_attn.')",
              "        first = total - rows.shape[0]",
              "        mask = torch.ones(total, total, dtype=torch.bool).tril()[first:]  # causal: row i sees tokens 0..i",
              "        q = rows @ w['w_query'] + w['b_query']",
              "        k = rows @ w['w_key'] + w['b_key']",
              "        v = rows @ w['w_value'] + w['b_value']",
              "        if past is not None:  # the KV cache: the earlier tokens' keys and values are read, not recomputed",
              "            k, v = torch.cat([past[n][0], k]), torch.cat([past[n][1], v])",
              "        split = lambda t: t.view(t.shape[0], h, D // h).transpose(0, 1)  # (L, D) -> (h, L, head_dim)",
              "        _, _, self_weights, self_heads = attend(split(q), split(k), split(v), mask)",
              "        self_output = self_heads.transpose(0, 1).reshape(rows.shape[0], D) @ w['w_out'] + w['b_out']",
              "        hidden_1 = norm(p + 'norm1', rows + self_output)",
              "        cross = multi_head(hidden_1, M, weights_of(p + 'multihead_attn.'), h)",
              "        hidden_2 = norm(p + 'norm2', hidden_1 + cross['output'])",
              "        rows = norm(p + 'norm3', hidden_2 + ffn(p, hidden_2))",
              "        blocks.append(dict(self_weights=self_weights, key=k, value=v, cross_weights=cross['weights'],",
              "                           input=y if n == 0 else blocks[-1]['output'], output=rows))",
              "    return y, blocks",
              "",
              "Y, blocks = decoder(inputs)",
              "logits = blocks[-1]['output'][-1] @ state['to_vocab.weight'].T + state['to_vocab.bias']  # (V,)",
              "probabilities = torch.softmax(logits / (tau or 1.0), dim=-1)",
              "shown = blocks[block]"),
        panels={"source": ("X", "M"), "encoder_attention": heads("encoder[block]['weights']"),
                "decoder_input": ("Y",), "self_attention": heads("shown['self_weights']"),
                "cross_attention": heads("shown['cross_weights']"),
                "kv_cache": ("shown['key']", "shown['value']"),
                "logits": ("logits[None]",), "probabilities": ("probabilities[None]",)},
        references=(
            "# the whole trained model as torch.nn modules (its ToyReverser), 4 blocks deep: tolerance 1e-4",
            "embedding = torch.nn.Embedding(V_, D)",
            "encoder_layers = torch.nn.ModuleList(torch.nn.TransformerEncoderLayer(D, h, "
            f"{DIM_FEEDFORWARD}, dropout=0.0, batch_first=True) for _ in range(N))",
            "decoder_layers = torch.nn.ModuleList(torch.nn.TransformerDecoderLayer(D, h, "
            f"{DIM_FEEDFORWARD}, dropout=0.0, batch_first=True) for _ in range(N))",
            "to_vocab = torch.nn.Linear(D, V_)",
            "model = torch.nn.ModuleDict(dict(embedding=embedding, encoder=encoder_layers, decoder=decoder_layers, "
            "to_vocab=to_vocab)).eval()",
            "model.load_state_dict(state)",
            "with torch.no_grad():",
            "    memory_ = torch.tensor([source])",
            "    memory_ = embedding(memory_) * math.sqrt(D) + PE[:len(source)]",
            "    for layer in encoder_layers:",
            "        memory_ = layer(memory_)",
            "    y_ = embedding(torch.tensor([inputs])) * math.sqrt(D) + PE[:len(inputs)]",
            "    causal = torch.nn.Transformer.generate_square_subsequent_mask(len(inputs))",
            "    for n, layer in enumerate(decoder_layers):",
            "        y_ = layer(y_, memory_, tgt_mask=causal, tgt_is_causal=True)",
            "        if n == block:",
            "            same_as(f'torch.nn.TransformerDecoderLayer(D, nhead=h, dim_feedforward="
            f"{DIM_FEEDFORWARD}, dropout=0.0, batch_first=True)(Y, M, tgt_mask=causal) (block {{block + 1}})', "
            "shown['output'], layer(shown['input'][None], M[None], tgt_mask=causal)[0])",
            "    same_as('ToyReverser(source, START + tokens so far)[-1] (the whole model)', logits, "
            "to_vocab(y_)[0, -1], tolerance=1e-4)",
            "# the KV cache: the earlier tokens' keys and values from the previous step, only the new row computed",
            "if len(inputs) > 1:",
            "    _, before = decoder(inputs[:-1])",
            "    _, cached = decoder(inputs, past=[(b['key'], b['value']) for b in before])",
            "    same_as('decoder_block(new row, cache=KV cache) vs decoder_block(all rows)', "
            "torch.stack([b['output'][-1] for b in cached]), torch.stack([b['output'][-1] for b in blocks]))",
        ),
    )
