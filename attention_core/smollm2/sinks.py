r"""Attention sinks on SmolLM2-135M-Instruct (:mod:`attention_core.smollm2.model`): how much weight every
head puts on the first token of the learner's prompt, and StreamingLLM's experiment: the next-token loss of the
model on a long text when its KV cache holds (a) every token, (b) a sliding window of the last w tokens only, (c)
the same window plus the first s tokens kept as *attention sinks*.

What is computed, precisely. Token i (0-based) of the text is predicted from the keys and values of the tokens the
cache would hold when token i − 1 is read: (a) every token 0 … i − 1; (b) the last w of them, i − w … i − 1, where
the query token i − 1 counts as one of the w; (c) those and tokens 0 … s − 1. A real cache is read token by token;
here each condition is one forward pass whose attention mask lets query i see exactly the keys the cache would hold
at step i (:func:`cache_mask`), so (b) and (c) run in one pass each. Every key keeps the RoPE rotation of its
original position, as transformers' caches store keys after RoPE (StreamingLLM itself re-numbers the positions
inside the cache, Xiao et al. 2024 §3.2; this is the variant that evicts from an ordinary cache). Because each
layer's keys and values at a token depend on what that token saw in the layers below, a token evicted at step i is
also invisible to the tokens after it: the one-pass mask and the token-by-token cache are the same computation
(:func:`evicting_cache_losses` does it token by token; the tests compare the two).

The loss is the mean negative log-likelihood, in nats per token, of tokens 1 … T − 1 (token 0 has nothing before
it): L = −(1 / (T − 1)) Σ_i log p(x_i | the cache); perplexity = e^L. With a full cache this is what transformers
computes with ``labels=`` (checked in the tests).

Shape legend: T tokens, L layers (30), H query heads (9). Float32 on the CPU; token ids int64.

Source: Xiao, Tian, Chen, Han & Lewis 2024, "Efficient Streaming Language Models with Attention Sinks" (ICLR 2024),
§3.1 (the sink: a large share of weight on the initial tokens, whatever they are), §3.2 (window attention fails once
the initial tokens are evicted; keeping 4 initial tokens restores it), Fig. 3 and Table 1.

Errors: :class:`~attention_core.errors.InputError` for a window shorter than the sinks (field "sinks.window"), a
text with fewer than 2 tokens (field "sinks.text").
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from attention_core.errors import N_, InputError
from attention_core.latex import Translate, latex_text, number, terms_lines
from attention_core.smollm2.model import SmolLM2Decoder

SINKS_MAX_TOKENS = 1024

#: The bundled long text: the first pages of Lewis Carroll, "Alice's Adventures in Wonderland" (1865), chapter I,
#: public domain (Project Gutenberg eBook #11), 784 tokens for SmolLM2.
TEXT_FILE = Path(__file__).with_name("texts") / "alice_chapter_1.txt"
#: The conditions of the experiment, in order: key -> title (marked for translation).
CONDITIONS: dict[str, str] = {
    "full": N_("Full KV cache"),
    "window": N_("Sliding window: the first tokens evicted"),
    "sinks": N_("Sliding window + the first tokens kept (sinks)"),
}
#: The rows whose logits go through the 49152-wide lm_head at once (128 × 49152 float32: 25 MB, not 150 MB at 768).
LOGIT_ROWS = 128
#: The loss chart's smoothing: each point is the mean loss of the last this many tokens predicted.
SMOOTHING_TOKENS = 32


def bundled_text() -> str:
    """The bundled public-domain text (UTF-8)."""
    return TEXT_FILE.read_text(encoding="utf-8")


def check_window(window: int, sinks: int) -> None:
    """Raise :class:`InputError` (field "sinks.window") when the window is shorter than the sinks, or below 1."""
    if window < 1 or window < sinks:
        raise InputError(N_("The window (w = {window}) must hold at least as many tokens as the sinks (s = {sinks}): "
                            "the sinks are kept besides the window, and a window shorter than them would evict the "
                            "tokens it is meant to keep next to."), field="sinks.window", window=window, sinks=sinks)


def cache_mask(t: int, window: int | None, sinks: int = 0) -> torch.Tensor:
    """(T, T) bool: True where query i sees key j, i.e. key j is in the cache when token i is read.

    Args:
        t: T tokens. window: w, the most recent tokens kept, the query's own included (None: every token, the full
            cache). sinks: s, the first tokens kept whatever the window.
    """
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    causal = j <= i
    if window is None:
        return causal
    return causal & ((i - j < window) | (j < sinks))


@dataclass(frozen=True)
class StreamingRun:
    """The loss of the model on one text under each cache.

    Attributes:
        tokens: T, the text's tokens read. window, sinks: w and s.
        losses: key of :data:`CONDITIONS` -> (T − 1,) float32 the negative log-likelihood of tokens 1 … T − 1, nats.
        seconds: how long the three passes took (wall clock). text_tokens: the text's tokens before any cut (0:
            not given).
    """

    tokens: int
    window: int
    sinks: int
    losses: dict[str, torch.Tensor]
    seconds: float
    text_tokens: int = 0

    def loss(self, key: str) -> float:
        """The mean loss L in nats per token."""
        return float(self.losses[key].double().mean())

    def perplexity(self, key: str) -> float:
        """e^L."""
        return math.exp(self.loss(key))

    def loss_after_window(self, key: str) -> float:
        """The mean loss of the tokens predicted once the window is full (tokens w + 1 …): where the caches differ."""
        return float(self.losses[key][self.window:].double().mean())

    def trailing_mean_losses(self, key: str, span: int = SMOOTHING_TOKENS) -> torch.Tensor:
        """The loss of each token predicted, averaged with the ones before it: point i is the mean of ``losses[key]``
        over rows max(0, i − span + 1) … i (fewer at the start). (T − 1,) float64, nats; row i is token i + 1.

        A running sum, no loop: mean_i = (c_i − c_{i−span}) / min(i + 1, span) with c the cumulative sum.
        Raises ValueError for ``span`` < 1.
        """
        if span < 1:
            raise ValueError(f"span must be at least 1, got {span}")
        losses = self.losses[key].double()  # (T − 1,)
        total = torch.cat([torch.zeros(1, dtype=torch.float64), losses.cumsum(0)])  # (T,): c_{-1} = 0, c_0, …
        index = torch.arange(losses.numel())
        start = (index - span + 1).clamp(min=0)
        return (total[index + 1] - total[start]) / (index + 1 - start)


def encode_text(decoder: SmolLM2Decoder, text: str, max_tokens: int) -> tuple[torch.Tensor, int]:
    """The text's token ids (T,), cut to ``max_tokens``, and how many tokens the whole text has.

    Raises:
        InputError: fewer than 2 tokens (field "sinks.text").
    """
    every = decoder.tokenizer(text, add_special_tokens=False)["input_ids"]
    ids = every[:max_tokens]
    if len(ids) < 2:
        raise InputError(N_("The text needs at least 2 tokens: the loss is how well the model predicts each token from "
                            "the ones before it."), field="sinks.text")
    return torch.tensor(ids, dtype=torch.int64), len(every)


def _next_token_losses(decoder: SmolLM2Decoder, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """(T − 1,) −log p(x_{i+1} | …) from the last layer's normalised hidden states (T, D), the lm_head in parts."""
    head = decoder.model.lm_head
    parts = []
    for start in range(0, len(ids) - 1, LOGIT_ROWS):
        stop = min(start + LOGIT_ROWS, len(ids) - 1)
        logits = head(hidden[start:stop])  # (rows, V)
        parts.append(torch.nn.functional.cross_entropy(logits, ids[start + 1:stop + 1], reduction="none"))
    return torch.cat(parts)


def masked_losses(decoder: SmolLM2Decoder, ids: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
    """(T − 1,) the next-token losses with query i seeing the keys ``visible[i]`` (T, T bool), positions 0 … T − 1.

    One forward pass with an additive 4-d mask (0 where visible, the float32 minimum elsewhere), which transformers'
    Llama uses as it is."""
    mask = torch.zeros(visible.shape).masked_fill(~visible, torch.finfo(torch.float32).min)[None, None]
    with torch.no_grad():
        hidden = decoder.model.model(input_ids=ids[None], attention_mask=mask, use_cache=False).last_hidden_state[0]
        return _next_token_losses(decoder, hidden, ids)


def streaming_losses(decoder: SmolLM2Decoder, ids: torch.Tensor, window: int, sinks: int) -> StreamingRun:
    """The three conditions of :data:`CONDITIONS` on the token ids ``ids`` (T,): see the module's docstring.

    Raises:
        InputError: a window shorter than the sinks (field "sinks.window").
    """
    check_window(window, sinks)
    start = time.perf_counter()
    t = len(ids)
    masks = {"full": cache_mask(t, None), "window": cache_mask(t, window), "sinks": cache_mask(t, window, sinks)}
    losses = {key: masked_losses(decoder, ids, mask) for key, mask in masks.items()}
    return StreamingRun(tokens=t, window=window, sinks=sinks, losses=losses, seconds=time.perf_counter() - start)


def evicting_cache_losses(decoder: SmolLM2Decoder, ids: torch.Tensor, window: int, sinks: int) -> torch.Tensor:
    """(T − 1,) the next-token losses of a real token-by-token run whose KV cache evicts: after each token, every
    layer's cache keeps the first ``sinks`` entries and the last ``window − 1`` (the next token adds its own key: w).
    Keys stay as transformers' cache stores them (after RoPE, at their original positions). The reference that
    :func:`masked_losses` is checked against (slow: one pass per token)."""
    from transformers import DynamicCache  # noqa: PLC0415 - only the model pages need it

    cache = DynamicCache()
    losses = []
    with torch.no_grad():
        for i in range(len(ids) - 1):
            held = cache.get_seq_length()
            out = decoder.model(input_ids=ids[None, i:i + 1], position_ids=torch.tensor([[i]]),
                                attention_mask=torch.zeros(1, 1, 1, held + 1), past_key_values=cache, use_cache=True)
            losses.append(torch.nn.functional.cross_entropy(out.logits[0, -1:], ids[i + 1:i + 2]))
            cache = out.past_key_values
            length = cache.get_seq_length()
            if length > sinks + window - 1:
                keep = torch.cat([torch.arange(sinks), torch.arange(length - (window - 1), length)])
                for layer in cache.layers:
                    layer.keys, layer.values = layer.keys[:, :, keep], layer.values[:, :, keep]
    return torch.stack(losses)


@dataclass(frozen=True)
class SinkProfile:
    """Every head's weight on the prompt's first token.

    Attributes:
        first: (L, H, T) the weight each query token puts on token 1 (row 0 is 1: token 1 sees only itself).
        mean: (L, H) the mean over query tokens 2 … T (0 when T = 1).
        share: the fraction of heads whose mean is above one half (they park most of their weight there).
    """

    first: torch.Tensor
    mean: torch.Tensor

    @property
    def share(self) -> float:
        return float((self.mean > 0.5).float().mean())


def sink_profile(decoder: SmolLM2Decoder, ids: torch.Tensor) -> SinkProfile:
    """One forward pass on the token ids (T,); each layer's weights (H, T, T) are reduced to their first column as
    they are made (a forward hook), so the (L, H, T, T) weights are never all held."""
    columns: list[torch.Tensor] = []

    def keep(_module, _args, output) -> None:
        columns.append(output[1][0, :, :, 0].detach().clone())  # (H, T)

    hooks = [layer.self_attn.register_forward_hook(keep) for layer in decoder.model.model.layers]
    try:
        with torch.no_grad():
            decoder.model.model(input_ids=ids[None], use_cache=False)
    finally:
        for hook in hooks:
            hook.remove()
    first = torch.stack(columns)  # (L, H, T)
    mean = first[:, :, 1:].mean(-1) if first.shape[-1] > 1 else torch.zeros(first.shape[:2])
    return SinkProfile(first=first, mean=mean)


def first_token_latex(profile: SinkProfile, layer: int, head: int) -> str:
    """Head ``head`` of layer ``layer``'s mean weight on token 1, its numbers in (LaTeX; 0-based indices in).

    Raises:
        IndexError: no such layer or head.
    """
    column = profile.first[layer, head, 1:].tolist()  # (T − 1,)
    t = len(column) + 1
    lhs = f"\\bar{{w}}^{{({layer + 1},{head + 1})}}_{{\\cdot,1}}"
    if not column:
        return f"{lhs} = 0 \\quad (T = 1)"
    shown = [number(w) for w in column]
    if len(shown) > 8:  # a long prompt: the first 4 and the last 4 weights
        shown = shown[:4] + ["\\cdots"] + shown[-4:]
    return ("\\begin{aligned} " + lhs + " &= \\frac{1}{T - 1} \\textstyle\\sum_{i=2}^{T} w_{i,1} = \\frac{1}{" + str(t - 1)
            + "} \\big(" + terms_lines(shown) + "\\big) \\\\ &= " + number(float(profile.mean[layer, head]))
            + " \\end{aligned}")


def streaming_latex(run: StreamingRun, tr: Translate) -> str:
    """The loss and perplexity of each cache with their numbers in (LaTeX; the caches' names in ``tr``'s language):
    L = −(1/(T − 1)) Σ_i log p(x_i | C_i), PPL = e^L, where C_i is what the cache holds when x_i is predicted."""
    names = {"full": N_("full cache"), "window": N_("window"), "sinks": N_("window + sinks")}
    lines = []
    for key, name in names.items():
        keys = {"full": "", "window": f" \\quad (w = {run.window})",
                "sinks": f" \\quad (w = {run.window},\\ s = {run.sinks})"}[key]
        lines.append(f"L_{{{latex_text(str(tr(name)))}}} &= -\\frac{{1}}{{{run.tokens - 1}}} "
                     f"\\textstyle\\sum_{{i=2}}^{{{run.tokens}}} \\log p(x_i \\mid \\mathcal{{C}}_i) = "
                     f"{number(run.loss(key))}, \\quad e^{{L}} = {number(run.perplexity(key))}{keys}")
    return "\\begin{aligned} " + " \\\\ ".join(lines) + " \\end{aligned}"
