"""The backward-pass page's export recipe (:class:`attention_core.recipe.Recipe`): every gradient of
L = ½ ‖O − T‖² recomputed in plain torch, then checked against ``torch.autograd``.

Sources: Vaswani et al. 2017, eq. 1; Dao et al. 2022 (FlashAttention), appendix B.2 (D = rowsum(dO ⊙ O)).
Shapes: n tokens (T is the target), D = d_model, d_k = d_v."""

from __future__ import annotations

from attention_core.backward.walk import BackwardWalk
from attention_core.recipe import Recipe


def backward_recipe(walk: BackwardWalk) -> Recipe:
    """The backward pass's recipe: forward, loss, every gradient by hand, one step, autograd's gradients."""
    t = walk.trace
    return Recipe(
        title="the backward pass through self-attention",
        sources=("L = 1/2 ||O - T||^2, O = softmax(Q K^T / sqrt(d_k) + M) V  (Vaswani et al. 2017, eq. 1)",
                 "dS = P * (dP - D), D = rowsum(dO * O)  (Dao et al. 2022, FlashAttention, appendix B.2)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("causal", t.mask is not None, ""),
                ("row", walk.jacobian_at, "the Jacobian's row (0-based)"),
                ("eta", walk.step.learning_rate, "the learning rate"),
                ("X", t.x, "(n, D)"), ("W_q", t.w_query, "(D, d_k)"), ("W_k", t.w_key, "(D, d_k)"),
                ("W_v", t.w_value, "(D, d_v)"), ("Target", t.target, "(n, d_v)")),
        code=("n, d_k = X.shape[0], W_q.shape[1]",
              "mask = torch.ones(n, n, dtype=torch.bool).tril() if causal else None",
              "",
              "def forward(W_q, W_k, W_v):",
              "    Q, K, V = X @ W_q, X @ W_k, X @ W_v",
              "    S = Q @ K.T / math.sqrt(d_k)",
              "    if mask is not None:",
              "        S = S.masked_fill(~mask, -inf)",
              "    P = torch.softmax(S, dim=-1)",
              "    O = P @ V",
              "    return Q, K, V, P, O, 0.5 * ((O - Target) ** 2).sum()",
              "",
              "Q, K, V, P, O, L = forward(W_q, W_k, W_v)",
              "dO = O - Target  # (n, d_v)",
              "dV = P.T @ dO",
              "dP = dO @ V.T  # (n, n)",
              "D = (P * dP).sum(dim=-1, keepdim=True)  # (n, 1): sum_k P_ik dP_ik",
              "dS = P * (dP - D)  # the softmax's Jacobian, row by row; 0 where P is 0 (blocked)",
              "J = torch.diag(P[row]) - torch.outer(P[row], P[row])  # (n, n)",
              "D_flash = (dO * O).sum(dim=-1, keepdim=True)  # what FlashAttention keeps: dO and O",
              "dS_flash = P * (dP - D_flash)",
              "dQ = dS @ K / math.sqrt(d_k)",
              "dK = dS.T @ Q / math.sqrt(d_k)",
              "dW_q, dW_k, dW_v = X.T @ dQ, X.T @ dK, X.T @ dV",
              "dX = dQ @ W_q.T + dK @ W_k.T + dV @ W_v.T",
              "W_q_after = W_q - eta * dW_q",
              "*_, P_after, _, L_after = forward(W_q_after, W_k - eta * dW_k, W_v - eta * dW_v)"),
        panels={"loss": ("O", "Target", "dO"), "d_value": ("P", "dO", "dV"), "d_weights": ("dO", "V", "dP"),
                "d_scores": ("P", "dP", "dS", "J"),
                "flash": ("torch.cat([D_flash, D], dim=1)", "dS_flash", "dS_flash - dS"),
                "d_query": ("dS", "K", "dQ"), "d_key": ("dS", "Q", "dK"), "d_w_query": ("X", "dQ", "dW_q"),
                "d_w_key": ("X", "dK", "dW_k"), "d_w_value": ("X", "dV", "dW_v"), "d_x": ("dX",),
                "step": ("W_q_after", "P", "P_after", "P_after - P")},
        references=(
            "leaves = [W.clone().requires_grad_(True) for W in (W_q, W_k, W_v)]",
            "forward(*leaves)[-1].backward()",
            "for name, ours, leaf in zip(('dW_q', 'dW_k', 'dW_v'), (dW_q, dW_k, dW_v), leaves):",
            "    same_as(f'torch.autograd: {name}', ours, leaf.grad)",
            step_check(walk),
        ),
    )


def step_check(walk) -> str:
    """The script's last line: the step lowered the loss (asserted), or a comment that this η overshoots."""
    if walk.step.loss_after < walk.step.loss_before:
        return "assert L_after < L, 'one step with this eta did not lower the loss'"
    return "# this eta overshoots: the loss went up"
