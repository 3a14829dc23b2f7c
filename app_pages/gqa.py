"""Grouped-query and multi-query attention: h query heads share fewer key/value heads; the KV cache shrinks."""

import streamlit as st

from attention_core.errors import N_
from attention_core.lessons.generation.page import real_cache_rows
from attention_core.lessons.gqa.page import GQA_PAGE
from ui import frames, page_body, state, stepper, widgets
from ui.i18n import _

EXPLAIN = {
    "inputs": N_("The sentence's embeddings X, one row per token, as on the other pages."),
    "projections": N_("Q gets h · head_dim columns, one block per **query head**. K and V get only num_kv_heads · "
                      "head_dim: fewer **key/value heads**. With num_kv_heads = h this is multi-head attention; with "
                      "num_kv_heads = 1, multi-query attention."),
    "groups": N_("Consecutive query heads form groups of h / num_kv_heads; every head of a group reads the same "
                 "key/value head. A 1 in row r marks the key/value head g(r) that query head r uses."),
    "repeat": N_("To attend, each query head needs its own K and V: the key/value heads are repeated "
                 "(repeat_interleave), so the query heads of one group see identical keys. Compare two heads of the "
                 "same group: their K is the same matrix."),
    "weights": N_("Each query head still has its own queries, so its weights differ from its group-mates' even "
                  "though they share keys: the scores are q · k / √head_dim, then the mask and softmax."),
    "output": N_("The h heads' context vectors side by side, then W_O: the same as in multi-head attention."),
    "kv_cache": N_("Generating text keeps every token's keys and values (the *Generating token by token* page). "
                   "GQA stores num_kv_heads heads per token instead of h: that is why current models use it."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Grouped-query attention: fewer key/value heads"))
    st.markdown(_(
        "Multi-head attention gives every head its own queries, keys and values. **Multi-query attention** (Shazeer "
        "2019) keeps many query heads but one key/value head; **grouped-query attention** (Ainslie et al. 2023; Llama 2 "
        "70B, Llama 3, Mistral) shares each key/value head among a group of query heads. Same output shape, a much "
        "smaller KV cache."
    ))


def page() -> None:
    widgets.show_messages()

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        state.bind(st.number_input, _("num_heads h (query heads)"), "gqa.num_heads", step=1,
                   help=state.range_help("gqa.num_heads", N_("{low} to {high}.")))
    with c2:
        state.bind(st.number_input, _("num_kv_heads"), "gqa.num_kv_heads", step=1,
                   help=_("Must divide h. h = MHA, 1 = MQA, in between = GQA."))
    with c3:
        state.bind(st.number_input, _("head_dim"), "gqa.head_dim", step=1,
                   help=state.range_help("gqa.head_dim", N_("{low} to {high}; h · head_dim at most 16.")))
    with c4:
        state.bind(st.number_input, _("Seed of W"), "seed", step=1)
    state.bind(st.toggle, _("Causal mask"), "causal_mask", help=_("On: each token attends to itself and earlier tokens, as "
                                                              "in a language model."))

    settings = state.settings()
    walk = widgets.walkthrough_or_stop(GQA_PAGE, settings, state.edits())
    t = walk.trace
    kind = "MHA" if t.num_kv_heads == t.num_heads else "MQA" if t.num_kv_heads == 1 else "GQA"
    st.markdown(_("**{kind}:** {h} query heads, {kv} key/value heads, {group} query heads per key/value head; "
                  "head_dim = {hd}, scale 1/√{hd}.", kind=kind, h=t.num_heads, kv=t.num_kv_heads,
                  group=t.num_heads // t.num_kv_heads, hd=t.head_dim))

    stepper.live(GQA_PAGE, walk, EXPLAIN)

    with st.expander(_("The KV cache of real models"), expanded=False):
        st.markdown(_("Bytes per token: layers × 2 (K and V) × key/value heads × head_dim × 2 bytes (16-bit), from the "
                      "sizes the models publish in their config.json."))
        st.dataframe(frames.from_rows([(row.model, row.kv_heads, row.bytes_per_token) for row in real_cache_rows()],
                                      [_("model"), _("key/value heads"), _("bytes per token")]), hide_index=True)


page_body.run(page, header=header)
