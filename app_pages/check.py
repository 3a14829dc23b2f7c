"""Check your understanding: a short check before and after a lesson, on numbers drawn for each student."""

import streamlit as st

from ui import page_body
from ui.classroom import check
from ui.i18n import _


def page() -> None:
    st.title(_("Check your understanding"))
    st.markdown(_("A few short questions per concept: some to compute on numbers drawn for you, some to choose. Take "
                  "it before a lesson and again after it to see what you learned. It is a short check for you and your "
                  "teacher, not an exam."))
    check.take()


page_body.run(page)
