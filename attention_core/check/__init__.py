r"""The check before and after a lesson: a few short items per concept, on numbers drawn for each student.

Eight concepts (:data:`CONCEPTS`: the six of a lesson on attention, :data:`CORE`, then the backward pass and the
attention of 2024–25: sinks, gates, GQA and RoPE), each in
its own module beside the practice mistakes it names, each with four
templates (:data:`TEMPLATES`): two procedural (compute a number: graded by ``attention_core.practice`` with its named
mistakes) and two conceptual (choose an answer). :func:`make_check` draws a seat's items for a phase; the items of
"after" are of the same kinds as "before", on new numbers. :func:`grade_item` grades one answer
(:mod:`attention_core.check.items`). What is stored of an answer is its :class:`Outcome`; the class's gain per concept
is :func:`normalised_gain` of the shares right before and after (Hake 1998).

Sources: Vaswani et al. 2017 (eq. 1, sec. 3.2.2, 3.2.3, footnote 4), seed 002 and seed 004 (the softmax, the mask,
dropout), Srivastava et al. 2014 (dropout), Dao et al. 2022 (appendix B.2: the backward pass), Goodfellow et al. 2016
(sec. 4.3: gradient descent), OpenAI 2025 (gpt-oss's sinks), Qiu et al. 2025 (gated attention), Ainslie et al. 2023
(GQA), Su et al. 2021 (RoPE), Hake 1998 ("Interactive-engagement versus traditional methods", the
normalised gain g = (post − pre) / (1 − pre)).
"""

from __future__ import annotations

from typing import Optional, Sequence

from attention_core.check import backward, causal_mask, modern, multi_head, scaling, scores, softmax, weighted_sum
from attention_core.check.items import (
    AFTER,
    BEFORE,
    CONCEPTUAL,
    CORRECT,
    PHASES,
    PROCEDURAL,
    WRONG,
    Item,
    Outcome,
    Template,
    drawn_apart,
    grade_item,
    item_seed,
)
from attention_core.errors import N_

__all__ = ["AFTER", "BEFORE", "CONCEPTS", "CONCEPTUAL", "CORE", "CORRECT", "PHASES", "PROCEDURAL", "TEMPLATES", "WRONG", "Item",
           "Outcome", "grade_item", "item_seed", "make_check", "normalised_gain"]

#: The concepts checked, in teaching order: key -> its name (marked for translation).
CONCEPTS: dict[str, str] = {
    scores.CONCEPT: N_("Scores q · k"),
    scaling.CONCEPT: N_("Scaling by √d_k"),
    softmax.CONCEPT: N_("Softmax"),
    causal_mask.CONCEPT: N_("Causal mask"),
    weighted_sum.CONCEPT: N_("Weighted sum of the values"),
    multi_head.CONCEPT: N_("Multi-head split and concat"),
    backward.CONCEPT: N_("The backward pass"),
    modern.CONCEPT: N_("Sinks, gates, GQA and RoPE"),
}
#: The concepts of a lesson on attention itself (a check "on every concept" asks these: 24 items); the backward pass
#: and the attention of 2024–25 are checked when they are chosen.
CORE: tuple[str, ...] = (scores.CONCEPT, scaling.CONCEPT, softmax.CONCEPT, causal_mask.CONCEPT, weighted_sum.CONCEPT,
                         multi_head.CONCEPT)

#: Every template: "<concept>.<name>" -> seed -> item, in the order a check asks them (each drawing again until no
#: answer matches two of its named mistakes).
TEMPLATES: dict[str, Template] = {
    f"{module.CONCEPT}.{name}": drawn_apart(template)
    for module in (scores, scaling, softmax, causal_mask, weighted_sum, multi_head, backward, modern)
    for name, template in module.TEMPLATES.items()
}


def make_check(seat: str, phase: str, concepts: Optional[Sequence[str]] = None) -> tuple[Item, ...]:
    """The items of ``seat``'s check in ``phase`` (:data:`BEFORE` or :data:`AFTER`), on ``concepts`` (default the
    lesson's, :data:`CORE`), four per concept, in :data:`TEMPLATES`' order. Deterministic: the same arguments give
    the same items (numbers and choices' order) on any machine.

    Raises:
        ValueError: an unknown phase or concept.
    """
    chosen = list(CORE) if concepts is None else list(concepts)
    unknown = [c for c in chosen if c not in CONCEPTS]
    if unknown:
        raise ValueError(f"unknown concepts {unknown}; known: {list(CONCEPTS)}")
    return tuple(template(item_seed(seat, phase, key)) for key, template in TEMPLATES.items()
                 if key.split(".", 1)[0] in chosen)


def normalised_gain(before: float, after: float) -> Optional[float]:
    """Hake's normalised gain (after − before) / (1 − before), the shares right in [0, 1]; None when ``before`` is 1
    (nothing left to gain). Negative when the share fell.

    Raises:
        ValueError: a share outside [0, 1].
    """
    if not (0.0 <= before <= 1.0 and 0.0 <= after <= 1.0):
        raise ValueError(f"shares must be in [0, 1], got {before}, {after}")
    return None if before >= 1.0 else (after - before) / (1.0 - before)
