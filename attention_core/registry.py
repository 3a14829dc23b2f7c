"""Every page of the app, once, in the order of the navigation: the one list that everything listing pages loops
over (the router ``app.py``, the overview's "Where to go next", the load benchmark, the tests).

Each page is declared in its own folder, ``attention_core/lessons/<key>/page.py`` (:class:`attention_core.page.Page`);
adding a page adds its folder and one line here. Above the lessons: it imports each page's declaration only.
"""

from __future__ import annotations

from attention_core.errors import N_
from attention_core.lessons.additive.page import ADDITIVE
from attention_core.lessons.alibi.page import ALIBI_PAGE
from attention_core.lessons.backward.page import BACKWARD
from attention_core.lessons.backward_multi_head.page import BACKWARD_MULTI_HEAD
from attention_core.lessons.causal.page import CAUSAL_PAGE
from attention_core.lessons.check.page import CHECK_PAGE
from attention_core.lessons.cross_attention.page import CROSS_ATTENTION
from attention_core.lessons.differential_attention.page import DIFFERENTIAL_ATTENTION
from attention_core.lessons.dropout.page import DROPOUT_PAGE
from attention_core.lessons.encoder_block.page import ENCODER_BLOCK
from attention_core.lessons.flash_attention.page import FLASH_ATTENTION
from attention_core.lessons.gated_attention.page import GATED_ATTENTION
from attention_core.lessons.generation.page import GENERATION_PAGE
from attention_core.lessons.gqa.page import GQA_PAGE
from attention_core.lessons.image_attention.page import IMAGE_ATTENTION
from attention_core.lessons.linear_attention.page import LINEAR_ATTENTION
from attention_core.lessons.mla.page import MLA_PAGE
from attention_core.lessons.modern_lm.page import MODERN_LM
from attention_core.lessons.multi_head.page import MULTI_HEAD
from attention_core.lessons.no_weights.page import NO_WEIGHTS
from attention_core.lessons.positional_encoding.page import POSITIONAL_ENCODING
from attention_core.lessons.rope.page import ROPE_PAGE
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.lessons.sinks.page import SINKS
from attention_core.lessons.sliding_window.page import SLIDING_WINDOW
from attention_core.lessons.sparse_attention.page import SPARSE_ATTENTION
from attention_core.lessons.temperature.page import TEMPERATURE_PAGE
from attention_core.lessons.tokens.page import TOKENS
from attention_core.lessons.trained_model.page import TRAINED_MODEL
from attention_core.lessons.training.page import TRAINING
from attention_core.lessons.why_sqrt_dk.page import WHY_SQRT_DK
from attention_core.page import SECTIONS, Page

#: The start page: what attention does, the worked examples, where to go next.
OVERVIEW = Page(key="overview", title=N_("Overview"), icon=":material/home:", section="start")

#: The teacher's live view of a class: in the navigation only for a session holding its class's teacher key
#: (``ui/classroom/class_live.py``); not a learner's page, so not in :data:`PAGES`.
YOUR_CLASS = Page(key="your_class", title=N_("Your class"), icon=":material/monitoring:", section="start")

#: Every page, in the order of the navigation (each section's pages together, the sections in ``SECTIONS``' order).
PAGES: tuple[Page, ...] = (
    OVERVIEW,
    CHECK_PAGE,
    TOKENS,
    NO_WEIGHTS,
    SELF_ATTENTION_PAGE,
    CAUSAL_PAGE,
    DROPOUT_PAGE,
    MULTI_HEAD,
    CROSS_ATTENTION,
    WHY_SQRT_DK,
    TEMPERATURE_PAGE,
    POSITIONAL_ENCODING,
    ADDITIVE,
    IMAGE_ATTENTION,
    ENCODER_BLOCK,
    GENERATION_PAGE,
    GQA_PAGE,
    ROPE_PAGE,
    ALIBI_PAGE,
    SLIDING_WINDOW,
    FLASH_ATTENTION,
    LINEAR_ATTENTION,
    MLA_PAGE,
    SPARSE_ATTENTION,
    SINKS,
    GATED_ATTENTION,
    DIFFERENTIAL_ATTENTION,
    TRAINED_MODEL,
    MODERN_LM,
    BACKWARD,
    BACKWARD_MULTI_HEAD,
    TRAINING,
)

#: The pages by key.
BY_KEY: dict[str, Page] = {page.key: page for page in PAGES}


def sections() -> dict[str, tuple[Page, ...]]:
    """Section title (marked for translation) -> its pages, in the navigation's order."""
    return {title: tuple(p for p in PAGES if p.section == key) for key, title in SECTIONS.items()}
