"""A class, live, as a session sees it: the sidebar's class panel (start a class, with or without the check before and
after; the teacher's links and "Bring the class here"; a student's seat) and the banner above a student's page (the
teacher's pushed link with Follow / Stay here / Back, the class's end).

The seat, the store and what is recorded are ``ui.classroom.class_live``'s; this module only shows them.
"""

from __future__ import annotations

import urllib.parse

import streamlit as st

from attention_core import check, registry
from attention_core.classroom import share
from attention_core.errors import N_
from attention_core.lessons.check.page import ALL
from ui import state
from ui.classroom import check as class_check
from ui.classroom import class_live
from ui.classroom.class_live import START_WITH_CHECK, class_info, leave, member, students_link
from ui.classroom.store.store import ClassInfo, StoreError
from ui.i18n import _

#: How often a student's banner looks for the teacher's news (seconds): "Bring the class here", the class's end.
BANNER_EVERY_S = 10.0
#: Settings of a student's own view that "Bring the class here" leaves alone (the numbers and the step are pushed).
PERSONAL = frozenset({"language", "presenter", "palette", "tables", "practice", "locked"})
# {"seen": follow_at handled, "toasted": follow_at told in a toast, "back": (page key, state.snapshot()) before
# following}. Not the Follow button's key ("class_follow"): Streamlit keeps a widget's value in session state under
# its key, and the memo became a bool.
_FOLLOW = "class_follow_memo"


def bring_here(current: str) -> None:
    """Push this teacher's page and settings (a link without any class parameter) to the class."""
    params, _complete = share.encode(state.settings(), state.edits())
    numbers = {k: v for k, v in params.items() if k not in PERSONAL}  # the student keeps their own language, view
    link = urllib.parse.urlencode({"page": current, **numbers})
    if class_live.as_teacher(lambda store, code: store.push_link(code, link),
                             N_("The class store is unreachable ({why}): the class was not brought here.")):
        st.toast(_("Sent: your students see a banner with Follow."), icon=":material/campaign:")


def _page_for(key: str):
    return registry.BY_KEY.get(key)


def _follow(link: str, at: float, current: str) -> None:
    """Follow the teacher's link: remember this session's own page, settings and edits, then take the link's."""
    memo = st.session_state.setdefault(_FOLLOW, {})
    memo["seen"] = at
    memo["back"] = (current, state.snapshot())
    params = dict(urllib.parse.parse_qsl(link))
    page = _page_for(params.pop("page", ""))
    mine = state.settings()
    state.apply_link(params)
    state.update(**{field: mine.get(field) for field in PERSONAL})  # their language and view, as before
    st.switch_page(f"app_pages/{(page or registry.OVERVIEW).file}")


def _back() -> None:
    memo = st.session_state.setdefault(_FOLLOW, {})
    current, saved = memo.pop("back")
    state.restore(saved)
    page = _page_for(current)
    st.switch_page(f"app_pages/{(page or registry.OVERVIEW).file}")


def _dismiss(at: float) -> None:
    st.session_state.setdefault(_FOLLOW, {})["seen"] = at


# ---------------------------------------------------------------- what the session sees

_ENDED = "class_ended"  # the code of a class that ended while this session was in it


def sidebar(current: str, on_class_page: bool) -> None:
    """The sidebar's class panel: start a class; the teacher's links and "Bring the class here"; a student's seat."""
    seat = member()
    with st.sidebar.expander(_("A class, live"), icon=":material/groups:", expanded=seat is not None):
        if seat is None:
            st.caption(_("Start a class: your students open its link, and the page *Your class* shows you where they "
                         "are and which mistakes they make. No accounts, no names."))
            st.toggle(_("Check before and after"), key=START_WITH_CHECK,
                      help=_("Your students get a short check when they join, and again when you press **Check now** "
                             "on *Your class*: that page then shows what the class learned, per concept."))
            st.button(_("Start a class"), key="class_start", on_click=_start, icon=":material/group_add:")
        elif seat.teacher:
            st.markdown(_("**Class {code}**: you are its teacher.", code=seat.code))
            st.caption(_("The students' link (share this one):"))
            st.code(students_link(seat.code), language=None, wrap_lines=True)
            if not on_class_page:
                st.page_link("app_pages/your_class.py", label=_("Your class"), icon=":material/monitoring:")
                st.button(_("Bring the class here"), key="class_bring", on_click=bring_here, args=(current,),
                          icon=":material/campaign:",
                          help=_("Sends this page and its settings to your students: they see a banner with Follow "
                                 "(never forced; their own numbers stay one click away)."))
            st.caption(_("Your address bar holds your teacher key: bookmark it to come back, and never share it."))
        else:
            st.caption(_("You are in class {code}: your teacher sees the class's answers, not your name.",
                         code=seat.code))
            if st.button(_("Leave the class"), key="class_leave_sidebar", icon=":material/logout:"):
                leave()
                st.rerun()


def banner(current: str) -> None:
    """Above a student's page: the class line, the teacher's "Bring the class here", the class's end.
    Looks again every :data:`BANNER_EVERY_S` seconds (a fragment), which also tells the teacher the seat is here."""
    seat = member()
    if seat is not None and not seat.teacher:
        _banner(current)
    elif st.session_state.get(_ENDED):
        _ended_note()


def _ended_note() -> None:
    st.info(_("Class {code} has ended. Thank you! Nothing more is recorded; the pages work as always.",
              code=st.session_state[_ENDED]), icon=":material/door_front:")


@st.fragment(run_every=BANNER_EVERY_S)
def _banner(current: str) -> None:
    seat = member()
    if seat is None or seat.teacher:
        return
    try:
        info = class_info(seat.code)
    except StoreError:
        info = ClassInfo(seat.code, 0.0, None, None, None, 0, 0)  # the student sees nothing wrong
    if info is None or info.ended:
        st.session_state[_ENDED] = seat.code
        leave()
        state.write_link()
        _ended_note()
        return
    class_live.present(current)
    memo = st.session_state.setdefault(_FOLLOW, {})
    if info.follow_link and info.follow_at and info.follow_at > memo.get("seen", 0.0):
        params = dict(urllib.parse.parse_qsl(info.follow_link))
        page = _page_for(params.get("page", ""))
        news = _(":material/campaign: Your teacher brings the class to **{page}**.",
                 page=_(page.title) if page else _("Overview"))
        if memo.get("toasted") != info.follow_at:  # once per push: the banner is at the page's top, out of sight
            memo["toasted"] = info.follow_at  # of a student who scrolled down to answer; a toast is seen anywhere
            st.toast(news, duration="long")
        with st.container(border=True):
            st.markdown(news)
            follow, stay = st.columns(2)
            if follow.button(_("Follow"), key="class_follow", type="primary", icon=":material/arrow_forward:",
                             help=_("Opens the teacher's page and numbers; yours stay one click away.")):
                _follow(info.follow_link, info.follow_at, current)
            stay.button(_("Stay here"), key="class_stay", on_click=_dismiss, args=(info.follow_at,))
    elif "back" in memo:
        if st.button(_("Back to where you were"), key="class_back", icon=":material/undo:",
                     help=_("Your page, settings and edits from before you followed your teacher.")):
            _back()


def _start() -> None:
    """The sidebar's "Start a class" (a button's callback); with "Check before and after" on, the class is sent to the
    check before at once, so every student who joins finds it in their banner."""
    with_check = st.session_state.get(START_WITH_CHECK, False)
    class_live.start_class()
    if with_check and member() is not None:
        class_check.push_check(check.BEFORE, ALL)
