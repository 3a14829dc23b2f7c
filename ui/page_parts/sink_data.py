"""The attention-sinks page's SmolLM2 caches, shared read-only by every session of a server.

The model itself is the modern language model page's (``ui.page_parts.modern_lm_data.decoder``: loaded once per server, turned off
with ``ATTENTION_EXPLORER_MODERN_LM=off``); nothing here loads another copy.

* :func:`profile` — ``st.cache_resource`` on the prompt: every head's weight on the first token
  (``attention_core.smollm2.sinks.sink_profile``), one forward pass (~0.3 s at 20 tokens, ~1.3 s at 512), at
  most :data:`PROFILES` kept, each (30, 9, T) float32: 0.55 MB at 512 tokens.
* :func:`measured` / :func:`measure` — StreamingLLM's three losses on a text, computed once per (text, window,
  sinks) and kept for every session (the last :data:`STREAMS`; each is 3 × T float32, 12 KB at 1024 tokens). The
  measurement takes three forward passes over the text (~8 s for the bundled 784 tokens on one torch thread of a
  shared 2-core machine), so the page runs it on a button press, not on every visit; one measurement runs at a
  time (a lock), the others wait for it and then find their result if it was the same.

Both run on one torch thread (``runtime.configure_torch``, called in the thread that runs them: torch's thread
count is kept per thread, and a session's script thread is not always the one that loaded the model). Measured in a
process whose thread had torch's default of two, on this 2-core machine loaded by other jobs: the token-by-token
check 48 s and a 256-token pass 7.6 s, against 2.0 s and 0.67 s on one thread.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Optional

import streamlit as st

from attention_core.smollm2 import sinks
from attention_core.smollm2.measure import Prompt, encode_prompt
from attention_core.smollm2.sinks import SINKS_MAX_TOKENS
from ui import runtime
from ui.page_parts import modern_lm_data

#: The prompts' profiles kept, and the StreamingLLM measurements kept.
PROFILES, STREAMS = 8, 16


@st.cache_resource(max_entries=PROFILES, show_spinner=False)
def profile(prompt: str) -> tuple[Prompt, sinks.SinkProfile]:
    """The prompt as SmolLM2 reads it (cut like the modern LM page's) and every head's weight on its first token.

    Raises:
        InputError: an empty prompt, or the model failed to load.
    """
    model = modern_lm_data.decoder()
    runtime.configure_torch()  # this session's thread: see the module's docstring
    encoded = encode_prompt(model, prompt)
    return encoded, sinks.sink_profile(model, encoded.ids)


@st.cache_resource(show_spinner=False)
def _measurements() -> tuple[threading.Lock, OrderedDict]:
    """The server's finished measurements, (text, window, sinks) -> StreamingRun, oldest first, and their lock."""
    return threading.Lock(), OrderedDict()


def measured(text: str, window: int, sink_count: int) -> Optional[sinks.StreamingRun]:
    """The measurement of (text, window, sinks) if some session of this server made it, else None."""
    _lock, runs = _measurements()
    return runs.get((text, window, sink_count))


def measure(text: str, window: int, sink_count: int) -> sinks.StreamingRun:
    """Measure (or find) the three losses of SmolLM2 on ``text`` (cut to SINKS_MAX_TOKENS tokens).

    Raises:
        InputError: a window shorter than the sinks, a text of fewer than 2 tokens, or the model failed to load.
    """
    sinks.check_window(window, sink_count)
    lock, runs = _measurements()
    key = (text, window, sink_count)
    with lock:
        if key in runs:
            return runs[key]
        model = modern_lm_data.decoder()
        runtime.configure_torch()  # this session's thread: see the module's docstring
        ids, total = sinks.encode_text(model, text, SINKS_MAX_TOKENS)
        run = sinks.streaming_losses(model, ids, window, sink_count)
        run = sinks.StreamingRun(tokens=run.tokens, window=window, sinks=sink_count, losses=run.losses,
                                 seconds=run.seconds, text_tokens=total)
        runs[key] = run
        while len(runs) > STREAMS:
            runs.popitem(last=False)
        return run
