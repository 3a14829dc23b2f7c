"""The experiments' math: why √d_k (sampling and sympy), temperature, positional encoding,
additive scoring and self-attention over an image, against naive loops, PyTorch and the
sampling error derived in ``attention_core.lessons.why_sqrt_dk.page``."""

from __future__ import annotations

import io
import math

import pytest
import sympy as sp
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from attention_core.errors import InputError
from attention_core.lessons.additive import page as additive
from attention_core.lessons.image_attention import page as image
from attention_core.lessons.image_attention import upload as image_upload
from attention_core.lessons.positional_encoding import page as positional
from attention_core.lessons.temperature import page as temperature
from attention_core.lessons.why_sqrt_dk import page as scaling
from attention_core.positions import sinusoidal_encoding, sinusoidal_encoding_loop
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings

PRESET_CASES = [
    Settings.for_preset("seed000"),
    Settings.for_preset("journey_v1"),
    Settings.for_preset("journey_v2"),
    Settings.for_preset("custom", d_model=5, d_k=2, seed=3),
]


def _global_rng_untouched(run) -> bool:
    """Whether ``run()`` leaves torch's global generator where it was."""
    torch.manual_seed(1234)
    expected = torch.rand(3)
    torch.manual_seed(1234)
    run()
    return torch.equal(torch.rand(3), expected)


def _argmax(row: list[float]) -> int:
    """The first index of the largest value (a plain loop, as torch.argmax breaks ties)."""
    best = 0
    for index, value in enumerate(row):
        if value > row[best]:
            best = index
    return best


# ---------------------------------------------------------------- why √d_k


@pytest.mark.parametrize("distribution", list(scaling.DISTRIBUTIONS))
def test_variance_of_the_dot_product_is_d_k_within_sampling_error(distribution):
    samples = 4000
    result = scaling.run_scaling_experiment(samples, 8, seed=7, distribution=distribution)
    for i, d in enumerate(result.d_k):
        se_var = scaling.variance_standard_error(d, samples, distribution)
        assert abs(float(result.variance[i]) - d) < 5 * se_var, (d, float(result.variance[i]), se_var)
        assert abs(float(result.mean[i])) < 5 * math.sqrt(d / samples), (d, float(result.mean[i]))
        # ÷ √d_k: variance 1, with the standard error scaled by 1/d.
        assert abs(float(result.scaled_variance[i]) - 1.0) < 5 * se_var / d
    assert torch.allclose(result.standard_error,
                          torch.tensor([scaling.variance_standard_error(d, samples, distribution) for d in result.d_k]))


def test_the_standard_error_formula_matches_sympy_moments():
    from sympy.stats import E, Normal, Uniform, moment

    q, k = Normal("q", 0, 1), Normal("k", 0, 1)
    # Var[(q k)²] for d_k = 1: E[(q k)⁴] − E[(q k)²]² = 9 − 1 = 8 = 2 · 1² + 1 · (3² − 3).
    assert E((q * k) ** 4) - E((q * k) ** 2) ** 2 == 8
    assert scaling.variance_standard_error(1, 10**9, "normal") == pytest.approx(math.sqrt(8 / 10**9))
    assert float(moment(Normal("x", 0, 1), 4)) == scaling.FOURTH_MOMENT["normal"]
    u = Uniform("u", -sp.sqrt(3), sp.sqrt(3))
    assert sp.simplify(moment(u, 2)) == 1
    assert float(sp.simplify(moment(u, 4))) == pytest.approx(scaling.FOURTH_MOMENT["uniform"])
    assert scaling.FOURTH_MOMENT["rademacher"] == 1.0  # (±1)⁴


@pytest.mark.parametrize("distribution", list(scaling.DISTRIBUTIONS))
@pytest.mark.parametrize("d_k", [1, 4, 32])
def test_the_standard_error_formula_matches_repeated_experiments(distribution, d_k):
    # 2000 independent experiments of S = 100 samples each: the spread of their variance
    # estimates is the standard error the formula predicts (its own sampling error is ~1.6 %).
    replicates, samples = 2000, 100
    g = torch.Generator().manual_seed(11)
    q = scaling.draw_components((replicates, samples, d_k), distribution, g)
    k = scaling.draw_components((replicates, samples, d_k), distribution, g)
    estimates = (q * k).sum(-1).var(dim=-1)  # (replicates,)
    predicted = scaling.variance_standard_error(d_k, samples, distribution)
    assert float(estimates.std()) == pytest.approx(predicted, rel=0.08)
    assert float(estimates.mean()) == pytest.approx(d_k, abs=5 * predicted / math.sqrt(replicates))


@pytest.mark.parametrize("distribution", list(scaling.DISTRIBUTIONS))
def test_components_have_mean_0_and_variance_1(distribution):
    x = scaling.draw_components((200_000,), distribution, torch.Generator().manual_seed(0))
    assert x.dtype == torch.float32
    assert abs(float(x.mean())) < 0.01
    assert abs(float(x.var()) - 1.0) < 0.02


def test_softmax_saturates_without_scaling_and_not_with_it():
    result = scaling.run_scaling_experiment(2000, 16, seed=0)
    assert result.rows == scaling.SOFTMAX_ROWS
    raw, scaled = result.max_weight_raw, result.max_weight_scaled
    assert float(raw[-1]) > 0.9 > float(raw[0])  # d_k = 1024: nearly one-hot
    assert float(scaled.max() - scaled.min()) < 0.1  # roughly the same at every d_k
    assert float(result.entropy_raw[-1]) < 0.3 < math.log(16) - 0.5 < float(result.entropy_scaled.min())
    assert bool((raw[1:] >= raw[:-1] - 0.02).all())  # grows with d_k (up to noise)
    assert result.torch_matches and result.torch_max_abs_diff < 1e-5


def test_scaling_experiment_is_seeded_and_leaves_the_global_rng_alone():
    a = scaling.run_scaling_experiment(300, 4, seed=5)
    b = scaling.run_scaling_experiment(300, 4, seed=5)
    c = scaling.run_scaling_experiment(300, 4, seed=6)
    assert torch.equal(a.variance, b.variance) and torch.equal(a.max_weight_raw, b.max_weight_raw)
    assert not torch.equal(a.variance, c.variance)
    assert _global_rng_untouched(lambda: scaling.run_scaling_experiment(300, 4, seed=5))


def test_a_change_of_s_redraws_only_the_variance_experiment_and_of_n_only_the_softmax_one():
    # each experiment draws from its own generator: a click on S or n costs only the experiment that depends on it
    base = scaling.run_scaling_experiment(1000, 8, seed=3)
    more_samples = scaling.run_scaling_experiment(1500, 8, seed=3)  # R = 500 rows either way
    more_keys = scaling.run_scaling_experiment(1000, 12, seed=3)
    assert not torch.equal(base.variance, more_samples.variance)
    assert torch.equal(base.max_weight_raw, more_samples.max_weight_raw)
    assert torch.equal(base.entropy_scaled, more_samples.entropy_scaled)
    assert torch.equal(base.variance, more_keys.variance)
    assert not torch.equal(base.max_weight_raw, more_keys.max_weight_raw)
    # the softmax stream is its own: not the variance stream's continuation nor its seed
    g = torch.Generator().manual_seed(3 + scaling.SOFTMAX_STREAM)
    query = scaling.draw_components((500, 1, 1, 1024), "normal", g)
    key = scaling.draw_components((500, 1, 8, 1024), "normal", g)
    weights = torch.softmax((query[..., :1] @ key[..., :1].transpose(-2, -1))[:, 0, 0], dim=-1)
    assert float(weights.max(dim=-1).values.mean()) == pytest.approx(float(base.max_weight_raw[0]), rel=1e-6)


def test_the_halves_drawn_at_once_are_the_halves_drawn_one_after_the_other():
    """run_scaling_experiment draws the softmax half on a worker thread while it draws the variance half: each from
    its own generator, so the numbers are those of the two drawn in turn here (uncached), for every distribution,
    and eight sessions' first draws at once (threads) get the same numbers as one alone."""
    import concurrent.futures

    grid = scaling.D_K_GRID
    cases = [(600, 5, seed, distribution) for seed in (11, 12) for distribution in scaling.DISTRIBUTIONS]
    for samples, keys, seed, distribution in cases:
        result = scaling.run_scaling_experiment(samples, keys, seed, distribution)
        variance = scaling._variance_part.__wrapped__(samples, seed, distribution, grid)
        softmax = scaling._softmax_part.__wrapped__(min(samples, scaling.SOFTMAX_ROWS), keys, seed, distribution, grid)
        assert all(torch.equal(a, b) for a, b in zip(
            (result.mean, result.variance, result.scaled_variance, result.standard_error), variance))
        assert all(torch.equal(a, b) for a, b in zip(
            (result.max_weight_raw, result.max_weight_scaled, result.entropy_raw, result.entropy_scaled), softmax[:4]))
        assert result.torch_max_abs_diff == softmax[4]
    scaling._variance_part.cache_clear()
    scaling._softmax_part.cache_clear()
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        at_once = list(pool.map(lambda case: scaling.run_scaling_experiment(*case), cases + cases[:2]))
    for case, result in zip(cases + cases[:2], at_once):
        alone = scaling._softmax_part.__wrapped__(min(case[0], scaling.SOFTMAX_ROWS), case[1], case[2], case[3], grid)
        assert torch.equal(result.entropy_raw, alone[2])
        assert torch.equal(result.variance, scaling._variance_part.__wrapped__(case[0], case[2], case[3], grid)[1])


@pytest.mark.parametrize("kwargs", [
    {"samples": 10, "keys": 4, "seed": 0},
    {"samples": 10**6, "keys": 4, "seed": 0},
    {"samples": 500, "keys": 1, "seed": 0},
    {"samples": 500, "keys": 4, "seed": 0, "distribution": "cauchy"},
    {"samples": 500, "keys": 4, "seed": 0, "grid": (4, 2)},
])
def test_scaling_experiment_rejects_bad_arguments(kwargs):
    with pytest.raises(InputError) as error:
        scaling.run_scaling_experiment(**kwargs)
    assert error.value.message


def test_the_derivation_reaches_0_d_k_and_1():
    steps = scaling.variance_derivation()
    assert len(steps) == 6 and all(step.reason for step in steps)
    assert steps[1].latex.endswith("= 0\\end{aligned}")  # E[q_l k_l] = 0
    assert steps[2].latex.endswith("= 0")  # E[s] = 0
    assert steps[3].latex.endswith("= 1\\end{aligned}")  # Var[q_l k_l] = 1
    assert steps[4].latex.endswith("= d_{k}")  # Var[s] = d_k
    assert steps[5].latex.endswith("= 1")  # Var[s / √d_k] = 1
    _, mean, var = scaling.gaussian_check()
    assert mean == 0 and var == 1


def test_scaling_summary_bars_ratios_and_uniform_lines():
    result = scaling.run_scaling_experiment(1000, 8, seed=3)
    summary = scaling.summarise(result)
    var, se = result.variance.tolist(), result.standard_error.tolist()
    assert summary.d_k == (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) == summary.theory_variance
    for k, (d, v, e) in enumerate(zip(summary.d_k, var, se)):
        assert summary.variance_high[k] - v == pytest.approx(2 * e)
        assert summary.variance_low[k] == pytest.approx(v - 2 * e) and summary.variance_low[k] < v
        assert summary.variance_ratio[k] * d == pytest.approx(v)
        assert abs(summary.variance_ratio[k] - 1) < 5 * e / d  # Var / d_k ≈ 1 within sampling error
    assert summary.theory_scaled_variance == (1.0,) * 11
    assert (summary.largest_d_k, summary.largest_sd) == (1024, 32.0)
    assert f"{summary.exp_largest_sd:.1e}" == "7.9e+13"  # e^32 = 78962960182680.69
    assert summary.uniform_weight == 0.125 and summary.uniform_weight_line == (0.125,) * 11
    uniform = -sum(1 / 8 * math.log(1 / 8) for _ in range(8))  # H of 8 equal weights, a plain loop
    assert summary.uniform_entropy == pytest.approx(uniform) == float(scaling.entropy(torch.full((8,), 1 / 8)))
    assert summary.uniform_entropy_line == (summary.uniform_entropy,) * 11
    assert summary.entropy_axis_top == pytest.approx(1.05 * math.log(8))


def test_scaling_summary_keeps_error_bars_above_the_log_axis_floor():
    import dataclasses

    result = scaling.run_scaling_experiment(100, 2, seed=0, grid=(1, 2))
    noisy = dataclasses.replace(result, variance=torch.tensor([0.5, 2.0]), standard_error=torch.tensor([1.0, 0.25]))
    summary = scaling.summarise(noisy)
    assert summary.variance_low == (scaling.ERROR_BAR_FLOOR, 1.5)  # 0.5 − 2 is below the floor
    assert summary.variance_high == (2.5, 2.5)
    assert summary.variance_ratio == (0.5, 1.0) and summary.largest_d_k == 2


# ---------------------------------------------------------------- temperature


def _qkv(s: Settings):
    att = build_walkthrough(s).trace.attention
    return att.query, att.key, att.value


@pytest.mark.parametrize("s", PRESET_CASES)
def test_temperature_1_is_ordinary_attention_and_matches_torch(s):
    q, k, v = _qkv(s)
    trace = temperature.temperature_attention(q, k, v, 1.0)
    assert torch.allclose(trace.weights, build_walkthrough(s).trace.attention.weights, atol=1e-7)
    for tau in temperature.TEMPERATURE_GRID:
        trace = temperature.temperature_attention(q, k, v, tau)
        assert trace.torch_matches, tau
        assert torch.allclose(trace.weights.sum(-1), torch.ones(len(q)), atol=1e-5)
        reference = torch.softmax(q @ k.T / (tau * math.sqrt(q.shape[1])), dim=-1)
        assert torch.allclose(trace.weights, reference, atol=1e-6)


def test_cold_is_argmax_hot_is_uniform():
    q, k, v = _qkv(Settings.for_preset("custom", sentence="a b c d e", d_model=4, d_k=3, seed=1))
    cold = temperature.temperature_attention(q, k, v, 1e-4)
    assert torch.allclose(cold.weights, cold.argmax_weights, atol=1e-4)
    hot = temperature.temperature_attention(q, k, v, 1e5)
    assert torch.allclose(hot.weights, hot.uniform_weights, atol=1e-4)
    assert torch.allclose(hot.entropy, torch.full((5,), math.log(5)), atol=1e-4)
    assert float(cold.entropy.max()) < 1e-3


def test_ties_share_the_argmax_limit():
    # seed 000's sentence has "Learning" twice: their keys are equal, so a query's scores tie.
    q, k, v = _qkv(Settings.for_preset("seed000"))
    trace = temperature.temperature_attention(q, k, v, 0.01)
    assert torch.allclose(trace.argmax_weights.sum(-1), torch.ones(7))
    assert set(trace.argmax_weights.unique().tolist()) <= {0.0, 0.5, 1.0}


@pytest.mark.parametrize("s", PRESET_CASES)
@pytest.mark.parametrize("tau", [0.3, 1.0, 7.0])
def test_temperature_view_row_and_sweep_against_plain_python(s, tau):
    q, k, v = _qkv(s)
    view = temperature.temperature_view(q, k, v, tau, row=2)
    assert (view.row, view.row_number) == (2, 3)
    # row 2's weights with math.exp, from the numbers of Q and K
    scale = 1 / (tau * math.sqrt(q.shape[1]))
    scores = [sum(a * b for a, b in zip(q[2].tolist(), key)) * scale for key in k.tolist()]
    exps = [math.exp(x - max(scores)) for x in scores]
    weights = [e / sum(exps) for e in exps]
    assert view.row_favourite == _argmax(weights)
    assert view.trace.weights[2].tolist() == pytest.approx(weights, abs=1e-6)
    assert view.marked == tuple(t == tau for t in temperature.TEMPERATURE_GRID) and sum(view.marked) == 1
    assert view.marked[temperature.TEMPERATURE_GRID.index(tau)]
    assert view.max_entropy_line == (math.log(len(k)),) * len(temperature.TEMPERATURE_GRID)
    reference = temperature.temperature_sweep(q @ k.T, q.shape[1])
    assert torch.allclose(view.sweep.mean_entropy, reference.mean_entropy, atol=1e-6)


def test_temperature_view_clamps_the_row_and_marks_no_off_grid_tau():
    q, k, v = _qkv(Settings.for_preset("custom", sentence="a b c", d_model=4, d_k=2, seed=0))
    view = temperature.temperature_view(q, k, v, 0.123, row=9)
    assert (view.row, view.row_number) == (2, 3)
    assert not any(view.marked)
    assert temperature.clamp_row(-1, 3) == 0 and temperature.clamp_row(1, 3) == 1
    with pytest.raises(InputError):
        temperature.clamp_row(0, 0)
    with pytest.raises(InputError):
        temperature.temperature_view(q, k, v, 0.0, row=0)


def test_entropy_grows_with_temperature():
    q, k, _ = _qkv(Settings.for_preset("journey_v1"))
    sweep = temperature.temperature_sweep(q @ k.T, q.shape[1])
    assert bool((sweep.mean_entropy[1:] >= sweep.mean_entropy[:-1] - 1e-6).all())
    assert bool((sweep.mean_max_weight[1:] <= sweep.mean_max_weight[:-1] + 1e-6).all())
    assert float(sweep.mean_entropy[-1]) <= sweep.max_entropy + 1e-6


@pytest.mark.parametrize("tau", [0.0, -1.0, float("nan"), float("inf")])
def test_temperature_rejects_non_positive_tau(tau):
    q, k, v = _qkv(Settings())
    with pytest.raises(InputError):
        temperature.temperature_attention(q, k, v, tau)


def test_temperature_formulas_and_limits_from_sympy():
    weight, h = temperature.temperature_latex()
    assert r"\tau" in weight and r"\ln" in h
    start, cold, hot = temperature.limits_latex()
    assert r"\alpha_1 = 1 \quad" in cold and r"\alpha_1 = \frac{1}{2}" in hot
    q, k, v = _qkv(Settings())
    trace = temperature.temperature_attention(q, k, v, 2.0)
    scaled, entropy_text = temperature.row_latex(trace, 1)
    assert entropy_text.endswith(sp.latex(sp.Float(float(trace.entropy[1]), 4)) + r" \end{aligned}")
    with pytest.raises(IndexError):
        temperature.row_latex(trace, 99)


def test_nearest_temperature_snaps_on_a_log_scale():
    assert temperature.nearest_temperature(1.0) == 1.0
    assert temperature.nearest_temperature(0.4) == 0.5
    assert temperature.nearest_temperature(1e-9) == temperature.MIN_TEMPERATURE
    assert temperature.TEMPERATURE_GRID == tuple(sorted(temperature.TEMPERATURE_GRID))


# ---------------------------------------------------------------- positional encoding


def test_sinusoidal_entry_latex_evaluates_to_the_table():
    pe = sinusoidal_encoding(10, 16)
    for pos, col in [(3, 4), (5, 1), (0, 0), (9, 15)]:
        text, value = positional.sinusoidal_entry_latex(pos, col, 16)
        assert value == pytest.approx(float(pe[pos, col]), abs=1e-6)
        assert ("\\sin" if col % 2 == 0 else "\\cos") in text
    with pytest.raises(InputError):
        positional.sinusoidal_entry_latex(1, 16, 16)


@pytest.mark.parametrize("s", PRESET_CASES)
@pytest.mark.parametrize("shuffle", list(positional.SHUFFLES))
@pytest.mark.parametrize("kind", list(positional.ENCODINGS))
def test_without_pe_shuffling_only_shuffles_rows_with_pe_it_changes_them(s, shuffle, kind):
    walk = build_walkthrough(s)
    t = walk.trace
    n, d = t.x.shape
    perm = positional.permutation(shuffle, n, seed=2)
    pe = positional.encoding(kind, n, d, seed=2)
    result = positional.equivariance(t.x, t.w_query, t.w_key, t.w_value, pe, perm)
    assert result.plain_diff < 1e-5
    assert torch.allclose(result.plain_unshuffled, result.plain.output, atol=1e-5)
    assert result.encoded_diff > 1e-3
    assert not torch.allclose(result.encoded_unshuffled, result.encoded.output, atol=1e-3)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 10), d=st.integers(1, 6), d_k=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_permutation_equivariance_for_random_inputs(n, d, d_k, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w_q, w_k, w_v = (torch.randn(d, d_k, generator=g) for _ in range(3))
    perm = positional.permutation("random", n, seed)
    result = positional.equivariance(x, w_q, w_k, w_v, torch.zeros(n, d), perm)
    assert result.plain_diff < 1e-4


def test_permutations():
    assert positional.permutation("reverse", 4) == (3, 2, 1, 0)
    assert positional.permutation("rotate", 4) == (1, 2, 3, 0)
    for n in range(2, 9):
        for seed in range(20):
            perm = positional.permutation("random", n, seed)
            assert sorted(perm) == list(range(n)) and perm != tuple(range(n))
    assert positional.inverse_permutation((2, 0, 1)) == (1, 2, 0)
    with pytest.raises(InputError):
        positional.permutation("sideways", 3)
    with pytest.raises(InputError):
        positional.equivariance(torch.zeros(3, 2), torch.eye(2), torch.eye(2), torch.eye(2), torch.zeros(3, 2),
                                (0, 0, 1))


def test_learned_encoding_is_seeded():
    a = positional.encoding("learned", 6, 4, seed=3)
    assert torch.equal(a, positional.encoding("learned", 6, 4, seed=3))
    assert not torch.equal(a, positional.encoding("learned", 6, 4, seed=4))
    assert _global_rng_untouched(lambda: positional.encoding("learned", 6, 4, seed=3))
    with pytest.raises(InputError):
        positional.encoding("rotary", 6, 4, seed=3)


def test_equivariance_steps_are_latex():
    steps = positional.equivariance_steps()
    assert len(steps) == 6 and r"\neq" in steps[-1]
    even, odd = positional.sinusoidal_latex()
    assert r"\sin" in even and r"\cos" in odd and "10000" in even


@pytest.mark.parametrize("s", PRESET_CASES)
@pytest.mark.parametrize("shuffle", list(positional.SHUFFLES))
def test_order_experiment_is_the_three_steps_and_names_its_checks(s, shuffle):
    t = build_walkthrough(s).trace
    n, d = t.x.shape
    result = positional.order_experiment(t.x, t.w_query, t.w_key, t.w_value, "sinusoidal", shuffle, 2)
    assert result.perm == positional.permutation(shuffle, n, 2)
    assert torch.equal(result.pe, sinusoidal_encoding(n, d))
    assert result.plain_matches and result.order_matters  # what the page states as ✓ and as success
    # X + PE, entry by entry with math.sin / math.cos
    table = sinusoidal_encoding_loop(n, d)
    expected = [[a + b for a, b in zip(row, pe_row)] for row, pe_row in zip(t.x.tolist(), table)]
    assert sum(result.encoded_x.tolist(), []) == pytest.approx(sum(expected, []), abs=1e-6)
    assert result.shuffled_positions == tuple(range(1, n + 1))


def test_shuffle_puts_items_in_the_shuffled_order():
    x = torch.randn(4, 3, generator=torch.Generator().manual_seed(0))
    words = ("your", "journey", "starts", "here")
    for kind, expected in [("reverse", ("here", "starts", "journey", "your")),
                           ("rotate", ("journey", "starts", "here", "your"))]:
        result = positional.order_experiment(x, torch.eye(3), torch.eye(3), torch.eye(3), "learned", kind, 0)
        assert result.shuffle(words) == expected
        assert torch.equal(result.x_shuffled, torch.stack(result.shuffle(list(x))))
    with pytest.raises(IndexError):
        result.shuffle(words[:2])


def test_order_matters_only_when_the_encoding_differs_between_positions():
    g = torch.Generator().manual_seed(1)
    x, w = torch.randn(5, 4, generator=g), torch.randn(4, 4, generator=g)
    perm = positional.permutation("reverse", 5)
    same_everywhere = positional.equivariance(x, w, w, w, torch.ones(5, 4), perm)  # every position gets one vector
    assert same_everywhere.plain_matches and not same_everywhere.order_matters
    assert same_everywhere.encoded_diff <= positional.ORDER_TOLERANCE
    sinusoid = positional.equivariance(x, w, w, w, sinusoidal_encoding(5, 4), perm)
    assert sinusoid.order_matters and sinusoid.encoded_diff > positional.ORDER_TOLERANCE


@pytest.mark.parametrize(("positions", "width", "entry"), [(16, 16, (3, 4)), (2, 3, (1, 2)), (64, 4, (3, 3))])
def test_sinusoidal_pattern_is_checked_against_the_loop(positions, width, entry):
    pattern = positional.sinusoidal_pattern(positions, width)
    loop = sinusoidal_encoding_loop(positions, width)
    worst = max(abs(a - b) for row, ref in zip(pattern.table.tolist(), loop) for a, b in zip(row, ref))
    assert pattern.loop_max_abs_diff == pytest.approx(worst, abs=1e-12)
    assert pattern.loop_matches and worst < positional.LOOP_TOLERANCE
    assert (pattern.example_position, pattern.example_column) == entry
    assert torch.equal(pattern.table, sinusoidal_encoding(positions, width))


def test_sinusoidal_pattern_example_entry_value():
    # PE(3, 4) at d_model = 16: sin(3 / 10000^(4/16)) = sin(0.3) = 0.295520...
    pattern = positional.sinusoidal_pattern(16, 16)
    assert float(pattern.table[pattern.example_position, pattern.example_column]) == pytest.approx(0.2955202, abs=1e-6)
    with pytest.raises(InputError):
        positional.sinusoidal_pattern(0, 4)


# ---------------------------------------------------------------- additive scoring


@pytest.mark.parametrize("s", PRESET_CASES)
@pytest.mark.parametrize("hidden", [1, 4, 16])
def test_additive_scores_equal_a_direct_loop(s, hidden):
    q, k, v = _qkv(s)
    params = additive.seeded_additive_weights(q.shape[1], k.shape[1], hidden, torch.Generator().manual_seed(hidden))
    trace = additive.additive_attention(q, k, v, params)
    loop = torch.tensor(additive.additive_scores_loop(q, k, params), dtype=torch.float64)
    assert trace.scores.shape == (len(q), len(k))
    assert torch.allclose(trace.scores.double(), loop, atol=1e-5)
    assert torch.allclose(trace.weights, torch.softmax(loop, dim=-1).float(), atol=1e-6)
    assert torch.allclose(trace.output, trace.weights @ v, atol=1e-6)
    assert float(trace.scores.abs().max()) <= float(params.w_v.abs().sum()) + 1e-6  # tanh is bounded


def test_additive_allows_different_query_and_key_widths():
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 5, generator=g), torch.randn(4, 2, generator=g), torch.randn(4, 3, generator=g)
    params = additive.seeded_additive_weights(5, 2, 6, g)
    trace = additive.additive_attention(q, k, v, params)
    assert trace.hidden.shape == (3, 4, 6) and trace.output.shape == (3, 3)
    assert torch.allclose(trace.scores.double(), torch.tensor(additive.additive_scores_loop(q, k, params),
                                                              dtype=torch.float64), atol=1e-5)


def test_additive_rejects_shapes_that_do_not_fit():
    g = torch.Generator().manual_seed(0)
    params = additive.seeded_additive_weights(3, 3, 4, g)
    with pytest.raises(InputError):
        additive.additive_attention(torch.zeros(2, 4), torch.zeros(2, 3), torch.zeros(2, 3), params)
    with pytest.raises(InputError):
        additive.additive_attention(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(3, 3), params)
    with pytest.raises(InputError):
        additive.seeded_additive_weights(3, 3, 0, g)


def test_additive_weights_are_seeded_and_bounded():
    a = additive.seeded_additive_weights(3, 2, 4, torch.Generator().manual_seed(1))
    b = additive.seeded_additive_weights(3, 2, 4, torch.Generator().manual_seed(1))
    assert torch.equal(a.w_query, b.w_query) and torch.equal(a.w_v, b.w_v)
    assert float(a.w_query.abs().max()) <= 1 / math.sqrt(3) and float(a.w_v.abs().max()) <= 1 / 2
    assert _global_rng_untouched(lambda: additive.seeded_additive_weights(3, 2, 4, torch.Generator().manual_seed(1)))


def test_additive_entry_latex_has_the_numbers_and_the_score():
    q, k, v = _qkv(Settings())
    params = additive.seeded_additive_weights(3, 3, 3, torch.Generator().manual_seed(0))
    trace = additive.additive_attention(q, k, v, params)
    u_text, c_text, a_text = additive.additive_entry_latex(trace, 2, 4)
    assert r"\mathbf{q}_{3}" in u_text and r"\mathbf{k}_{5}" in c_text
    assert sp.latex(sp.Float(float(trace.scores[2, 4]), 4)) + r" \end{aligned}" in a_text
    assert a_text.count(r"\tanh") == 1 + 3
    vector, element = additive.additive_latex()
    assert r"\tanh" in vector and r"\sum" in element
    with pytest.raises(IndexError):
        additive.additive_entry_latex(trace, 7, 0)


@pytest.mark.parametrize("s", PRESET_CASES)
@pytest.mark.parametrize("hidden", [1, 5])
def test_scorer_comparison_against_plain_loops(s, hidden):
    att = build_walkthrough(s).trace.attention
    view = additive.compare_scorers(att.query, att.key, att.value, att.weights, hidden, 4, 1, 0)
    params = additive.seeded_additive_weights(att.query.shape[1], att.key.shape[1], hidden,
                                              torch.Generator().manual_seed(4))
    assert torch.equal(view.additive.weights_in.w_v, params.w_v)  # the seed is the scorer's own
    dot, add = att.weights.tolist(), view.additive.weights.tolist()
    assert view.shared_scale == pytest.approx(max(max(max(r) for r in dot), max(max(r) for r in add)), abs=0)
    assert view.agreeing_queries == sum(_argmax(a) == _argmax(b) for a, b in zip(dot, add))
    loop = additive.additive_scores_loop(att.query, att.key, params)
    worst = max(abs(a - b) for row_a, row_b in zip(view.additive.scores.tolist(), loop) for a, b in zip(row_a, row_b))
    assert view.loop_max_abs_diff == pytest.approx(worst, abs=1e-12)
    assert view.loop_matches and worst < additive.LOOP_TOLERANCE
    assert view.w_v_column.shape == (hidden, 1) and view.w_v_column[:, 0].tolist() == params.w_v.tolist()
    assert (view.row, view.col, view.query_number, view.key_number) == (1, 0, 2, 1)
    assert (view.tokens, view.d_k, view.hidden_size) == (len(dot), att.key.shape[1], hidden)


def test_scorer_agreement_counts_the_shared_favourite_keys():
    g = torch.Generator().manual_seed(2)
    q, k, v = torch.randn(5, 3, generator=g), torch.randn(5, 3, generator=g), torch.randn(5, 3, generator=g)
    first = additive.compare_scorers(q, k, v, torch.full((5, 5), 0.2), 3, 0, 0, 0)
    same = additive.compare_scorers(q, k, v, first.additive.weights, 3, 0, 0, 0)
    assert same.agreeing_queries == 5
    assert same.shared_scale == max(max(row) for row in first.additive.weights.tolist())
    # every query's favourite is key 2: the scorers agree on the queries whose additive favourite is key 2
    column_2 = torch.full((5, 5), 0.1).index_fill(1, torch.tensor([2]), 0.6)
    favourite_2 = [_argmax(row) == 2 for row in first.additive.weights.tolist()]
    assert additive.compare_scorers(q, k, v, column_2, 3, 0, 0, 0).agreeing_queries == sum(favourite_2)
    with pytest.raises(InputError):
        additive.compare_scorers(q, k, v, torch.ones(4, 5), 3, 0, 0, 0)
    with pytest.raises(InputError):
        additive.compare_scorers(q, k, v, first.additive.weights, 17, 0, 0, 0)


@pytest.mark.parametrize(("row", "col", "tokens", "expected"), [
    (7, 9, 4, (3, 3)), (2, 1, 4, (2, 1)), (-1, 5, 3, (0, 2)), (0, 0, 1, (0, 0)),
])
def test_clamp_pair_keeps_the_pair_inside_the_weights(row, col, tokens, expected):
    assert additive.clamp_pair(row, col, tokens) == expected
    g = torch.Generator().manual_seed(0)
    if tokens > 1:
        q = torch.randn(tokens, 2, generator=g)
        view = additive.compare_scorers(q, q, q, torch.softmax(q @ q.T, -1), 2, 0, row, col)
        assert (view.row, view.col) == expected


def test_clamp_pair_needs_a_token():
    with pytest.raises(InputError):
        additive.clamp_pair(0, 0, 0)


# ---------------------------------------------------------------- self-attention over an image


@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 16), w=st.integers(1, 16), d=st.integers(1, 5), seed=st.integers(0, 1000))
def test_image_flattening_round_trips(h, w, d, seed):
    img = torch.randn(h, w, d, generator=torch.Generator().manual_seed(seed))
    tokens = image.flatten_image(img)
    assert tokens.shape == (h * w, d)
    r, c = (h - 1) // 2, w - 1
    assert torch.equal(tokens[r * w + c], img[r, c])  # pixel (r, c) is token r W + c
    assert torch.equal(image.unflatten_tokens(tokens, h, w), img)


def test_colours_round_trip_through_features():
    colours = torch.arange(256, dtype=torch.uint8).view(16, 16, 1).expand(16, 16, 3)
    x = image.pixel_features(colours)
    assert float(x.min()) == -1.0 and float(x.max()) == 1.0
    assert torch.equal(image.features_to_colours(x), colours)


@pytest.mark.parametrize("key", list(image.PATTERNS))
@pytest.mark.parametrize("features", list(image.FEATURES))
def test_image_attention_on_every_pattern(key, features):
    img = image.pattern(key)
    assert img.shape == (image.PATTERN_SIDE, image.PATTERN_SIDE, 3) and img.dtype == torch.uint8
    trace = image.image_attention(img, features, d_k=4, seed=1)
    n = img.shape[0] * img.shape[1]
    assert trace.weights.shape == (n, n) and trace.output_image.shape == img.shape
    assert trace.torch_matches and trace.torch_max_abs_diff < 1e-5
    heat = trace.attention_map(3, 5)
    assert heat.shape == img.shape[:2]
    assert float(heat.sum()) == pytest.approx(1.0, abs=1e-5)
    assert torch.equal(heat.flatten(), trace.weights[3 * img.shape[1] + 5])


def test_a_dark_pixel_attends_to_dark_pixels():
    trace = image.image_attention(image.pattern("checkerboard"), "rgb")
    dark = trace.image[..., 0] < 128
    heat = trace.attention_map(0, 0)  # a dark square's corner
    assert bool(dark[0, 0])
    assert float(heat[dark].min()) > 10 * float(heat[~dark].max())


def _coded_image(h: int, w: int) -> torch.Tensor:
    """An (h, w, 3) image whose pixel (r, c) has the unique colour (r, c, 7)."""
    return torch.tensor([[(r, c, 7) for c in range(w)] for r in range(h)], dtype=torch.uint8)


@pytest.mark.parametrize(("h", "w", "row", "col"), [(3, 4, 2, 1), (12, 12, 4, 4), (5, 16, 4, 15), (1, 2, 0, 1)])
def test_pixel_view_token_and_colour_against_the_flattened_image(h, w, row, col):
    img = _coded_image(h, w)
    trace = image.image_attention(img, "projected", d_k=2, seed=3)
    pixel = image.pixel_view(trace, row, col)
    # the token is where (row, col)'s colour lands when the image is flattened (found by scanning)
    flat = image.flatten_image(img).tolist()
    assert pixel.token == flat.index([row, col, 7])
    assert pixel.colour == (row, col, 7)
    assert trace.pixel_coordinates == tuple((r, c) for r in range(h) for c in range(w))
    assert trace.token_colours.tolist() == [[r, c, 7] for r in range(h) for c in range(w)]
    assert (trace.token_count, trace.weight_count) == (h * w, (h * w) ** 2)
    assert pixel.uniform_weight == pytest.approx(1 / (h * w))
    assert torch.equal(pixel.attention_map, trace.attention_map(row, col))


def test_pixel_view_lists_the_most_weighted_pixels_largest_first():
    trace = image.image_attention(image.pattern("shapes"), "rgb")
    pixel = image.pixel_view(trace, 2, 2)  # inside the red square
    weights = trace.weights[2 * 12 + 2].tolist()
    largest = sorted(weights, reverse=True)[:5]  # a plain sort of the pixel's row of weights
    assert list(pixel.top_weights) == pytest.approx(largest, abs=0)
    for (r, c), n, colour, weight in zip(pixel.top_pixels, pixel.top_tokens, pixel.top_colours, pixel.top_weights):
        assert weights[n] == weight and n == [i for i in range(144) if (i // 12, i % 12) == (r, c)][0]
        assert colour == (220, 40, 40)  # red looks at red
    small = image.image_attention(_coded_image(1, 2), "rgb")
    assert len(image.pixel_view(small, 0, 0).top_tokens) == 2  # at most N pixels
    assert len(image.pixel_view(trace, 0, 0, top=1).top_tokens) == 1
    with pytest.raises(InputError):
        image.pixel_view(trace, 0, 0, top=0)
    with pytest.raises(IndexError):
        image.pixel_view(trace, 12, 0)


@pytest.mark.parametrize(("row", "col", "h", "w", "expected"), [
    (11, 11, 8, 16, (7, 11)), (3, 20, 12, 12, (3, 11)), (-1, 4, 5, 5, (0, 4)), (6, 8, 12, 16, (6, 8)),
])
def test_clamp_pixel(row, col, h, w, expected):
    assert image.clamp_pixel(row, col, h, w) == expected


def test_upload_size_check_and_centre():
    image_upload.check_upload_size(image.MAX_UPLOAD_BYTES, "ok.png")  # at the limit: accepted
    with pytest.raises(InputError) as error:
        image_upload.check_upload_size(6 * 2**20, "huge.png")
    assert str(error.value.message) == "“huge.png” is 6.0 MB; the limit is 5 MB."
    assert image.MAX_UPLOAD_MB == 5
    upload = image_upload.load_upload(_png_bytes((40, 30)), "red.png")  # 40 × 30 -> 16 × 12
    assert upload.pixels.shape[:2] == (12, 16) and upload.centre == (6, 8)
    with pytest.raises(InputError):
        image.clamp_pixel(0, 0, 0, 4)


def _png_bytes(size) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(buffer, "PNG")
    return buffer.getvalue()


def test_reshape_latex_writes_the_shapes_and_n():
    assert image.reshape_latex(12, 12) == (
        r"\hat{X} \in \mathbb{R}^{12 \times 12 \times 3} \;\longrightarrow\; X \in \mathbb{R}^{144 \times 3},"
        r"\qquad N = H W = 12 \cdot 12 = 144")
    text = image.reshape_latex(12, 16)
    assert r"\mathbb{R}^{12 \times 16 \times 3}" in text and r"\mathbb{R}^{192 \times 3}" in text
    assert text.endswith(r"12 \cdot 16 = 192")
    with pytest.raises(InputError):
        image.reshape_latex(0, 3)


def test_image_attention_rejects_bad_images():
    with pytest.raises(InputError):
        image.image_attention(torch.zeros(17, 4, 3, dtype=torch.uint8))
    with pytest.raises(InputError):
        image.image_attention(torch.zeros(1, 1, 3, dtype=torch.uint8))
    with pytest.raises(InputError):
        image.image_attention(torch.zeros(4, 4, 3))  # float, not colours
    with pytest.raises(InputError):
        image.image_attention(torch.zeros(4, 4, 3, dtype=torch.uint8), "hsv")
    with pytest.raises(InputError):
        image.pattern("mona lisa")


def _encode(size, fmt="PNG", mode="RGB", colour=(10, 200, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, colour).save(buffer, fmt)
    return buffer.getvalue()


@pytest.mark.parametrize(("size", "fmt", "name", "expected"), [
    ((100, 50), "PNG", "wide.png", (8, 16)),
    ((480, 640), "JPEG", "tall.JPG", (16, 12)),
    ((9, 7), "PNG", "small.png", (7, 9)),  # never upscaled
    ((300, 300), "JPEG", "photo.jpeg", (16, 16)),
])
def test_uploads_are_decoded_and_downscaled(size, fmt, name, expected):
    result = image_upload.load_upload(_encode(size, fmt), name)
    assert tuple(result.pixels.shape) == (*expected, 3) and result.pixels.dtype == torch.uint8
    assert result.format == fmt and result.original_size == size
    assert abs(int(result.pixels[0, 0, 1]) - 200) < 8  # the colour survives (JPEG: nearly)
    image.image_attention(result.pixels)  # and the page can use it


def test_transparent_uploads_are_laid_on_white():
    result = image_upload.load_upload(_encode((4, 4), mode="RGBA", colour=(255, 0, 0, 0)), "clear.png")
    assert result.pixels.unique().tolist() == [255]


def _gif() -> bytes:
    return _encode((8, 8), "GIF", mode="P", colour=1)


@pytest.mark.parametrize(("data", "name", "says"), [
    (b"hello", "notes.txt", "Only PNG and JPEG"),
    (b"hello", "noextension", "no extension"),
    (b"plain text, not an image", "fake.png", "not a PNG or JPEG"),
    (None, "renamed.png", "not a PNG or JPEG"),  # a GIF with a .png name
    (b"", "empty.png", "empty"),
    (b"\x89PNG\r\n\x1a\n" + bytes(6 * 2**20), "big.png", "limit is 5 MB"),
    ("truncated", "cut.png", "damaged"),
    ("garbled", "garbled.png", "damaged"),
    ("jpeg", "cut.jpg", "damaged"),
    ("many pixels", "huge.png", "megapixels"),
    ("bomb", "bomb.png", "megapixels"),
    ("one pixel", "dot.png", "single pixel"),
])
def test_bad_uploads_get_a_clear_message(data, name, says):
    png = _encode((64, 64))
    data = {
        None: _gif(),
        "truncated": _encode((300, 300), colour=(1, 2, 3))[:200],
        "garbled": png[:60] + bytes(20) + png[80:],
        "jpeg": _encode((300, 300), "JPEG")[:300],
        "many pixels": _encode((5000, 4000), mode="1", colour=0),  # 20 megapixels in a few kB
        "bomb": _encode((20000, 20000), mode="1", colour=0),  # beyond Pillow's own bomb limit
        "one pixel": _encode((1, 1)),
    }.get(data, data)
    assert len(data) <= image.MAX_UPLOAD_BYTES or says == "limit is 5 MB"
    with pytest.raises(InputError) as error:
        image_upload.load_upload(data, name)
    assert says in error.value.message
    assert error.value.field == "image_upload"


# ---------------------------------------------------------------- settings


def test_experiment_settings_defaults_are_valid():
    s = Settings()
    fixed, messages = s.replace()
    assert messages == [] and fixed == s
    assert s.temperature.tau in temperature.TEMPERATURE_GRID


@pytest.mark.parametrize(("change", "field", "expected", "says"), [
    ({"temperature.tau": 0.4}, "temperature.tau", 0.5, "nearest"),
    ({"temperature.tau": 0}, "temperature.tau", 0.01, "between"),
    ({"temperature.tau": "warm"}, "temperature.tau", 1.0, "must be a number"),
    ({"temperature.tau": 1e9}, "temperature.tau", 100.0, "between"),
    ({"why_sqrt_dk.samples": 10**7}, "why_sqrt_dk.samples", scaling.MAX_SQRT_SAMPLES, "between"),
    ({"why_sqrt_dk.keys": 1}, "why_sqrt_dk.keys", scaling.MIN_SQRT_KEYS, "between"),
    ({"why_sqrt_dk.distribution": "cauchy"}, "why_sqrt_dk.distribution", "normal", "Unknown distribution"),
    ({"positional_encoding.kind": "rotary"}, "positional_encoding.kind", "sinusoidal", "Unknown positional encoding"),
    ({"positional_encoding.shuffle": None}, "positional_encoding.shuffle", "reverse", "Unknown shuffle"),
    ({"positional_encoding.width": 1000}, "positional_encoding.width", positional.MAX_PE_WIDTH, "between"),
    ({"additive.hidden": 0}, "additive.hidden", additive.MIN_ADDITIVE_HIDDEN, "between"),
    ({"image_attention.source": "mona lisa"}, "image_attention.source", "smiley", "Unknown image"),
    ({"image_attention.row": 99}, "image_attention.row", image.MAX_IMAGE_SIDE - 1, "between"),
    ({"image_attention.features": "hsv"}, "image_attention.features", "rgb", "Unknown kind"),
    ({"experiment_seed": -1}, "experiment_seed", 0, "between"),
])
def test_experiment_settings_are_repaired_with_a_message(change, field, expected, says):
    fixed, messages = Settings().replace(**change)
    assert fixed.get(field) == expected
    assert any(says in m for m in messages), messages


def test_uploaded_image_is_an_allowed_source():
    fixed, messages = Settings().replace(**{"image_attention.source": "upload"})
    assert fixed.image_attention.source == "upload" and not messages


def test_walkthrough_scores_feed_the_torch_check():
    # The experiments reuse the walk-through's Q, K, V: make sure those agree with PyTorch.
    q, k, v = _qkv(Settings())
    assert torch.allclose(F.scaled_dot_product_attention(q, k, v), build_walkthrough(Settings()).trace.output,
                          atol=1e-6)
