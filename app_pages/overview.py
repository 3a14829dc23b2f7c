"""Overview: what attention does, the pipeline, a preset picker, where to go next."""

import html
from pathlib import Path

import streamlit as st

from attention_core import registry
from attention_core.inputs.presets import PRESETS
from ui import page_body, state
from ui.i18n import _

HERE = Path(__file__).resolve().parent  # the other pages, wherever the entry point is


def pipeline_html(steps: list[str]) -> str:
    """The pipeline as a column of rounded boxes joined by arrows, drawn by the page's own HTML: a list that screen
    readers read in order. (Streamlit's graphviz chart warned in the console on every load: its graph library looks
    for a web worker script Streamlit does not ship.)"""
    box = ("list-style: none; margin: 0 auto; padding: 0.45rem 1rem; width: fit-content; max-width: 100%; "
           "border: 1px solid #333; border-radius: 0.5rem; background: #eef3ff; color: #111; text-align: center; "
           "font-size: 1.1rem")
    arrow = ('list-style: none; margin: 0; padding: 0; text-align: center; line-height: 1.6; color: #333; '
             'font-size: 1.2rem')
    items = f'<li aria-hidden="true" style="{arrow}">↓</li>'.join(
        f'<li style="{box}">{html.escape(step)}</li>' for step in steps)
    return f'<ol style="margin: 0.5rem 0; padding: 0" aria-label="{html.escape(_("The pipeline"))}">{items}</ol>'


def header() -> None:
    """The whole page, drawn as its header (``page_body.run``): its only widgets choose the example, which the router
    draws, so each of their clicks reruns the whole app. Outside the body's fragment that is one run; inside it, a
    fragment run that then reran the app."""
    st.title(_("Attention Explorer"))
    st.markdown(_(
        "Attention lets every token of a sentence **look at the other tokens and take what it needs from them**. "
        "Change the inputs on any page and watch every number of the math being made, with its formula beside it."
    ))

    left, right = st.columns(2)
    with left:
        st.subheader(_("Query, key, value"))
        st.markdown(_(
            "- A **query** is what a token is looking for.\n"
            "- A **key** is how a token describes itself to the others.\n"
            "- A **value** is what a token hands over when it is picked.\n\n"
            "Each token compares its query with every key (a dot product), turns those scores into "
            "**weights** that sum to 1 (softmax), and takes the weighted sum of the values: its "
            "**context vector**. Like asking a librarian: your question is matched against each book's "
            "description, and you get a blend of the best-matching books' contents."
        ))
    with right:
        st.subheader(_("The pipeline"))
        labels = {
            "tokens": _("tokens"),
            "X": _("embeddings X"),
            "S": _("scores Q Kᵀ"),
            "A": _("scaled ÷ √d_k"),
            "W": _("weights = softmax"),
            "Z": _("context vectors = weights · V"),
        }
        steps = [labels["tokens"], labels["X"], "Q = X W_q,  K = X W_k,  V = X W_v", labels["S"], labels["A"],
                 labels["W"], labels["Z"]]
        st.markdown(pipeline_html(steps), unsafe_allow_html=True)

    st.subheader(_("Pick a worked example"))
    st.caption(_("Every example comes from one of the tutorials this app teaches from; you can change all of it later."))
    current = state.settings().preset
    for key, preset in PRESETS.items():
        # one row that wraps (the button under the text on a phone, ui/layout.py): three elements a card, not six
        with st.container(border=True, horizontal=True, vertical_alignment="center", gap="medium", key=f"card_{key}"):
            st.markdown(f"**{_(preset.title)}**  \n{_(preset.note)}  \n*{_('Source: {source}', source=_(preset.source))}*",
                        width="stretch")
            st.button(
                _("In use") if key == current else _("Use this example"),
                key=f"overview_use_{key}",
                disabled=key == current,
                on_click=state.choose_preset,
                args=(key,),
                width="content",  # its label whole in every language and in presenter mode
            )

    st.subheader(_("Where to go next"))
    for listed in registry.PAGES:
        if listed.summary:
            st.page_link(HERE / listed.file, label=_(listed.summary), icon=listed.icon)


def page() -> None:
    """Nothing of its own: the body writes the link."""


page_body.run(page, header=header)
