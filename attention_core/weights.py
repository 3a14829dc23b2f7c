"""The seeded projection weights the step pages share: W_q, W_k, W_v (and W_O, b_O) drawn the way seed 001's
``CausalAttention`` and ``MultiHeadAttention`` draw them, from a local ``torch.Generator`` (the global one is shared
by every user of a server).

A floor module (imports only torch): every concept that needs the seeded weights imports them from here.

Shape legend: D = d_in (d_model), d_out the width of q, k, v. Everything float32.
Source: seed 001 (001_9275b51964da46b3.txt); ``torch.nn.Linear``'s initialisation.
"""

from __future__ import annotations

import math
from typing import Mapping, Optional

import torch
from torch import nn


def module_weights(d_in: int, d_out: int, seed: int, *, out_proj: bool) -> dict[str, torch.Tensor]:
    """W_q, W_k, W_v (and W_O, b_O) drawn the way seed 001's modules draw them, from a local generator.

    ``CausalAttention(d_in, d_out, ...)`` and ``MultiHeadAttention(d_in, d_out, ...)``
    (``qkv_bias=False``) create ``nn.Linear(d_in, d_out)`` for W_query, W_key,
    W_value in that order, then MultiHeadAttention's ``out_proj =
    nn.Linear(d_out, d_out)`` with a bias. ``nn.Linear`` initialises its (out, in)
    weight with ``kaiming_uniform_(a=√5)`` = U(-1/√in, 1/√in) and its bias with
    U(-1/√in, 1/√in). The same calls here, on ``torch.Generator().manual_seed(seed)``,
    give the modules' numbers after ``torch.manual_seed(seed)``.

    Args:
        d_in: D, the input width. d_out: the width of q, k, v. seed: >= 0.
        out_proj: also draw W_O (d_out, d_out) and b_O (d_out,).

    Returns:
        {"w_query", "w_key", "w_value"}: (d_in, d_out) float32, applied as x @ W
        (= ``linear.weight.T``); with out_proj also "w_out" (d_out, d_out) and "b_out" (d_out,).
    """
    g = torch.Generator().manual_seed(seed)

    def linear(fan_in: int, fan_out: int, bias: bool) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        weight = torch.empty(fan_out, fan_in)  # nn.Linear's layout: (out, in)
        nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=g)
        b = None
        if bias:
            bound = 1.0 / math.sqrt(fan_in)
            b = nn.init.uniform_(torch.empty(fan_out), -bound, bound, generator=g)
        return weight.T.contiguous(), b  # (in, out): x @ W

    out = {name: linear(d_in, d_out, False)[0] for name in ("w_query", "w_key", "w_value")}
    if out_proj:
        out["w_out"], out["b_out"] = linear(d_out, d_out, True)
    return out


def linear_weights(shapes: Mapping[str, tuple[int, int]], generator: torch.Generator) -> dict[str, torch.Tensor]:
    """One ``nn.Linear`` weight per name, in the mapping's order, drawn as ``nn.Linear`` draws it (``kaiming_uniform_
    (a=√5)`` = U(−1/√fan_in, 1/√fan_in), no bias) from ``generator``: the modern pages' projections.

    Args:
        shapes: name -> (fan_in, fan_out). generator: a seeded local generator (advanced by the draws).

    Returns:
        name -> (fan_in, fan_out) float32, applied as x @ W (= ``linear.weight.T``).
    """
    out = {}
    for name, (fan_in, fan_out) in shapes.items():
        weight = torch.empty(fan_out, fan_in)  # nn.Linear's layout: (out, in)
        nn.init.kaiming_uniform_(weight, a=math.sqrt(5), generator=generator)
        out[name] = weight.T.contiguous()
    return out
