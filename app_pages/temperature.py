"""Temperature: weights = softmax(Q Kᵀ / (τ √d_k)) on the current sentence; argmax as τ → 0, uniform as τ → ∞."""

import pandas as pd
import streamlit as st

from attention_core.inputs.tokens import token_labels
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.lessons.temperature import page as temperature
from ui import charts, heatmaps, page_body, state, widgets
from ui.i18n import _


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Temperature: how sharp is the softmax?"))
    st.markdown(_(
        "Divide the scores by a **temperature τ** before the softmax. τ = 1 is ordinary attention. A cold softmax "
        "(τ → 0) puts all the weight on the best-matching key (argmax); a hot one (τ → ∞) spreads it evenly. "
        "The **entropy** of a row measures the spread: 0 for one-hot weights, ln n for uniform ones."
    ))
    weight_latex, entropy_latex = temperature.temperature_latex()
    left, right = st.columns(2)
    left.latex(weight_latex)
    right.latex(entropy_latex)


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    walk = widgets.walkthrough_or_stop(SELF_ATTENTION_PAGE, settings, state.edits())
    att = walk.trace.attention
    rows = token_labels(walk.tokens)
    view = widgets.build_or_stop(temperature.temperature_view, att.query, att.key, att.value, settings.temperature.tau,
                                 settings.temperature.row)
    widgets.keep_in_range(**{"temperature.row": view.row})  # a sentence that got shorter
    trace, row = view.trace, view.row

    slider, presets = st.columns([1, 1], vertical_alignment="bottom")
    with slider:
        state.bind(st.select_slider, _("Temperature τ (log scale)"), "temperature.tau",
                   options=list(temperature.TEMPERATURE_GRID),
                   format_func=lambda t: f"{t:g}")
    with presets:
        b1, b2, b3 = st.columns([4, 3, 4])  # "τ = 1" is the shortest label
        b1.button(_("Cold: τ = 0.01"), key="temp_cold", on_click=state.update, kwargs={"temperature.tau": 0.01}, width="stretch")
        b2.button("τ = 1", key="temp_one", on_click=state.update, kwargs={"temperature.tau": 1.0}, width="stretch")
        b3.button(_("Hot: τ = 100"), key="temp_hot", on_click=state.update, kwargs={"temperature.tau": 100.0}, width="stretch")
    st.caption(_("The sentence “{sentence}” with its Q and K from the self-attention page "
                 "(d_k = {d_k}); change them there or with the sidebar's example.",
                 sentence=widgets.md_escape(settings.sentence), d_k=trace.d_k))

    tau = trace.tau
    st.markdown(_("**τ = {tau}:** every score is multiplied by 1 / (τ √d_k) = 1 / ({tau} · √{d_k}) = "
                  "**{scale}** before the softmax.", tau=f"{tau:g}", d_k=trace.d_k, scale=f"{trace.scale:.4g}"))

    weights_col, entropy_col = st.columns([3, 2])
    with weights_col:
        st.markdown(_("**Weights at τ = {tau}** (click a row to write its numbers out below)", tau=f"{tau:g}"))
        heatmaps.heatmap(trace.weights, rows, rows, key=f"temp_weights_{len(rows)}", clickable=True,
                        selected=(row, view.row_favourite),
                        row_title=_("query token"), col_title=_("key token"), legend=False,
                        on_cell=lambda r, c: state.update(**{"temperature.row": r}))
    with entropy_col:
        st.markdown(_("**Entropy of each row** (dashed: ln n = {value}, uniform)", value=f"{trace.max_entropy:.3f}"))
        charts.bars(trace.entropy.tolist(), rows, key="temp_entropy", x_title=_("entropy H (nats)"),
                    y_title=_("query token"),
                    limit=trace.max_entropy)

    st.subheader(_("As τ goes from 0.01 to 100"))
    sweep = view.sweep
    taus, marked = list(sweep.taus), list(view.marked)
    sweep_lines = [
        {"x": taus, "y": sweep.mean_entropy.tolist(), "series": _("mean entropy (nats)"), "order": 0,
         "dashed": False, "marked": marked},
        {"x": taus, "y": sweep.mean_max_weight.tolist(), "series": _("mean largest weight"), "order": 1,
         "dashed": False, "marked": marked},
        {"x": taus, "y": list(view.max_entropy_line), "series": f"ln n = {sweep.max_entropy:.3f}",
         "order": 2, "dashed": True, "marked": False},
    ]
    chart_col, limits_col = st.columns([3, 2])
    with chart_col:
        charts.lines(sweep_lines, key="temp_sweep", x_title=_("τ (log scale)"), y_title=_("mean over the query rows"),
                     x_base=10, marked=True, width=600, height=400)
        st.caption(_("The diamonds mark the current τ. Rows whose best score is shared (a repeated word) keep some "
                     "entropy even at τ → 0: the weight is split between the tied keys."))
    with limits_col:
        st.markdown(_("**The two limits**, worked out by `sympy.limit` for two keys with scores s₁ > s₂:"))
        start, cold, hot = temperature.limits_latex(tr=_)
        st.latex(start)
        st.latex(cold)
        st.latex(hot)
        st.markdown(_("The same holds for n keys: as τ → 0 the largest score takes all the weight, as τ → ∞ each "
                      "key gets 1/n."))

    st.subheader(_("Row {row} ({token}) with its numbers", row=view.row_number,
                 token=widgets.md_escape(walk.tokens[row])))
    state.bind(st.selectbox, _("Query row"), "temperature.row", options=list(range(len(rows))),
               format_func=lambda i: rows[i])
    scaled_text, entropy_text = temperature.row_latex(trace, row)
    st.latex(scaled_text)
    st.latex(entropy_text)
    limit_rows = pd.DataFrame(
        [trace.argmax_weights[row].tolist(), trace.weights[row].tolist(), trace.uniform_weights[row].tolist()],
        index=[_("τ → 0 (argmax)"), f"τ = {tau:g}", _("τ → ∞ (uniform)")], columns=rows,
    )
    st.dataframe(limit_rows, column_config={c: st.column_config.NumberColumn(c, format="%.4f") for c in rows})
    st.caption(_("Entropy of this row: {entropy} of at most ln {n} = {max}.", entropy=f"{float(trace.entropy[row]):.4f}",
                 n=len(rows), max=f"{trace.max_entropy:.4f}"))

    widgets.check_line(trace.torch_max_abs_diff, trace.torch_matches,
                        f"torch.nn.functional.scaled_dot_product_attention(Q, K, V, scale={trace.scale:.4g})")


def footer() -> None:
    """The code behind the page, the same on every click (``page_body.run``)."""
    widgets.show_code((temperature.temperature_attention,), key="page_code")


page_body.run(page, header=header, footer=footer)
