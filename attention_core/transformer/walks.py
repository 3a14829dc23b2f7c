"""What the encoder-block and generation pages' builders return: their walk-throughs, every number the pages show,
and the encoder block's two orders of stages (post-LN, pre-LN).

Declared here, below the builders and their steps (``walkthrough.py``, ``generation_walkthrough.py``) and the export
recipes (``recipes.py``) that read them, so that a recipe imports the walk-through it is handed and the module that
declares the page with its recipe imports the recipe: no circle between them.

Shape legend: T tokens, D = d_model, F = dim_feedforward, N blocks; float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attention_core.errors import N_
from attention_core.inputs.stage import Inputs
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check
from attention_core.transformer.encoder import EncoderBlockTrace
from attention_core.transformer.generation import Generation, GenerationStep
from attention_core.transformer.toy_model import END, VOCAB

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


@dataclass(frozen=True)
class GenerationWalkthrough:
    """Every number of the *Generating token by token* page.

    Attributes:
        settings: the settings it was built from.
        generation: the :class:`Generation` (every step, cached and recomputed).
        step: the 0-based index of the step shown (settings.generation.step, kept below the steps taken).
        layer: the 0-based decoder block shown.
        checks: our numbers against torch's Transformer layers, and the cached run against the recomputed one.
    """

    settings: SharedSettings
    generation: Generation
    step: int
    layer: int
    checks: tuple[Check, ...]

    @property
    def current(self) -> GenerationStep:
        return self.generation.steps[self.step]

    @property
    def source_tokens(self) -> tuple[str, ...]:
        return tuple(VOCAB[i] for i in self.generation.source)

    @property
    def input_tokens(self) -> tuple[str, ...]:
        """The tokens the decoder reads at the shown step: START and the ones chosen before."""
        return tuple(VOCAB[i] for i in self.current.inputs)

    @property
    def output_tokens(self) -> tuple[str, ...]:
        return tuple(VOCAB[i] for i in self.generation.output)

    @property
    def expected(self) -> tuple[str, ...]:
        """What a perfect reverser answers: the letters reversed, then END."""
        return tuple(reversed(self.source_tokens)) + (VOCAB[END],)
