"""The multi-head backward page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.backward.recipe import step_check
from attention_core.lessons.backward_multi_head.walk import BackwardMultiHeadWalk
from attention_core.recipe import Recipe


def backward_multi_head_recipe(walk: BackwardMultiHeadWalk) -> Recipe:
    """The multi-head backward pass's recipe: forward, loss, back through W_O and the concatenation, every head's
    gradients by hand, the heads side by side into dW_q, dW_k, dW_v, one step, autograd's gradients."""
    t = walk.trace
    h = t.num_heads
    per_head = lambda name: tuple(f"{name}[{r}]" for r in range(h))  # noqa: E731
    return Recipe(
        title="the backward pass through multi-head attention",
        sources=("L = 1/2 ||O - T||^2, O = Concat(head_1, ..., head_h) W_O + b_O, "
                 "head_r = softmax(Q_r K_r^T / sqrt(head_dim) + M) V_r  (Vaswani et al. 2017, sec. 3.2.2 and eq. 1)",
                 "dS = P * (dP - D), D = rowsum(P * dP), per head  (Dao et al. 2022, FlashAttention, appendix B.2)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("causal", t.mask is not None, ""), ("h", h, "num_heads"),
                ("head", walk.jacobian_at[0], "the Jacobian's head (0-based)"),
                ("row", walk.jacobian_at[1], "the Jacobian's row (0-based)"),
                ("eta", walk.step.learning_rate, "the learning rate"),
                ("X", t.x, "(n, D)"), ("W_q", t.w_query, "(D, d_out), drawn like MultiHeadAttention's"),
                ("W_k", t.w_key, "(D, d_out)"), ("W_v", t.w_value, "(D, d_out)"), ("W_O", t.w_out, "(d_out, d_out)"),
                ("b_O", t.b_out, "(d_out,)"), ("Target", t.target, "(n, d_out)")),
        code=("n, d_out = X.shape[0], W_q.shape[1]",
              "head_dim = d_out // h",
              "mask = torch.ones(n, n, dtype=torch.bool).tril() if causal else None",
              "",
              "def split(M):  # (n, d_out) -> (h, n, head_dim): head r owns columns r * head_dim ... "
              "(MultiHeadAttention's view)",
              "    return M.view(M.shape[0], h, head_dim).transpose(0, 1)",
              "",
              "def merge(M):  # (h, rows, head_dim) -> (rows, d_out): the heads side by side",
              "    return M.transpose(0, 1).reshape(M.shape[1], d_out)",
              "",
              "def forward(W_q, W_k, W_v, W_O, b_O):",
              "    Q, K, V = split(X @ W_q), split(X @ W_k), split(X @ W_v)  # (h, n, head_dim)",
              "    S = Q @ K.transpose(-2, -1) / math.sqrt(head_dim)  # (h, n, n)",
              "    if mask is not None:",
              "        S = S.masked_fill(~mask, -inf)",
              "    P = torch.softmax(S, dim=-1)",
              "    C = merge(P @ V)  # (n, d_out): Concat(head_1, ..., head_h)",
              "    O = C @ W_O + b_O",
              "    return Q, K, V, P, C, O, 0.5 * ((O - Target) ** 2).sum()",
              "",
              "Q_heads, K_heads, V_heads, P, C, O, L = forward(W_q, W_k, W_v, W_O, b_O)",
              "dO = O - Target  # (n, d_out)",
              "dW_O, db_O = C.T @ dO, dO.sum(dim=0)",
              "dC = dO @ W_O.T  # (n, d_out)",
              "dO_heads = split(dC)  # head r gets back the columns it wrote: (h, n, head_dim)",
              "dV_heads = P.transpose(-2, -1) @ dO_heads",
              "dP = dO_heads @ V_heads.transpose(-2, -1)  # (h, n, n)",
              "D = (P * dP).sum(dim=-1, keepdim=True)  # (h, n, 1)",
              "dS = P * (dP - D)  # 0 where P is 0 (blocked)",
              "J = torch.diag(P[head, row]) - torch.outer(P[head, row], P[head, row])",
              "dQ_heads = dS @ K_heads / math.sqrt(head_dim)",
              "dK_heads = dS.transpose(-2, -1) @ Q_heads / math.sqrt(head_dim)",
              "dQ, dK, dV = merge(dQ_heads), merge(dK_heads), merge(dV_heads)  # (n, d_out)",
              "dW_q, dW_k, dW_v = X.T @ dQ, X.T @ dK, X.T @ dV",
              "dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T",
              "W_q_after = W_q - eta * dW_q",
              "*_, P_after, _, _, L_after = forward(W_q_after, W_k - eta * dW_k, W_v - eta * dW_v, W_O - eta * dW_O, "
              "b_O - eta * db_O)"),
        panels={"loss": ("O", "Target", "dO"), "d_w_out": ("C", "dO", "dW_O", "db_O[None]"),
                "d_concat": ("dO", "W_O", "dC"), "d_value": per_head("dV_heads"), "d_weights": per_head("dP"),
                "d_scores": per_head("dS") + ("J",), "d_query": per_head("dQ_heads"), "d_key": per_head("dK_heads"),
                "d_w_query": ("X", "dQ", "dW_q"), "d_w_key": ("X", "dK", "dW_k"), "d_w_value": ("X", "dV", "dW_v"),
                "d_x": ("dX",), "step": ("W_q_after",) + per_head("(P_after - P)")},
        references=(
            "leaves = [W.clone().requires_grad_(True) for W in (W_q, W_k, W_v, W_O, b_O)]",
            "forward(*leaves)[-1].backward()",
            "for name, ours, leaf in zip(('dW_q', 'dW_k', 'dW_v', 'dW_O', 'db_O'), (dW_q, dW_k, dW_v, dW_O, db_O), "
            "leaves):",
            "    same_as(f'torch.autograd: {name}', ours, leaf.grad)",
            step_check(walk),
        ),
    )
