"""The trained model's page's caches: the model once per server, results per sentence.

* :func:`model` — ``st.cache_resource``: all-MiniLM-L6-v2 is verified and loaded on the
  first visit to the page (not when this module is imported) and then shared, read-only,
  by every session. Nothing here or in the page mutates it. A failed load (package
  missing, checksum mismatch) raises :class:`~attention_core.errors.InputError` and is
  not cached, so fixing the install and reloading the page is enough.
* :func:`sentence_data` and :func:`head` — ``st.cache_resource`` on plain arguments (the text,
  the padding, layer and head numbers), a few entries each, shared read-only by every session without copies
  (nothing here or in the page mutates them). ``st.cache_data`` would pickle a result in and copy it out on every
  rerun: at 512 tokens a text's run holds the attentions (6, 12, 512, 512) float32, 75 MB.

Memory, bounded by the entries kept (:func:`held_bytes`, measured by ``tests/trained_model/test_model.py``):
one 512-token text costs :data:`TEXT_MB` MB of tensors (the attentions, the 7 layers' hidden states (7, 512, 384);
the grid's 72 pictures are small PNGs besides), at most :data:`TEXTS` texts are kept; one head's step at 512 tokens :data:`HEAD_MB` MB (its
n × n stages and the model's weights of the head, copies), at most :data:`HEADS` kept. At worst (every entry a
512-token text) about TEXTS · TEXT_MB + HEADS · HEAD_MB ≈ 390 MB per server; a 13-token sentence costs 0.2 MB
(and 0.2 MB a head). A head's step is quick to make again (~10 ms at 512 tokens), a text's run is not (~0.3 s).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import streamlit as st
import torch

from attention_core.minilm import head_findings
from attention_core.minilm.model import (
    HeadStep,
    ModelRun,
    PretrainedModel,
    head_step,
    load_model,
    run_model,
    tokenize,
)
from ui import runtime
from ui.page_parts import model_view

#: The texts' runs kept (each up to TEXT_MB MB at 512 tokens) and the heads' steps kept (each up to HEAD_MB MB).
TEXTS, HEADS = 4, 8
TEXT_MB, HEAD_MB = 82, 7.5


@st.cache_resource(show_spinner=False)  # the page shows a spinner in the session's language
def model() -> PretrainedModel:
    """The verified, loaded model (shared read-only by every session)."""
    runtime.configure_torch()
    loaded = load_model()
    runtime.freeze_again()  # once per server: transformers and the weights leave the per-run GC walk
    return loaded


@dataclass(frozen=True)
class SentenceData:
    """Everything the page shows that depends on the text only.

    Attributes:
        run: the model's forward pass (tokens, hidden states, attentions).
        findings: the guided findings measured on this text.
        pictures: one small picture per head, for the grid.
        focus: (L, H) each head's mean largest weight, the grid's table (``head_findings.head_focus``).
    """

    run: ModelRun
    findings: tuple[head_findings.Finding, ...]
    pictures: pa.Table
    focus: torch.Tensor


@st.cache_resource(max_entries=TEXTS, show_spinner=False)  # the page shows a spinner in the session's language
def sentence_data(text: str, padding: int) -> SentenceData:
    """Tokenise, run the model, measure the findings and draw the grid's pictures.

    Raises:
        InputError: empty text or bad padding (see ``tokenize``), or the model
            failed to load.
    """
    pm = model()
    encoding = tokenize(pm, text, padding)
    run = run_model(pm, encoding)
    findings = head_findings.guided_findings(run.attentions, encoding)
    pictures = model_view.head_pictures(run.attentions.numpy())
    return SentenceData(run=run, findings=findings, pictures=pictures,
                        focus=head_findings.head_focus(run.attentions, encoding))


@st.cache_resource(max_entries=TEXTS, show_spinner=False)
def grid_pictures(text: str, padding: int, palette: str) -> pa.Table:
    """The grid's pictures in the session's palette: the text's own (classic), or drawn again in the colour-blind
    safe palette's colours (72 PNGs, ~30 ms, once per text and server)."""
    data = sentence_data(text, padding)
    if palette == "classic":
        return data.pictures
    return model_view.head_pictures(data.run.attentions.numpy(), palette=palette)


@st.cache_resource(max_entries=HEADS, show_spinner=False)
def head(text: str, padding: int, layer: int, head: int) -> HeadStep:
    """One head recomputed step by step (see ``head_step``)."""
    return head_step(model(), sentence_data(text, padding).run, layer, head)


def held_bytes(value: Any, shared: Any = ()) -> int:
    """The bytes of the tensor storages ``value`` keeps alive: each storage once, in full (a view keeps all of its
    storage), walking dataclasses, objects' attributes, tuples, lists and dicts; ``shared`` and all it holds left
    out (the model, whose parameters every session shares anyway)."""
    excluded = _reachable(shared, set())
    seen = {_storage(item)[0] for item in excluded if isinstance(item, torch.Tensor)}
    total = 0
    for item in _reachable(value, {id(item) for item in excluded}):
        if isinstance(item, torch.Tensor):
            key, size = _storage(item)
            if key not in seen:
                seen.add(key)
                total += size
    return total


def _storage(tensor: torch.Tensor) -> tuple[int, int]:
    storage = tensor.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


def _reachable(value: Any, skip: set[int]) -> list:
    """Every object reachable from ``value`` (each once), not through the objects whose ids are in ``skip``: a
    module's parameters and buffers, a dataclass's fields, a container's items, another object's attributes."""
    visited, found, stack = set(skip), [], [value]
    while stack:
        item = stack.pop()
        if id(item) in visited or isinstance(item, (str, bytes, int, float, bool, type(None))):
            continue
        visited.add(id(item))
        found.append(item)
        if isinstance(item, torch.Tensor):
            continue
        if isinstance(item, torch.nn.Module):
            stack.extend(list(item.parameters()) + list(item.buffers()))
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (tuple, list, set, frozenset)):
            stack.extend(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, field.name) for field in dataclasses.fields(item))
        else:
            stack.extend(getattr(item, "__dict__", {}).values())  # an object's attributes (a KV cache's layers)
    return found


def as_numpy(tensor) -> np.ndarray:
    """A float64 copy for the charts (never a view of a cached tensor)."""
    return tensor.detach().numpy().astype(float)
