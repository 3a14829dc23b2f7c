"""Every limit a setting has: the numeric ranges and the allowed choice keys, in one leaf module.

``settings`` validates against these; the feature modules (``scaling``, ``positional``,
``additive``, ``image``, ``temperature``, ``trained_model.model``) take their limits from here under
their old names (``scaling.MIN_SAMPLES`` is :data:`MIN_SQRT_SAMPLES`), so the settings object
need not import every feature module to learn its limits.

A leaf module: it imports nothing from the project. Ranges are inclusive ``[MIN, MAX]``.
Choice dicts whose values are labels or functions stay in their feature module; only their
keys are here (``tests/test_settings_fields.py`` checks that the two agree).
"""

from __future__ import annotations

import math

# ---------------------------------------------------------------- the walk-through pages

#: The page's cap on sentence length, in tokens (a T × T heatmap with numbers stays
#: readable on a projector up to about 12).
MAX_TOKENS = 12
#: The most characters of a sentence (and of the cross-attention page's encoder sentence): a longer one is cut at a
#: word boundary, with a message (``attention_core.inputs.text``); 12 long words fit.
MAX_SENTENCE_CHARS = 400
#: The widths a user can choose: d_model, d_k, d_out (and the image page's d_k).
MIN_DIM, MAX_DIM = 1, 16
#: Seeds are whole numbers in [0, MAX_SEED].
MAX_SEED = 2**31 - 1
#: Largest |value| accepted in an edited matrix. At 1e6 the scores reach ~1e12
#: and the softmax is one-hot, but every number stays finite in float32.
MAX_ABS_VALUE = 1e6
#: Dropout probabilities accepted: dropout_p in [0, MAX_DROPOUT]. p = 1 would drop every weight
#: (and divide by 1 - p = 0), so the nearest allowed value below 1 is used instead.
MAX_DROPOUT = 0.99

# ---------------------------------------------------------------- the encoder block

#: The feed-forward width F (d_ff) a user can choose, 1..MAX_FEEDFORWARD: the paper's d_ff = 4 · d_model at the
#: widest d_model, and a T × F heatmap still fits a projector.
MAX_FEEDFORWARD = 4 * MAX_DIM
#: The most encoder blocks stacked on the page (each one's output is shown side by side).
MAX_LAYERS = 4

# ---------------------------------------------------------------- generating token by token (the toy reverser)

#: The longest word the toy encoder-decoder was trained to reverse, in letters.
TOY_MAX_INPUT = 8
#: Its steps at most: the reversed word and END.
TOY_MAX_OUTPUT = TOY_MAX_INPUT + 1
#: Its decoder blocks (and encoder blocks).
TOY_LAYERS = 2
#: The most characters of the word to reverse (a longer one is cut, with a message; the model reads at most
#: TOY_MAX_INPUT letters and says so about the rest).
MAX_SOURCE_CHARS = 40
#: The largest sampling temperature τ of the generation page (0 = greedy).
MAX_TOY_TEMPERATURE = 10.0
#: The smallest τ > 0 it samples with: logits ÷ τ must stay finite in float32 (|logits| ≤ ~3.4e38 · τ), and
#: below 0.01 the draw is the greedy choice anyway for the toy model's logits. A τ in (0, 0.01) is moved to 0.01.
MIN_TOY_TEMPERATURE = 0.01


def lowest_sampling_temperature(tau: float) -> float:
    """0 (greedy) stays 0; a τ in (0, MIN_TOY_TEMPERATURE) becomes MIN_TOY_TEMPERATURE; any other τ is kept."""
    return tau if tau == 0 or tau >= MIN_TOY_TEMPERATURE else MIN_TOY_TEMPERATURE

# ---------------------------------------------------------------- modern attention

#: Grouped-query attention: query heads h (1..MAX_GQA_HEADS) and head_dim (1..MAX_HEAD_DIM); h · head_dim
#: must stay at most MAX_DIM columns (checked with a message), so Q fits the screen.
MAX_GQA_HEADS = 8
MAX_HEAD_DIM = 4
#: RoPE: head_dim (even, 2..MAX_DIM), the base (MIN_ROPE_BASE..MAX_ROPE_BASE) and the shift s of every position.
MIN_ROPE_BASE, MAX_ROPE_BASE = 2.0, 1e7
MAX_ROPE_SHIFT = 1000
#: ALiBi: its heads, 1..MAX_ALIBI_HEADS (each with its own slope).
MAX_ALIBI_HEADS = 8
#: Sliding-window attention: the layers its receptive-field view stacks, 1..MAX_SLIDING_LAYERS (the window itself
#: is 1..MAX_TOKENS).
MAX_SLIDING_LAYERS = 4
#: Linear attention and the delta rule: the decay α of the gated delta rule is in [MIN_DECAY, 1]. α = 0 would erase
#: the state at every step and make g = log α = −∞ (transformers' chunked kernel then computes −∞ − (−∞) = NaN);
#: 0.01 forgets 99 % per step, about as fast as anyone would want to watch. β (how much of the error is written) is in [0, 1].
MIN_DECAY = 0.01
#: Multi-head latent attention: its heads, 1..MAX_MLA_HEADS, and the decoupled RoPE part d_R, 2..MAX_MLA_ROPE_DIM (odd:
#: a message, RoPE rotates pairs); d_h is 1..MAX_HEAD_DIM; the latents d_c, d_c' are 1..MAX_DIM and at most d_model.
MAX_MLA_HEADS = 8
MAX_MLA_ROPE_DIM = 4

# ---------------------------------------------------------------- the trained model (all-MiniLM-L6-v2)

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

# ---------------------------------------------------------------- the modern language model (SmolLM2-135M-Instruct)

#: Its layers, query heads, key/value heads, head_dim and hidden size (attention_core/smollm2/model.py).
MODERN_LM_LAYERS, MODERN_LM_HEADS, MODERN_LM_KV_HEADS, MODERN_LM_HEAD_DIM, MODERN_LM_WIDTH = 30, 9, 3, 64, 576
#: The most tokens the page feeds it, chat template included (a longer prompt is cut, with a message). The model
#: itself takes 8192; the page's views stay responsive up to here (scripts/benchmark_load.py long).
MODERN_LM_MAX_TOKENS = 512
#: The most characters of a prompt that are tokenised (the text area's limit; a link's longer text is cut).
MODERN_LM_MAX_CHARS = 4000
#: The most tokens the page generates after the prompt, one at a time.
MODERN_LM_MAX_NEW_TOKENS = 12

# ---------------------------------------------------------------- learning: the backward pages and training

#: The backward pages' learning rate η (one gradient step W ← W − η dW): the step itself accepts any η above 0 up to
#: MAX_BACKWARD_LEARNING_RATE; the page's field starts at MIN_BACKWARD_LEARNING_RATE.
MIN_BACKWARD_LEARNING_RATE, MAX_BACKWARD_LEARNING_RATE = 0.001, 10
#: The most gradient-descent steps a backward page takes at once (the "Steps to take" setting; more are clamped).
MAX_BACKWARD_STEPS = 50
#: The learning rates a training run accepts (Adam's η, *Watch attention learn*), and the most updates it takes.
MIN_TRAINING_LEARNING_RATE, MAX_TRAINING_LEARNING_RATE = 1e-5, 1.0
MAX_TRAINING_STEPS = 5000

# ---------------------------------------------------------------- the experiment pages

#: Why √d_k: S, the (q, k) pairs sampled per d_k, and n, the keys each sampled query meets.
MIN_SQRT_SAMPLES, MAX_SQRT_SAMPLES = 100, 5000
MIN_SQRT_KEYS, MAX_SQRT_KEYS = 2, 32
#: Why √d_k: the components' distributions (keys of ``scaling.DISTRIBUTIONS``).
SQRT_DISTRIBUTIONS: tuple[str, ...] = ("normal", "uniform", "rademacher")

#: Temperature: the values of τ the page's slider offers, about log-spaced from 0.01 to 100
#: (1-1.5-2-3-5-7 per decade), and its range.
TEMPERATURE_GRID: tuple[float, ...] = tuple(
    round(m * 10.0**e, 6) for e in range(-2, 2) for m in (1, 1.5, 2, 3, 5, 7)
) + (100.0,)
MIN_TEMPERATURE, MAX_TEMPERATURE = TEMPERATURE_GRID[0], TEMPERATURE_GRID[-1]


def nearest_temperature(tau: float) -> float:
    """The value of :data:`TEMPERATURE_GRID` nearest to ``tau`` on a log scale.

    Args:
        tau: a temperature, > 0 (finite; a value outside the grid's range gets its nearest end).

    Raises:
        ValueError: ``tau`` <= 0 (``math.log`` is undefined there).
    """
    return min(TEMPERATURE_GRID, key=lambda t: abs(math.log(t) - math.log(tau)))


#: Positional encoding: the pattern heatmap's size, positions × d_model.
MIN_PE_POSITIONS, MAX_PE_POSITIONS = 2, 128
MIN_PE_WIDTH, MAX_PE_WIDTH = 2, 128
#: Positional encoding: the encodings and the shuffles offered (keys of ``positional.ENCODINGS``
#: and ``positional.SHUFFLES``).
PE_ENCODINGS: tuple[str, ...] = ("sinusoidal", "learned")
PE_SHUFFLES: tuple[str, ...] = ("reverse", "rotate", "random")

#: Additive scoring: h, the scorer's hidden size.
MIN_ADDITIVE_HIDDEN, MAX_ADDITIVE_HIDDEN = 1, 16

#: Self-attention over an image: the largest side in pixels (uploads are downscaled to fit).
MAX_IMAGE_SIDE = 16
#: Self-attention over an image: the built-in images (keys of ``image.PATTERNS``), the source
#: that means the user's uploaded image, and the pixels' token features (keys of ``image.FEATURES``).
IMAGE_PATTERNS: tuple[str, ...] = ("smiley", "shapes", "checkerboard", "gradient")
IMAGE_UPLOAD = "upload"
IMAGE_FEATURES: tuple[str, ...] = ("rgb", "projected")

# ---------------------------------------------------------------- attention sinks (StreamingLLM, gpt-oss)

#: gpt-oss's learned sink logit b on the page: [MIN_SINK_LOGIT, MAX_SINK_LOGIT]. e^20 ≈ 5 · 10^8 already takes
#: every weight from scores of the page's size; beyond ±20 nothing more is seen (and e^b stays far from float32's
#: overflow at 88).
MIN_SINK_LOGIT, MAX_SINK_LOGIT = -20.0, 20.0
#: StreamingLLM on SmolLM2: the sinks kept (s, 0 … MAX_SINKS), the window w (1 … MAX_STREAM_WINDOW, at least s), the
#: text's tokens (a longer text is cut, with a message; one eager pass at 1024 tokens holds 9 × 1024² weights per
#: layer, 38 MB, for a moment) and the characters of a pasted text.
MAX_SINKS = 16
MAX_STREAM_WINDOW = 1024
SINKS_MAX_TOKENS = 1024
SINKS_MAX_CHARS = 8000
