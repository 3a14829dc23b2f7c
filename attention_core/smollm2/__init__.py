"""SmolLM2-135M-Instruct, the model of *Inside a modern language model* and of the attention-sinks page's
measurements: its checkpoint found, checked and converted once (``checkpoint``), the model built from it with one
grouped-query head recomputed step by step (``model``), what its page measures on the user's prompt (``measure``),
and StreamingLLM's sinks on it (``sinks``). The page itself: ``lessons/modern_lm/``."""
