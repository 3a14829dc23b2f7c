"""A modern language model's attention: SmolLM2-135M-Instruct's checkpoint found, checked and converted once
(``checkpoint``), the model built from it with one grouped-query head recomputed step by step (``model``), what its
page measures on the user's prompt (``measure``) and its step-through (``walkthrough``); the attention-sinks page's
measurements on the same model (``sinks``)."""
