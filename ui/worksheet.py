"""The worksheet and export downloads of a step page (``attention_core.classroom.worksheet``): a PDF to print and its key.

Drawn by the step-through renderer when the page passes its ``steps_for(stage)`` builder. Both PDFs are made
only when their button is clicked (Streamlit's deferred download), from the current settings and edits, so the
same link gives the same sheet.
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

from attention_core import stages
from attention_core.classroom import export, share, worksheet
from attention_core.stepthrough import StepThrough

from . import i18n, state
from .i18n import _

#: Settings that choose what is shown, not the numbers: left out of the sheet's settings line.
_VIEW_FIELDS = {"language", "presenter", "practice", "locked", "entry_row", "entry_col", "head", "model_entry_row",
                "model_entry_col"} | {field for field, _ in stages.PAGES.values()}


def _pdf(page: str, steps_for: Callable[[str], StepThrough], title: str, line: str, seed_text: str,
         tr: i18n.Translator, answers: bool) -> bytes:
    """The PDF (run when its button is clicked, maybe outside the script run: no session state in here)."""
    sheet = worksheet.build_worksheet(steps_for, list(stages.PAGES[page][1]), title=title, settings_line=line,
                                      seed_text=seed_text, tr=tr)
    return worksheet.render_pdf(sheet, answers=answers, tr=tr)


def _markdown(page: str, steps_for: Callable[[str], StepThrough], title: str, line: str, seed_text: str,
              tr: i18n.Translator) -> str:
    """Every stage of the page as Markdown (run when its button is clicked: no session state in here)."""
    return export.steps_markdown(title, line, [steps_for(key) for key in stages.PAGES[page][1]], tr)


def downloads(page: str, steps_for: Callable[[str], StepThrough]) -> None:
    """A switch that shows the worksheet and answer-key PDFs of this page (off: one element per run)."""
    if not st.toggle(_("Worksheet and export"), key="worksheet_show"):
        return
    with st.container(border=True):
        st.caption(_("Up to {n} entries of every step that has something to compute, chosen from the current numbers "
                     "(the same link gives the same sheet), each with the numbers it needs. The answer key is a "
                     "separate file.", n=worksheet.PER_STAGE))
        if state.settings().language == "zh" and worksheet.cjk_font() is None:
            st.warning(_("This server has no Chinese font, so Chinese text in the PDF would not show: install one "
                         "(Debian: fonts-noto-cjk) or switch the language to English for the sheet."),
                       icon=":material/font_download_off:")
            return
        params, _complete = share.encode(state.settings(), state.edits())
        shown = {k: v for k, v in params.items() if k not in _VIEW_FIELDS}
        line = " · ".join(f"{k}={v}" for k, v in sorted(shown.items()))
        if len(line) > 160:
            line = line[:157] + "…"
        line = _("Settings: {line}", line=line or _("the example's defaults"))
        args = (page, steps_for, _(stages.TITLES[page]), line, repr((page, sorted(shown.items()))), i18n.translator())
        left, right = st.columns(2)
        left.download_button(_("Worksheet (PDF)"), key="worksheet_pdf", icon=":material/description:",
                             data=lambda: _pdf(*args, answers=False), file_name=f"worksheet-{page}.pdf",
                             mime="application/pdf", on_click="ignore")
        right.download_button(_("Answer key (PDF)"), key="worksheet_key", icon=":material/key:",
                              data=lambda: _pdf(*args, answers=True), file_name=f"answer-key-{page}.pdf",
                              mime="application/pdf", on_click="ignore")
        st.download_button(_("Every step as Markdown"), key="export_steps_markdown", icon=":material/article:",
                           data=lambda: _markdown(*args), file_name=f"walkthrough-{page}.md", mime="text/markdown",
                           on_click="ignore",
                           help=_("Each step's formula (LaTeX) and every matrix with its labels, and the checks "
                                  "against PyTorch: for notes or a handout."))
