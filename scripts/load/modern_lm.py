"""Speed and memory of the modern language model's page ("Inside a modern language model", SmolLM2-135M-Instruct).

    .venv/bin/python scripts/benchmark_load.py modern-lm [--runs 10]    # --runs 1: the smallest run

Run it as its own process (the first load is only "first" once per process). Measures:

1. the first load: checking the model file and loading SmolLM2 (target ≤ 30 s);
2. the memory the model adds to a process that already runs the app (torch, streamlit and attention_core
   imported): resident set size (VmRSS) before and after the load and after the first forward pass, and the
   process's peak (ru_maxrss) — what a class server pays once, not per session;
3. a prompt of exactly 32 tokens: the forward pass alone (target ≤ 300 ms), then everything the page computes for a
   new prompt (tokenise, forward pass with every head summarised, the grid's 270 pictures, the next tokens, one head
   step by step with the model's own check), median and max of N uncached runs; the same at the page's longest
   prompt (``MODERN_LM_MAX_TOKENS``, 512), one generated token with the KV cache, and the first token of the longest
   prompt from its run (the page's Generate: the cache rebuilt from the run's hidden states, no second pass);
4. the page itself under AppTest (server-side script time, no browser): a new 32-token prompt, and opening another
   head of the same prompt.

The page's own clicks at 512 tokens on the real server, over Streamlit's websocket, are measured by
``scripts/benchmark_load.py long``.

Prints the numbers and the verdicts; exits 1 when a target is missed. Timings on a shared 2-core machine are noisy:
the medians are what to read. Torch runs one intra-op thread, as on the server (``ui.runtime.TORCH_THREADS``).
"""

from __future__ import annotations

import argparse
import logging
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

LOAD_TARGET_S = 30.0
FORWARD_TARGET_MS = 300.0
TOKENS = 32
FIRST_WORDS = ("A", "This", "That", "Each", "One", "The", "My", "Our", "Your", "Their")


def long_runs(runs: int) -> int:
    """Timed runs of the longest text: a third of ``runs``, at least 3 (``--runs 1``, the smallest run: 1)."""
    return max(min(3, runs), runs // 3)


def rss_mb() -> float:
    """This process's resident set size now (VmRSS), in MB (10^6 bytes)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError("no VmRSS in /proc/self/status")


def peak_mb() -> float:
    """This process's peak resident set size (ru_maxrss, KiB on Linux), in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def prompt_of(decoder, tokens: int, first: str = "The") -> str:
    """A prompt of exactly ``tokens`` byte-level BPE tokens (no template)."""
    words = (first + " quick brown fox jumps over the lazy dog and runs into the forest at night" * 40).split(" ")
    text = ""
    for word in words:
        candidate = (text + " " + word) if text else word
        if len(decoder.tokenizer(candidate, add_special_tokens=False)["input_ids"]) > tokens:
            break
        text = candidate
    assert len(decoder.tokenizer(text, add_special_tokens=False)["input_ids"]) == tokens, text
    return text


def timed_ms(fn, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times)


def main(argv=None, prog=None) -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10,
                        help="timed runs of the 32-token prompt (default 10; of the longest prompt a third, at least 3 "
                             "or --runs); 1: the smallest run")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs: at least 1")
    logging.getLogger("streamlit").setLevel(logging.ERROR)

    import streamlit  # noqa: F401 - the app's own imports, before measuring what the model adds
    import torch

    from attention_core import registry  # noqa: F401
    from attention_core.smollm2 import measure
    from attention_core.smollm2.model import load_decoder
    from ui import runtime

    runtime.configure_torch()
    ok = True
    before = rss_mb()
    start = time.perf_counter()
    decoder = load_decoder()
    load_s = time.perf_counter() - start
    loaded = rss_mb()
    print(f"first load: {load_s:.1f} s (target ≤ {LOAD_TARGET_S:.0f} s)")
    ok &= load_s <= LOAD_TARGET_S

    prompts = [prompt_of(decoder, TOKENS, FIRST_WORDS[i % len(FIRST_WORDS)]) for i in range(args.runs)]
    encoded = measure.encode_prompt(decoder, prompts[0])
    with torch.no_grad():
        decoder.model(input_ids=encoded.ids[None])
    print(f"memory: {before:.0f} MB before the load, {loaded:.0f} MB after (+{loaded - before:.0f}), "
          f"{rss_mb():.0f} MB after the first forward pass; peak {peak_mb():.0f} MB")

    def forward():
        with torch.no_grad():
            decoder.model(input_ids=encoded.ids[None])

    median, worst = timed_ms(forward, args.runs)
    print(f"a {TOKENS}-token forward pass: median {median:.0f} ms, max {worst:.0f} ms "
          f"(target ≤ {FORWARD_TARGET_MS:.0f} ms)")
    ok &= median <= FORWARD_TARGET_MS

    from ui.page_parts import model_view

    prompts_left = iter(prompts * 2)

    def whole_page(text=None):
        prompt = measure.encode_prompt(decoder, text or next(prompts_left))
        run = measure.run_model(decoder, prompt)
        model_view.head_pictures(run.pictures.numpy())
        measure.next_tokens(decoder, run.logits, 1.0)
        measure.findings(run)
        measure.head(decoder, run, 0, 0)

    median, worst = timed_ms(whole_page, args.runs)
    print(f"a new {TOKENS}-token prompt, everything the page computes: median {median:.0f} ms, max {worst:.0f} ms")
    longest = prompt_of(decoder, measure.MODERN_LM_MAX_TOKENS)
    median, worst = timed_ms(lambda: whole_page(longest), long_runs(args.runs))
    print(f"the longest prompt ({measure.MODERN_LM_MAX_TOKENS} tokens), everything: median {median:.0f} ms, "
          f"max {worst:.0f} ms")
    long_prompt = measure.encode_prompt(decoder, longest)
    long_run = measure.run_model(decoder, long_prompt)
    median, worst = timed_ms(lambda: measure.generate(decoder, long_prompt, 1, long_run), long_runs(args.runs))
    print(f"the longest prompt's first generated token from its run (the KV cache rebuilt from its hidden states): "
          f"median {median:.0f} ms, max {worst:.0f} ms")
    median, worst = timed_ms(lambda: measure.generate(decoder, encoded, 2), args.runs)
    print(f"the prompt read once and 2 tokens generated with the KV cache: median {median:.0f} ms, max {worst:.0f} ms")
    print(f"peak RSS of this process: {peak_mb():.0f} MB")

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("app_pages/modern_lm.py").run()  # the model loads again here: AppTest has its own caches
    times, heads = [], []
    for i in range(args.runs):
        box = at.text_area(key="setting_modern_lm.prompt").set_value(prompts[i])
        start = time.perf_counter()
        box.run()
        times.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        at.selectbox(key="setting_modern_lm.head").set_value((i + 1) % 9).run()
        heads.append((time.perf_counter() - start) * 1000)
        assert not at.exception, at.exception
    print(f"the page under AppTest: a new {TOKENS}-token prompt median {statistics.median(times):.0f} ms "
          f"(max {max(times):.0f}); another head median {statistics.median(heads):.0f} ms (max {max(heads):.0f})")
    print("OK" if ok else "a target was missed")
    return 0 if ok else 1

