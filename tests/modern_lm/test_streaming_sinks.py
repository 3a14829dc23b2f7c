"""The attention-sinks page's SmolLM2 parts (attention_core.smollm2.sinks): the cache masks, the one-pass mask
emulation against a real token-by-token run whose KV cache evicts, the full cache's loss against transformers' own
``labels=`` loss, StreamingLLM's result (window + 4 sinks close to the full cache, the window alone far worse), and
every head's weight on the first token against the modern LM page's own summary of the same run.

The model is the one ``ui.page_parts.modern_lm_data.decoder`` loads (one load per test process, shared with the other model tests);
the texts are the bundled chapter's first 256 and 40 tokens (about 12 s in all on a shared 2-core machine)."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest
import torch

from attention_core.errors import InputError, Message
from attention_core.smollm2 import measure, sinks


@pytest.fixture(scope="module")
def decoder():
    """The model, run on one torch thread as the server runs it (``ui.runtime.TORCH_THREADS``); the thread count
    is per thread and this test's thread is not the one that loaded the model: with two threads on a loaded 2-core
    machine the token-by-token run took 25 times longer (48 s against 2 s, measured). Restored afterwards."""
    from ui import runtime
    from ui.page_parts import modern_lm_data

    before = torch.get_num_threads()
    runtime.configure_torch()
    yield modern_lm_data.decoder()
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def ids(decoder):
    every, total = sinks.encode_text(decoder, sinks.bundled_text(), 2000)
    assert total == len(every) == 784  # the chapter's tokens, as the README and the page state
    return every


def test_the_cache_masks_hold_what_a_cache_would():
    full, window, both = sinks.cache_mask(6, None), sinks.cache_mask(6, 3), sinks.cache_mask(6, 3, 2)
    assert torch.equal(full, torch.ones(6, 6, dtype=torch.bool).tril())
    assert window[5].tolist() == [False, False, False, True, True, True]  # token 6 sees 4, 5 and itself
    assert both[5].tolist() == [True, True, False, True, True, True]  # and the 2 sinks
    assert both[2].tolist() == [True, True, True, False, False, False]  # before the window is full: all of them
    assert (window.sum(-1) <= 3).all() and (both.sum(-1) <= 5).all()


def test_a_window_shorter_than_the_sinks_and_a_one_token_text_get_a_message(decoder):
    with pytest.raises(InputError, match="at least as many tokens as the sinks") as raised:
        sinks.check_window(3, 4)
    assert raised.value.field == "sinks.window"
    with pytest.raises(InputError, match="at least 2 tokens"):
        sinks.encode_text(decoder, "Hi", 1024)


@pytest.mark.parametrize("sink_count", [4, 0])
def test_the_one_pass_mask_equals_a_token_by_token_run_whose_cache_evicts(decoder, ids, sink_count):
    """24 tokens, w = 8: from token 9 on the evicting cache holds 8 (+ s) keys; measured max |diff| 3e-5 nats
    (40 tokens, w = 12)."""
    short = ids[:24]
    real = sinks.evicting_cache_losses(decoder, short, 8, sink_count)
    emulated = sinks.masked_losses(decoder, short, sinks.cache_mask(24, 8, sink_count))
    torch.testing.assert_close(emulated, real, rtol=0, atol=2e-4)
    full = sinks.masked_losses(decoder, short, sinks.cache_mask(24, None))
    torch.testing.assert_close(emulated[:8], full[:8], rtol=0, atol=2e-4)  # nothing evicted yet
    assert (emulated[8:] - full[8:]).abs().max() > 0.01  # then it matters


def test_streaming_llm_the_full_cache_is_transformers_loss_and_sinks_repair_the_window(decoder, ids):
    text = ids[:256]
    run = sinks.streaming_losses(decoder, text, window=64, sinks=4)
    with torch.no_grad():
        theirs = float(decoder.model(input_ids=text[None], labels=text[None]).loss)
    assert run.loss("full") == pytest.approx(theirs, abs=1e-4)  # measured 3e-7
    assert run.perplexity("full") == pytest.approx(math.exp(theirs), rel=1e-3)
    # measured: full 25.2, window + 4 sinks 27.5, window alone 58.8 (after token 64: 3.09, 3.21, 4.22 nats)
    assert run.perplexity("sinks") < 1.15 * run.perplexity("full")
    assert run.perplexity("window") > 1.8 * run.perplexity("sinks")
    assert run.loss_after_window("window") > run.loss_after_window("sinks") + 0.5
    for key in sinks.CONDITIONS:
        torch.testing.assert_close(run.losses[key][:63], run.losses["full"][:63], rtol=0, atol=2e-4)
    latex = sinks.streaming_latex(run, Message)
    # Each cache's loss and perplexity, in the order full, window, window + sinks, read back as numbers: the LaTeX
    # writes 4 significant digits, rounded by sympy, not by Python's format (a value at a rounding boundary, the
    # window's 58.825, printed 58.83 on one machine where ".4g" gives 58.82): within 1e-3 relative.
    pairs = re.findall(r"\\mathcal\{C\}_i\) = ([0-9.]+), \\quad e\^\{L\} = ([0-9.]+)", latex)
    shown = [float(text) for pair in pairs for text in pair]
    expected = [value for key in ("full", "window", "sinks") for value in (run.loss(key), run.perplexity(key))]
    assert len(shown) == 6 and all(math.isclose(a, b, rel_tol=1e-3) for a, b in zip(shown, expected)), (shown, expected)


def test_every_heads_weight_on_the_first_token_is_the_modern_lm_pages_summary(decoder):
    prompt = measure.encode_prompt(decoder, "When a head has nothing to look for, its weight goes to token one.")
    profile = sinks.sink_profile(decoder, prompt.ids)
    run = measure.run_model(decoder, prompt)
    torch.testing.assert_close(profile.mean, run.patterns["first"], rtol=0, atol=1e-6)
    assert profile.first.shape == (30, 9, len(prompt.ids)) and (profile.first[:, :, 0] == 1).all()
    assert 0.3 < profile.share < 1.0  # most heads, not all, park more than half there (measured 0.65)
    latex = sinks.first_token_latex(profile, 18, 6)
    assert latex.endswith(f"{float(profile.mean[18, 6]):.4g} \\end{{aligned}}") and r"\cdots" in latex


@pytest.mark.parametrize("span", [1, 5, sinks.SMOOTHING_TOKENS, 400])
def test_the_loss_charts_trailing_mean_is_pandas_rolling_mean(span):
    """The chart's smoothing against pandas' own rolling mean (``min_periods=1``: fewer tokens at the start), float64;
    a span longer than the text averages everything so far."""
    losses = torch.rand(300, generator=torch.Generator().manual_seed(3), dtype=torch.float64).float() * 8
    run = sinks.StreamingRun(tokens=301, window=64, sinks=4, losses={"full": losses}, seconds=0.0)
    ours = run.trailing_mean_losses("full", span)
    reference = pd.Series(losses.double().numpy()).rolling(span, min_periods=1).mean().to_numpy()
    assert ours.shape == (300,) and ours.dtype == torch.float64
    assert torch.allclose(ours, torch.tensor(reference), rtol=0, atol=1e-12)
    assert ours[0] == losses[0].double() and math.isclose(float(ours[-1]), float(losses[-span:].double().mean()))
    with pytest.raises(ValueError):
        run.trailing_mean_losses("full", 0)
