r"""The formulas of each step, built with sympy, general and with numbers in.

Each step of :func:`functional.self_attention` has a matrix formula, an
element formula, and (for one chosen entry (i, j)) the element formula with
the real numbers substituted and its result. Formulas are sympy expressions
rendered with ``sympy.latex``; no user text ever goes through sympy.

Sources: Vaswani et al. 2017, eq. 1 (softmax(Q Kᵀ / √d_k) V); seed 002
(002_26eab86218c0ec33.txt) for the element forms a(q, k_i) = q · k_i / √d,
α = exp(a) / Σ exp(a), f(q) = Σ α v; seed 000 for the projections Q = X W_q.

Index legend: i query row, j key row or output column, l the summed index,
T tokens, D = d_model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import sympy as sp

from attention_core import practice
from attention_core.errors import N_, InputError
from attention_core.latex import latex_text, number_expr
from attention_core.self_attention.functional import SelfAttentionTrace

_i, _j, _l = sp.symbols("i j l", integer=True)
_D, _T = sp.Symbol("D"), sp.Symbol("T")
_d_k = sp.Symbol("d_k", positive=True)
_X, _Q, _K, _V = (sp.Symbol(n, commutative=False) for n in "XQKV")
_TOP = sp.Symbol(r"\top")
_softmax = sp.Function(r"\operatorname{softmax}")
_x, _q, _k, _v = (sp.IndexedBase(n) for n in "xqkv")
_s, _a, _alpha, _z = (sp.IndexedBase(n) for n in ("s", "a", r"\alpha", "z"))
_W = {name: sp.Symbol(f"W_{name[0]}", commutative=False) for name in ("query", "key", "value")}
_w = {name: sp.IndexedBase(f"W^{{{name[0]}}}") for name in ("query", "key", "value")}
_elem = {"query": _q, "key": _k, "value": _v}


def _matrix_formula(stage: str) -> sp.Expr:
    if stage == "inputs":
        return sp.Eq(_X, sp.Symbol(r"\mathrm{Embedding}(\mathrm{ids})"), evaluate=False)
    if stage in _W:
        return sp.Eq(sp.Symbol(stage[0].upper(), commutative=False), sp.Mul(_X, _W[stage]), evaluate=False)
    kt = sp.Pow(_K, _TOP, evaluate=False)
    if stage == "scores":
        return sp.Eq(sp.Symbol("S", commutative=False), sp.Mul(_Q, kt), evaluate=False)
    if stage == "scaled_scores":
        return sp.Eq(sp.Symbol("A", commutative=False), sp.Mul(_Q, kt, 1 / sp.sqrt(_d_k)), evaluate=False)
    if stage == "weights":
        return sp.Eq(sp.Symbol(r"\mathcal{A}", commutative=False),
                     _softmax(sp.Mul(_Q, kt, 1 / sp.sqrt(_d_k))), evaluate=False)
    if stage == "output":
        return sp.Eq(sp.Symbol("Z", commutative=False),
                     sp.Mul(_softmax(sp.Mul(_Q, kt, 1 / sp.sqrt(_d_k))), _V), evaluate=False)
    raise KeyError(stage)


def _element_formula(stage: str, i=_i, j=_j) -> sp.Expr:
    """The element form of a stage, for symbolic (i, j) or for given 1-based indices."""

    def prod(a, b):
        return sp.Mul(a, b, evaluate=False)  # keep the seed's order: q k, x W, alpha v

    if stage == "inputs":
        return sp.Eq(_x[i, j], sp.IndexedBase("E")[sp.Symbol(r"t_{%s}" % sp.latex(i)), j], evaluate=False)
    if stage in _W:
        return sp.Eq(_elem[stage][i, j], sp.Sum(prod(_x[i, _l], _w[stage][_l, j]), (_l, 1, _D)), evaluate=False)
    if stage == "scores":
        return sp.Eq(_s[i, j], sp.Sum(prod(_q[i, _l], _k[j, _l]), (_l, 1, _d_k)), evaluate=False)
    if stage == "scaled_scores":
        return sp.Eq(_a[i, j], _s[i, j] / sp.sqrt(_d_k), evaluate=False)
    if stage == "weights":
        return sp.Eq(_alpha[i, j], sp.exp(_a[i, j]) / sp.Sum(sp.exp(_a[i, _l]), (_l, 1, _T)), evaluate=False)
    if stage == "output":
        return sp.Eq(_z[i, j], sp.Sum(prod(_alpha[i, _l], _v[_l, j]), (_l, 1, _T)), evaluate=False)
    raise KeyError(stage)


@lru_cache(maxsize=None)
def self_attention_formula(stage: str) -> tuple[str, str]:
    """The (matrix form, element form) of a stage, as LaTeX.

    Pure and constant per stage, so cached (a handful of short strings).

    Raises:
        KeyError: for a stage not in ``SELF_ATTENTION_PAGE.stages`` (self_attention/walkthrough.py).
    """
    return sp.latex(_matrix_formula(stage)), sp.latex(_element_formula(stage), order="none")


@dataclass(frozen=True)
class Entry:
    """The numbers behind one entry (row, col) of one stage.

    Attributes:
        stage: a key of ``SELF_ATTENTION_PAGE.stages`` (self_attention/walkthrough.py).
        row, col: 0-based indices into that stage's matrix.
        left, right: the two vectors multiplied term by term (e.g. q_i and k_j),
            or for ``scaled_scores`` (s_ij,) and (), for ``weights`` the row of
            scaled scores a_i and (), for ``inputs`` (x_ij,) and ().
        value: the stage's own number at (row, col), from the trace.
        d_k: the query/key width (for the scaling step).
    """

    stage: str
    row: int
    col: int
    left: tuple[float, ...]
    right: tuple[float, ...]
    value: float
    d_k: int

    def recompute(self) -> float:
        """The entry recomputed from its numbers with a plain Python loop (float64).

        The naive reference that tests compare the matrix code against.
        """
        if self.stage == "inputs":
            return self.left[0]
        if self.stage == "scaled_scores":
            return self.left[0] / math.sqrt(self.d_k)
        if self.stage == "weights":
            finite = [a for a in self.left if a != -math.inf]
            if not finite:
                return 0.0
            top = max(finite)
            exps = [math.exp(a - top) if a != -math.inf else 0.0 for a in self.left]
            return exps[self.col] / sum(exps)
        total = 0.0
        for a, b in zip(self.left, self.right):
            total += a * b
        return total


def entry_of(trace: SelfAttentionTrace, stage: str, row: int, col: int) -> Entry:
    """Collect the numbers that make entry (row, col) of ``stage``.

    Args:
        trace: a 2-d self-attention trace (X of shape (T, D)).
        stage: a key of ``SELF_ATTENTION_PAGE.stages`` (self_attention/walkthrough.py).
        row, col: indices into the stage's matrix; must be in range.

    Raises:
        KeyError: unknown stage. IndexError: row or col out of range.
    """
    att = trace.attention
    matrix = stage_matrix(trace, stage)
    if not (0 <= row < matrix.shape[0] and 0 <= col < matrix.shape[1]):
        raise IndexError(f"entry ({row}, {col}) is outside {tuple(matrix.shape)}")
    value = float(matrix[row, col])
    d_k = att.query.shape[-1]

    def vec(t) -> tuple[float, ...]:
        return tuple(float(v) for v in t)

    if stage == "inputs":
        left, right = (value,), ()
    elif stage in ("query", "key", "value"):
        w = {"query": trace.w_query, "key": trace.w_key, "value": trace.w_value}[stage]
        left, right = vec(trace.x[row]), vec(w[:, col])
    elif stage == "scores":
        left, right = vec(att.query[row]), vec(att.key[col])
    elif stage == "scaled_scores":
        left, right = (float(att.scores[row, col]),), ()
    elif stage == "weights":
        left, right = vec(att.masked_scores[row]), ()
    elif stage == "output":
        left, right = vec(att.dropped_weights[row]), vec(att.value[:, col])
    else:
        raise KeyError(stage)
    return Entry(stage, row, col, left, right, value, d_k)


def stage_matrix(trace: SelfAttentionTrace, stage: str):
    """The matrix a stage produces: X, Q, K, V (T, ·) or scores/weights (T, T) or output (T, d_v)."""
    att = trace.attention
    return {
        "inputs": trace.x,
        "query": att.query,
        "key": att.key,
        "value": att.value,
        "scores": att.scores,
        "scaled_scores": att.scaled_scores,
        "weights": att.weights,
        "output": att.output,
    }[stage]


def _dot(left, right) -> sp.Expr:
    terms = [sp.Mul(number_expr(a), number_expr(b), evaluate=False) for a, b in zip(left, right)]
    return sp.Add(*terms, evaluate=False) if len(terms) > 1 else terms[0]


@lru_cache(maxsize=512)  # pure, on plain numbers: the same entry is shown again and again
def entry_latex(entry: Entry) -> str:
    """The element formula of ``entry`` with its numbers substituted, and the result.

    For example, for ``scores``: ``s_{1,2} = Σ_l q_{1,l} k_{2,l} = 0.3·(−1.2) + … = −0.41``.
    Indices are shown 1-based, as in the seed articles' formulas.
    """
    general = _element_formula(entry.stage, entry.row + 1, entry.col + 1)
    if entry.stage == "inputs":
        numbers = sp.latex(number_expr(entry.value))
    elif entry.stage == "scaled_scores":
        numbers = r"\frac{%s}{\sqrt{%d}}" % (sp.latex(number_expr(entry.left[0])), entry.d_k)
    elif entry.stage == "weights":
        exps = [sp.latex(sp.exp(number_expr(a), evaluate=False)) for a in entry.left]
        numbers = r"\frac{%s}{%s}" % (exps[entry.col], " + ".join(exps))
    else:
        numbers = sp.latex(_dot(entry.left, entry.right), order="none", mul_symbol="dot")
    parts = [sp.latex(general, order="none"), numbers, sp.latex(sp.Float(entry.value, 4))]
    return " = ".join(parts)


@lru_cache(maxsize=2048)
def _element_sides(stage: str, i: int, j: int) -> tuple[str, str]:
    """(left side, right side) of the element formula at 1-based (i, j), as LaTeX (sympy is slow: cached)."""
    element = _element_formula(stage, i, j)
    return sp.latex(element.lhs), sp.latex(element.rhs, order="none")


def exercise_of(trace: SelfAttentionTrace, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` as an exercise (practice mode); None for X (nothing to compute).

    The question is the element formula of :func:`entry_latex` with the vectors it needs; the known mistakes
    come from the same trace (see :mod:`attention_core.practice`).

    Raises:
        KeyError: unknown stage. IndexError: row or col out of range.
    """
    entry = entry_of(trace, stage, row, col)
    if stage == "inputs":
        return None
    att = trace.attention
    lhs, formula = _element_sides(stage, row + 1, col + 1)
    i, j = row + 1, col + 1
    if stage in _W:
        return practice.dot_exercise(lhs, formula, (f"x_{{{i}}}", entry.left),
                                     (f"W^{{{stage[0]}}}_{{:,{j}}}", entry.right), entry.value)
    if stage == "scores":
        return practice.dot_exercise(lhs, formula, (f"q_{{{i}}}", entry.left), (f"k_{{{j}}}", entry.right),
                                     entry.value, swapped=(att.query[col].tolist(), att.key[row].tolist()))
    if stage == "scaled_scores":
        return practice.scale_exercise(lhs, formula, sp.latex(_s[i, j]), entry.left[0], entry.d_k, entry.value,
                                       d_model=trace.x.shape[-1])
    if stage == "weights":
        return practice.softmax_exercise(lhs, formula, f"a_{{{i}}}", att.masked_scores.tolist(), row, col,
                                         entry.value, unscaled=att.scores.tolist(), d=entry.d_k)
    return practice.weighted_sum_exercise(lhs, formula, (f"\\alpha_{{{i}}}", entry.left),
                                          (f"v_{{:,{j}}}", entry.right), entry.value)


#: Seed 004 prints the context vector of its second token, "shiny" (0-based query 1).
SEED004_QUERY = 1


def weightless_query(query_index: int, tokens: int) -> int:
    """The query token moved inside 0..tokens − 1 (a sentence that got shorter keeps a valid query).

    Raises:
        InputError: tokens below 1.
    """
    if tokens < 1:
        raise InputError(N_("There is no query token: the sentence has no tokens."), field="sentence")
    return min(max(query_index, 0), tokens - 1)


def seed004_rounding_applies(preset: str, query_index: int, edited: bool) -> bool:
    """Whether the page shows seed 004's own printed context vector of "shiny", which differs from ours.

    Seed 004 (004_56c592a3d25bc184.txt, its last line) rounds its intermediate numbers before the sum
    (0.0779 + 0.2156 + 0.1057, ...) and prints [0.3992, 0.3858, 0.8610]; that is its example ("hello"),
    query "shiny", with X unedited. ``edited``: whether the user changed any matrix.
    """
    return preset == "hello" and query_index == SEED004_QUERY and not edited


class _SumOverIndex(sp.Function):
    """Σ_l x over every key, printed without bounds (``\\sum_{l} x``): a display symbol, never evaluated."""

    def _latex(self, printer, exp=None):
        body, index = self.args
        return r"\sum_{%s} %s" % (printer._print(index), printer._print(body))


@lru_cache(maxsize=None)
def weightless_softmax_latex() -> str:
    """α_qj = e^{ω_qj} / Σ_l e^{ω_ql}, the softmax of query q's scores over every key l, as LaTeX.

    Source: seed 004 (004_56c592a3d25bc184.txt), step 2. Constant, so cached.
    """
    q, j, key = sp.symbols("q j l")  # key: the summed index l
    omega, alpha = sp.IndexedBase(r"\omega"), sp.IndexedBase(r"\alpha")
    return sp.latex(sp.Eq(alpha[q, j], sp.exp(omega[q, j]) / _SumOverIndex(sp.exp(omega[q, key]), key), evaluate=False))


@dataclass(frozen=True)
class WeightlessSteps:
    """Seed 004's worked example for one query token, as LaTeX lines.

    Attributes:
        dots: ω_qj = x_q · x_j with every product written out, one per key token j.
        exps: e^{ω_qj} = value, one per key (as e^{ω_qj − m} with m the row maximum
            when the scores are too large for exp; the softmax is the same).
        total: Σ_j e^{ω_qj} with its terms and value.
        weights: α_qj = e^{ω_qj} / Σ = value, one per key.
        context: z_q = Σ_j α_qj x_j with the vectors written out, and the result.
        context_value: z_q as floats.
    """

    dots: tuple[str, ...]
    exps: tuple[str, ...]
    total: str
    weights: tuple[str, ...]
    context: str
    context_value: tuple[float, ...]


def weightless_steps(x: tuple[tuple[float, ...], ...], tokens: tuple[str, ...], query_index: int) -> WeightlessSteps:
    """The arithmetic of attention without trainable weights for query token ``query_index``.

    Seed 004 (004_56c592a3d25bc184.txt), "Hello shiny sun!": scores are plain
    dot products ω_qj = x_q · x_j (no scaling), α_qj = exp(ω_qj) / Σ_l exp(ω_ql),
    z_q = Σ_j α_qj x_j. Computed with :func:`functional.attention_without_weights`;
    plain-tuple arguments so that callers can cache the rendering.

    Args:
        x: X as rows, (T, D).
        tokens: the T tokens (escaped here before they enter LaTeX).
        query_index: q, 0-based, < T.

    Raises:
        IndexError: if query_index is out of range.
    """
    import torch  # local: keeps this module's import light for formula-only users

    from attention_core.self_attention.functional import attention_without_weights

    if not 0 <= query_index < len(x):
        raise IndexError(f"query_index {query_index} outside 0..{len(x) - 1}")
    trace = attention_without_weights(torch.tensor(x, dtype=torch.float32))
    q = query_index + 1
    scores = trace.scores[query_index].tolist()
    weights = trace.weights[query_index].tolist()
    # Large scores would overflow exp(); subtract the row maximum m (softmax is unchanged by it).
    shift = max(scores) if max(scores) > 80 else 0.0
    exps = [math.exp(s - shift) for s in scores]
    minus = f" - {sp.latex(sp.Float(shift, 4))}" if shift else ""
    omega, alpha, z = sp.IndexedBase(r"\omega"), sp.IndexedBase(r"\alpha"), sp.IndexedBase("z")
    xq = latex_text(tokens[query_index])

    dots, exp_lines, weight_lines = [], [], []
    for j, (row, token) in enumerate(zip(x, tokens)):
        lhs = sp.latex(omega[q, j + 1])
        products = [sp.latex(sp.Mul(number_expr(a), number_expr(b), evaluate=False), mul_symbol="dot")
                    for a, b in zip(x[query_index], row)]
        # at most 4 products per line, so that the line fits a projector
        chunks = [" + ".join(products[k:k + 4]) for k in range(0, len(products), 4)]
        dots.append(
            f"\\begin{{aligned}} {lhs} &= x_{{{xq}}} \\cdot x_{{{latex_text(token)}}} \\\\ &= "
            + " \\\\ &\\quad + ".join(chunks)
            + f" \\\\ &= {sp.latex(sp.Float(scores[j], 4))} \\end{{aligned}}"
        )
        exp_lines.append(
            f"e^{{{lhs}{minus}}} = e^{{{sp.latex(sp.Float(scores[j] - shift, 4))}}} = {sp.latex(sp.Float(exps[j], 4))}"
        )
        weight_lines.append(
            f"{sp.latex(alpha[q, j + 1])} = \\frac{{e^{{{lhs}{minus}}}}}{{\\sum_l e^{{{sp.latex(omega[q, sp.Symbol('l')])}{minus}}}}}"
            f" = \\frac{{{sp.latex(sp.Float(exps[j], 4))}}}{{{sp.latex(sp.Float(sum(exps), 4))}}}"
            f" = {sp.latex(sp.Float(weights[j], 4))}"
        )
    exp_terms = [sp.latex(sp.Float(e, 4)) for e in exps]
    total = (
        f"\\begin{{aligned}} \\sum_l e^{{{sp.latex(omega[q, sp.Symbol('l')])}{minus}}} &= "
        + " \\\\ &\\quad + ".join(" + ".join(exp_terms[k:k + 4]) for k in range(0, len(exp_terms), 4))
        + f" \\\\ &= {sp.latex(sp.Float(sum(exps), 4))} \\end{{aligned}}"
    )
    context_value = tuple(trace.output[query_index].tolist())
    terms = [
        f"{sp.latex(sp.Float(w, 4))} \\cdot {sp.latex(sp.Matrix([[sp.Float(v, 4) for v in row]]))}"
        for w, row in zip(weights, x)
    ]
    context = (
        f"\\begin{{aligned}} {sp.latex(z[q])} &= \\sum_j {sp.latex(alpha[q, sp.Symbol('j')])} x_j \\\\ &= "
        + " \\\\ &\\quad + ".join(terms)
        + f" \\\\ &= {sp.latex(sp.Matrix([[sp.Float(v, 4) for v in context_value]]))} \\end{{aligned}}"
    )
    return WeightlessSteps(tuple(dots), tuple(exp_lines), total, tuple(weight_lines), context, context_value)


@lru_cache(maxsize=None)
def header_latex() -> str:
    """The self-attention page's header: Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V (Vaswani et al. 2017, eq. 1)."""
    kt = sp.Pow(_K, _TOP, evaluate=False)
    attention = sp.Eq(sp.Function(r"\operatorname{Attention}")(_Q, _K, _V),
                      sp.Mul(_softmax(sp.Mul(_Q, kt, 1 / sp.sqrt(_d_k))), _V), evaluate=False)
    return sp.latex(attention) + r"\qquad" + latex_text("(Vaswani et al. 2017, eq. 1)")
