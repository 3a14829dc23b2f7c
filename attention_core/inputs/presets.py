"""The seed articles' worked examples, as presets.

Each preset fixes where the token embeddings and the weights W_q, W_k, W_v come
from; the user can then change the sentence, dims and seed (within what the
preset allows) and edit any matrix.

Sources: seed 000 (000_9be6d646ed7e85e8.txt), seed 001 (001_9275b51964da46b3.txt),
seed 004 (004_56c592a3d25bc184.txt); the "Your journey starts with one step"
inputs and seeds 123 / 789 are rasbt/LLMs-from-scratch ch03's, quoted by seed 004.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping, Optional

from attention_core.errors import N_
from attention_core.inputs.tokens import SEED000_VOCABULARY, Vocabulary

#: Where W_q, W_k, W_v come from:
#: "randn"    - torch.randn(D, d_k) after the embedding table (seed 000);
#: "rand"     - torch.rand(D, d_k) x3 (seed 001's SelfAttention_v1);
#: "linear"   - nn.Linear(D, d_k, bias=False) x3 (seed 001's SelfAttention_v2);
#: "identity" - W = I (the first d_k columns), so Q = K = V = X (seed 004's start).
WeightInit = Literal["randn", "rand", "linear", "identity"]


@dataclass(frozen=True)
class Preset:
    """A worked example.

    Attributes:
        key: short id, used in settings and links.
        title: shown in the preset picker.
        source: where it comes from, in words a student can follow (the tutorial and the book or paper behind it;
            never a seed file's name).
        sentence: the default sentence.
        d_model, d_k, seed: defaults.
        weight_init: see :data:`WeightInit`.
        vocabulary: a fixed word -> id dictionary whose table is drawn from the
            seed, or None to build the vocabulary from the sentence.
        table: fixed embedding vectors per word (d_model is then fixed), or None.
        note: one line on what this example shows.
        encoder_sentence: the default encoder sentence of the cross-attention
            page (its keys and values); ``sentence`` is the decoder's (queries).
        d_out: the default width of Q, K, V on the multi-head pages (h · head_dim).
        num_heads: the default number of heads h; divides d_out.
        causal_init: how the causal and dropout pages draw W_q, W_k, W_v when the example's tutorial draws them
            there otherwise than its self-attention class does (see :data:`WeightInit`), or None: those pages use
            the self-attention page's W (``Inputs.projections``).
    """

    key: str
    title: str
    source: str
    sentence: str
    d_model: int
    d_k: int
    seed: int
    weight_init: WeightInit
    vocabulary: Optional[Vocabulary] = None
    table: Optional[Mapping[str, tuple[float, ...]]] = field(default=None)
    note: str = ""
    encoder_sentence: str = ""
    d_out: int = 4
    num_heads: int = 2
    causal_init: Optional[WeightInit] = None

    @property
    def fixed_vocabulary(self) -> Optional[Vocabulary]:
        """The example's own words (its dictionary, or the words of its fixed vectors), or None when the vocabulary
        is built from the sentence."""
        if self.vocabulary is not None:
            return self.vocabulary
        if self.table is not None:
            return Vocabulary({word: i for i, word in enumerate(self.table)})
        return None

    @property
    def fixed_embeddings(self) -> bool:
        """True when the embeddings are the article's fixed vectors (d_model cannot change)."""
        return self.table is not None


_JOURNEY = {
    "Your": (0.43, 0.15, 0.89),
    "journey": (0.55, 0.87, 0.66),
    "starts": (0.57, 0.85, 0.64),
    "with": (0.22, 0.58, 0.33),
    "one": (0.77, 0.25, 0.10),
    "step": (0.05, 0.80, 0.55),
}

#: Where the two "Your journey" examples come from (shown as "Source: ..."): the book's inputs and classes, as two of
#: the tutorials quote them (seed 004 the inputs, seed 001 the classes).
_JOURNEY_SOURCE = N_("Raschka, “Build a Large Language Model (From Scratch)” (2024), ch. 3, as an Afrikaans tutorial on "
                     "attention and a Chinese lesson on coding attention quote it")

PRESETS: dict[str, Preset] = {
    p.key: p
    for p in (
        Preset(
            key="seed000",
            title=N_("I Like Machine Learning And Deep Learning (a 23-word dictionary)"),
            source=N_("a Chinese tutorial on scaled dot-product self-attention in PyTorch"),
            sentence="I Like Machine Learning And Deep Learning",
            d_model=4, d_k=3, seed=12, weight_init="randn",
            vocabulary=SEED000_VOCABULARY,
            note=N_("A 23-word dictionary, torch.manual_seed(12), nn.Embedding(23, 4) and random W of shape (4, 3)."),
            encoder_sentence="Neural Networks Learning Data",
        ),
        Preset(
            key="hello",
            title=N_("Hello shiny sun! (hand-picked 3-d vectors)"),
            source=N_("an Afrikaans tutorial on attention mechanisms, after Raschka, “Build a Large Language Model "
                      "(From Scratch)” (2024), ch. 3"),
            sentence="Hello shiny sun!",
            d_model=3, d_k=3, seed=0, weight_init="identity",
            table={"Hello": (0.34, 0.22, 0.54), "shiny": (0.53, 0.34, 0.98), "sun": (0.29, 0.54, 0.93)},
            note=N_("Three words with hand-picked 3-d embeddings; no trainable weights (W = I, so Q = K = V = X)."),
            encoder_sentence="shiny sun",
            d_out=3, num_heads=1,
        ),
        Preset(
            key="journey_v1",
            title=N_("Your journey starts with one step, SelfAttention_v1 (seed 123)"),
            source=_JOURNEY_SOURCE,
            sentence="Your journey starts with one step",
            d_model=3, d_k=2, seed=123, weight_init="rand",
            table=_JOURNEY,
            note=N_("Six 3-d inputs; W_q, W_k, W_v = torch.rand(3, 2) after torch.manual_seed(123). On the masking "
                    "pages: CausalAttention(3, 2, 6, 0.0) and MultiHeadAttention(3, 2, 6, 0.0, num_heads=2)."),
            encoder_sentence="starts with one step",
            d_out=2, num_heads=2, causal_init="linear",
        ),
        Preset(
            key="journey_v2",
            title=N_("Your journey starts with one step, SelfAttention_v2 (seed 789)"),
            source=_JOURNEY_SOURCE,
            sentence="Your journey starts with one step",
            d_model=3, d_k=2, seed=789, weight_init="linear",
            table=_JOURNEY,
            note=N_("Six 3-d inputs; W from nn.Linear(3, 2, bias=False) after torch.manual_seed(789)."),
            encoder_sentence="starts with one step",
            d_out=2, num_heads=2,
        ),
        Preset(
            key="custom",
            title=N_("Your own sentence"),
            source=N_("built from your sentence"),
            sentence="the cat sat on the mat",
            d_model=4, d_k=3, seed=0, weight_init="randn",
            note=N_("Any words: the vocabulary is built from your sentence, embeddings and W drawn from the seed."),
            encoder_sentence="le chat est assis sur le tapis",
        ),
    )
}

DEFAULT_PRESET = "seed000"
#: The example whose vocabulary is built from the sentence: where a sentence with words outside another example's
#: vocabulary runs (``attention_core.settings.validate_settings``).
OWN_SENTENCE_PRESET = "custom"
