"""The code the Transformer pages' export recipes share (a layer norm, a multi-head block, the block's weight names):
plain Python the self-checking scripts run."""

from __future__ import annotations

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
