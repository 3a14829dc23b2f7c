"""The modern language model page's caches: SmolLM2 once per server, results per prompt, all shared read-only.

* :func:`decoder` — ``st.cache_resource``: SmolLM2-135M-Instruct is verified and loaded on the first visit to the
  page (``attention_core.smollm2.model.load_decoder``) and then shared, read-only, by every session. A failed
  load (package missing, file altered) raises :class:`~attention_core.errors.InputError` and is not cached.
  A host short of memory turns the page off with the environment variable ``ATTENTION_EXPLORER_MODERN_LM=off``
  (:func:`turned_off`): the model is then never loaded.
* :func:`prompt_run`, :func:`head`, :func:`continuation`, :func:`pictures` — ``st.cache_resource`` on plain arguments
  (the prompt, the template switch, layer and head numbers), a few entries each, shared without copies: a run's
  hidden states are (31, T, 576) float32 (37 MB at 512 tokens), so a copy per rerun (``st.cache_data``) would cost
  more than the page. Nothing here or in the page mutates what they return.

Memory, bounded by the entries kept (``trained_model_data.held_bytes``, measured by
``tests/modern_lm/test_modern_lm.py``): one 512-token prompt's run costs :data:`RUN_MB` MB (the hidden states,
the last position's logits, the heads' 32 × 32 pictures), at most :data:`RUNS` are kept; one head's step at 512
tokens :data:`HEAD_MB` MB (its T × T and T × 576 stages, its float32 copies of the weight slices (0.6 MB), the
model's weights and output to check it; copies, no views of the run), at most :data:`HEADS` kept; a generation that
goes on holds its KV cache (not the run), :data:`CONTINUATION_MB` MB at 512 + 12 tokens, at most
:data:`CONTINUATIONS` kept. At worst (every entry a 512-token
prompt) about RUNS · RUN_MB + HEADS · HEAD_MB + CONTINUATIONS · CONTINUATION_MB ≈ 300 MB per server, besides the
model's ~400 MB. A head's step is made again in ~60 ms at 512 tokens, a prompt's run in ~1.3 s (one torch thread).
"""

from __future__ import annotations

import os

import pyarrow as pa
import streamlit as st

from attention_core.smollm2 import measure
from attention_core.smollm2.model import SmolLM2Decoder, load_decoder
from ui import runtime
from ui.page_parts import model_view

#: The environment variable that turns the page off on a host with less memory (values: off, 0, false, no).
SWITCH = "ATTENTION_EXPLORER_MODERN_LM"
#: The prompts' runs kept (each up to RUN_MB MB at 512 tokens) and the heads' steps kept (each up to HEAD_MB MB).
RUNS, HEADS = 4, 8
RUN_MB, HEAD_MB = 38, 12
#: The prompts whose generation is kept going (each holds its KV cache: up to CONTINUATION_MB MB at 512 + 12 tokens).
CONTINUATIONS, CONTINUATION_MB = 2, 25


def turned_off() -> bool:
    """Whether this server's host turned the page off (``ATTENTION_EXPLORER_MODERN_LM=off``)."""
    return os.environ.get(SWITCH, "").strip().lower() in ("off", "0", "false", "no")


@st.cache_resource(show_spinner=False)  # the page shows a spinner in the session's language
def decoder() -> SmolLM2Decoder:
    """The verified, loaded model (shared read-only by every session)."""
    runtime.configure_torch()
    loaded = load_decoder()
    runtime.freeze_again()  # once per server: the weights leave the per-run GC walk
    return loaded


@st.cache_resource(max_entries=RUNS, show_spinner=False)
def prompt_run(text: str, chat_template: bool) -> measure.LmRun:
    """The prompt tokenised and run (``measure.encode_prompt``, ``measure.run_model``).

    Raises:
        InputError: an empty prompt, or the model failed to load.
    """
    model = decoder()
    return measure.run_model(model, measure.encode_prompt(model, text, chat_template))


@st.cache_resource(max_entries=HEADS, show_spinner=False)
def head(text: str, chat_template: bool, layer: int, head: int) -> measure.LmHeadStep:
    """One head step by step, with the model's own numbers to check it (``measure.head``)."""
    return measure.head(decoder(), prompt_run(text, chat_template), layer, head)


@st.cache_resource(max_entries=CONTINUATIONS, show_spinner=False)
def continuation(text: str, chat_template: bool) -> measure.Continuation:
    """Greedy decoding after the prompt, shared by every session, going on where it stopped
    (``measure.Continuation``): from the prompt's cached run, whose KV cache is rebuilt from its hidden states (the
    prompt is not read again: ~0.1 s at 512 tokens, not 1.2 s), then one step per new token (~70 ms, on one thread)."""
    run = prompt_run(text, chat_template)
    return measure.Continuation(decoder(), run.prompt, run)


def generation(text: str, chat_template: bool, count: int) -> tuple[measure.GenerationStep, ...]:
    """``count`` greedy tokens after the prompt with the KV cache: a Generate click makes one token, not all of them
    again."""
    return continuation(text, chat_template).steps(count)


@st.cache_resource(max_entries=8, show_spinner=False)
def pictures(text: str, chat_template: bool, palette: str = "classic") -> pa.Table:
    """The grid's picture of every head (``model_view.head_pictures``, in the ``palette``'s colours of weights), with
    its key/value head (1-based)."""
    run = prompt_run(text, chat_template)
    table = model_view.head_pictures(run.pictures.numpy(), palette=palette)
    model = decoder()
    return table.append_column("kv_head", pa.array([model.kv_head(h - 1) + 1 for h in table.column("head").to_pylist()]))
