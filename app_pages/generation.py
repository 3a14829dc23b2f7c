"""Generating token by token: a trained toy encoder-decoder reverses a word; every attention of every step, and the KV cache."""

import streamlit as st

from attention_core.errors import N_, Message
from attention_core.lessons.generation.page import GENERATION_PAGE, REAL_CONTEXT, cost_rows, real_cache_rows
from attention_core.transformer.generation import MAX_TOY_TEMPERATURE, MIN_TOY_TEMPERATURE, cross_attention_alignment
from attention_core.transformer.toy_model import LETTERS, NUM_LAYERS, TOY_MAX_INPUT
from ui import frames, page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "source": Message(N_("The **encoder** reads the whole word once: each letter's embedding (times √16 = 4) plus "
                         "its position's sinusoidal encoding, then {n} encoder blocks (the *Encoder block* page). Its "
                         "output M is what the decoder will look at in every step."), n=NUM_LAYERS),
    "encoder_attention": N_("The encoder's **self-attention**: every letter looks at every letter of the word "
                            "(no mask: the whole word is known). Pick the block above; the decoder never sees X, "
                            "only the output M of the last block."),
    "decoder_input": N_("The **decoder** reads START and every token it has chosen so far, embedded the same way. "
                        "At step t that is t rows."),
    "self_attention": N_("**Masked self-attention**: each decoder token looks at itself and the tokens before it, "
                         "never after (the causal mask). Only the last row decides the next token."),
    "cross_attention": N_("**Cross-attention**: queries from the decoder, keys and values from the encoder's "
                          "output M. In the trained model's second block, output token t mostly looks at input "
                          "letter n + 1 − t: the weights run along the anti-diagonal, which is how it reverses."),
    "kv_cache": N_("**The KV cache**: at step t the rows of the earlier tokens have not changed (the mask hides "
                   "the future), so their keys and values are kept. Only the new token's row (←) goes through the "
                   "decoder: one query, one key, one value per block, and the cache grows by one row."),
    "logits": N_("The decoder's last row times W_vocab, plus a bias: one score (logit) per vocabulary token."),
    "probabilities": N_("Softmax turns the logits into probabilities. Greedy decoding (τ = 0) takes the most "
                        "likely token; with τ > 0 the token is drawn at random from softmax(logits / τ), as on the "
                        "*Temperature* page. The chosen token becomes the decoder's next input."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Generating token by token: the decoder and its KV cache"))
    st.markdown(_(
        "A small Transformer (an encoder and a decoder, {n} blocks each, d_model = 16, 2 heads) was **trained to "
        "reverse a word**. Type a word: the decoder starts from START and produces one token per step until END, "
        "attending to what it has produced (masked self-attention) and to the encoder's output (cross-attention). "
        "*(Hung-yi Lee's Transformer lecture, on the decoder; Vaswani et al. 2017, sec. 3.)*", n=NUM_LAYERS,
    ))


def page() -> None:
    widgets.show_messages()

    settings = state.settings()
    c1, c2, c3 = st.columns([2, 1, 1])
    with c1:
        state.bind(st.text_input, _("Word to reverse"), "generation.source",
                   help=_("1 to {max} letters from {letters}; spaces between them are fine.", max=TOY_MAX_INPUT,
                          letters=", ".join(LETTERS)))
    with c2:
        state.bind(st.number_input, _("Temperature τ (0 = greedy)"), "generation.temperature", step=0.1, min_value=0.0,
                   max_value=MAX_TOY_TEMPERATURE, format="%.2f",
                   help=_("0 always takes the most likely token. From {low} to {high} the token is drawn from "
                          "softmax(logits / τ).", low=MIN_TOY_TEMPERATURE, high=MAX_TOY_TEMPERATURE))
    with c3:
        state.bind(st.number_input, _("Seed of the draws"), "seed", step=1, disabled=settings.generation.temperature == 0,
                   help=_("Used when τ > 0: the same seed draws the same tokens."))

    walk = widgets.walkthrough_or_stop(GENERATION_PAGE, state.settings())
    gen = walk.generation


    def _tokens(tokens: tuple[str, ...]) -> str:
        return " ".join(f"`{t}`" for t in tokens)


    st.markdown(_("**Input:** {source} → **output:** {output}", source=_tokens(walk.source_tokens),
                  output=_tokens(walk.output_tokens)))
    if not gen.finished:
        st.warning(_("The model reached the limit of {max} tokens without producing END; generation stopped there. "
                     "Lower τ for a surer answer.", max=len(gen.steps)), icon=":material/warning:")
    elif walk.output_tokens == walk.expected:
        st.success(_("Correct: the word reversed, then END."), icon=":material/check_circle:")
    else:
        st.info(_("Not the reversed word (a perfect answer is {expected}): at τ > 0 a less likely token can be "
                  "drawn, and the rest follows from it.", expected=_tokens(walk.expected)), icon=":material/info:")

    s1, s2 = st.columns([3, 1])
    with s1:
        widgets.keep_in_range(**{"generation.step": walk.step})
        steps = {k: _("Step {t}: reads {read} → chooses {chosen}", t=k + 1, read=" ".join(("START",) + walk.output_tokens[:k]),
                      chosen=walk.output_tokens[k]) for k in range(len(gen.steps))}  # a plain lookup
        state.bind(st.selectbox, _("Generation step"), "generation.step", options=list(steps), format_func=steps.get)
    with s2:
        layers = {b: _("Block {number}", number=b + 1) for b in range(NUM_LAYERS)}
        state.bind(st.selectbox, _("Block"), "generation.layer", options=list(layers), format_func=layers.get,
                   help=_("The encoder's or the decoder's block whose attention and KV cache are shown."))

    aligned = cross_attention_alignment(walk.generation, NUM_LAYERS - 1)  # what the second block's weights show
    ALIGNMENT = Message(N_("On “{word}”, block {block}'s weights (the mean of its heads) put their largest weight on the "
                           "letter to write next in {on_next} of {rows} rows; {on_previous} lag by one (on the letter "
                           "written the step before), {elsewhere} look elsewhere. Over 200 random words: 76 % and 22 %."),
                        word="".join(walk.source_tokens), block=NUM_LAYERS, on_next=aligned.on_next, rows=aligned.rows,
                        on_previous=aligned.on_previous, elsewhere=aligned.elsewhere)
    stepper.live(GENERATION_PAGE, walk, {**EXPLAIN, "cross_attention": Message(
        N_("{explain} {measured}"), explain=Message(EXPLAIN["cross_attention"]), measured=ALIGNMENT)})

    with st.expander(_("What the KV cache saves: multiply-adds and memory"), expanded=False):
        st.markdown(_("Multiply-adds of the matrix products in the decoder at each step of this run. Without a cache "
                      "every step recomputes all t rows (and the attention over them grows like t²); with it, one row "
                      "per step (growing like t). The encoder's keys and values for cross-attention are computed once "
                      "with the cache, before step 1."))
        st.dataframe(frames.from_rows(cost_rows(walk), [_("step t"), _("without cache"), _("with cache"),
                                                        _("K and V cache, bytes")]), hide_index=True)
        st.markdown(_("For scale, the same formula (layers × 2 × KV heads × head_dim × bytes per number × tokens) at "
                      "{tokens} tokens, 16-bit numbers, with the sizes the models publish in their config.json:",
                      tokens=REAL_CONTEXT))
        st.dataframe(frames.from_rows([(row.model, row.bytes_per_token, row.gib_total) for row in real_cache_rows()],
                                      [_("model"), _("bytes per token"), _("GiB at {tokens} tokens",
                                                                           tokens=REAL_CONTEXT)]),
                     hide_index=True)


page_body.run(page, header=header)
