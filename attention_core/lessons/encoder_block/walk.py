"""What the *encoder block* page's builder returns: every number it shows (a plain frozen record), and the block's two stage orders."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.errors import N_
from attention_core.inputs.stage import Inputs
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check
from attention_core.transformer.encoder import EncoderBlockTrace

#: The Transformer encoder block, post-LN (Vaswani et al. 2017, sec. 3.1; seed 003 §2): sublayer, add, norm.
ENCODER_POST_LN: dict[str, str] = {
    "inputs": N_("Inputs X"),
    "attention": N_("Multi-head self-attention"),
    "residual_1": N_("Residual: add the sublayer's input"),
    "norm_1": N_("LayerNorm₁: normalise each row, then γ and β"),
    "ffn_hidden": N_("Feed-forward, first layer: ReLU(· W₁ + b₁)"),
    "ffn_output": N_("Feed-forward, second layer: · W₂ + b₂"),
    "residual_2": N_("Residual again"),
    "norm_2": N_("LayerNorm₂: normalise each row, then γ and β"),
    "stack": N_("N blocks: each block's output is the next one's input"),
}


#: The same block, pre-LN (GPT-2 and most current models; Xiong et al. 2020): norm, sublayer, add.
ENCODER_PRE_LN: dict[str, str] = {key: ENCODER_POST_LN[key] for key in (
    "inputs", "norm_1", "attention", "residual_1", "norm_2", "ffn_hidden", "ffn_output", "residual_2", "stack")}


@dataclass(frozen=True)
class EncoderWalkthrough:
    """Every number of the *Encoder block* page.

    Attributes:
        settings: the settings it was built from.
        inputs: the input stage that supplies the tokens and X.
        tokens: the T tokens. x: (T, D), the first block's input.
        blocks: one :class:`EncoderBlockTrace` per block (N of them), block ℓ's output is block ℓ+1's input.
        block: the 0-based index of the block the step-through shows (settings.encoder_block.block, kept below N).
        checks: our numbers against ``torch.nn.TransformerEncoderLayer`` and ``torch.nn.functional.layer_norm``.
    """

    settings: SharedSettings
    inputs: Inputs
    tokens: tuple[str, ...]
    x: torch.Tensor
    blocks: tuple[EncoderBlockTrace, ...]
    block: int
    checks: tuple[Check, ...]

    @property
    def norm_first(self) -> bool:
        return self.settings.encoder_block.norm_first

    @property
    def order(self) -> dict[str, str]:
        """This variant's stages, in order: post-LN's, or pre-LN's (the same stages in another order)."""
        return ENCODER_PRE_LN if self.norm_first else ENCODER_POST_LN

    @property
    def trace(self) -> EncoderBlockTrace:
        """The shown block's trace."""
        return self.blocks[self.block]
