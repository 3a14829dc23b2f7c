"""The *encoder block* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.encoder_block.walk import EncoderWalkthrough
from attention_core.recipe import ATTEND, Recipe
from attention_core.transformer.recipe_blocks import BLOCK_FIELDS, LAYER_NORM, MULTI_HEAD


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
