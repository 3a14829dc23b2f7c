"""Attention Explorer: the router. Pages live in app_pages/; the math in attention_core/.

The page folder is not called ``pages/``: Streamlit auto-discovers a ``pages/``
folder next to the entry script and, on a fresh server, runs a deep-linked page
file on its own (no sidebar, no shared settings) before ``st.navigation`` has
run once. Every page is listed here explicitly instead.
"""

from pathlib import Path

import streamlit as st

from attention_core.inputs.presets import PRESETS
from attention_core.settings import LANGUAGES, PALETTES
from ui import layout, presenter, runtime, state, teacher, widgets
from ui.i18n import _

runtime.tune_server()  # once per process: cheap garbage collection, no Nagle delay (ui/runtime.py)
# Script runs take turns (ui/runtime.py): under a class's load a click is answered as soon as its own run ends.
with runtime.one_run_at_a_time():
    st.set_page_config(page_title=_("Attention Explorer"), page_icon=":material/visibility:", layout="wide")
    state.load_link()  # a shared link's settings, on a session's first run
    state.start_run()  # the widgets this run binds are listed for the teacher's panel (ui/teacher.py)

    # Absolute paths: the app also runs from deploy/streamlit_app.py (Community Cloud's entry point).
    HERE = Path(__file__).resolve().parent
    PAGES_DIR = HERE / "app_pages"

    PAGES = {
        _("Start"): [
            st.Page(PAGES_DIR / "overview.py", title=_("Overview"), icon=":material/home:", url_path="overview", default=True),
        ],
        _("Self-attention"): [
            st.Page(PAGES_DIR / "tokens.py", title=_("Tokens & embeddings"), icon=":material/abc:", url_path="tokens"),
            st.Page(PAGES_DIR / "no_weights.py", title=_("Attention without trainable weights"), icon=":material/front_hand:",
                    url_path="no-weights"),
            st.Page(PAGES_DIR / "self_attention.py", title=_("Scaled dot-product self-attention"), icon=":material/calculate:",
                    url_path="self-attention"),
        ],
        _("Masking & heads"): [
            st.Page(PAGES_DIR / "causal.py", title=_("Causal attention"), icon=":material/visibility_off:", url_path="causal"),
            st.Page(PAGES_DIR / "dropout.py", title=_("Dropout"), icon=":material/grain:", url_path="dropout"),
            st.Page(PAGES_DIR / "multi_head.py", title=_("Multi-head attention"), icon=":material/view_column:",
                    url_path="multi-head"),
            st.Page(PAGES_DIR / "cross_attention.py", title=_("Cross-attention"), icon=":material/compare_arrows:",
                    url_path="cross-attention"),
        ],
        _("Experiments"): [
            st.Page(PAGES_DIR / "why_sqrt_dk.py", title=_("Why divide by √d_k?"), icon=":material/functions:",
                    url_path="why-sqrt-dk"),
            st.Page(PAGES_DIR / "temperature.py", title=_("Temperature"), icon=":material/device_thermostat:",
                    url_path="temperature"),
            st.Page(PAGES_DIR / "positional_encoding.py", title=_("Positional encoding"), icon=":material/format_list_numbered:",
                    url_path="positional-encoding"),
            st.Page(PAGES_DIR / "additive.py", title=_("Additive vs dot-product scoring"), icon=":material/add_circle:",
                    url_path="additive"),
            st.Page(PAGES_DIR / "image_attention.py", title=_("Self-attention over an image"), icon=":material/image:",
                    url_path="image-attention"),
        ],
        _("The Transformer"): [
            st.Page(PAGES_DIR / "encoder_block.py", title=_("The encoder block"), icon=":material/stacks:",
                    url_path="encoder-block"),
            st.Page(PAGES_DIR / "generation.py", title=_("Generating token by token"), icon=":material/keyboard_double_arrow_right:",
                    url_path="generation"),
        ],
        _("Modern attention"): [
            st.Page(PAGES_DIR / "gqa.py", title=_("Grouped-query attention"), icon=":material/group_work:",
                    url_path="gqa"),
            st.Page(PAGES_DIR / "rope.py", title=_("RoPE: rotary positions"), icon=":material/rotate_right:",
                    url_path="rope"),
            st.Page(PAGES_DIR / "alibi.py", title=_("ALiBi: linear biases"), icon=":material/trending_down:",
                    url_path="alibi"),
            st.Page(PAGES_DIR / "sliding_window.py", title=_("Sliding-window attention"), icon=":material/view_week:",
                    url_path="sliding-window"),
            st.Page(PAGES_DIR / "flash_attention.py", title=_("FlashAttention: online softmax"), icon=":material/bolt:",
                    url_path="flash-attention"),
        ],
        _("A trained model"): [
            st.Page(PAGES_DIR / "trained_model.py", title=_("Inside a trained model"), icon=":material/model_training:",
                    url_path="trained-model"),
        ],
    }

    page = st.navigation(PAGES, expanded=True)  # every page listed: no "View more" button

    with st.sidebar:
        st.markdown("### " + _("Example"))
        titles = {key: _(p.title) for key, p in PRESETS.items()}  # format_func stays a plain lookup
        state.bind(st.selectbox, _("Worked example"), "preset", options=list(PRESETS), format_func=titles.get)
        preset = PRESETS[state.settings().preset]
        st.caption(_(preset.note) + "  \n" + _("Source: {source}", source=_(preset.source)))
        st.markdown("### " + _("Classroom"))
        state.bind(st.radio, _("Language"), "language", options=list(LANGUAGES), format_func=LANGUAGES.get,
                   horizontal=True)
        state.bind(st.toggle, _("Presenter mode"), "presenter", help=_("Larger type, no sidebar, big Previous / Next."))
        palettes = {key: _(name) for key, name in PALETTES.items()}
        state.bind(st.radio, _("Colours"), "palette", options=list(PALETTES), format_func=palettes.get,
                   help=_("Colour-blind safe: blue–orange around 0 for signed numbers, viridis for weights and other "
                          "numbers ≥ 0. The numbers stay written in the cells."))
        state.bind(st.toggle, _("Every chart as a table too"), "tables",
                   help=_("A table of the same numbers under each chart: for screen readers and for copying."))

    # The URL always holds the current state: copying it shares exactly these numbers.
    link_complete = state.write_link()
    with st.sidebar:
        st.caption(_("Share: copy the address in your browser's address bar; it holds every setting and your edits."))
    if not link_complete:
        st.warning(_("Your matrix edits are too large for a link: the address holds the settings only."),
                   icon=":material/link_off:")
    for message in state.link_messages():
        st.warning(widgets.message_markdown(message), icon=":material/link:")
    layout.apply()
    presenter.apply()
    locked_note = st.empty()  # filled after the page: the settings a teacher's link fixed, by their labels

    page.run()
    teacher.note(locked_note)
    teacher.panel()
