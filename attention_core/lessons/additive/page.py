r"""Additive attention scoring, beside the scaled dot product.

The score of query q against key k is a(q, k) = w_vᵀ tanh(W_q q + W_k k): both
vectors are mapped into a hidden space of size h, added, squashed by tanh, and
read out by w_v. Unlike q · k it needs no √d_k (tanh keeps every hidden unit in
(−1, 1), so |a| ≤ Σ_l |w_v,l|), and q and k may have different widths.

Shape legend: m queries, n keys, d_q / d_k their widths, d_v value width, h hidden size.
W_q is (h, d_q) and W_k (h, d_k), as in the formula (column vectors): for row-vector
matrices the features are Q W_qᵀ (m, h) and K W_kᵀ (n, h).

Sources: Bahdanau, Cho & Bengio 2015, "Neural Machine Translation by Jointly Learning
to Align and Translate", eq. 6 and appendix A.1.2 (a(s, h) = v_aᵀ tanh(W_a s + U_a h));
D2L §10.3.2 (additive attention, with W_q, W_k, w_v); seed 003
(003_734755b2d0b981d3.txt) §1.3: the two common ways to compute α, dot-product and
additive; seed 002 for the scaled dot product a(q, k) = q kᵀ / √d.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import sympy as sp
import torch

from attention_core.errors import N_, InputError
from attention_core.fields import IntRange, label
from attention_core.inputs.text import MAX_TOKENS
from attention_core.latex import factor
from attention_core.page import Page

#: Additive scoring: h, the scorer's hidden size.
MIN_ADDITIVE_HIDDEN, MAX_ADDITIVE_HIDDEN = 1, 16


@dataclass(frozen=True)
class AdditiveWeights:
    """The scorer's own parameters (not the projections W_q, W_k, W_v of X). float32.

    Attributes:
        w_query: W_q, (h, d_q). w_key: W_k, (h, d_k). w_v: w_v, (h,).
    """

    w_query: torch.Tensor
    w_key: torch.Tensor
    w_v: torch.Tensor


def seeded_additive_weights(d_q: int, d_k: int, hidden: int, generator: torch.Generator) -> AdditiveWeights:
    """W_q, W_k, w_v drawn like D2L's ``nn.Linear(·, h, bias=False)`` layers: U(−1/√fan_in, 1/√fan_in).

    Drawn in the order W_q, W_k, w_v from the local ``generator``.

    Raises:
        InputError: hidden outside [MIN_ADDITIVE_HIDDEN, MAX_ADDITIVE_HIDDEN] or a width below 1.
    """
    if not MIN_ADDITIVE_HIDDEN <= hidden <= MAX_ADDITIVE_HIDDEN:
        raise InputError(N_("The hidden size h must be between {low} and {high}; got {hidden}."),
                         field="additive.hidden", low=MIN_ADDITIVE_HIDDEN, high=MAX_ADDITIVE_HIDDEN, hidden=hidden)
    if d_q < 1 or d_k < 1:
        raise InputError(N_("Queries and keys need at least one component."), field="d_k")

    def uniform(shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
        bound = 1.0 / math.sqrt(fan_in)
        return torch.empty(shape).uniform_(-bound, bound, generator=generator)

    return AdditiveWeights(uniform((hidden, d_q), d_q), uniform((hidden, d_k), d_k), uniform((hidden,), hidden))


@dataclass(frozen=True)
class AdditiveTrace:
    """Every intermediate of additive attention. float32 (the inputs' dtype).

    Attributes:
        query: Q, (m, d_q). key: K, (n, d_k). value: V, (n, d_v).
        weights_in: the :class:`AdditiveWeights` used.
        query_features: Q W_qᵀ, (m, h): row i is W_q q_i.
        key_features: K W_kᵀ, (n, h): row j is W_k k_j.
        hidden: tanh(W_q q_i + W_k k_j), (m, n, h).
        scores: a(q_i, k_j) = hidden · w_v, (m, n).
        weights: softmax of each row of scores, (m, n).
        output: weights @ V, (m, d_v).
    """

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    weights_in: AdditiveWeights
    query_features: torch.Tensor
    key_features: torch.Tensor
    hidden: torch.Tensor
    scores: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor


def additive_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, params: AdditiveWeights) -> AdditiveTrace:
    """softmax(a(Q, K)) V with a(q, k) = w_vᵀ tanh(W_q q + W_k k), every step kept.

    Args:
        query: Q, (m, d_q). key: K, (n, d_k). value: V, (n, d_v). Floating point.
        params: W_q (h, d_q), W_k (h, d_k), w_v (h,).

    Returns:
        The :class:`AdditiveTrace`.

    Raises:
        InputError: shapes that do not fit (named in the message).
    """
    h = params.w_v.shape[0]
    if params.w_query.shape != (h, query.shape[-1]):
        raise InputError(N_("W_q is {shape} but must be h × d_q = {h} × {d_q}."), field="additive.hidden",
                         shape=tuple(params.w_query.shape), h=h, d_q=query.shape[-1])
    if params.w_key.shape != (h, key.shape[-1]):
        raise InputError(N_("W_k is {shape} but must be h × d_k = {h} × {d_k}."), field="additive.hidden",
                         shape=tuple(params.w_key.shape), h=h, d_k=key.shape[-1])
    if key.shape[0] != value.shape[0]:
        raise InputError(N_("There are {keys} keys but {values} values; each key needs its value."), field="value",
                         keys=key.shape[0], values=value.shape[0])
    query_features = query @ params.w_query.T  # (m, d_q) @ (d_q, h) -> (m, h)
    key_features = key @ params.w_key.T  # (n, d_k) @ (d_k, h) -> (n, h)
    hidden = torch.tanh(query_features.unsqueeze(1) + key_features.unsqueeze(0))  # (m, 1, h) + (1, n, h) -> (m, n, h)
    scores = hidden @ params.w_v  # (m, n, h) @ (h,) -> (m, n)
    weights = torch.softmax(scores, dim=-1)
    output = weights @ value  # (m, n) @ (n, d_v) -> (m, d_v)
    return AdditiveTrace(query, key, value, params, query_features, key_features, hidden, scores, weights, output)


def additive_scores_loop(query, key, params: AdditiveWeights) -> list[list[float]]:
    """The scores a(q_i, k_j) with plain Python loops (float64): the naive reference."""
    wq, wk, wv = params.w_query.tolist(), params.w_key.tolist(), params.w_v.tolist()
    q_rows, k_rows = query.tolist(), key.tolist()
    scores = []
    for q in q_rows:
        row = []
        for k in k_rows:
            total = 0.0
            for unit in range(len(wv)):  # the hidden units l = 1..h
                u = sum(wq[unit][c] * q[c] for c in range(len(q)))
                v = sum(wk[unit][c] * k[c] for c in range(len(k)))
                total += wv[unit] * math.tanh(u + v)
            row.append(total)
        scores.append(row)
    return scores


#: The additive scores agree with :func:`additive_scores_loop` when no entry differs by more than this
#: (float32 against the float64 loop: about 1e-7 for these sizes).
LOOP_TOLERANCE = 1e-5


def clamp_pair(row: int, col: int, tokens: int) -> tuple[int, int]:
    """(row, col) moved inside the tokens × tokens weights (a sentence that got shorter keeps a valid pair).

    Raises:
        InputError: tokens below 1.
    """
    if tokens < 1:
        raise InputError(N_("There is nothing to score: the sentence has no tokens."), field="sentence")
    return min(max(row, 0), tokens - 1), min(max(col, 0), tokens - 1)


@dataclass(frozen=True)
class ScorerComparison:
    """The additive scorer beside the scaled dot product on the same Q and K: every number the page shows.

    Shape legend (as the module's): n tokens (queries = keys, self-attention), d_k the width of q and k,
    h the hidden size. Tensors float32 (the inputs' dtype), except where stated.

    Attributes:
        additive: the :class:`AdditiveTrace` of softmax(a(Q, K)) V with the seeded :class:`AdditiveWeights`.
        dot_weights: softmax(Q Kᵀ / √d_k), (n, n), as given.
        row, col: the explained query–key pair, 0-based, moved inside n × n (:func:`clamp_pair`).
        query_number, key_number: the same pair 1-based (row + 1, col + 1), as the formulas write it.
        shared_scale: max(max dot_weights, max additive weights), float: one colour scale for both heatmaps.
        agreeing_queries: how many of the n queries give their largest weight to the same key under both
            scorers (int; a tie counts its first key, as ``torch.argmax``).
        w_v_column: w_v as an (h, 1) column, for a one-column heatmap.
        loop_max_abs_diff: max |additive scores − :func:`additive_scores_loop`| (float; the loop is float64).
        loop_matches: loop_max_abs_diff < :data:`LOOP_TOLERANCE`.

    Sources: Bahdanau et al. 2015 eq. 6 (a = v_aᵀ tanh(W_a s + U_a h)); seed 002 (002_26eab86218c0ec33.txt)
    for q kᵀ / √d; seed 003 (003_734755b2d0b981d3.txt) §1.3 for the comparison.
    """

    additive: AdditiveTrace
    dot_weights: torch.Tensor
    row: int
    col: int
    query_number: int
    key_number: int
    shared_scale: float
    agreeing_queries: int
    w_v_column: torch.Tensor
    loop_max_abs_diff: float
    loop_matches: bool

    @property
    def tokens(self) -> int:
        """n, the number of queries (and keys)."""
        return self.additive.scores.shape[0]

    @property
    def d_k(self) -> int:
        """The width of q and k."""
        return self.additive.key.shape[-1]

    @property
    def hidden_size(self) -> int:
        """h, the width of the scorer's hidden layer."""
        return self.additive.weights_in.w_v.shape[0]


def compare_scorers(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, dot_weights: torch.Tensor,
                    hidden: int, seed: int, row: int, col: int) -> ScorerComparison:
    """Additive attention with weights seeded ``seed`` on Q, K, V, set beside the dot product's weights.

    Args:
        query: Q, (n, d_k). key: K, (n, d_k). value: V, (n, d_v). Floating point.
        dot_weights: softmax(Q Kᵀ / √d_k), (n, n) (the walk-through's weights of the same Q and K).
        hidden: h, in [MIN_ADDITIVE_HIDDEN, MAX_ADDITIVE_HIDDEN].
        seed: seeds a local ``torch.Generator`` for W_q, W_k, w_v (:func:`seeded_additive_weights`).
        row, col: the pair to explain, 0-based (moved inside n × n when out of range).

    Returns:
        The :class:`ScorerComparison`.

    Raises:
        InputError: h out of range, no tokens, shapes that do not fit, or dot_weights not n × n.
    """
    n = query.shape[0]
    row, col = clamp_pair(row, col, n)
    params = seeded_additive_weights(query.shape[-1], key.shape[-1], hidden, torch.Generator().manual_seed(seed))
    trace = additive_attention(query, key, value, params)
    if tuple(dot_weights.shape) != tuple(trace.weights.shape):
        raise InputError(N_("The dot-product weights are {shape} but the additive ones {expected}."),
                         field="d_k", shape=tuple(dot_weights.shape), expected=tuple(trace.weights.shape))
    loop = torch.tensor(additive_scores_loop(query, key, params), dtype=torch.float64)  # (n, n)
    loop_diff = float((trace.scores.double() - loop).abs().max())
    return ScorerComparison(
        additive=trace, dot_weights=dot_weights, row=row, col=col, query_number=row + 1, key_number=col + 1,
        shared_scale=float(max(dot_weights.max(), trace.weights.max())),
        agreeing_queries=int((dot_weights.argmax(-1) == trace.weights.argmax(-1)).sum()),
        w_v_column=params.w_v.unsqueeze(1),  # (h,) -> (h, 1)
        loop_max_abs_diff=loop_diff, loop_matches=loop_diff < LOOP_TOLERANCE,
    )


# ---------------------------------------------------------------- formulas, with sympy

_i, _j, _l, _c = sp.symbols("i j l c", integer=True, positive=True)
_h, _dq, _dk = sp.Symbol("h"), sp.Symbol("d_q"), sp.Symbol("d_k", positive=True)
_q, _k = sp.IndexedBase("q"), sp.IndexedBase("k")
_Wq, _Wk, _w = sp.IndexedBase("W^{q}"), sp.IndexedBase("W^{k}"), sp.IndexedBase("w^{v}")
_a = sp.Function("a")


def _mul(*factors):
    return sp.Mul(*factors, evaluate=False)


@lru_cache(maxsize=None)
def additive_latex() -> tuple[str, str]:
    """(the vector form, the element form) of the additive score, as LaTeX."""
    q, k = sp.Symbol(r"\mathbf{q}", commutative=False), sp.Symbol(r"\mathbf{k}", commutative=False)
    Wq, Wk = sp.Symbol(r"\mathbf{W}_q", commutative=False), sp.Symbol(r"\mathbf{W}_k", commutative=False)
    wvt = sp.Symbol(r"\mathbf{w}_v^{\top}", commutative=False)
    vector = sp.Eq(_a(q, k), sp.Mul(wvt, sp.tanh(sp.Add(sp.Mul(Wq, q), sp.Mul(Wk, k), evaluate=False)),
                                    evaluate=False), evaluate=False)
    inner = sp.Add(sp.Sum(_mul(_Wq[_l, _c], _q[_i, _c]), (_c, 1, _dq)),
                   sp.Sum(_mul(_Wk[_l, _c], _k[_j, _c]), (_c, 1, _dk)), evaluate=False)
    element = sp.Eq(sp.IndexedBase("a")[_i, _j], sp.Sum(_mul(_w[_l], sp.tanh(inner)), (_l, 1, _h)), evaluate=False)
    return sp.latex(vector, order="none"), sp.latex(element, order="none")


@lru_cache(maxsize=None)
def dot_product_latex() -> tuple[str, str]:
    """(the vector form, the element form) of the scaled dot-product score, as LaTeX."""
    q, k = sp.Symbol(r"\mathbf{q}", commutative=False), sp.Symbol(r"\mathbf{k}^{\top}", commutative=False)
    vector = sp.Eq(_a(sp.Symbol(r"\mathbf{q}"), sp.Symbol(r"\mathbf{k}")), sp.Mul(q, k) / sp.sqrt(_dk), evaluate=False)
    element = sp.Eq(sp.IndexedBase("a")[_i, _j], sp.Sum(_mul(_q[_i, _c], _k[_j, _c]), (_c, 1, _dk)) / sp.sqrt(_dk), evaluate=False)
    return sp.latex(vector, order="none"), sp.latex(element, order="none")


def _rows_of(terms: list[str], per_line: int = 4) -> str:
    """Terms joined by +, broken after every ``per_line`` terms (inside an aligned block)."""
    lines = [" + ".join(terms[k:k + per_line]) for k in range(0, len(terms), per_line)]
    return r" \\ &\quad + ".join(lines)


def additive_entry_latex(trace: AdditiveTrace, row: int, col: int) -> tuple[str, str, str]:
    """Score a(q_row, k_col) with every number substituted, as LaTeX.

    Returns:
        (u = W_q q_i with its numbers, c = W_k k_j with its numbers,
         a_ij = Σ_l w_l tanh(u_l + c_l) with the numbers, the tanh values and the result, as an
         aligned block). Indices 1-based.

    Raises:
        IndexError: row or col out of range.
    """
    m, n = trace.scores.shape
    if not (0 <= row < m and 0 <= col < n):
        raise IndexError(f"entry ({row}, {col}) is outside {m} × {n}")
    i, j = row + 1, col + 1

    def vector(values) -> str:
        return r"\begin{pmatrix}" + r" & ".join(sp.latex(sp.Float(float(v), 4)) for v in values) + r"\end{pmatrix}"

    u, c = trace.query_features[row].tolist(), trace.key_features[col].tolist()
    w_v, hidden = trace.weights_in.w_v.tolist(), trace.hidden[row, col].tolist()
    u_text = r"\mathbf{u} = \mathbf{W}_q \mathbf{q}_{%d} = %s" % (i, vector(u))
    c_text = r"\mathbf{c} = \mathbf{W}_k \mathbf{k}_{%d} = %s" % (j, vector(c))
    written = [r"%s \tanh\left(%s + %s\right)" % (factor(w), factor(a), factor(b)) for w, a, b in zip(w_v, u, c)]
    tanh_done = [r"%s \cdot %s" % (factor(w), factor(t)) for w, t in zip(w_v, hidden)]
    a_text = (r"\begin{aligned} a_{%d,%d} &= \sum_{l=1}^{h} w^{v}_{l} \tanh\left(u_{l} + c_{l}\right) \\ "
              r"&= %s \\ &= %s \\ &= %s \end{aligned}") % (
        i, j, _rows_of(written, 2), _rows_of(tanh_done), sp.latex(sp.Float(float(trace.scores[row, col]), 4)))
    return u_text, c_text, a_text


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class AdditiveSettings:
    """The additive page's own settings (``settings.additive``).

    Attributes:
        hidden: h, the additive scorer's hidden size (MIN_ADDITIVE_HIDDEN..MAX_ADDITIVE_HIDDEN).
        row, col: the (query, key) score explained (0-based; the page clamps them to the sentence).
    """

    hidden: int = 4
    row: int = 0
    col: int = 1


ADDITIVE = Page(
    key="additive", title=N_("Additive vs dot-product scoring"), icon=":material/add_circle:", section="experiments",
    summary=N_("Additive vs dot-product scoring"),
    settings=AdditiveSettings,
    fields=(
        IntRange("hidden", MIN_ADDITIVE_HIDDEN, MAX_ADDITIVE_HIDDEN, label(N_("The hidden size h"))),
        IntRange("row", 0, MAX_TOKENS - 1, label(N_("The query token"))),
        IntRange("col", 0, MAX_TOKENS - 1, label(N_("The key token"))),
    ),
    legacy={"additive_hidden": "hidden", "additive_row": "row", "additive_col": "col"},
)
