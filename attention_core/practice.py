r"""Practice: one entry of a step asked as an exercise, the answer checked, and the mistake named.

A step page's :class:`~attention_core.stepthrough.Stage` may carry ``exercise(row, col, head)``: an
:class:`Exercise` for that entry of its explained panel. It holds what the student is asked to compute (the
element formula and the numbers it needs, as LaTeX, without the result), the answer, and the values that the
common mistakes give on those very numbers (:class:`Mistake`, each with a hint that names it). The builders
below make the exercises every page shares, one per kind of step:

* :func:`dot_exercise`: a dot product (projections x_i · W_{:,j}, scores q_i · k_j), mistake: row j against
  column i (q_j · k_i);
* :func:`scale_exercise`: s / √d_k (Vaswani et al. 2017, eq. 1), mistakes: no ÷ √d_k, ÷ d_k, ÷ √d_model;
* :func:`softmax_exercise`: e^{a_ij} / Σ_l e^{a_il} over the allowed keys (seed 002, seed 004), mistakes:
  softmax over the column, not renormalised after masking, summed before exponentiating, no ÷ √d_k;
* :func:`renormalise_exercise`: α̂ m / Σ α̂ m (seed 004's other route), mistake: zeroed, not renormalised;
* :func:`dropout_exercise`: α d / (1 − p) (seed 004), mistake: no 1 / (1 − p);
* :func:`weighted_sum_exercise`: Σ_l α_il v_lj (seed 002, seed 004), mistakes: the value of the key with the
  most weight instead of the sum, no 1 / (1 − p) after dropout;
* :func:`value_exercise`: any other entry, with the question given.

:func:`grade` checks a typed answer (:func:`parse_answer` reads it with ``float`` only, never ``eval``).
Tolerance (:func:`tolerance`): ±0.005 or ±0.5 % of the answer, whichever is larger, so an answer rounded to
2 decimals or to the 3 significant digits of the heatmaps is accepted. A mistake is offered only when its
value cannot be taken for the answer (farther than both tolerances), so a correct answer never gets a hint.

Shape legend: T keys (a row of scores or weights), D the length of a dot product's vectors. All numbers are
Python floats (float64 arithmetic on the float32 values the pages show).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional, Sequence

from attention_core.errors import N_, InputError, Message, UserText
from attention_core.inputs.numbers import read_number
from attention_core.latex import number

#: What each mistake is called (the hint's first words); the hints below say it with the numbers.
MISTAKES: dict[str, str] = {
    "swapped": N_("Row j against column i"),
    "no_scale": N_("Forgot ÷ √d_k"),
    "scale_d_k": N_("Divided by d_k, not √d_k"),
    "scale_d_model": N_("Divided by √d_model, not √head_dim"),
    "softmax_column": N_("Softmax over the column"),
    "no_renormalise": N_("Forgot to renormalise after masking"),
    "sum_before_exp": N_("Summed before exponentiating"),
    "no_dropout_rescale": N_("Forgot 1 / (1 − p)"),
    "max_not_sum": N_("Took the max instead of the weighted sum"),
    "p_not_transposed": N_("P dO instead of Pᵀ dO"),
    "softmax_diagonal_only": N_("Forgot the softmax's off-diagonal terms"),
    "gradient_no_scale": N_("Forgot ÷ √d_k on the way back"),
    "ds_not_transposed": N_("dS instead of dSᵀ for dK"),
    "update_sign": N_("The sign of the update"),
    "w_out_not_transposed": N_("dO W_O instead of dO W_Oᵀ"),
    "phi_no_plus_one": N_("Forgot the + 1 of φ"),
    "phi_wrong_branch": N_("The other branch of elu"),
    "linear_not_normalised": N_("Forgot to divide by the row's sum"),
    "linear_future_keys": N_("Summed over future keys too"),
    "state_not_accumulated": N_("Forgot the state's old value"),
    "state_raw_key": N_("k instead of φ(k)"),
    "delta_no_beta": N_("Forgot β"),
    "delta_error_sign": N_("The sign of the error"),
    "delta_no_error": N_("Wrote v, not the error"),
    "decay_forgotten": N_("Forgot the decay α"),
    "decay_after_prediction": N_("Predicted before the decay"),
    "rope_not_rotated": N_("Forgot to rotate"),
    "rope_sin_sign": N_("Rotated the other way"),
    "mla_rope_part_forgotten": N_("Forgot the RoPE part q^R · k^R"),
    "mla_scale_head_dim": N_("÷ √d_h instead of ÷ √(d_h + d_R)"),
    "nothing_is_zero": N_("Thought a query with nothing to find outputs 0"),
    "nothing_sum_not_mean": N_("Summed the values instead of averaging"),
    "sink_forgotten": N_("Forgot the sink's e^b"),
    "sink_not_exponentiated": N_("Added b, not e^b"),
    "sink_share_instead": N_("Computed the sink's own share"),
    "gate_shift_forgotten": N_("Forgot the gate's shift b"),
    "gate_no_sigmoid": N_("Used the logit g, not σ(g)"),
    "gate_sigmoid_sign": N_("σ(−g) instead of σ(g)"),
    "gate_not_applied": N_("Forgot the gate"),
    "gate_added": N_("Added the gate instead of multiplying"),
    "lambda_init_forgotten": N_("Forgot λ_init"),
    "difference_no_lambda": N_("Subtracted A2 without λ"),
    "difference_added": N_("Added the second map instead of subtracting"),
    "difference_single_map": N_("Used the first map alone"),
    "norm_scale_forgotten": N_("Forgot the (1 − λ_init) scale"),
    "norm_forgotten": N_("Forgot the RMSNorm"),
    "index_weight_scale_forgotten": N_("Forgot the indexer's ÷ √H_I"),
    "index_relu_forgotten": N_("Forgot the indexer's ReLU"),
    "index_relu_of_sum": N_("ReLU on the sum, not on each head"),
    "index_weights_forgotten": N_("Forgot the indexer's head weights"),
    "sparse_dropped_keys_counted": N_("Counted the dropped keys in the softmax"),
    "mass_of_kept_keys": N_("Added the kept keys' weights, not the dropped ones'"),
    "mask_transposed": N_("Blocked the past instead of the future"),
    "head_dim_times": N_("Multiplied by the number of heads instead of dividing"),
    "scale_flattens": N_("Thought larger scores flatten the softmax"),
    "shift_changes_weights": N_("Thought adding the same number to a row changes its weights"),
}

#: The longest answer read (characters); a number needs far fewer.
MAX_ANSWER_CHARS = 40
#: The largest |answer| read; no entry of any page comes near it.
MAX_ANSWER = 1e6


@dataclass(frozen=True)
class Mistake:
    """A known mistake and the value it gives on this exercise's numbers.

    Attributes:
        key: a key of :data:`MISTAKES`.
        value: what the mistake gives (float).
        hint: what went wrong and what to do instead, with the numbers (a :class:`Message`).
    """

    key: str
    value: float
    hint: Message


@dataclass(frozen=True)
class Exercise:
    """One entry to compute.

    Attributes:
        lhs: the entry's symbol, as LaTeX (e.g. ``s_{1,2}``).
        formula: its element formula (LaTeX, the right-hand side, symbols only).
        inputs: the numbers the formula needs, as LaTeX lines (``q_{1} = [0.3, −1.2]``); never the result.
        answer: the entry's value (float), as on the page.
        mistakes: the known mistakes that give a value distinguishable from the answer.
        predict: whether the stage is a softmax, so that the student first predicts the row's largest weight.
    """

    lhs: str
    formula: str
    inputs: tuple[str, ...]
    answer: float
    mistakes: tuple[Mistake, ...] = field(default=())
    predict: bool = False

    @property
    def question(self) -> str:
        """``lhs = formula = ?`` as LaTeX."""
        return f"{self.lhs} = {self.formula} = \\;?"


@dataclass(frozen=True)
class Grade:
    """The verdict on one answer.

    Attributes:
        correct: within :func:`tolerance` of the answer.
        mistakes: the known mistakes the answer matches (empty when correct or unrecognised).
        difference: answer given − correct answer.
    """

    correct: bool
    mistakes: tuple[Mistake, ...]
    difference: float


def tolerance(value: float) -> float:
    """How far an answer may be from ``value`` and still count: max(0.005, 0.005 |value|), plus float slack."""
    return max(0.005, 0.005 * abs(value)) + 1e-9


def parse_answer(text: str) -> float:
    """A typed answer as a float, read like every number box of the app (``inputs.numbers.read_number``: never
    ``eval``; full-width digits, the minus sign "−" and one decimal comma, "0,73", are read too).

    Raises:
        InputError: empty, longer than :data:`MAX_ANSWER_CHARS`, not a number, not finite, or larger than
            :data:`MAX_ANSWER` in size; the message quotes what was typed (marked as user text).
    """
    raw = (text or "").strip()
    if not raw:
        raise InputError(N_("Type a number first, e.g. 0.42."), field="practice_answer")
    if len(raw) > MAX_ANSWER_CHARS:
        raise InputError(N_("That answer is {n} characters long; type just the number (at most {cap})."),
                         field="practice_answer", n=len(raw), cap=MAX_ANSWER_CHARS)
    try:
        value = read_number(raw.replace(" ", ""))
    except ValueError:
        raise InputError(N_("“{typed}” is not a number: type a decimal number such as -0.25."),
                         field="practice_answer", typed=UserText(raw)) from None
    if not math.isfinite(value):
        raise InputError(N_("“{typed}” is not a finite number: every entry asked here is finite."),
                         field="practice_answer", typed=UserText(raw))
    if abs(value) > MAX_ANSWER:
        raise InputError(N_("{value:g} is far too large: no entry here is beyond ±{cap:g}."),
                         field="practice_answer", value=value, cap=MAX_ANSWER)
    return value


def grade(exercise: Exercise, given: float) -> Grade:
    """Check ``given`` against the exercise: correct within :func:`tolerance`, else the mistakes it matches."""
    difference = given - exercise.answer
    if abs(difference) <= tolerance(exercise.answer):
        return Grade(True, (), difference)
    matched = tuple(m for m in exercise.mistakes if abs(given - m.value) <= tolerance(m.value))
    return Grade(False, matched, difference)


def _kept(answer: float, mistakes: Sequence[Optional[Mistake]]) -> tuple[Mistake, ...]:
    """The mistakes whose value is finite and cannot be taken for the answer (nor the answer for them)."""
    return tuple(m for m in mistakes
                 if m is not None and math.isfinite(m.value)
                 and abs(m.value - answer) > tolerance(answer) + tolerance(m.value))


def vector(name: str, values: Sequence[float]) -> str:
    """``name = [v1, v2, ...]`` as LaTeX (4 significant digits, −∞ for a blocked score)."""
    return f"{name} = \\begin{{bmatrix}} {' & '.join(number(v) for v in values)} \\end{{bmatrix}}"


def _n(value: float) -> str:
    """A number for a hint (plain text, 4 significant digits)."""
    return f"{value:.4g}"


def _swapped(value: float) -> Mistake:
    """"Row j against column i": the entry with its two indices swapped (a score's and a scaled score's)."""
    return Mistake("swapped", value, Message(
        N_("That is {value}, the entry with the two indices swapped: query j against key i. Entry (i, j) "
           "takes row i of Q (the query) and row j of K (the key)."), value=_n(value)))


# ---------------------------------------------------------------- the kinds of exercise


def dot_exercise(lhs: str, formula: str, left: tuple[str, Sequence[float]], right: tuple[str, Sequence[float]],
                 answer: float, *, swapped: Optional[tuple[Sequence[float], Sequence[float]]] = None,
                 extra: tuple[str, ...] = ()) -> Exercise:
    """A dot product: Σ_l left_l right_l (a projection x_i · W_{:,j}, a score q_i · k_j).

    Args:
        lhs, formula: the entry's symbol and element formula (LaTeX).
        left, right: (LaTeX name, values), both of length D.
        answer: the entry's value.
        swapped: (q_j, k_i) for a score, so that "row j of K against column i" (the transposed entry) is
            recognised; None where the two indices do not swap (projections).
        extra: more input lines (e.g. a bias).
    """
    mistakes = []
    if swapped is not None:
        mistakes.append(_swapped(math.fsum(a * b for a, b in zip(*swapped))))
    return Exercise(lhs, formula, (vector(left[0], left[1]), vector(right[0], right[1])) + extra, answer,
                    _kept(answer, mistakes))


def scale_exercise(lhs: str, formula: str, score_name: str, score: float, d: int, answer: float, *,
                   d_name: str = "d_k", d_latex: str = "d_k", d_model: Optional[int] = None,
                   dot: Optional[tuple[tuple[str, Sequence[float]], tuple[str, Sequence[float]]]] = None,
                   swapped: Optional[float] = None) -> Exercise:
    """A scaled score: s / √d (Vaswani et al. 2017, eq. 1), from the score or from q and k themselves.

    Args:
        score_name: the score's symbol (LaTeX), shown with its value unless ``dot`` is given.
        score: the unscaled score s_ij.
        d: the width the score is divided by the root of (d_k, or head_dim with several heads).
        d_name, d_latex: its name in the hints ("d_k" or "head_dim") and in LaTeX ("d_k", "d_{head}").
        d_model: the model width, when dividing by √d_model is a mistake that differs (several heads).
        dot: (q_i, k_j) as (LaTeX name, values) when the stage computes q · k / √d in one go.
        swapped: then q_j · k_i, so that "row j against column i" is recognised (scaled, as asked).
    """
    root = math.sqrt(d)
    mistakes = [
        Mistake("no_scale", score, Message(
            N_("That is the dot product itself, {value}: it still has to be divided by √{d_name} = √{d} = "
               "{root}."), value=_n(score), d_name=d_name, d=d, root=_n(root))),
        Mistake("scale_d_k", score / d, Message(
            N_("That is {score} ÷ {d} = {value}: you divided by {d_name} itself. Divide by its square root, "
               "√{d} = {root}."), score=_n(score), d=d, d_name=d_name, value=_n(score / d), root=_n(root))),
    ]
    if d_model is not None and d_model != d:
        wrong = score / math.sqrt(d_model)
        mistakes.append(Mistake("scale_d_model", wrong, Message(
            N_("That is {score} ÷ √{d_model} = {value}: you divided by √d_model. Each head's q and k are "
               "{d} wide, so divide by √{d_name} = √{d} = {root}."),
            score=_n(score), d_model=d_model, value=_n(wrong), d=d, d_name=d_name, root=_n(root))))
    if swapped is not None:
        mistakes.append(_swapped(swapped / root))
    inputs = ((vector(*dot[0]), vector(*dot[1])) if dot is not None else (f"{score_name} = {number(score)}",))
    return Exercise(lhs, formula, inputs + (f"{d_latex} = {d}",), answer, _kept(answer, mistakes))


def _softmax_at(row: Sequence[float], col: int) -> float:
    """e^{row_col} / Σ e^{row_l} over the finite entries (−∞ counts 0); NaN when none is finite."""
    finite = [a for a in row if not math.isinf(a)]
    if not finite or math.isinf(row[col]):
        return math.nan if not finite else 0.0
    top = max(finite)
    return math.exp(row[col] - top) / math.fsum(math.exp(a - top) for a in finite)


def softmax_exercise(lhs: str, formula: str, row_name: str, scores: Sequence[Sequence[float]], row: int, col: int,
                     answer: float, *, unmasked: Optional[Sequence[Sequence[float]]] = None,
                     unscaled: Optional[Sequence[Sequence[float]]] = None, d: Optional[int] = None,
                     by_column: bool = True, predict: bool = True) -> Exercise:
    """One softmax weight: e^{a_ij} / Σ_l e^{a_il}, the sum over row i's allowed keys (seed 002, seed 004).

    Args:
        row_name: the LaTeX name of row i of the scores (shown with its numbers).
        scores: the (T_q, T) scores the softmax takes, −inf where blocked (nested sequences of floats).
        row, col: the entry (0-based).
        unmasked: the same scores before the mask (for "forgot to renormalise after masking"), or None when
            the page has no mask.
        unscaled: the scores before ÷ √d (for "forgot ÷ √d_k"), with the mask applied, or None.
        d: the width whose root scaled them (named in that hint).
        by_column: whether "softmax over the column" is a mistake to look for (not for a single row, such as
            next-token logits).
        predict: whether the student first predicts the row's largest weight (keys; not vocabulary).
    """
    a = list(scores[row])
    mistakes: list[Optional[Mistake]] = []
    if by_column:
        wrong = _softmax_at([r[col] for r in scores], row)
        mistakes.append(Mistake("softmax_column", wrong, Message(
            N_("That is {value}: you normalised over column j (every query's score for key j). The softmax runs "
               "along row i: divide e^(a_ij) by the sum of e^(a_il) over the keys l of row i."), value=_n(wrong))))
    finite = [v for v in a if not math.isinf(v)]
    if finite and not math.isinf(a[col]):
        total = math.fsum(finite)
        exponent = a[col] - total
        if exponent < 700:
            wrong = math.exp(exponent)
            mistakes.append(Mistake("sum_before_exp", wrong, Message(
                N_("That is e^(a_ij) ÷ e^(sum of the row) = {value}: you summed the scores before exponentiating. "
                   "Exponentiate each score first, then add the exponentials."), value=_n(wrong))))
    if unmasked is not None and any(math.isinf(v) for v in a) and not math.isinf(a[col]):
        wrong = _softmax_at(list(unmasked[row]), col)
        mistakes.append(Mistake("no_renormalise", wrong, Message(
            N_("That is {value}, the softmax over every key of the row, blocked ones included. After masking, only "
               "the allowed keys count: their weights must sum to 1."), value=_n(wrong))))
    if unscaled is not None:
        wrong = _softmax_at(list(unscaled[row]), col)
        mistakes.append(Mistake("no_scale", wrong, Message(
            N_("That is {value}, the softmax of the scores before ÷ √{d}: use the scaled scores."),
            value=_n(wrong), d=d if d is not None else "d_k")))
    return Exercise(lhs, formula, (vector(row_name, a),), answer, _kept(answer, mistakes), predict=predict)


def renormalise_exercise(lhs: str, formula: str, weights: tuple[str, Sequence[float]],
                         allowed: tuple[str, Sequence[bool]], col: int, answer: float) -> Exercise:
    """The other route's weight: α̂_ij m_ij / Σ_l α̂_il m_il (softmax over every key, zero the blocked,
    renormalise; seed 004), mistake: zeroed but not renormalised."""
    w, m = list(weights[1]), list(allowed[1])
    zeroed = w[col] * m[col]
    mistakes = [Mistake("no_renormalise", zeroed, Message(
        N_("That is α̂_ij · m_ij = {value}: the blocked weights are zeroed, but the row no longer sums to 1. "
           "Divide by the sum of the weights that are left."), value=_n(zeroed)))]
    return Exercise(lhs, formula, (vector(weights[0], w), vector(allowed[0], [float(a) for a in m])), answer,
                    _kept(answer, mistakes))


def dropout_exercise(lhs: str, formula: str, weight_name: str, weight: float, kept: bool, p: float,
                     answer: float, *, mask_name: str = "d") -> Exercise:
    """One weight after dropout: α d / (1 − p) (seed 004; what ``nn.Dropout`` does in training)."""
    mistakes = [Mistake("no_dropout_rescale", weight * kept, Message(
        N_("That is α · d = {value}: the kept weights are also multiplied by 1 / (1 − p) = {scale}, so that each "
           "row still sums to 1 on average."), value=_n(weight * kept), scale=_n(1 / (1 - p))))]
    inputs = (f"{weight_name} = {number(weight)}", f"{mask_name} = {int(kept)}", f"p = {number(p)}")
    return Exercise(lhs, formula, inputs, answer, _kept(answer, mistakes))


def weighted_sum_exercise(lhs: str, formula: str, weights: tuple[str, Sequence[float]],
                          values: tuple[str, Sequence[float]], answer: float, *,
                          dropout_p: float = 0.0) -> Exercise:
    """A context vector's entry: Σ_l α_il v_lj (seed 002's f(q) = Σ α v; Vaswani et al. 2017, eq. 1).

    Args:
        weights: (LaTeX name, row i of the weights used, after dropout if any), length T.
        values: (LaTeX name, column j of V), length T.
        dropout_p: the dropout p the weights were rescaled with (0: none).
    """
    w, v = list(weights[1]), list(values[1])
    top = max(range(len(w)), key=w.__getitem__)
    mistakes = [Mistake("max_not_sum", v[top], Message(
        N_("That is {value}, the value of key {key} alone, the one with the most weight. Attention mixes every "
           "key's value: multiply each v_lj by its weight and add them all."), value=_n(v[top]), key=top + 1))]
    if dropout_p > 0:
        wrong = answer * (1 - dropout_p)
        mistakes.append(Mistake("no_dropout_rescale", wrong, Message(
            N_("That is {value} = (1 − p) × the answer: you used the dropped weights without 1 / (1 − p) = "
               "{scale}."), value=_n(wrong), scale=_n(1 / (1 - dropout_p)))))
    return Exercise(lhs, formula, (vector(*weights), vector(*values)), answer, _kept(answer, mistakes))


def value_exercise(lhs: str, formula: str, inputs: tuple[str, ...], answer: float) -> Exercise:
    """Any other entry: the question as given, no known mistakes."""
    return Exercise(lhs, formula, inputs, answer)
