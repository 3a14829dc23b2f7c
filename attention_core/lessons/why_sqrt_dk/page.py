r"""Why the scores are divided by √d_k: the variance of a dot product, measured and derived.

If the components of q and k are independent with mean 0 and variance 1, then
s = q · k = Σ_{l=1}^{d_k} q_l k_l has E[s] = 0 and Var[s] = d_k, so the scores
spread out as d_k grows and the softmax over them saturates (nearly all weight
on one key). Dividing by √d_k brings the variance back to 1.

Shape legend: G points of the d_k grid, S sampled (q, k) pairs, R query rows,
n keys per row, D_max = the largest d_k.

Sources: Vaswani et al. 2017, "Attention Is All You Need", §3.2.1 and its
footnote 4 (the variance argument); seed 002 (002_26eab86218c0ec33.txt), after
D2L §10.3, a(q, k) = q kᵀ / √d. Seed 002 writes that the dot product's variance
is "n"; with its own notation (q, k ∈ R^{1×k}) it is the width k, i.e. d_k.

The sampling error (used by the tests and the page's error bars): for one term
z = q_l k_l, E[z²] = 1 and E[z⁴] = E[q⁴] E[k⁴] = κ², with κ the components'
fourth moment (3 for a Gaussian, 9/5 for a uniform, 1 for ±1). Expanding
E[s⁴] = d_k κ² + 3 d_k (d_k − 1), so Var[s²] = 2 d_k² + d_k (κ² − 3) (for a Gaussian:
2 d_k² + 6 d_k). The unbiased sample variance of S samples then has variance
(E[s⁴] − d_k² (S − 3) / (S − 1)) / S = (2 d_k² + d_k (κ² − 3) + 2 d_k² / (S − 1)) / S, about
Var[s²] / S; its square root is the standard error. The sample mean's is √(d_k / S).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import sympy as sp
import torch
import torch.nn.functional as F

from attention_core.errors import N_, InputError, Message
from attention_core.fields import Choice, IntRange, label
from attention_core.page import Page
from attention_core.self_attention.formulas import latex_text
from attention_core.self_attention.functional import entropy

#: Why √d_k: S, the (q, k) pairs sampled per d_k, and n, the keys each sampled query meets.
MIN_SQRT_SAMPLES, MAX_SQRT_SAMPLES = 100, 5000

MIN_SQRT_KEYS, MAX_SQRT_KEYS = 2, 32

#: Why √d_k: the components' distributions (keys of ``scaling.DISTRIBUTIONS``).
SQRT_DISTRIBUTIONS: tuple[str, ...] = ("normal", "uniform", "rademacher")

#: How a word gets into a formula in the interface language: ``tr(template)`` (the pages pass
#: ``ui.i18n._``; the default keeps the English). Written with ``formulas.latex_text``.
Translate = Callable[..., str]

#: The component distributions offered: key -> label. Each has mean 0 and variance 1.
#: Its keys are declared in ``SQRT_DISTRIBUTIONS`` (the settings validate against them).
DISTRIBUTIONS: dict[str, str] = {
    "normal": N_("Gaussian N(0, 1)"),
    "uniform": N_("uniform on [−√3, √3]"),
    "rademacher": N_("±1, each with probability ½"),
}
#: E[x⁴] of each distribution (κ in the module docstring).
FOURTH_MOMENT: dict[str, float] = {"normal": 3.0, "uniform": 9.0 / 5.0, "rademacher": 1.0}

#: d_k = 1, 2, 4, ..., 1024: log-spaced, as the issue asks (1 to 1024).
D_K_GRID: tuple[int, ...] = tuple(2**p for p in range(11))
#: The softmax experiment averages over at most this many query rows (each with n keys of
#: width up to 1024: 500 × 32 × 1024 floats is the largest draw, 65 MB).
SOFTMAX_ROWS = 500


def draw_components(shape: tuple[int, ...], distribution: str, generator: torch.Generator) -> torch.Tensor:
    """Independent components with mean 0 and variance 1, float32, of ``shape``.

    Args:
        shape: the tensor shape.
        distribution: a key of :data:`DISTRIBUTIONS`.
        generator: the random source (seeded by the caller).

    Raises:
        InputError: for an unknown distribution.
    """
    if distribution == "normal":
        return torch.randn(shape, generator=generator)
    if distribution == "uniform":
        # U(−√3, √3): variance 1; in place (the same operations in the same order: the same numbers, fewer passes)
        return torch.rand(shape, generator=generator).mul_(2.0).sub_(1.0).mul_(math.sqrt(3.0))
    if distribution == "rademacher":
        return torch.empty(shape).bernoulli_(0.5, generator=generator).mul_(2.0).sub_(1.0)
    raise InputError(N_("Unknown distribution “{distribution}”; pick one of {choices}."),
                     field="why_sqrt_dk.distribution", distribution=distribution, choices=", ".join(DISTRIBUTIONS))


def variance_standard_error(d_k: int, samples: int, distribution: str = "normal") -> float:
    """The standard error of the unbiased sample variance of S values of q · k (see the module docstring).

    √((2 d_k² + d_k (κ² − 3) + 2 d_k² / (S − 1)) / S) ≈ √((2 d_k² + d_k (κ² − 3)) / S); S >= 2.
    """
    kappa = FOURTH_MOMENT[distribution]
    return math.sqrt((2 * d_k**2 + d_k * (kappa**2 - 3) + 2 * d_k**2 / (samples - 1)) / samples)


@dataclass(frozen=True)
class ScalingExperiment:
    """The measured statistics, one value per d_k of the grid (tensors are float32, shape (G,)).

    Attributes:
        d_k: the grid, (G,) as a tuple.
        samples: S, the (q, k) pairs of the variance experiment.
        keys: n, the keys each query row meets in the softmax experiment.
        rows: R = min(S, SOFTMAX_ROWS), the query rows of the softmax experiment.
        distribution: a key of :data:`DISTRIBUTIONS`.
        seed: the seed of the local generator.
        mean: the sample mean of q · k.
        variance: the sample variance (unbiased) of q · k.
        scaled_variance: the sample variance of q · k / √d_k.
        standard_error: the standard error of ``variance`` (see the module docstring).
        max_weight_raw, max_weight_scaled: the largest weight of softmax(q Kᵀ) and of
            softmax(q Kᵀ / √d_k), averaged over the R rows.
        entropy_raw, entropy_scaled: the entropy of those weights (nats), averaged;
            uniform weights have ln n, one-hot weights 0.
        torch_max_abs_diff: max |our scaled weights − F.scaled_dot_product_attention(q, K, I_n)|
            over the grid (with V = I_n the attention output is the weights themselves).
        torch_matches: whether they agree to 1e-5.
    """

    d_k: tuple[int, ...]
    samples: int
    keys: int
    rows: int
    distribution: str
    seed: int
    mean: torch.Tensor
    variance: torch.Tensor
    scaled_variance: torch.Tensor
    standard_error: torch.Tensor
    max_weight_raw: torch.Tensor
    max_weight_scaled: torch.Tensor
    entropy_raw: torch.Tensor
    entropy_scaled: torch.Tensor
    torch_max_abs_diff: float
    torch_matches: bool


def run_scaling_experiment(
    samples: int,
    keys: int,
    seed: int,
    distribution: str = "normal",
    grid: tuple[int, ...] = D_K_GRID,
) -> ScalingExperiment:
    """Sample q and k and measure Var(q · k) and the softmax's peakedness for each d_k of ``grid``.

    Vectorised: one draw of S × D_max components for q and for k; the dot product over
    the first d components is column d − 1 of the running sum of q_l k_l. Each d_k's
    samples are therefore the first d_k components of the same vectors: every point is
    an honest sample on its own, and neighbouring points are correlated (a smooth curve).
    The only Python loops run over the grid (11 values), never over samples. The two experiments draw from
    their own generators (``seed`` and ``seed + SOFTMAX_STREAM``) and are kept per their own arguments, so a
    click that changes S or n redraws only the experiment that depends on it; when both are drawn (a new seed or
    distribution) they are drawn at once, the softmax experiment on a worker thread (the same numbers).

    Args:
        samples: S, in [MIN_SQRT_SAMPLES, MAX_SQRT_SAMPLES].
        keys: n, in [MIN_SQRT_KEYS, MAX_SQRT_KEYS].
        seed: seeds a local ``torch.Generator`` (the global RNG is untouched).
        distribution: a key of :data:`DISTRIBUTIONS`.
        grid: increasing d_k values, each at least 1.

    Returns:
        The :class:`ScalingExperiment`.

    Raises:
        InputError: samples or keys out of range, an unknown distribution, or a bad grid.
    """
    if not MIN_SQRT_SAMPLES <= samples <= MAX_SQRT_SAMPLES:
        raise InputError(N_("The number of samples must be between {low} and {high}; got {samples}."),
                         field="why_sqrt_dk.samples", low=MIN_SQRT_SAMPLES, high=MAX_SQRT_SAMPLES, samples=samples)
    if not MIN_SQRT_KEYS <= keys <= MAX_SQRT_KEYS:
        raise InputError(N_("The number of keys must be between {low} and {high}; got {keys}."),
                         field="why_sqrt_dk.keys", low=MIN_SQRT_KEYS, high=MAX_SQRT_KEYS, keys=keys)
    if not grid or any(d < 1 for d in grid) or list(grid) != sorted(set(grid)):
        raise InputError(N_("The d_k grid must be increasing whole numbers, each at least 1."), field="grid")
    rows = min(samples, SOFTMAX_ROWS)
    # The two halves at once when neither is kept (a new seed or distribution): the softmax half on a worker thread,
    # the variance half here. Each draws from its own generator, so the numbers are those of one after the other;
    # torch lets go of Python's lock while it draws, so a first draw waits for the longer half, not for both.
    softmax = _HALVES.submit(_softmax_part, rows, keys, seed, distribution, tuple(grid))
    mean, variance, scaled_variance, standard_error = _variance_part(samples, seed, distribution, tuple(grid))
    max_raw, max_scaled, ent_raw, ent_scaled, worst = softmax.result()
    return ScalingExperiment(
        d_k=tuple(grid), samples=samples, keys=keys, rows=rows, distribution=distribution, seed=seed,
        mean=mean, variance=variance, scaled_variance=scaled_variance, standard_error=standard_error,
        max_weight_raw=max_raw, max_weight_scaled=max_scaled, entropy_raw=ent_raw, entropy_scaled=ent_scaled,
        torch_max_abs_diff=worst, torch_matches=worst <= 1e-5,
    )


#: The softmax experiment draws from its own generator, seeded with seed + SOFTMAX_STREAM (seeds are below 2³¹, so
#: the two streams never share a seed): changing S then redraws only the variance experiment, changing n only the
#: softmax experiment.
SOFTMAX_STREAM = 2**32
#: How many results of each half the process keeps. A result is a few G-long float32 tensors (~5 kB with Python's and
#: torch's overhead: ~2.5 MB per half when full), so the combinations of S, n, seed and distribution that a class tries
#: (a few hundred) all stay kept: a click back to a value seen is free.
PARTS_KEPT = 512
#: The worker threads the softmax half runs on (:func:`run_scaling_experiment`): two, so that two sessions' first draws
#: do not queue behind each other.
_HALVES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="scaling-softmax")


@lru_cache(maxsize=PARTS_KEPT)
def _variance_part(samples: int, seed: int, distribution: str,
                   grid: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The variance experiment: (mean, variance, scaled variance, standard error), each (G,) float32.

    S independent (q, k) pairs from ``torch.Generator().manual_seed(seed)``; kept per arguments (the tensors are
    shared read-only)."""
    g = torch.Generator().manual_seed(seed)
    index = torch.tensor(grid) - 1  # (G,): column d - 1 of a running sum is the sum over d components
    q = draw_components((samples, grid[-1]), distribution, g)  # (S, D_max)
    k = draw_components((samples, grid[-1]), distribution, g)  # (S, D_max)
    dots = (q * k).cumsum(dim=-1)[:, index].T  # (S, D_max) -> (S, G) -> (G, S): q · k over the first d_k
    d = torch.tensor(grid, dtype=torch.float32)  # (G,)
    standard_error = torch.tensor([variance_standard_error(dk, samples, distribution) for dk in grid])
    return dots.mean(dim=-1), dots.var(dim=-1), (dots / d.sqrt().unsqueeze(-1)).var(dim=-1), standard_error


@lru_cache(maxsize=PARTS_KEPT)
def _softmax_part(rows: int, keys: int, seed: int, distribution: str, grid: tuple[int, ...]) -> tuple[
        torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, float]:
    """The softmax experiment: (max weight raw, scaled, entropy raw, scaled), each (G,) float32, and the largest
    difference from ``F.scaled_dot_product_attention``.

    R query rows, each against n keys, from ``torch.Generator().manual_seed(seed + SOFTMAX_STREAM)``; kept per
    arguments (the tensors are shared read-only)."""
    g = torch.Generator().manual_seed(seed + SOFTMAX_STREAM)
    d_max = grid[-1]
    query = draw_components((rows, 1, 1, d_max), distribution, g)  # (R, 1, 1, D_max): one query per row
    key = draw_components((rows, 1, keys, d_max), distribution, g)  # (R, 1, n, D_max): n keys per row
    # V = I_n, so the attention output is the weights. Views, broadcast over the rows, never copied: contiguous
    # copies of each d_k's slices (R × n × d_k floats per grid point) cost more than the function itself.
    identity = torch.eye(keys).expand(rows, 1, keys, keys)  # (R, 1, n, n)
    stats = {"max_raw": [], "max_scaled": [], "ent_raw": [], "ent_scaled": []}
    worst = 0.0
    for dk in grid:  # over the grid only
        q_d, k_d = query[..., :dk], key[..., :dk]  # views: (R, 1, 1, d_k), (R, 1, n, d_k)
        scores = (q_d @ k_d.transpose(-2, -1))[:, 0, 0]  # (R, 1, 1, d_k) @ (R, 1, d_k, n) -> (R, n)
        raw = torch.softmax(scores, dim=-1)
        scaled = torch.softmax(scores / math.sqrt(dk), dim=-1)
        reference = F.scaled_dot_product_attention(q_d, k_d, identity)[:, 0, 0]  # (R, n)
        worst = max(worst, float((scaled - reference).abs().max()))
        stats["max_raw"].append(raw.max(dim=-1).values.mean())
        stats["max_scaled"].append(scaled.max(dim=-1).values.mean())
        stats["ent_raw"].append(entropy(raw).mean())
        stats["ent_scaled"].append(entropy(scaled).mean())
    return (torch.stack(stats["max_raw"]), torch.stack(stats["max_scaled"]), torch.stack(stats["ent_raw"]),
            torch.stack(stats["ent_scaled"]), worst)


#: The lower end of an error bar is kept at or above this: the variance chart has a log axis.
ERROR_BAR_FLOOR = 1e-3
#: The entropy chart's axis reaches this factor × ln n (a little room above the uniform line).
ENTROPY_AXIS_HEADROOM = 1.05


@dataclass(frozen=True)
class ScalingSummary:
    """What the page draws and writes from a :class:`ScalingExperiment`, one value per d_k of its grid.

    Python floats (the experiment's float32 values read with ``tolist``); tuples of length G (the grid).

    Attributes:
        d_k: the grid.
        variance_low, variance_high: the error bar of the measured Var(q · k): ± 2 standard errors,
            the lower end at least :data:`ERROR_BAR_FLOOR` (log axis).
        theory_variance: Var[q · k] = d_k (the derivation), as the grid's integers.
        theory_scaled_variance: Var[q · k / √d_k] = 1 at every d_k.
        variance_ratio: measured Var(q · k) / d_k (≈ 1).
        largest_d_k: the grid's last d_k.
        largest_sd: √largest_d_k, the theoretical standard deviation of the scores there.
        exp_largest_sd: e^{largest_sd}: how far apart two exponentials of the scores are, one s.d. apart.
        uniform_weight: 1 / n, the largest weight of uniform weights over the n keys.
        uniform_entropy: ln n, the entropy of uniform weights (the largest possible).
        uniform_weight_line, uniform_entropy_line: those values at every d_k (the charts' dashed lines).
        entropy_axis_top: :data:`ENTROPY_AXIS_HEADROOM` × ln n, the top of the entropy chart's axis.

    Sources: the module docstring (Var = d_k, the standard error); seed 002 for the scores.
    """

    d_k: tuple[int, ...]
    variance_low: tuple[float, ...]
    variance_high: tuple[float, ...]
    theory_variance: tuple[int, ...]
    theory_scaled_variance: tuple[float, ...]
    variance_ratio: tuple[float, ...]
    largest_d_k: int
    largest_sd: float
    exp_largest_sd: float
    uniform_weight: float
    uniform_entropy: float
    uniform_weight_line: tuple[float, ...]
    uniform_entropy_line: tuple[float, ...]
    entropy_axis_top: float


def summarise(result: ScalingExperiment) -> ScalingSummary:
    """The error bars, theory lines, ratios and uniform baselines of ``result`` (see :class:`ScalingSummary`).

    Args:
        result: from :func:`run_scaling_experiment`, which has already checked it (a non-empty grid of
            d_k >= 1, n >= MIN_SQRT_KEYS keys), so nothing is raised.
    """
    d = list(result.d_k)
    var, se = result.variance.tolist(), result.standard_error.tolist()
    n = result.keys
    largest_sd = math.sqrt(d[-1])
    return ScalingSummary(
        d_k=tuple(d),
        variance_low=tuple(max(v - 2 * e, ERROR_BAR_FLOOR) for v, e in zip(var, se)),
        variance_high=tuple(v + 2 * e for v, e in zip(var, se)),
        theory_variance=tuple(d),
        theory_scaled_variance=(1.0,) * len(d),
        variance_ratio=tuple(v / k for v, k in zip(var, d)),
        largest_d_k=d[-1], largest_sd=largest_sd, exp_largest_sd=math.exp(largest_sd),
        uniform_weight=1 / n, uniform_entropy=math.log(n),
        uniform_weight_line=(1.0 / n,) * len(d), uniform_entropy_line=(math.log(n),) * len(d),
        entropy_axis_top=math.log(n) * ENTROPY_AXIS_HEADROOM,
    )


# ---------------------------------------------------------------- the derivation, with sympy


@dataclass(frozen=True)
class DerivationStep:
    """One line of the derivation: the LaTeX and the reason it holds (English, marked with N_ for translation)."""

    latex: str
    reason: str


class _Expectation(sp.Function):
    """E[x], printed with square brackets (a display symbol: sympy never evaluates it)."""

    def _latex(self, printer, exp=None):
        text = r"\mathbb{E}\left[%s\right]" % printer._print(self.args[0])
        return text if exp is None else r"%s^{%s}" % (text, exp)


class _Variance(sp.Function):
    """Var[x], printed with square brackets."""

    def _latex(self, printer, exp=None):
        text = r"\operatorname{Var}\left[%s\right]" % printer._print(self.args[0])
        return text if exp is None else r"%s^{%s}" % (text, exp)


_l = sp.Symbol("l", integer=True, positive=True)
_d_k = sp.Symbol("d_k", integer=True, positive=True)
_q, _k = sp.IndexedBase("q"), sp.IndexedBase("k")
_mu, _sigma = sp.Symbol(r"\mu"), sp.Symbol(r"\sigma", positive=True)


def _mul(*factors: sp.Expr) -> sp.Expr:
    return sp.Mul(*factors, evaluate=False)  # keep the written order: q_l k_l, E[q] E[k]


def _eq(*parts: sp.Expr) -> str:
    """lhs = a = b ..., one line; with more than three parts, one "= ..." per line (aligned)."""
    texts = [sp.latex(p, order="none") for p in parts]
    if len(texts) <= 3:
        return " = ".join(texts)
    return r"\begin{aligned}" + texts[0] + r" &= " + r" \\ &= ".join(texts[1:]) + r"\end{aligned}"


@lru_cache(maxsize=None)
def variance_derivation() -> tuple[DerivationStep, ...]:
    r"""E[q · k] = 0 and Var[q · k] = d_k, derived with sympy, as LaTeX steps.

    The components are independent with E[q_l] = E[k_l] = μ and Var = σ²; sympy does
    the algebra and then substitutes μ = 0, σ = 1. Every right-hand side that is a
    result (0, 1, d_k) is computed by sympy, not typed. Constant, so cached.
    """
    E, Var = _Expectation, _Variance
    s = sp.Symbol("s")
    term = _mul(_q[_l], _k[_l])
    total = sp.Sum(term, (_l, 1, _d_k))
    moment2 = _sigma**2 + _mu**2  # E[x²] = Var[x] + E[x]²
    mean_term = _mu * _mu  # E[q_l k_l] = E[q_l] E[k_l]
    var_term = sp.expand(moment2 * moment2 - mean_term**2)  # E[q²] E[k²] − (E[q] E[k])²
    standard = {_mu: 0, _sigma: 1}
    mean_total = sp.Sum(mean_term.subs(standard), (_l, 1, _d_k)).doit()
    var_total = sp.Sum(var_term.subs(standard), (_l, 1, _d_k)).doit()
    scaled = sp.simplify(var_total / _d_k)
    return (
        DerivationStep(_eq(s, sp.Symbol(r"q \cdot k"), total),
                       N_("The score is a sum of d_k products, one per component.")),
        DerivationStep(_eq(E(term), _mul(E(_q[_l]), E(_k[_l])), _mul(_mu, _mu), mean_term.subs(standard)),
                       N_("q_l and k_l are independent, so the mean of their product is the product of their "
                          "means; each mean is μ = 0.")),
        DerivationStep(_eq(E(s), sp.Sum(E(term), (_l, 1, _d_k)), mean_total),
                       N_("The mean of a sum is the sum of the means.")),
        DerivationStep(_eq(Var(term), sp.Add(E(_mul(_q[_l] ** 2, _k[_l] ** 2)), -E(term) ** 2, evaluate=False),
                           sp.Add(_mul(E(_q[_l] ** 2), E(_k[_l] ** 2)),
                                  -sp.Pow(_mul(E(_q[_l]), E(_k[_l])), 2, evaluate=False), evaluate=False),
                           sp.Add(_mul(moment2, moment2), -sp.Pow(_mul(_mu, _mu), 2, evaluate=False),
                                  evaluate=False),
                           var_term, var_term.subs(standard)),
                       N_("Var[x] = E[x²] − E[x]², independence again, and E[x²] = σ² + μ² for each factor. "
                          "With μ = 0 and σ² = 1 each product has variance 1.")),
        DerivationStep(_eq(Var(s), sp.Sum(Var(term), (_l, 1, _d_k)), var_total),
                       N_("The d_k products are independent of each other, so their variances add up.")),
        DerivationStep(_eq(Var(s / sp.sqrt(_d_k)), Var(s) / _d_k, scaled),
                       N_("Dividing by √d_k divides the variance by d_k: the scaled scores have variance 1 "
                          "whatever d_k is.")),
    )


@lru_cache(maxsize=None)
def _gaussian_moments() -> tuple[sp.Expr, sp.Expr]:
    """sympy.stats on q, k ~ N(0, 1) independent: (E[q k], Var[q k]). Cached (≈ 0.3 s once)."""
    from sympy.stats import E, Normal, variance  # imported here: sympy.stats is slow to import

    q, k = Normal("q", 0, 1), Normal("k", 0, 1)
    return E(q * k), variance(q * k)


def gaussian_check(tr: Translate = Message) -> tuple[str, sp.Expr, sp.Expr]:
    """sympy.stats on q, k ~ N(0, 1) independent: (LaTeX, E[q k], Var[q k]).

    Args:
        tr: puts the word "independent:" in the interface language (default: English).
    """
    mean, var = _gaussian_moments()
    latex = (r"q, k \sim \mathcal{N}(0, 1)\ %s\quad \mathbb{E}[q k] = %s,\quad "
             r"\operatorname{Var}[q k] = %s" % (latex_text(str(tr(N_("independent:")))), sp.latex(mean),
                                                 sp.latex(var)))
    return latex, mean, var


@lru_cache(maxsize=None)
def entropy_latex() -> str:
    """The entropy of a row of n weights α, as LaTeX (0 for one-hot, ln n for uniform weights)."""
    j, n = sp.Symbol("j", integer=True, positive=True), sp.Symbol("n", integer=True, positive=True)
    alpha = sp.IndexedBase(r"\alpha")
    h = sp.Eq(sp.Symbol("H"), -sp.Sum(_mul(alpha[j], sp.log(alpha[j])), (j, 1, n)), evaluate=False)
    return sp.latex(h, order="none", ln_notation=True) + r"\qquad 0 \le H \le \ln n"


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class WhySqrtDkSettings:
    """The "Why divide by √d_k?" page's own settings (``settings.why_sqrt_dk``).

    Attributes:
        samples: S, the (q, k) pairs sampled per d_k (MIN_SQRT_SAMPLES..MAX_SQRT_SAMPLES).
        keys: n, the keys each sampled query meets in the softmax experiment (MIN_SQRT_KEYS..MAX_SQRT_KEYS).
        distribution: the components' distribution (one of SQRT_DISTRIBUTIONS).
    """

    samples: int = 2000
    keys: int = 16
    distribution: str = "normal"


WHY_SQRT_DK = Page(
    key="why_sqrt_dk", title=N_("Why divide by √d_k?"), icon=":material/functions:", section="experiments",
    summary=N_("Why divide by √d_k? The variance of a dot product, measured"),
    settings=WhySqrtDkSettings,
    fields=(
        IntRange("samples", MIN_SQRT_SAMPLES, MAX_SQRT_SAMPLES, label(N_("The number of samples"))),
        IntRange("keys", MIN_SQRT_KEYS, MAX_SQRT_KEYS, label(N_("The number of keys n"))),
        Choice("distribution", SQRT_DISTRIBUTIONS, N_("Unknown distribution “{raw}”; using “{value}”.")),
    ),
    legacy={"sqrt_samples": "samples", "sqrt_keys": "keys", "sqrt_distribution": "distribution"},
)
