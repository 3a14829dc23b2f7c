"""Attention Explorer: the router. Pages live in app_pages/; the math in attention_core/.

The page folder is not called ``pages/``: Streamlit auto-discovers a ``pages/``
folder next to the entry script and, on a fresh server, runs a deep-linked page
file on its own (no sidebar, no shared settings) before ``st.navigation`` has
run once. Every page is listed explicitly instead, from ``attention_core.registry``.
"""

from pathlib import Path

import streamlit as st

from attention_core import registry
from attention_core.inputs.presets import PRESETS
from attention_core.settings import LANGUAGES, PALETTES
from ui import layout, presenter, runtime, state, widgets
from ui.classroom import class_banner, class_live, teacher
from ui.i18n import _

runtime.tune_server()  # once per process: cheap garbage collection, no Nagle delay (ui/runtime.py)
# Script runs take turns (ui/runtime.py): under a class's load a click is answered as soon as its own run ends.
with runtime.one_run_at_a_time():
    # Absolute paths: the app also runs from deploy/streamlit_app.py (Community Cloud's entry point).
    HERE = Path(__file__).resolve().parent
    # The tab's icon from a file: given ":material/visibility:", Streamlit's frontend fetches the icon from
    # fonts.gstatic.com, which an offline classroom cannot reach (a local SVG becomes a data: URL, no request).
    state.router_started()  # a whole-app run (a page's body may also run alone: ui/page_body.py)
    st.set_page_config(page_title=_("Attention Explorer"), page_icon=str(HERE / "ui" / "favicon.svg"), layout="wide")
    state.load_link(class_live.join_from_link)  # a shared link's settings (and class), on a session's first run
    state.start_run()  # the widgets this run binds are listed for the teacher's panel (ui/classroom/teacher.py)

    PAGES_DIR = HERE / "app_pages"

    # Every page, from the one registry of page declarations (attention_core/registry.py), in its sections.
    PAGES = {
        _(section): [st.Page(PAGES_DIR / page.file, title=_(page.title), icon=page.icon, url_path=page.url_path,
                             default=page is registry.OVERVIEW) for page in pages]
        for section, pages in registry.sections().items()
    }

    seat = class_live.member()
    if seat is not None and seat.teacher:  # the class's live view, for its teacher only
        PAGES = {_("Your class"): [st.Page(PAGES_DIR / registry.YOUR_CLASS.file, title=_(registry.YOUR_CLASS.title),
                                           icon=registry.YOUR_CLASS.icon, url_path=registry.YOUR_CLASS.url_path)],
                 **PAGES}
    page = st.navigation(PAGES, expanded=True)  # every page listed: no "View more" button
    current = page.url_path.replace("-", "_") or registry.OVERVIEW.key  # the registry's key of the page shown

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
    class_banner.sidebar(current, on_class_page=current == registry.YOUR_CLASS.key)

    # The URL always holds the current state: copying it shares exactly these numbers (the page's body writes it,
    # ui/page_body.py, and says so when the edits are too large for it).
    if seat is None or not seat.teacher:  # a teacher's address holds the teacher key: the class panel says so
        st.sidebar.caption(_("Share: copy the address in your browser's address bar; it holds every setting and your "
                             "edits."))
    for message in state.link_messages():
        st.warning(widgets.message_markdown(message), icon=":material/link:")
    for message in class_live.messages():
        st.warning(widgets.message_markdown(message), icon=":material/groups:")
    layout.apply()
    presenter.apply()
    locked_note = st.empty()  # filled after the page: the settings a teacher's link fixed, by their labels

    class_banner.banner(current)
    class_live.opened(current)  # before the page: a page may st.stop()
    try:
        page.run()
    finally:  # also when the page stops (st.stop() on bad input): a later run of its body alone is not this run
        state.router_done()
    teacher.note(locked_note)
    teacher.panel()
