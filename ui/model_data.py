"""The trained model's page's caches: the model once per server, results per sentence.

* :func:`model` — ``st.cache_resource``: all-MiniLM-L6-v2 is verified and loaded on the
  first visit to the page (not when this module is imported) and then shared, read-only,
  by every session. Nothing here or in the page mutates it. A failed load (package
  missing, checksum mismatch) raises :class:`~attention_core.errors.InputError` and is
  not cached, so fixing the install and reloading the page is enough.
* :func:`sentence_data` and :func:`head` — ``st.cache_data`` on plain arguments (the text,
  the padding, layer and head numbers), a few entries each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
import torch

from attention_core.trained_model import head_findings, pretrained

from . import model_view, runtime

#: torch's intra-op threads for the server once the model is loaded. On the 2-core machines this app runs
#: on, shared by every session (and whatever else runs there), one thread per forward pass was both
#: faster and far steadier than two: 64 tokens in a median 23 ms (90th percentile 31 ms) against 131 ms
#: (420 ms) with two threads under load (scripts/benchmark_model.py). Sessions still run in parallel.
TORCH_THREADS = 1


def configure_torch() -> None:
    """Set torch's intra-op threads to :data:`TORCH_THREADS` (process-wide; the other pages' matrices are tiny)."""
    torch.set_num_threads(TORCH_THREADS)


@st.cache_resource(show_spinner=False)  # the page shows a spinner in the session's language
def model() -> pretrained.PretrainedModel:
    """The verified, loaded model (shared read-only by every session)."""
    configure_torch()
    loaded = pretrained.load_model()
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

    run: pretrained.ModelRun
    findings: tuple[head_findings.Finding, ...]
    pictures: pd.DataFrame
    focus: torch.Tensor


@st.cache_data(max_entries=8, show_spinner=False)  # the page shows a spinner in the session's language
def sentence_data(text: str, padding: int) -> SentenceData:
    """Tokenise, run the model, measure the findings and draw the grid's pictures.

    Raises:
        InputError: empty text or bad padding (see ``pretrained.tokenize``), or the model
            failed to load.
    """
    pm = model()
    encoding = pretrained.tokenize(pm, text, padding)
    run = pretrained.run_model(pm, encoding)
    findings = head_findings.guided_findings(run.attentions, encoding)
    pictures = model_view.head_pictures(run.attentions.numpy())
    return SentenceData(run=run, findings=findings, pictures=pictures,
                        focus=head_findings.head_focus(run.attentions, encoding))


@st.cache_data(max_entries=32, show_spinner=False)
def head(text: str, padding: int, layer: int, head: int) -> pretrained.HeadStep:
    """One head recomputed step by step (see ``pretrained.head_step``)."""
    return pretrained.head_step(model(), sentence_data(text, padding).run, layer, head)


def as_numpy(tensor) -> np.ndarray:
    """A float64 copy for the charts (never a view of a cached tensor)."""
    return tensor.detach().numpy().astype(float)
