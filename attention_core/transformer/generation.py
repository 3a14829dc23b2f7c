r"""Generating one token per step with the toy encoder–decoder, recomputed by our code, with and without a KV cache.

Seed 003 (``003_734755b2d0b981d3.txt`` §2): the decoder starts from START and, at each step t, attends with
masked self-attention over the tokens it has produced and with cross-attention over the encoder's outputs,
then turns its last row into a probability for every token of the vocabulary and picks the next one,
until END or a length limit::

    logits_t = Z_t[t] W_vocab + b_vocab                   (V,), Z_t: the decoder's output on START, y₁ … y_{t−1}
    p_t(v)   = exp(logits_t(v) / τ) / Σ_u exp(logits_t(u) / τ)
    y_t      = argmax_v p_t(v)  (greedy, τ = 0: the softmax at τ = 1 is shown)  or a draw from p_t (τ > 0)

Each step is computed twice:

* **without a cache**: the decoder runs on all t tokens again (what a model without a cache does);
* **with a KV cache** (the way every chat model decodes): only the new token's row goes through the decoder;
  in each block its query, key and value are computed, and the keys and values of the earlier tokens are read
  from the cache, which grows by one row per step. The encoder's keys and values for cross-attention are
  computed once, at step 1, and read at every step after.

Because the mask is causal, the two give the same numbers (:attr:`GenerationStep.cache_diff`).
:func:`multiply_adds` counts the matrix products' multiply-adds of one step both ways: O(t²) without the cache,
O(t) with it. :func:`kv_cache_bytes` sizes a cache: layers × 2 (K and V) × kv heads × head_dim × bytes × tokens.

Shape legend: S source tokens, t the step (1-based; the decoder has read t tokens), D = d_model,
F = dim_feedforward, V = vocabulary size, L = decoder blocks. Float32.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch

from attention_core.errors import N_, InputError
from attention_core.transformer.decoder import (
    DecoderBlockTrace,
    DecoderBlockWeights,
    KVCache,
    decoder_block,
    decoder_weights,
    encoder_weights,
)
from attention_core.transformer.encoder import BlockWeights, EncoderBlockTrace, encoder_stack
from attention_core.transformer.toy_model import (
    D_MODEL,
    DIM_FEEDFORWARD,
    END,
    NUM_HEADS,
    NUM_LAYERS,
    START,
    TOY_MAX_OUTPUT,
    VOCAB,
    load_toy_model,
)

#: The largest sampling temperature τ of the generation page (0 = greedy).
MAX_TOY_TEMPERATURE = 10.0

#: The smallest τ > 0 it samples with: logits ÷ τ must stay finite in float32 (|logits| ≤ ~3.4e38 · τ), and
#: below 0.01 the draw is the greedy choice anyway for the toy model's logits. A τ in (0, 0.01) is moved to 0.01.
MIN_TOY_TEMPERATURE = 0.01

#: Bytes of one float32 number.
FLOAT32_BYTES = 4


@dataclass(frozen=True)
class ToyWeights:
    """The trained toy model's parameters, as our code uses them.

    Attributes:
        embedding: (V, D), E. positional: (TOY_MAX_OUTPUT + 1, D), the sinusoidal PE.
        encoder: one :class:`BlockWeights` per encoder block. decoder: one :class:`DecoderBlockWeights` per block.
        w_vocab: (D, V), b_vocab: (V,): the last linear layer (applied as x @ W).
    """

    embedding: torch.Tensor
    positional: torch.Tensor
    encoder: tuple[BlockWeights, ...]
    decoder: tuple[DecoderBlockWeights, ...]
    w_vocab: torch.Tensor
    b_vocab: torch.Tensor


@lru_cache(maxsize=1)
def toy_weights() -> ToyWeights:
    """The trained weights, read from :func:`load_toy_model` once per process."""
    model = load_toy_model()
    return ToyWeights(embedding=model.embedding.weight.detach(), positional=model.positional,
                      encoder=tuple(encoder_weights(layer) for layer in model.encoder),
                      decoder=tuple(decoder_weights(layer) for layer in model.decoder),
                      w_vocab=model.to_vocab.weight.detach().T, b_vocab=model.to_vocab.bias.detach())


def embed(weights: ToyWeights, tokens: tuple[int, ...], first_position: int = 0) -> torch.Tensor:
    """(len(tokens), D): E[token] · √D + PE[position], positions from ``first_position`` (Vaswani et al. 3.4, 3.5)."""
    rows = weights.embedding[list(tokens)] * math.sqrt(D_MODEL)
    return rows + weights.positional[first_position:first_position + len(tokens)]


@dataclass(frozen=True)
class GenerationStep:
    """Step t: the decoder reads START, y₁ … y_{t−1} and chooses y_t.

    Attributes:
        number: t, 1-based.
        inputs: the t token ids the decoder reads.
        y: (t, D), their embeddings with positions (the first block's input).
        blocks: one :class:`DecoderBlockTrace` per block, recomputed on all t rows (no cache).
        cached: one :class:`DecoderBlockTrace` per block on the new row only, reading the KV cache; its
            ``cache`` holds the t rows of keys and values after this step.
        logits: (V,), the last row of the decoder's output times W_vocab, plus b_vocab.
        cached_logits: (V,), the same from the cached run.
        probabilities: (V,), softmax(logits / τ), τ = 1 when decoding greedily.
        chosen: y_t's id.
    """

    number: int
    inputs: tuple[int, ...]
    y: torch.Tensor
    blocks: tuple[DecoderBlockTrace, ...]
    cached: tuple[DecoderBlockTrace, ...]
    logits: torch.Tensor
    cached_logits: torch.Tensor
    probabilities: torch.Tensor
    chosen: int

    @property
    def cache_diff(self) -> float:
        """max |cached − recomputed| over the new row's output of every block and the logits."""
        diffs = [float((c.output[-1] - b.output[-1]).abs().max()) for b, c in zip(self.blocks, self.cached)]
        return max(diffs + [float((self.cached_logits - self.logits).abs().max())])


@dataclass(frozen=True)
class Generation:
    """Every number of one generation.

    Attributes:
        source: the S input token ids. x: (S, D), their embeddings with positions.
        encoder: one :class:`EncoderBlockTrace` per encoder block (post-LN); memory: (S, D), the last one's output.
        steps: one :class:`GenerationStep` per generated token, in order.
        temperature: τ (0 = greedy). seed: the sampling generator's seed (used when τ > 0).
    """

    source: tuple[int, ...]
    x: torch.Tensor
    encoder: tuple[EncoderBlockTrace, ...]
    memory: torch.Tensor
    steps: tuple[GenerationStep, ...]
    temperature: float
    seed: int

    @property
    def output(self) -> tuple[int, ...]:
        """The generated ids, END included when it came."""
        return tuple(s.chosen for s in self.steps)

    @property
    def finished(self) -> bool:
        """Whether the model produced END before the length limit."""
        return self.output[-1] == END


def _check_temperature(temperature: float) -> None:
    if not (temperature == 0.0 or MIN_TOY_TEMPERATURE <= temperature <= MAX_TOY_TEMPERATURE):  # also catches NaN
        raise InputError(N_("The temperature τ must be 0 (greedy: always the most likely token) or between {min} and "
                            "{max}; got {value}."), field="generation.temperature", min=MIN_TOY_TEMPERATURE,
                         max=MAX_TOY_TEMPERATURE, value=temperature)


@lru_cache(maxsize=256)
def generate(source: tuple[int, ...], temperature: float = 0.0, seed: int = 0,
             max_steps: int = TOY_MAX_OUTPUT) -> Generation:
    """Run the trained toy model on ``source`` one token per step, every intermediate kept (module docstring).

    Results are cached per process (the model is fixed): a class typing the same word shares one run.

    Args:
        source: 1..TOY_MAX_INPUT token ids (from :func:`toy_model.parse_source`).
        temperature: τ = 0 or MIN_TOY_TEMPERATURE ≤ τ ≤ MAX_TOY_TEMPERATURE; 0 picks the most likely token, τ > 0
            draws from softmax(logits / τ) with a
            generator seeded with ``seed``.
        max_steps: the length limit (tokens generated, END included).

    Raises:
        InputError: τ outside {0} ∪ [MIN_TOY_TEMPERATURE, MAX_TOY_TEMPERATURE], or NaN (a smaller τ > 0 overflows
            logits / τ in float32).
    """
    _check_temperature(temperature)
    w = toy_weights()
    x = embed(w, source)
    encoder = encoder_stack(x, w.encoder, NUM_HEADS, norm_first=False)
    memory = encoder[-1].output
    # the cross-attention cache: the memory's keys and values, once per block
    cross = tuple(KVCache(memory @ b.cross_attention.w_key + b.cross_attention.b_key,
                          memory @ b.cross_attention.w_value + b.cross_attention.b_value) for b in w.decoder)
    generator = torch.Generator().manual_seed(seed)
    inputs: tuple[int, ...] = (START,)
    caches: tuple[KVCache | None, ...] = (None,) * NUM_LAYERS
    steps = []
    for number in range(1, max_steps + 1):
        y = embed(w, inputs)
        blocks, rows = [], y
        for b in w.decoder:
            blocks.append(decoder_block(rows, memory, b, NUM_HEADS))
            rows = blocks[-1].output
        cached, row = [], y[-1:]
        for b, cache, memory_kv in zip(w.decoder, caches, cross):
            cached.append(decoder_block(row, memory, b, NUM_HEADS, cache=cache, memory_cache=memory_kv))
            row = cached[-1].output
        caches = tuple(c.cache for c in cached)
        logits = rows[-1] @ w.w_vocab + w.b_vocab
        probabilities = torch.softmax(logits / (temperature or 1.0), dim=-1)
        if temperature == 0:
            chosen = int(logits.argmax())
        else:
            chosen = int(torch.multinomial(probabilities, 1, generator=generator))
        steps.append(GenerationStep(number=number, inputs=inputs, y=y, blocks=tuple(blocks), cached=tuple(cached),
                                    logits=logits, cached_logits=row[-1] @ w.w_vocab + w.b_vocab,
                                    probabilities=probabilities, chosen=chosen))
        if chosen == END:
            break
        inputs = inputs + (chosen,)
    return Generation(source=source, x=x, encoder=encoder, memory=memory, steps=tuple(steps),
                      temperature=temperature, seed=seed)


def reference_logits(source: tuple[int, ...], inputs: tuple[int, ...]) -> torch.Tensor:
    """The next-token logits (V,) of ``torch.nn`` 's Transformer layers (the trained :class:`ToyReverser`)."""
    model = load_toy_model()
    with torch.no_grad():
        return model(torch.tensor([source]), torch.tensor([inputs]))[0, -1]


def multiply_adds(step: int, source_length: int, cached: bool) -> int:
    """The multiply-adds of the matrix products at generation step t, for the whole decoder and W_vocab.

    Per block, with r rows computed (r = t without a cache, 1 with it), t keys in self-attention, S in
    cross-attention::

        self-attention   3 r D²  (Q, K, V)  +  2 r t D  (Q Kᵀ, then weights × V)  +  r D²  (W_O)
        cross-attention  r D² (Q)  +  2 S D² (K, V of the memory: without a cache only)  +  2 r S D  +  r D²
        feed-forward     2 r D F

    plus D V for the logits of the last row. Without a cache this grows like t² per step; with it, like t.
    (LayerNorm, softmax and the additions are not matrix products and are not counted.)
    """
    t, s, d, f = step, source_length, D_MODEL, DIM_FEEDFORWARD
    r = 1 if cached else t
    per_block = 4 * r * d * d + 2 * r * t * d + 2 * r * d * d + 2 * r * s * d + 2 * r * d * f
    if not cached:
        per_block += 2 * s * d * d
    return NUM_LAYERS * per_block + d * len(VOCAB)


def kv_cache_bytes(layers: int, kv_heads: int, head_dim: int, tokens: int, bytes_per_number: int) -> int:
    """Bytes of a self-attention KV cache: layers × 2 (K and V) × kv_heads × head_dim × bytes × tokens."""
    return layers * 2 * kv_heads * head_dim * bytes_per_number * tokens


#: Published sizes for scale, from each model's ``config.json`` on Hugging Face: (name, layers, key/value heads,
#: head_dim, bytes per number in 16-bit weights).
REAL_MODELS: tuple[tuple[str, int, int, int, int], ...] = (
    ("Llama 2 7B (multi-head attention)", 32, 32, 128, 2),
    ("Llama 3 8B (grouped-query attention, 8 KV heads)", 32, 8, 128, 2),
    ("Falcon 7B (multi-query attention, 1 KV head)", 32, 1, 64, 2),
)


@dataclass(frozen=True)
class Alignment:
    """Where each decoder row of a finished generation looks in one block's cross-attention (the heads' mean).

    Attributes:
        rows: how many rows write a letter of the answer (min(steps, n): the END row is left out).
        on_next: rows whose largest weight is on the input letter they write next (n + 1 − t for output t, 1-based:
            the anti-diagonal). on_previous: rows whose largest weight is one letter to the right: the letter they
            wrote the step before (they lag by one). elsewhere: the other rows.
    """

    rows: int
    on_next: int
    on_previous: int
    elsewhere: int


def cross_attention_alignment(generation: Generation, layer: int) -> Alignment:
    """Count the rows of block ``layer``'s cross-attention (0-based) at the last step that look at the letter they
    write next, the one they wrote before, or elsewhere (see :class:`Alignment`)."""
    n = len(generation.source)
    weights = generation.steps[-1].blocks[layer].cross_attention.weights.mean(0)  # (T, S): the heads' mean
    rows = min(weights.shape[0], n)
    offsets = [int(weights[t].argmax()) - (n - 1 - t) for t in range(rows)]  # row t writes input letter n − 1 − t
    return Alignment(rows=rows, on_next=offsets.count(0), on_previous=offsets.count(1),
                     elsewhere=rows - offsets.count(0) - offsets.count(1))
