"""What the *generating token by token* page's builder returns: every number it shows (a plain frozen record)."""

from __future__ import annotations

from dataclasses import dataclass

from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Check
from attention_core.transformer.generation import Generation, GenerationStep
from attention_core.transformer.toy_model import END, VOCAB


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
