r"""What the "Inside a modern language model" page measures on the learner's prompt with SmolLM2-135M-Instruct
(:mod:`attention_core.smollm2.model`): the prompt's tokens (with or without the chat template), one forward
pass with every head's pattern summarised, the next-token distribution at a temperature, greedy generation with the
KV cache's size, and the heads' patterns (previous token, first token, own token).

Sources: the causal decoder and its next-token softmax, Radford et al. 2018/2019; softmax with temperature,
p_v = e^{z_v / τ} / Σ_u e^{z_u / τ} (Hinton et al. 2015, eq. 1); the KV cache's size, 2 · L · G · d · T numbers
(keys and values of G key/value heads per layer: grouped-query attention, Ainslie et al. 2023, sec. 2); the
attention sink, Xiao et al. 2023 ("Efficient Streaming Language Models with Attention Sinks"), sec. 3.1.

Shape legend: T tokens of the prompt, D = hidden size (576), L layers (30), H query heads (9), G key/value heads
(3), d = head_dim (64), V vocabulary (49152), K = the top-k shown (10), P = a head picture's side (pixels).
Everything is float32 on the CPU; token ids are int64.

Errors: :class:`~attention_core.errors.InputError` for an empty prompt (field "modern_lm.prompt"); the model's own
errors (package missing, file altered) come from :func:`model.load_decoder`.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, fields
from typing import Optional

import torch

from attention_core.errors import N_, InputError
from attention_core.inputs.tokens import token_labels
from attention_core.minilm.head_findings import block_means
from attention_core.smollm2.model import (
    MODERN_LM_MAX_CHARS,
    MODERN_LM_MAX_TOKENS,
    DecoderHeadStep,
    DecoderRun,
    SmolLM2Decoder,
    head_step,
)
from attention_core.transformer.generation import FLOAT32_BYTES, kv_cache_bytes

#: How many of the most likely next tokens the page lists.
TOP_K = 10
#: A head's picture in the grid is at most P × P pixels: longer prompts are averaged over blocks of tokens.
PICTURE = 32
#: The head patterns measured on the prompt: key -> (title, what a high score means), marked for translation.
PATTERNS: dict[str, tuple[str, str]] = {
    "previous": (N_("Previous token"), N_("each token looks at the token just before it")),
    "first": (N_("First token (attention sink)"), N_("each token puts its weight on the prompt's first token")),
    "current": (N_("Own token"), N_("each token looks at itself")),
}


@dataclass(frozen=True)
class Prompt:
    """The prompt as the model reads it.

    Attributes:
        ids: (T,) int64 token ids. tokens: the T tokens as text (each id decoded on its own).
        chat_template: whether the model's chat template wrapped the text (system, user and assistant turns).
        text_tokens: how many tokens the learner's text has on its own (before any cut).
        kept_tokens: how many of them the model reads (fewer when the prompt was cut to ``MODERN_LM_MAX_TOKENS``).
        chars_cut: whether the text was longer than ``MODERN_LM_MAX_CHARS`` (only its start was tokenised).
    """

    ids: torch.Tensor
    tokens: tuple[str, ...]
    chat_template: bool
    text_tokens: int
    kept_tokens: int
    chars_cut: bool

    @property
    def cut(self) -> bool:
        """Whether some of the text's tokens were left out."""
        return self.kept_tokens < self.text_tokens


def _template(decoder: SmolLM2Decoder, text: str) -> list[int]:
    out = decoder.tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                                tokenize=True)
    return list(out["input_ids"] if hasattr(out, "keys") else out)


def encode_prompt(decoder: SmolLM2Decoder, text: str, chat_template: bool = False,
                  max_tokens: int = MODERN_LM_MAX_TOKENS) -> Prompt:
    """Tokenise ``text`` with the model's byte-level BPE (any script, emoji included), optionally inside the chat
    template, cut to ``max_tokens`` tokens in all (the text's end is cut; the template's turns are kept).

    Raises:
        InputError: an empty prompt, or one of spaces only with the template off (field "modern_lm.prompt").
    """
    chars_cut = len(text) > MODERN_LM_MAX_CHARS
    text = text[:MODERN_LM_MAX_CHARS]
    text_ids = decoder.tokenizer(text, add_special_tokens=False)["input_ids"]
    if not text.strip():
        raise InputError(N_("Type a prompt: the model needs at least one token to predict the next one."),
                         field="modern_lm.prompt")
    kept = len(text_ids)
    if chat_template:
        overhead = len(_template(decoder, ""))
        kept = min(kept, max(max_tokens - overhead, 1))
        ids = _template(decoder, decoder.tokenizer.decode(text_ids[:kept]))
        while len(ids) > max_tokens and kept > 1:  # decoding then encoding may merge pieces differently
            kept -= 1
            ids = _template(decoder, decoder.tokenizer.decode(text_ids[:kept]))
    else:
        kept = min(kept, max_tokens)
        ids = text_ids[:kept]
    tokens = tuple(decoder.tokenizer.decode([i]) for i in ids)
    return Prompt(ids=torch.tensor(ids, dtype=torch.int64), tokens=tokens, chat_template=chat_template,
                  text_tokens=len(text_ids), kept_tokens=kept, chars_cut=chars_cut)


def shown_token(token: str) -> str:
    """A token as the page writes it, in its heatmaps' labels and its tables: spaces as ␣ and line breaks as ↵
    (byte-level BPE keeps a word's leading space in its token: " Paris" is "␣Paris")."""
    return token.replace(" ", "␣").replace("\n", "↵")


def shown_token_labels(tokens: tuple[str, ...]) -> tuple[str, ...]:
    """Row and column labels "1 The", "2 ␣capital", ...: :func:`token_labels` (1-based positions) of the tokens as
    :func:`shown_token` writes them."""
    return tuple(token_labels(tuple(shown_token(t) for t in tokens)))


@dataclass(frozen=True)
class LmRun:
    """The model on the prompt: what every view of the page reads.

    Attributes:
        prompt: the :class:`Prompt`.
        hidden_states: (L + 1, T, D) the embeddings, then every layer's output (layer ℓ's input is row ℓ).
        logits: (V,) the last position's logits (the next token's scores).
        patterns: key of :data:`PATTERNS` -> (L, H): each head's mean weight on that key over the rows that have it
            (previous: rows 2…T; first: rows 2…T; own: every row). Unitless, in [0, 1].
        baselines: the same key -> the score a head spreading its weight evenly over the keys it may see would get.
        pictures: (L, H, P', P') each head's weights (P' = min(T, PICTURE); block means when T > PICTURE).
        focus: (L, H) each head's mean over the tokens of its largest weight (1: every token looks at one token).
        sink: the share of all weight (every head, rows 2…T) on the first token; ``baselines["first"]`` for uniform.
    """

    prompt: Prompt
    hidden_states: torch.Tensor
    logits: torch.Tensor
    patterns: dict[str, torch.Tensor]
    baselines: dict[str, float]
    pictures: torch.Tensor
    focus: torch.Tensor
    sink: float

    def as_decoder_run(self) -> DecoderRun:
        """The run in :func:`model.head_step`'s terms (no stored attentions: the step recomputes its head)."""
        return DecoderRun(input_ids=self.prompt.ids, tokens=self.prompt.tokens, hidden_states=self.hidden_states,
                          attentions=torch.empty(0), next_token_probs=torch.softmax(self.logits, -1))


def _summaries(weights: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """(previous, first, own, picture, focus) of one layer's weights (H, T, T): vectorised, no loop over T × T."""
    t = weights.shape[-1]
    rows = torch.arange(1, t)
    previous = weights[:, rows, rows - 1].mean(-1) if t > 1 else torch.zeros(weights.shape[0])
    first = weights[:, 1:, 0].mean(-1) if t > 1 else torch.zeros(weights.shape[0])
    own = weights.diagonal(dim1=-2, dim2=-1).mean(-1)
    return previous, first, own, block_means(weights, PICTURE), weights.amax(-1).mean(-1)


def run_model(decoder: SmolLM2Decoder, prompt: Prompt) -> LmRun:
    """One forward pass of the model on the prompt; each layer's weights are summarised as they are made (a forward
    hook on its attention module), so the (L, H, T, T) weights are never all held at once.
    """
    summaries: list[tuple[torch.Tensor, ...]] = []

    def keep(_module, _args, output) -> None:
        summaries.append(_summaries(output[1][0].detach()))

    hooks = [layer.self_attn.register_forward_hook(keep) for layer in decoder.model.model.layers]
    try:
        with torch.no_grad():  # logits of the last position only: all T of them are T × 49152 (100 MB at 512)
            out = decoder.model(input_ids=prompt.ids[None], output_hidden_states=True, use_cache=False,
                                logits_to_keep=1)
    finally:
        for hook in hooks:
            hook.remove()
    previous, first, own, pictures, focus = (torch.stack(parts) for parts in zip(*summaries))
    t = len(prompt.ids)
    uniform_first = sum(1 / (i + 1) for i in range(1, t)) / (t - 1) if t > 1 else 1.0
    uniform_own = sum(1 / (i + 1) for i in range(t)) / t
    return LmRun(prompt=prompt, hidden_states=torch.stack(out.hidden_states)[:, 0], logits=out.logits[0, -1].clone(),
                 patterns={"previous": previous, "first": first, "current": own},
                 baselines={"previous": uniform_first, "first": uniform_first, "current": uniform_own},
                 pictures=pictures, focus=focus, sink=float(first.mean()))


@dataclass(frozen=True)
class Finding:
    """The heads that follow one pattern most on the prompt.

    Attributes:
        key: a key of :data:`PATTERNS`. top: ((layer, head, score), ...) the 3 highest, 0-based, best first.
        baseline: what an evenly spreading head would score.
    """

    key: str
    top: tuple[tuple[int, int, float], ...]
    baseline: float


def findings(run: LmRun, count: int = 3) -> tuple[Finding, ...]:
    """For each pattern the ``count`` heads that follow it most (ties: the lower layer, then head, first)."""
    out = []
    for key, scores in run.patterns.items():
        flat = scores.flatten()
        order = sorted(range(flat.numel()), key=lambda n: (-float(flat[n]), n))[:count]
        heads = scores.shape[1]
        out.append(Finding(key, tuple((n // heads, n % heads, float(flat[n])) for n in order), run.baselines[key]))
    return tuple(out)


@dataclass(frozen=True)
class NextTokens:
    """The next-token distribution at temperature τ.

    Attributes:
        temperature: τ. ids: (K,) the K most likely tokens, most likely first. tokens: them as text.
        probabilities: (K,) their probabilities softmax(z / τ), in [0, 1]. logits: (K,) their logits z.
        rest: the probability of every other token together.
    """

    temperature: float
    ids: torch.Tensor
    tokens: tuple[str, ...]
    probabilities: torch.Tensor
    logits: torch.Tensor
    rest: float


def next_tokens(decoder: SmolLM2Decoder, logits: torch.Tensor, temperature: float = 1.0, k: int = TOP_K) -> NextTokens:
    """The top ``k`` of softmax(z / τ) over the vocabulary (Hinton et al. 2015, eq. 1).

    Raises:
        InputError: τ not positive and finite (field "temperature.tau").
    """
    if not (math.isfinite(temperature) and temperature > 0):
        raise InputError(N_("The temperature must be a positive number; got {tau}."), field="temperature.tau",
                         tau=temperature)
    probabilities = torch.softmax(logits / temperature, dim=-1)
    top = torch.topk(probabilities, k)
    return NextTokens(temperature=temperature, ids=top.indices, tokens=tuple(decoder.tokenizer.decode([int(i)])
                                                                            for i in top.indices),
                      probabilities=top.values, logits=logits[top.indices], rest=float(1 - top.values.sum()))


def decoder_kv_cache_bytes(decoder: SmolLM2Decoder, tokens: int, kv_heads: Optional[int] = None,
                           bytes_per_number: int = FLOAT32_BYTES) -> int:
    """The model's KV cache's size for ``tokens`` positions: keys and values of every layer's key/value heads,
    2 · L · G · d · T numbers of ``bytes_per_number`` bytes (float32: 4), by
    :func:`attention_core.transformer.generation.kv_cache_bytes` with the model's sizes. With ``kv_heads`` = H: as
    without GQA."""
    groups = decoder.num_kv_heads if kv_heads is None else kv_heads
    return kv_cache_bytes(decoder.num_layers, groups, decoder.head_dim, tokens, bytes_per_number)


@dataclass(frozen=True)
class GenerationStep:
    """One generated token.

    Attributes:
        token_id, token: the token chosen (the most likely: greedy decoding). probability: its p at τ = 1.
        cache_tokens: the positions in the KV cache after this step (the prompt and every token fed so far).
        cache_bytes: the cache's size then, measured on the model's own cache object (float32).
    """

    token_id: int
    token: str
    probability: float
    cache_tokens: int
    cache_bytes: int


def _cache_size(cache) -> tuple[int, int]:
    """(positions, bytes) of a transformers ``DynamicCache``."""
    layers = cache.layers
    size = sum(t.numel() * t.element_size() for layer in layers for t in (layer.keys, layer.values))
    return int(layers[0].keys.shape[-2]), int(size)


def prompt_cache(decoder: SmolLM2Decoder, run: LmRun):
    """The prompt's KV cache (a transformers ``DynamicCache``), rebuilt from the run's hidden states instead of a
    second pass over the prompt: layer ℓ's keys are RoPE(RMSNorm(x_ℓ) W_k), its values RMSNorm(x_ℓ) W_v, x_ℓ the
    layer's input (``run.hidden_states[ℓ]``), as ``LlamaAttention`` stores them. Two projections per layer (~60 ms at
    512 tokens) instead of the whole model (~1.2 s)."""
    from transformers import DynamicCache  # noqa: PLC0415 - loaded with the model already (this page only)
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb  # noqa: PLC0415

    model = decoder.model.model
    t = run.hidden_states.shape[1]
    cache = DynamicCache(config=decoder.model.config)
    with torch.no_grad():
        cos, sin = model.rotary_emb(run.hidden_states[0][None], torch.arange(t)[None])
        for index, block in enumerate(model.layers):
            x = block.input_layernorm(run.hidden_states[index][None])  # (1, T, D)
            attention = block.self_attn
            keys = attention.k_proj(x).view(1, t, -1, decoder.head_dim).transpose(1, 2)  # (1, G, T, d)
            values = attention.v_proj(x).view(1, t, -1, decoder.head_dim).transpose(1, 2)
            _, keys = apply_rotary_pos_emb(keys, keys, cos, sin)
            cache.update(keys, values, index)
    return cache


class Continuation:
    """Greedy decoding after the prompt that goes on where it stopped: :meth:`steps` ``(n)`` makes only the tokens
    not made yet, one at a time with the model's KV cache (each step feeds only the new token, its queries
    attending the cached keys and values). The prompt is read once; with ``run`` (the prompt's :func:`run_model`) not
    even that: its next-token logits are the run's and its cache is rebuilt from the run's hidden states
    (:func:`prompt_cache`); the same tokens come out.

    Safe to share between threads (a lock); what it returns never changes (greedy decoding is deterministic). Once
    started it holds the cache, not the run: 2 · L · G · d · (T + n) float32 numbers (:func:`decoder_kv_cache_bytes`;
    24 MB at 512 tokens).
    """

    def __init__(self, decoder: SmolLM2Decoder, prompt: Prompt, run: Optional[LmRun] = None) -> None:
        self.decoder, self.prompt, self.run = decoder, prompt, run
        self._made: list[GenerationStep] = []
        self._logits: Optional[torch.Tensor] = None  # the next token's logits (V,)
        self._cache = None  # the model's DynamicCache of every position fed so far
        self._lock = threading.Lock()

    def steps(self, count: int) -> tuple[GenerationStep, ...]:
        """The first ``count`` generated tokens (see :class:`GenerationStep`)."""
        with self._lock, torch.no_grad():
            while len(self._made) < count:
                self._next()
            return tuple(self._made[:count])

    def _next(self) -> None:
        model = self.decoder.model
        if self._cache is None:  # the prompt
            if self.run is None:
                out = model(input_ids=self.prompt.ids[None], use_cache=True, logits_to_keep=1)  # the next token's only
                self._logits, self._cache = out.logits[0, -1], out.past_key_values
            else:
                self._logits, self._cache = self.run.logits, prompt_cache(self.decoder, self.run)
                self.run = None  # the cache is all it needs of the run: not kept alive with it
        elif self._made:  # feed the last token made: its keys and values join the cache
            out = model(input_ids=torch.tensor([[self._made[-1].token_id]]), past_key_values=self._cache,
                        use_cache=True)
            self._logits, self._cache = out.logits[0, -1], out.past_key_values
        probabilities = torch.softmax(self._logits, dim=-1)
        token = int(torch.argmax(probabilities))
        positions, size = _cache_size(self._cache)
        self._made.append(GenerationStep(token, self.decoder.tokenizer.decode([token]), float(probabilities[token]),
                                         positions, size))


def generate(decoder: SmolLM2Decoder, prompt: Prompt, count: int, run: Optional[LmRun] = None) -> tuple[GenerationStep, ...]:
    """``count`` tokens after the prompt by greedy decoding with the KV cache (:class:`Continuation`; with ``run``,
    the prompt is not read again).

    Returns one :class:`GenerationStep` per token (the cache holds T + n − 1 positions after the n-th, since the
    n-th token itself is fed at the next step).
    """
    return Continuation(decoder, prompt, run).steps(count)


@dataclass(frozen=True)
class LmHeadStep(DecoderHeadStep):
    """One query head step by step (:func:`model.head_step`'s fields) with what the page checks it against.

    Attributes (besides :class:`~attention_core.smollm2.model.DecoderHeadStep`'s):
        tokens: the T tokens. rms_eps: RMSNorm's ε. rope_theta: RoPE's base b (θ_c = b^(−2c/d)).
        model_weights: (T, T) the model's own attention probabilities of this head (:func:`layer_reference`).
        model_output: (T, D) the model's attention output of the layer (after o_proj).
        heads_sum: (T, D) our 9 heads' shares O^{(r)} summed (should equal ``model_output``).
    """

    tokens: tuple[str, ...] = ()
    rms_eps: float = 0.0
    rope_theta: float = 0.0
    model_weights: torch.Tensor = None  # type: ignore[assignment]
    model_output: torch.Tensor = None  # type: ignore[assignment]
    heads_sum: torch.Tensor = None  # type: ignore[assignment]


def layer_reference(decoder: SmolLM2Decoder, run: DecoderRun, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's own code on layer ``layer``'s input: transformers' ``LlamaAttention`` (eager) after the layer's
    RMSNorm, with the model's rotary embedding and an additive causal mask.

    Returns:
        (weights (H, T, T), output (T, D)): its attention probabilities and its output (after o_proj).
    """
    block = decoder.model.model.layers[layer]
    x = run.hidden_states[layer][None]  # (1, T, D)
    t = x.shape[1]
    with torch.no_grad():
        cos_sin = decoder.model.model.rotary_emb(x, torch.arange(t)[None])
        mask = torch.full((t, t), float("-inf")).triu(1)[None, None]  # (1, 1, T, T): 0 on and below the diagonal
        output, weights = block.self_attn(hidden_states=block.input_layernorm(x), position_embeddings=cos_sin,
                                          attention_mask=mask)
    return weights[0], output[0]


def head(decoder: SmolLM2Decoder, run: LmRun, layer: int, head: int) -> LmHeadStep:
    """Query head ``head`` of layer ``layer`` step by step (:func:`model.head_step`), with the model's own weights
    and the layer's output to check it against, and the sum of every head's share of that output.

    Raises:
        InputError: no such layer or head (see :func:`model.head_step`).
    """
    decoder_run = run.as_decoder_run()
    step = head_step(decoder, decoder_run, layer, head)
    weights, output = layer_reference(decoder, decoder_run, layer)
    heads_sum = sum(head_step(decoder, decoder_run, layer, r).projected if r != head else step.projected
                    for r in range(decoder.num_heads))
    own = {f.name: getattr(step, f.name) for f in fields(step)}
    own["x"] = step.x.clone()  # copies, not views: a view of the run's (L + 1, T, D) states or of all H heads' weights
    return LmHeadStep(**own, tokens=run.prompt.tokens,  # would keep them alive as long as the step is cached
                      rms_eps=decoder.rms_eps, rope_theta=decoder.rope_theta, model_weights=weights[head].clone(), model_output=output,
                      heads_sum=heads_sum)
