r"""A temperature τ on the attention softmax: weights = softmax(Q Kᵀ / (τ √d_k)).

τ = 1 is ordinary scaled dot-product attention. As τ → 0 the weights tend to the
argmax of each row (one-hot; ties share equally); as τ → ∞ they tend to uniform
(1/n each). The entropy of a row, H = −Σ_j α_j ln α_j, goes from 0 to ln n.

Shape legend: m queries, n keys, d_k query/key width, d_v value width, P temperatures.

Sources: Vaswani et al. 2017, eq. 1 (τ = 1); seed 002 (002_26eab86218c0ec33.txt)
for a(q, k) = q kᵀ / √d and the row softmax; the temperature is the softmax
temperature of Hinton et al. 2015, "Distilling the Knowledge in a Neural Network", §2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import sympy as sp
import torch
import torch.nn.functional as F

from attention_core.errors import N_, InputError, Message
from attention_core.fields import FloatRange, IntRange, label
from attention_core.inputs.text import MAX_TOKENS
from attention_core.latex import latex_text, number
from attention_core.page import Page
from attention_core.self_attention.functional import entropy, scaled_dot_product_attention

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

#: The grid temperature nearest to τ on a log scale (τ > 0); see ``nearest_temperature``.
nearest_temperature = nearest_temperature


@dataclass(frozen=True)
class TemperatureTrace:
    """Attention at temperature τ, with the two limits for comparison. Tensors float32.

    Attributes:
        tau: τ.
        d_k: the query/key width.
        scale: 1 / (τ √d_k), the factor the scores are multiplied by.
        scores: Q Kᵀ, (m, n).
        tempered_scores: scores · scale, (m, n).
        weights: softmax of the tempered scores, (m, n); rows sum to 1.
        entropy: H of each row of weights, (m,), in nats.
        max_entropy: ln n, the entropy of uniform weights.
        output: weights @ V, (m, d_v).
        argmax_weights: the τ → 0 limit, (m, n): 1 on each row's largest score (ties share).
        uniform_weights: the τ → ∞ limit, (m, n): 1/n everywhere.
        torch_max_abs_diff: max |output − F.scaled_dot_product_attention(Q, K, V, scale=scale)|.
        torch_matches: whether they agree to rtol = atol = 1e-5.
    """

    tau: float
    d_k: int
    scale: float
    scores: torch.Tensor
    tempered_scores: torch.Tensor
    weights: torch.Tensor
    entropy: torch.Tensor
    max_entropy: float
    output: torch.Tensor
    argmax_weights: torch.Tensor
    uniform_weights: torch.Tensor
    torch_max_abs_diff: float
    torch_matches: bool


def _check_tau(tau: float) -> None:
    if not (isinstance(tau, (int, float)) and math.isfinite(tau) and tau > 0):
        raise InputError(N_("The temperature τ must be a positive number; got {tau}."), field="temperature.tau", tau=tau)


def temperature_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, tau: float) -> TemperatureTrace:
    """softmax(Q Kᵀ / (τ √d_k)) V, with each row's entropy and the τ → 0 and τ → ∞ limits.

    Args:
        query: Q, (m, d_k). key: K, (n, d_k). value: V, (n, d_v). Floating point.
        tau: τ > 0.

    Returns:
        The :class:`TemperatureTrace`.

    Raises:
        InputError: τ not a positive finite number, or shapes that do not fit
            (as :func:`functional.scaled_dot_product_attention`).
    """
    _check_tau(tau)
    d_k = query.shape[-1]
    scale = 1.0 / (tau * math.sqrt(d_k))
    trace = scaled_dot_product_attention(query, key, value, scale=scale)
    weights = trace.weights  # (m, n)
    n = key.shape[-2]
    top = trace.scores.max(dim=-1, keepdim=True).values  # (m, 1)
    ties = (trace.scores == top).to(weights.dtype)  # (m, n): 1 on each row's largest score(s)
    argmax = ties / ties.sum(dim=-1, keepdim=True)
    reference = F.scaled_dot_product_attention(query, key, value, scale=scale)
    diff = float((trace.output - reference).abs().max())
    return TemperatureTrace(
        tau=float(tau), d_k=d_k, scale=scale, scores=trace.scores, tempered_scores=trace.scaled_scores,
        weights=weights, entropy=entropy(weights), max_entropy=math.log(n), output=trace.output,
        argmax_weights=argmax, uniform_weights=torch.full_like(weights, 1.0 / n),
        torch_max_abs_diff=diff, torch_matches=bool(torch.allclose(trace.output, reference, rtol=1e-5, atol=1e-5)),
    )


@dataclass(frozen=True)
class TemperatureSweep:
    """The weights' mean entropy and mean largest weight over a range of τ.

    Attributes:
        taus: the temperatures, (P,) as a tuple.
        mean_entropy: (P,) the entropy of each row, averaged over the rows (nats).
        mean_max_weight: (P,) the largest weight of each row, averaged over the rows.
        max_entropy: ln n.
    """

    taus: tuple[float, ...]
    mean_entropy: torch.Tensor
    mean_max_weight: torch.Tensor
    max_entropy: float


def temperature_sweep(scores: torch.Tensor, d_k: int, taus: tuple[float, ...] = TEMPERATURE_GRID) -> TemperatureSweep:
    """The weights softmax(scores / (τ √d_k)) for every τ of ``taus`` at once, summarised.

    Args:
        scores: Q Kᵀ, (m, n).
        d_k: the query/key width.
        taus: positive temperatures.

    Raises:
        InputError: a τ that is not positive.
    """
    for tau in taus:
        _check_tau(tau)
    t = torch.tensor(taus, dtype=scores.dtype).view(-1, 1, 1)  # (P, 1, 1)
    weights = torch.softmax(scores.unsqueeze(0) / (t * math.sqrt(d_k)), dim=-1)  # (P, m, n)
    return TemperatureSweep(
        taus=tuple(taus), mean_entropy=entropy(weights).mean(dim=-1),
        mean_max_weight=weights.max(dim=-1).values.mean(dim=-1), max_entropy=math.log(scores.shape[-1]),
    )


def clamp_row(row: int, queries: int) -> int:
    """``row`` moved inside 0..queries − 1 (a sentence that got shorter keeps a valid row).

    Raises:
        InputError: queries below 1.
    """
    if queries < 1:
        raise InputError(N_("There is nothing to weigh: the sentence has no tokens."), field="sentence")
    return min(max(row, 0), queries - 1)


@dataclass(frozen=True)
class TemperatureView:
    """Everything the temperature page shows for one τ and one explained row.

    Shape legend (as the module's): m queries, n keys, P temperatures of the sweep.

    Attributes:
        trace: the :class:`TemperatureTrace` at τ.
        sweep: the :class:`TemperatureSweep` of the same scores over ``taus``.
        row: the explained query row, 0-based, moved inside 0..m − 1 (:func:`clamp_row`).
        row_number: row + 1, as the formulas write it.
        row_favourite: the key with the row's largest weight (int; a tie gives its first key, as
            ``torch.argmax``).
        marked: (P,) bools, True where the sweep's τ is the current τ (the chart's marker).
        max_entropy_line: (P,) ln n at every τ of the sweep (the chart's dashed line).

    Sources: as the module's (Vaswani et al. 2017 eq. 1; Hinton et al. 2015 §2 for τ).
    """

    trace: TemperatureTrace
    sweep: TemperatureSweep
    row: int
    row_number: int
    row_favourite: int
    marked: tuple[bool, ...]
    max_entropy_line: tuple[float, ...]


def temperature_view(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, tau: float, row: int,
                     taus: tuple[float, ...] = TEMPERATURE_GRID) -> TemperatureView:
    """Attention at τ (:func:`temperature_attention`), the sweep over ``taus`` and the explained row.

    Args:
        query: Q, (m, d_k). key: K, (n, d_k). value: V, (n, d_v). Floating point.
        tau: τ > 0.
        row: the query row to write out, 0-based (moved inside 0..m − 1 when out of range).
        taus: the sweep's temperatures (default: the slider's grid).

    Returns:
        The :class:`TemperatureView`.

    Raises:
        InputError: τ (or a τ of ``taus``) not positive, no queries, or shapes that do not fit.
    """
    row = clamp_row(row, query.shape[0])
    trace = temperature_attention(query, key, value, tau)
    sweep = temperature_sweep(trace.scores, trace.d_k, taus)
    return TemperatureView(
        trace=trace, sweep=sweep, row=row, row_number=row + 1, row_favourite=int(trace.weights[row].argmax()),
        marked=tuple(t == trace.tau for t in sweep.taus), max_entropy_line=(sweep.max_entropy,) * len(sweep.taus),
    )


# ---------------------------------------------------------------- formulas, with sympy

_i, _j, _l = sp.symbols("i j l", integer=True, positive=True)
_n = sp.Symbol("n", integer=True, positive=True)
_tau = sp.Symbol(r"\tau", positive=True)
_d_k = sp.Symbol("d_k", positive=True)
_s, _alpha = sp.IndexedBase("s"), sp.IndexedBase(r"\alpha")


@lru_cache(maxsize=None)
def temperature_latex() -> tuple[str, str]:
    """(the weights with a temperature, the entropy of a row), as LaTeX."""
    exp = sp.Function(r"\exp")  # printed exp(s / (τ √d_k)): a fraction in a superscript is too small to read
    weight = sp.Eq(_alpha[_i, _j], exp(_s[_i, _j] / (_tau * sp.sqrt(_d_k)))
                   / sp.Sum(exp(_s[_i, _l] / (_tau * sp.sqrt(_d_k))), (_l, 1, _n)), evaluate=False)
    h = sp.Eq(sp.IndexedBase("H")[_i], -sp.Sum(sp.Mul(_alpha[_i, _j], sp.log(_alpha[_i, _j]), evaluate=False),
                                                (_j, 1, _n)), evaluate=False)
    # \dfrac: a plain \frac inside exp( ) inside the big fraction is set too small to read on a projector.
    weight_text = sp.latex(weight).replace(r"\frac{{s}", r"\dfrac{{s}")
    return weight_text, sp.latex(h, order="none", ln_notation=True) + r"\qquad 0 \le H_i \le \ln n"


def limits_latex(tr: Callable[..., str] = Message) -> tuple[str, str, str]:
    r"""The two limits on two keys with scores s_1 > s_2, computed by ``sympy.limit``: (α_1, τ → 0, τ → ∞).

    α_1 = e^{s_1/c} / (e^{s_1/c} + e^{s_2/c}) = 1 / (1 + e^{−Δ/c}), c = τ √d_k, Δ = s_1 − s_2 > 0.

    Args:
        tr: puts the word "(uniform)" in the interface language (default: English); the pages
            pass ``ui.i18n._``.
    """
    start, cold, hot = _limits()
    return (start, r"\lim_{\tau \to 0^{+}} \alpha_1 = %s \quad \text{(argmax)}" % cold,
            r"\lim_{\tau \to \infty} \alpha_1 = %s \quad %s" % (hot, latex_text(str(tr(N_("(uniform)"))))))


@lru_cache(maxsize=None)
def _limits() -> tuple[str, str, str]:
    """(α_1's definition, its limit as τ → 0, its limit as τ → ∞) as LaTeX; constant, so cached."""
    delta = sp.Symbol(r"\Delta", positive=True)  # s_1 − s_2 > 0
    alpha_1 = 1 / (1 + sp.exp(-delta / (_tau * sp.sqrt(_d_k))))
    cold = sp.limit(alpha_1, _tau, 0, dir="+")
    hot = sp.limit(alpha_1, _tau, sp.oo)
    lhs = sp.Symbol(r"\alpha_1")
    start = r"%s = %s,\ \ \Delta = s_1 - s_2 > 0" % (sp.latex(lhs), sp.latex(alpha_1))
    return start, sp.latex(cold), sp.latex(hot)


def row_latex(trace: TemperatureTrace, row: int) -> tuple[str, str]:
    """One row's tempered scores and entropy with their numbers substituted, as LaTeX.

    Returns:
        (a_{i,j} = s_{i,j} / (τ √d_k) for the row's first keys, H_i = −Σ α ln α with the numbers).

    Raises:
        IndexError: row out of range.
    """
    m, n = trace.weights.shape
    if not 0 <= row < m:
        raise IndexError(f"row {row} is outside 0..{m - 1}")
    i = row + 1
    shown = min(n, 4)
    parts = [r"\frac{%s}{%s \cdot \sqrt{%d}} = %s" % (number(float(trace.scores[row, j])), number(trace.tau), trace.d_k,
                                                     number(float(trace.tempered_scores[row, j]))) for j in range(shown)]
    more = r",\ \ldots" if n > shown else ""
    scaled = r"a_{%d,j} = \frac{s_{%d,j}}{\tau \sqrt{d_k}}:\quad " % (i, i) + r",\ \ ".join(parts) + more
    weights = [float(w) for w in trace.weights[row]]
    terms = [r"%s \ln %s" % (number(w), number(w)) if w > 0 else "0" for w in weights]
    terms = [t.replace(r"\ln " + number(w), r"\ln\left(%s\right)" % number(w)) if r"\cdot" in number(w) else t
             for t, w in zip(terms, weights)]  # ln(5.0 · 10⁻⁵), not ln 5.0 · 10⁻⁵
    lines = [" + ".join(terms[k:k + 3]) for k in range(0, len(terms), 3)]  # 3 terms a line: fits a projector
    h = (r"\begin{aligned} H_{%d} &= -\big(%s\big) \\ &= %s \end{aligned}"
         % (i, r" \\ &\qquad + ".join(lines), number(float(trace.entropy[row]))))
    return scaled, h


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class TemperatureSettings:
    """The temperature page's own settings (``settings.temperature``).

    Attributes:
        tau: τ in softmax(Q Kᵀ / (τ √d_k)), one of TEMPERATURE_GRID (other values are moved to the nearest, with a message).
        row: the query row whose numbers are written out (0-based).
    """

    tau: float = 1.0
    row: int = 0


TEMPERATURE_PAGE = Page(
    key="temperature", title=N_("Temperature"), icon=":material/device_thermostat:", section="experiments",
    summary=N_("Temperature: from argmax to uniform"),
    settings=TemperatureSettings,
    fields=(
        FloatRange("tau", MIN_TEMPERATURE, MAX_TEMPERATURE, "tau",
                   malformed=N_("τ must be a number; got “{raw}”, using {value:g}."),
                   out_of_range=N_("τ must be between {low:g} and {high:g}; got {tau:g}, using {clamped:g}."),
                   snap=nearest_temperature,
                   off_grid=N_("τ = {tau:g} is not one of the slider's values; using the nearest, {snapped:g}.")),
        IntRange("row", 0, MAX_TOKENS - 1, label(N_("The query row"))),
    ),
    legacy={"temperature": "tau", "temperature_row": "row"},
)
