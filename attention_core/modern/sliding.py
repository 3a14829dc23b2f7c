r"""Sliding-window (local) attention: each token attends only to the w most recent tokens (itself included).

Used by Longformer (Beltagy et al. 2020, local attention) and Mistral 7B (Jiang et al. 2023, w = 4096): the
mask keeps key j for query i when i − w < j ≤ i (causal) or |i − j| < w (both sides), so each row has at most
w allowed keys (causal) or at most 2w − 1 (both sides: w − 1 on each side and the token itself), and the cost grows
like T · w instead of T². One layer sees w tokens; stacked, layer ℓ reaches
back ℓ (w − 1) tokens, as a stack of convolutions with a kernel of size w does. Seed 003
(``003_734755b2d0b981d3.txt``) §1.7 contrasts a CNN's receptive field, fixed by its kernel, with
self-attention's, which is learned: the window brings the fixed kind back.

Shape legend: T tokens, w = window, L = layers. Masks are bool, True = may attend.
"""

from __future__ import annotations

import torch

from attention_core.errors import N_, InputError


def window_mask(tokens: int, window: int, causal: bool = True) -> torch.Tensor:
    """The (T, T) bool mask: True where key j is inside query i's window.

    Causal: i − w < j ≤ i. Not causal: |i − j| < w.

    Raises:
        InputError (field ``window``): window below 1.
    """
    if window < 1:
        raise InputError(N_("The window must hold at least 1 token (the token itself); got {w}."), field="sliding_window.window",
                         w=window)
    i = torch.arange(tokens)[:, None]
    j = torch.arange(tokens)[None, :]
    if causal:
        return (j <= i) & (j > i - window)
    return (i - j).abs() < window


def receptive_field(mask: torch.Tensor, layers: int) -> torch.Tensor:
    """Which inputs reach which outputs after 1 … L layers of attention with ``mask``: (L, T, T) bool.

    reach₁ = mask, reach_ℓ = reach_{ℓ−1} ∘ mask (a boolean matrix product): output i of layer ℓ depends on
    input j when some token k of layer ℓ − 1 that i attends to depends on j.
    """
    step = mask.float()
    reach, out = step, []
    for _ in range(layers):
        out.append(reach > 0)
        reach = (reach @ step).clamp(max=1.0)
    return torch.stack(out)
