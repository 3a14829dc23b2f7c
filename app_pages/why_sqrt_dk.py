"""Why divide by √d_k: sample q and k, watch Var(q · k) grow like d_k and the softmax saturate; derive it with sympy."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.why_sqrt_dk import page as scaling
from ui import charts, experiments, frames, page_body, state, widgets
from ui.i18n import _


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Why divide by √d_k?"))
    st.markdown(_(
        "The scores are dot products q · k of d_k-long vectors. If every component of q and k is an independent "
        "random number with mean 0 and variance 1, the dot product has **mean 0 and variance d_k** — so the "
        "wider the vectors, the more spread out the scores, and the softmax over them puts nearly all the weight "
        "on one key. Dividing by √d_k brings the variance back to 1. Sample it, then derive it. "
        "*(Vaswani et al. 2017, §3.2.1 and footnote 4; Zhang et al., Dive into Deep Learning, §10.3, as a Chinese "
        "tutorial retells it.)*"
    ))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("Samples S per d_k"), "why_sqrt_dk.samples", step=500,
                   help=state.range_help("why_sqrt_dk.samples", N_("{low} to {high} random (q, k) pairs for each d_k. More "
                                                                   "samples, smaller error bars.")))
    with c2:
        state.bind(st.number_input, _("Keys n per query"), "why_sqrt_dk.keys", step=1,
                   help=state.range_help("why_sqrt_dk.keys", N_("{low} to {high}: how many scores each softmax row has.")))
    with c3:
        state.bind(st.selectbox, _("Components drawn from"), "why_sqrt_dk.distribution", options=list(scaling.DISTRIBUTIONS),
                   format_func={k: _(label) for k, label in scaling.DISTRIBUTIONS.items()}.get,
                   help=_("Each has mean 0 and variance 1; the result holds for all."))
    with c4:
        state.bind(st.number_input, _("Seed"), "experiment_seed", step=1, help=_("Seeds a local random generator."))

    result = experiments.scaling_experiment(settings.why_sqrt_dk.samples, settings.why_sqrt_dk.keys, settings.experiment_seed,
                                            settings.why_sqrt_dk.distribution)
    summary = scaling.summarise(result)
    d = list(summary.d_k)

    st.header(_("1. The variance of q · k grows like d_k"))
    left, right = st.columns([3, 2])
    with left:
        var, se, scaled = result.variance.tolist(), result.standard_error.tolist(), result.scaled_variance.tolist()
        variance_lines = [
            {"x": d, "y": var, "series": _("measured Var(q · k)"), "order": 0, "dashed": False,
             "lo": list(summary.variance_low), "hi": list(summary.variance_high)},
            {"x": d, "y": list(summary.theory_variance), "series": _("theory: Var = d_k"), "order": 1,
             "dashed": True},
            {"x": d, "y": scaled, "series": _("measured Var(q · k / √d_k)"), "order": 2, "dashed": False},
            {"x": d, "y": list(summary.theory_scaled_variance), "series": _("theory: Var = 1"), "order": 3,
             "dashed": True},
        ]
        charts.lines(variance_lines, key="sqrt_variance", x_title=_("d_k (log scale)"), y_title=_("variance (log scale)"),
                     y_log=True, error_bars=True, height=430)
        st.caption(_("Each point: the sample variance of S = {samples} dot products. Error bars: ± 2 standard "
                     "errors, √((2 d_k² + d_k (κ² − 3)) / S) with κ = E[x⁴], the components' fourth moment (3 for "
                     "a Gaussian): Var[s²] = E[s⁴] − d_k² = 2 d_k² + d_k (κ² − 3), divided by the S samples.",
                     samples=result.samples))
    with right:
        table = frames.table({
            "d_k": d,
            _("mean of q·k"): [f"{m:+.3f}" for m in result.mean.tolist()],
            "Var(q·k)": [f"{v:.4g}" for v in var],
            _("± 1 s.e."): [f"{e:.2g}" for e in se],
            "Var / d_k": [f"{r:.3f}" for r in summary.variance_ratio],
        })
        st.dataframe(table, hide_index=True, height=experiments.table_height(len(d)))
        st.markdown(_("At d_k = {d_k} the scores have a standard deviation of about √{d_k} = **{sd}**: "
                      "two keys' scores typically differ by tens, and e^{sd} ≈ {exp}.",
                      d_k=summary.largest_d_k, sd=f"{summary.largest_sd:.0f}", exp=f"{summary.exp_largest_sd:.1e}"))

    st.header(_("2. What that does to the softmax"))
    st.markdown(_(
        "Each of {rows} random queries meets n = {keys} random keys: the softmax of the n scores, "
        "**without** and **with** ÷ √d_k. Without scaling, the largest weight heads for 1 (one key takes everything) "
        "and the entropy for 0; a softmax that saturated passes almost no gradient back to the scores.",
        rows=result.rows, keys=result.keys,
    ))
    st.latex(scaling.entropy_latex())

    def softmax_lines(raw, scaled, uniform: list, uniform_name: str) -> list[dict]:
        """One measure of the weights, without and with ÷ √d_k, and its value for uniform weights (dashed)."""
        return [{"x": d, "y": raw.tolist(), "series": "softmax(q · k)", "order": 0, "dashed": False},
                {"x": d, "y": scaled.tolist(), "series": "softmax(q · k / √d_k)", "order": 1, "dashed": False},
                {"x": d, "y": uniform, "series": uniform_name, "order": 2, "dashed": True}]

    max_lines = softmax_lines(result.max_weight_raw, result.max_weight_scaled, list(summary.uniform_weight_line),
                              _("uniform: 1/n = {value}", value=f"{summary.uniform_weight:.3g}"))
    entropy_lines = softmax_lines(result.entropy_raw, result.entropy_scaled, list(summary.uniform_entropy_line),
                                  _("uniform: ln n = {value}", value=f"{summary.uniform_entropy:.3g}"))
    left, right = st.columns(2)
    with left:
        st.markdown(_("**The largest weight** (mean over the queries)"))
        charts.lines(max_lines, key="sqrt_max_weight", x_title=_("d_k (log scale)"), y_title=_("largest weight"),
                     y_range=(0.0, 1.0), width=480, height=380)
    with right:
        st.markdown(_("**The entropy H of the weights** (nats, mean over the queries)"))
        charts.lines(entropy_lines, key="sqrt_entropy", x_title=_("d_k (log scale)"), y_title=_("entropy H"),
                     y_range=(0.0, summary.entropy_axis_top), width=480, height=380)
    widgets.check_line(result.torch_max_abs_diff, result.torch_matches,
                        "torch.nn.functional.scaled_dot_product_attention(q, K, I_n)")
    st.caption(_("With V = I_n (the identity), attention's output is the weights themselves: so PyTorch's function "
                 "gives the scaled weights to compare with, at every d_k."))


def footer() -> None:
    """The derivation, the same for every sample: drawn once per whole-app run, under the body (``page_body.run``)."""
    st.header(_("3. The derivation, with sympy"))
    st.markdown(_("Take one score s = q · k with independent components, E[q_l] = E[k_l] = μ and Var = σ². "
                  "sympy does the algebra, then puts in μ = 0, σ = 1:"))
    for number, step in enumerate(scaling.variance_derivation(), start=1):
        formula, reason = st.columns([3, 2], vertical_alignment="center")
        formula.latex(step.latex)
        reason.markdown(f"**{number}.** {_(step.reason)}")
    latex, _mean, _var = scaling.gaussian_check(tr=_)
    st.markdown(_("And `sympy.stats` confirms the one-component result for Gaussian q and k:"))
    st.latex(latex)
    st.caption(_("The Chinese tutorial after *Dive into Deep Learning* §10.3 says the variance of the dot product is "
                 "“n”; with its q, k ∈ {space} the width is k: it is d_k, as derived above.", space="ℝ^{1×k}"))

    widgets.show_code((scaling.run_scaling_experiment, scaling.variance_derivation), key="page_code")


page_body.run(page, header=header, footer=footer)
