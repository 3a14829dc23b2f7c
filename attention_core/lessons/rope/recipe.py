"""The *RoPE* page's export recipe: how the self-checking script recomputes every panel."""

from __future__ import annotations

from attention_core.lessons.rope.walk import RopeWalkthrough
from attention_core.modern import rope
from attention_core.recipe import Recipe, drawn_weights, source


def rope_recipe(walk: RopeWalkthrough) -> Recipe:
    """The RoPE page's recipe: the angles and the rotation by the page's own functions, the scores, the shift."""
    t = walk.trace
    return Recipe(
        title="RoPE, rotary position embedding",
        sources=("theta_i = base^(-2i/d); the pair (q_i, q_(i+d/2)) at position m is rotated by m theta_i;",
                 "scores = q'_m . k'_n / sqrt(d) depend only on m - n  (Su et al. 2021, RoFormer, eq. 13-16)"),
        inputs=(("tokens", walk.tokens, "the rows"), ("base", t.base, ""), ("shift", t.shift, ""),
                *drawn_weights(walk.inputs.x, walk.settings.rope.head_dim, walk.settings.seed, value=False)),
        code=("Q, K = X @ W_q, X @ W_k  # (T, d) each: one head's queries and keys",
              "T, d = Q.shape",
              "half = torch.arange(d // 2, dtype=torch.float64)",
              "",
              "def frequencies(b):",
              "    return (b ** (-2 * half / d)).float()  # (d/2,): theta_i, computed in float64",
              "",
              *source(rope.rotation_angles, rope.rotate),
              "theta = frequencies(base)",
              "positions = torch.arange(T)",
              "angles = rotation_angles(positions, d, base)  # (T, d/2)",
              "Q_rotated, K_rotated = rotate(Q, angles), rotate(K, angles)",
              "scores = Q_rotated @ K_rotated.T * (1.0 / math.sqrt(d))  # (T, T)",
              "shifted = rotation_angles(positions + shift, d, base)",
              "shifted_scores = rotate(Q, shifted) @ rotate(K, shifted).T * (1.0 / math.sqrt(d))",
              "# the sinusoidal encoding with the same base (Vaswani et al. 2017, sec. 3.5): sin on even, cos on odd",
              "two_i = torch.arange(d, dtype=torch.float64).div(2, rounding_mode='floor') * 2",
              "angle = torch.arange(T, dtype=torch.float64)[:, None] / base ** (two_i / d)",
              "PE = torch.where(torch.arange(d) % 2 == 0, torch.sin(angle), torch.cos(angle)).float()",
              f"bases = sorted(set({list(rope.BASES)!r}) | {{base}})",
              "theta_table = torch.stack([frequencies(b) for b in bases])"),
        panels={"projections": ("Q", "K"), "angles": ("theta[None]", "angles"),
                "sinusoidal": ("PE", "torch.cos(angles)", "torch.sin(angles)"),
                "rotate_query": ("Q", "Q_rotated"), "rotate_key": ("K", "K_rotated"), "scores": ("scores",),
                "relative": ("scores", "shifted_scores", "shifted_scores - scores"), "base": ("theta_table",)},
        references=(
            "# the same rotation written the way transformers' Llama writes it (apply_rotary_pos_emb):",
            "# q * cos + rotate_half(q) * sin, with cos and sin of the angles repeated over both halves",
            "emb = torch.cat([angles, angles], dim=-1)",
            "rotate_half = lambda x: torch.cat([-x[:, d // 2:], x[:, :d // 2]], dim=-1)  # noqa: E731",
            "same_as('apply_rotary_pos_emb(q, k, cos, sin) (the Llama formula)', torch.cat([Q_rotated, K_rotated]), "
            "torch.cat([Q * emb.cos() + rotate_half(Q) * emb.sin(), K * emb.cos() + rotate_half(K) * emb.sin()]))",
        ),
    )
