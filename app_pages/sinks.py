"""Attention sinks: softmax must put its weight somewhere; where SmolLM2 puts it, what evicting it from a sliding
KV cache costs (StreamingLLM), and gpt-oss's learned sink."""

import numpy as np
import streamlit as st

from attention_core.errors import N_, InputError
from attention_core.lessons.sinks.page import SINKS, SINKS_MAX_CHARS
from attention_core.smollm2 import measure, sinks
from attention_core.smollm2.model import MODERN_LM_HEADS, MODERN_LM_LAYERS, MODERN_LM_MAX_CHARS
from attention_core.smollm2.sinks import SINKS_MAX_TOKENS
from ui import charts, heatmaps, page_body, runtime, state, stepper, widgets
from ui.i18n import _
from ui.page_parts import modern_lm_data, sink_data

EXPLAIN = {
    "weights": N_("Softmax makes every weight positive and every row sum to 1: a head cannot give less than all of its "
                  "attention. Token 1 sees only itself, so its row is [1, 0, …, 0] whatever its score."),
    "nothing": N_("A query with nothing to find (every score equal, here 0) still spends its 1: 1/i on each of the i "
                  "keys it sees, and its output is the mean of their values, not 0. Trained models avoid this by "
                  "parking the weight on a token whose value does little: the first one, the attention sink."),
    "sink_weights": N_("gpt-oss gives each head one learned logit b that joins the softmax's denominator but has no "
                       "key and no value: the keys' weights now sum to less than 1, and what is missing went to the "
                       "sink. Try b = −20 (no sink: plain softmax) and b = 5."),
    "sink_output": N_("The output mixes the values by the weights with the sink. What the sink took is weight given "
                      "to nothing: the output shrinks toward 0, which is what a head with nothing to say should do."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Attention sinks: where softmax puts attention it has no use for"))
    st.markdown(_(
        "Softmax's weights sum to 1, so a head always attends to something. Trained language models park the weight "
        "they have no use for on the **first token**, the **attention sink** (Xiao et al. 2024, StreamingLLM). Below: "
        "why, on the sentence's numbers; where the real SmolLM2 puts its weight; what happens to its predictions when "
        "a sliding-window KV cache evicts the first tokens; and **gpt-oss**'s fix (OpenAI 2025): a learned sink "
        "logit in every head's softmax."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3 = st.columns(3)
    with c1:
        state.bind(st.number_input, _("Sink logit b (gpt-oss)"), "sinks.sink_logit", step=0.5, format="%.2f",
                   help=state.range_help("sinks.sink_logit", N_(
                       "{low:g} to {high:g}: −20 is no sink at all (e^b ≈ 0), 0 counts like one more key of score 0.")))
    with c2:
        state.bind(st.number_input, _("d_k (width of q, k, v)"), "d_k", step=1,
                   help=state.range_help("d_k", N_("{low} to {high}.")))
    with c3:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)

    walk = widgets.walkthrough_or_stop(SINKS, state.settings(), state.edits())
    stepper.live(SINKS, walk, EXPLAIN)
    st.page_link("app_pages/gated_attention.py", icon=":material/toggle_on:",
                 label=_("Gated attention (Qwen3-Next): a gate lets a head output nothing, so it needs no sink"))
    real_model()


def real_model() -> None:
    """SmolLM2's heads on the learner's prompt, then StreamingLLM on a long text."""
    st.header(_("In a real model: SmolLM2-135M"))
    if modern_lm_data.turned_off():
        st.info(_("This part is turned off on this server (the environment variable {name} is set to “off”): the model "
                  "needs about 600 MB of memory. The steps above work as usual.", name=modern_lm_data.SWITCH),
                icon=":material/power_off:")
        return
    own = state.settings().sinks
    state.bind(st.text_area, _("SmolLM2's prompt"), "sinks.prompt", height=80,
               help=_("Any text, at most {chars} characters (a longer one is cut, with a message); press Ctrl+Enter to "
                      "apply. The same model as on the page Inside a modern language model.",
                      chars=f"{MODERN_LM_MAX_CHARS:,}"))
    try:
        with st.spinner(_("Loading SmolLM2-135M-Instruct (once per server: a few seconds)…")), runtime.step_aside():
            modern_lm_data.decoder()
        with st.spinner(_("Running the model on your prompt…")), runtime.step_aside():
            prompt, profile = sink_data.profile(own.prompt)
    except InputError as error:
        widgets.show_error(error)
        return
    if prompt.cut or prompt.chars_cut:
        st.warning(_("Your prompt is longer than the model reads here ({max} tokens); only its start was read.",
                     max=prompt.kept_tokens), icon=":material/content_cut:")
    t = len(prompt.tokens)
    st.markdown(_("**{t} tokens**, the first: {first}. Each cell: one head's mean weight on token 1, over the tokens "
                  "2 … {t} that attend. A head that spread its weight evenly would score {even:.2f}.",
                  t=t, first=widgets.code_span(measure.shown_token(prompt.tokens[0])),
                  even=sum(1 / (i + 1) for i in range(1, t)) / max(t - 1, 1)))

    def open_head(layer: int, head: int) -> None:
        state.update(**{"sinks.layer": layer, "sinks.head": head})

    heatmaps.heatmap(profile.mean.numpy().astype(float), [_("layer {layer}", layer=i + 1) for i in range(MODERN_LM_LAYERS)],
                     [_("head {head}", head=h + 1) for h in range(MODERN_LM_HEADS)], key="sinks_first",
                     selected=(own.layer, own.head), clickable=True, on_cell=open_head, legend=False)
    st.markdown(_("**{share}** of the 270 heads put more than half of their weight on token 1; all heads together "
                  "put **{mean}** of it there. Click a cell to write out its mean:",
                  share=f"{profile.share:.0%}", mean=f"{float(profile.mean.mean()):.0%}"))
    st.latex(sinks.first_token_latex(profile, own.layer, own.head))
    streaming_llm(own)


def streaming_llm(own) -> None:
    """The three caches' losses on a long text, measured once per server and shared."""
    st.header(_("StreamingLLM: evict the sink and the model breaks"))
    st.markdown(_(
        "A **sliding-window KV cache** keeps only the keys and values of the last w tokens, so memory stays fixed on "
        "an endless text. Xiao et al. (2024) found that it fails as soon as the first tokens leave the cache, and that "
        "keeping just 4 of them (the sinks) beside the window repairs it. Here SmolLM2 reads a long text three times: "
        "with every key, with the window only, and with the window plus the first s tokens."
    ))
    st.caption(_("How it is computed: one forward pass per cache, whose attention mask lets token i see exactly the "
                 "keys the cache would hold when it is read (the last w tokens, itself included, plus the first s); "
                 "each key keeps the rotary position it had, as transformers' caches store keys after RoPE. A test "
                 "compares this with a real token-by-token run whose cache evicts."))
    c1, c2, c3 = st.columns([2, 1, 1])
    with c1:
        state.bind(st.toggle, _("Use my own text"), "sinks.own_text",
                   help=_("Off: the first pages of Alice's Adventures in Wonderland (Lewis Carroll, 1865; public "
                          "domain, Project Gutenberg)."))
    with c2:
        state.bind(st.number_input, _("Window w (tokens)"), "sinks.window", step=16,
                   help=state.range_help("sinks.window", N_("{low} to {high}, at least the number of sinks.")))
    with c3:
        state.bind(st.number_input, _("Sink tokens s"), "sinks.sinks", step=1,
                   help=state.range_help("sinks.sinks", N_("{low} to {high}: the first tokens kept.")))
    if own.own_text:
        state.bind(st.text_area, _("Your text (at most {max} tokens are read)", max=SINKS_MAX_TOKENS), "sinks.text",
                   height=150, help=_("At most {chars} characters (a longer text is cut, with a message).",
                                      chars=f"{SINKS_MAX_CHARS:,}"))
        text = own.text
        if not text.strip():
            st.error(_("Paste a text of a few hundred tokens: the losses are measured on it."), icon=":material/error:")
            return
    else:
        text = sinks.bundled_text()
        with st.expander(_("The text")):
            st.text(text)
    try:
        sinks.check_window(own.window, own.sinks)
    except InputError as error:
        widgets.show_error(error)
        return
    run = sink_data.measured(text, own.window, own.sinks)
    if run is None:
        slot = st.empty()  # the button, gone once the measurement is there
        if not slot.button(_("Measure (about 10 s, once per server: then every student sees it at once)"),
                           key="sinks_measure", icon=":material/speed:", type="primary"):
            return
        try:
            with st.spinner(_("Three passes of SmolLM2 over the text…")), runtime.step_aside():
                run = sink_data.measure(text, own.window, own.sinks)
        except InputError as error:
            widgets.show_error(error)
            return
        slot.empty()
    show_run(run)


def show_run(run: sinks.StreamingRun) -> None:
    """The measurement's table, chart and timing."""
    if run.text_tokens > run.tokens:
        st.warning(_("The text has {n} tokens; the first {kept} were read.", n=run.text_tokens, kept=run.tokens),
                   icon=":material/content_cut:")
    held = {"full": _("all (up to {t})", t=run.tokens), "window": str(run.window),
            "sinks": f"{run.window} + {run.sinks}"}
    rows = [[held[key], f"{run.loss(key):.3f}", f"{run.perplexity(key):.2f}", f"{run.loss_after_window(key):.3f}"]
            for key in sinks.CONDITIONS]
    heatmaps.text_table(rows, [_(title) for title in sinks.CONDITIONS.values()],
                        [_("keys a token sees"), _("loss (nats per token)"), _("perplexity e^loss"),
                         _("loss after token {w}", w=run.window)], key="sinks_losses", always=True)
    st.markdown(_("Perplexity over the {n} predicted tokens: **{full:.2f}** with every key, **{window:.2f}** with the "
                  "window only, **{sinks:.2f}** with the window and {s} sinks. The first {w} predictions are the same "
                  "in all three (nothing is evicted yet); the difference is all after them.", n=run.tokens - 1,
                  full=run.perplexity("full"), window=run.perplexity("window"), sinks=run.perplexity("sinks"),
                  s=run.sinks, w=run.window))
    st.latex(sinks.streaming_latex(run, _))
    parts = []
    for order, (key, title) in enumerate(sinks.CONDITIONS.items()):
        smooth = run.trailing_mean_losses(key).numpy()
        parts.append({"x": np.arange(2, smooth.size + 2), "y": smooth, "series": _(title), "order": order,
                      "dashed": False})  # row i is the loss of token i + 2 (1-based)
    low, high = min(float(part["y"].min()) for part in parts), max(float(part["y"].max()) for part in parts)
    charts.lines(parts, key="sinks_losses_chart", x_title=_("token predicted"),
                 y_title=_("loss, mean of the last {n}", n=sinks.SMOOTHING_TOKENS),
                 x_log=False, points=False, height=460, x_format="d", y_format=".3~g",
                 y_range=(max(0.0, low - 0.25), high + 0.25))
    st.caption(_("Measured once on this server in {seconds:.1f} s (three forward passes of {t} tokens, one torch "
                 "thread), then shared by every session.", seconds=run.seconds, t=run.tokens))


page_body.run(page, header=header)
