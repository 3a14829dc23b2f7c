"""The encoder block's and the generation page's export recipes (:class:`attention_core.recipe.Recipe`).

Sources: Vaswani et al. 2017, sec. 3.1-3.5 (post-LN blocks, eq. 2's feed-forward, the sinusoidal encoding);
Xiong et al. 2020 (pre-LN); Ba et al. 2016 (LayerNorm); seed 003 sec. 2 (generation). Shapes: T tokens,
D = d_model, h = num_heads, F = dim_feedforward, V = vocabulary size.
"""

from __future__ import annotations

from attention_core.recipe import ATTEND, Recipe
from attention_core.transformer.walks import EncoderWalkthrough, GenerationWalkthrough

BLOCK_FIELDS = ("w_query", "w_key", "w_value", "w_out", "b_query", "b_key", "b_value", "b_out", "w_1", "b_1", "w_2",
                 "b_2", "gamma_1", "beta_1", "gamma_2", "beta_2")

LAYER_NORM = '''
def layer_norm(z, gamma, beta, eps=1e-5):
    """Each row: (z - mu) / sqrt(sigma^2 + eps), then gamma and beta (Ba et al. 2016). Returns stats (T, 2), z_hat, output."""
    mean = z.mean(dim=-1)  # (T,)
    var = z.var(dim=-1, unbiased=False)  # (T,), divided by D as torch does
    normalized = (z - mean[:, None]) / torch.sqrt(var[:, None] + eps)
    return dict(z=z, stats=torch.stack([mean, var], dim=1), normalized=normalized, output=normalized * gamma + beta)
'''.strip("\n").split("\n")

MULTI_HEAD = '''
def multi_head(x_q, x_kv, w, h, mask=None, prefix=""):
    """Concat(head_1, ..., head_h) W_O + b_O with biased projections (Vaswani et al. 2017, sec. 3.2.2).

    w holds prefix + w_query, w_key, w_value (D, D), w_out (D, D) and their biases (D,); x_q (m, D), x_kv (n, D).
    """
    q = x_q @ w[prefix + "w_query"] + w[prefix + "b_query"]
    k = x_kv @ w[prefix + "w_key"] + w[prefix + "b_key"]
    v = x_kv @ w[prefix + "w_value"] + w[prefix + "b_value"]
    m, n, width = q.shape[0], k.shape[0], q.shape[1]
    split = lambda t, rows: t.view(rows, h, width // h).transpose(0, 1)  # (rows, D) -> (h, rows, head_dim)
    _, _, weights, heads = attend(split(q, m), split(k, n), split(v, n), mask)
    output = heads.transpose(0, 1).reshape(m, width) @ w[prefix + "w_out"] + w[prefix + "b_out"]
    return dict(key=k, value=v, weights=weights, output=output)
'''.strip("\n").split("\n")


def encoder_block_recipe(walk: EncoderWalkthrough) -> Recipe:
    """The encoder block page's recipe: N blocks recomputed, the shown one panel by panel, torch's layer beside."""
    s = walk.settings
    blocks = [{name: getattr(b.weights, name) for name in BLOCK_FIELDS} for b in walk.blocks]
    d_model = walk.x.shape[-1]
    layer_call = (f"torch.nn.TransformerEncoderLayer({d_model}, nhead={s.encoder_block.num_heads}, "
                  f"dim_feedforward={s.encoder_block.dim_feedforward}, dropout=0.0, batch_first=True, norm_first={s.encoder_block.norm_first})")
    references = [
        "def torch_layer(w):",
        '    """torch.nn.TransformerEncoderLayer holding the block\'s weights (nn.Linear keeps W^T)."""',
        "    layer = torch.nn.TransformerEncoderLayer(D, h, dim_feedforward=F_, dropout=0.0, batch_first=True, "
        "norm_first=norm_first).eval()",
        "    with torch.no_grad():",
        "        layer.self_attn.in_proj_weight.copy_(torch.cat([w['w_query'].T, w['w_key'].T, w['w_value'].T]))",
        "        layer.self_attn.in_proj_bias.copy_(torch.cat([w['b_query'], w['b_key'], w['b_value']]))",
        "        layer.self_attn.out_proj.weight.copy_(w['w_out'].T)",
        "        layer.self_attn.out_proj.bias.copy_(w['b_out'])",
        "        layer.linear1.weight.copy_(w['w_1'].T)",
        "        layer.linear1.bias.copy_(w['b_1'])",
        "        layer.linear2.weight.copy_(w['w_2'].T)",
        "        layer.linear2.bias.copy_(w['b_2'])",
        "        for norm, n in ((layer.norm1, 1), (layer.norm2, 2)):",
        "            norm.weight.copy_(w[f'gamma_{n}'])",
        "            norm.bias.copy_(w[f'beta_{n}'])",
        "    return layer",
        "",
        "with torch.no_grad():",
        f"    same_as({layer_call!r}, shown['output'], torch_layer(weights[block])(shown['x'][None])[0])",
        "    ln = shown['norm_1']",
        "    same_as('torch.nn.functional.layer_norm(z, (d_model,), gamma_1, beta_1)', ln['output'], "
        "F.layer_norm(ln['z'], (D,), weights[block]['gamma_1'], weights[block]['beta_1']))",
    ]
    if len(walk.blocks) > 1:
        references += [
            "    out = X[None]",
            "    for w in weights:",
            "        out = torch_layer(w)(out)",
            f"    same_as({(str(len(walk.blocks)) + ' x ' + layer_call)!r}, traces[-1]['output'], out[0])",
        ]
    stack = ("X",) + tuple(f"traces[{k}]['output']" for k in range(len(walk.blocks)))
    norm = lambda n: tuple(f"shown['norm_{n}'][{part!r}]" for part in ("z", "stats", "normalized", "output"))  # noqa: E731
    return Recipe(
        title="the Transformer encoder block (" + ("pre-LN" if s.encoder_block.norm_first else "post-LN") + ")",
        sources=(("pre-LN: H = X + MultiHead(LayerNorm_1(X)), Y = H + FFN(LayerNorm_2(H))  (Xiong et al. 2020)"
                  if s.encoder_block.norm_first else
                  "post-LN: H = LayerNorm_1(X + MultiHead(X)), Y = LayerNorm_2(H + FFN(H))  (Vaswani et al. 2017, "
                  "sec. 3.1)"),
                 "FFN(Z) = ReLU(Z W_1 + b_1) W_2 + b_2  (sec. 3.3, eq. 2); N blocks, each with its own weights"),
        inputs=(("tokens", walk.tokens, "the rows"), ("h", s.encoder_block.num_heads, "num_heads"),
                ("F_", s.encoder_block.dim_feedforward, "dim_feedforward"), ("norm_first", s.encoder_block.norm_first, "True = pre-LN"),
                ("block", walk.block, "the block shown (0-based)"), ("X", walk.x, "(T, D)"),
                ("weights", blocks, "one dict per block: W (applied as x @ W) and biases, gamma and beta")),
        code=(*ATTEND, "", *LAYER_NORM, "", *MULTI_HEAD, "",
              "D = X.shape[1]",
              "",
              "def encoder_block(x, w):",
              '    """One block, every intermediate kept (no dropout)."""',
              "    ffn = lambda z: torch.relu(z @ w['w_1'] + w['b_1'])  # (T, F)",
              "    if norm_first:",
              "        norm_1 = layer_norm(x, w['gamma_1'], w['beta_1'])",
              "        attention_input = norm_1['output']",
              "        attention = multi_head(attention_input, attention_input, w, h)['output']",
              "        residual_1 = x + attention",
              "        hidden = residual_1",
              "        norm_2 = layer_norm(hidden, w['gamma_2'], w['beta_2'])",
              "        ffn_input = norm_2['output']",
              "        ffn_hidden = ffn(ffn_input)",
              "        ffn_output = ffn_hidden @ w['w_2'] + w['b_2']",
              "        residual_2 = hidden + ffn_output",
              "        output = residual_2",
              "    else:",
              "        attention_input = x",
              "        attention = multi_head(x, x, w, h)['output']",
              "        residual_1 = x + attention",
              "        norm_1 = layer_norm(residual_1, w['gamma_1'], w['beta_1'])",
              "        hidden = ffn_input = norm_1['output']",
              "        ffn_hidden = ffn(ffn_input)",
              "        ffn_output = ffn_hidden @ w['w_2'] + w['b_2']",
              "        residual_2 = hidden + ffn_output",
              "        norm_2 = layer_norm(residual_2, w['gamma_2'], w['beta_2'])",
              "        output = norm_2['output']",
              "    return dict(x=x, attention_input=attention_input, attention=attention, residual_1=residual_1,",
              "                norm_1=norm_1, hidden=hidden, norm_2=norm_2, ffn_input=ffn_input, ffn_hidden=ffn_hidden,",
              "                ffn_output=ffn_output, residual_2=residual_2, output=output)",
              "",
              "traces, x = [], X",
              "for w in weights:  # block l's output is block l + 1's input",
              "    traces.append(encoder_block(x, w))",
              "    x = traces[-1]['output']",
              "shown = traces[block]"),
        panels={"inputs": ("shown['x']",), "attention": ("shown['attention_input']", "shown['attention']"),
                "residual_1": ("shown['x']", "shown['attention']", "shown['residual_1']"),
                "norm_1": norm(1), "norm_2": norm(2),
                "ffn_hidden": ("shown['ffn_input']", "shown['ffn_hidden']"),
                "ffn_output": ("shown['ffn_hidden']", "shown['ffn_output']"),
                "residual_2": ("shown['hidden']", "shown['ffn_output']", "shown['residual_2']"),
                "stack": stack},
        references=tuple(references),
    )


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
