"""The worksheet and export downloads of a step page (``attention_core.classroom.worksheet``): a PDF to print and its
key, every step as Markdown, a self-checking PyTorch script (``attention_core.classroom.checking_script``) and the same checks
as a Jupyter notebook (``attention_core.classroom.notebook``), and any heatmap as PNG, SVG or CSV.

Drawn by the step-through renderer when the page passes its ``steps_for(stage)`` builder (and, for the script and
the notebook, their ``script()`` and ``notebook()`` builders). Every file is made only when its button is clicked (Streamlit's deferred download), from the
current settings and edits, so the same link gives the same sheet.
"""

from __future__ import annotations

from typing import Callable, Mapping, Optional, Sequence

import streamlit as st

from attention_core import registry
from attention_core.classroom import export, share, worksheet
from attention_core.page import Page
from attention_core.stepthrough import StepThrough
from ui import i18n, state
from ui.classroom import class_live
from ui.classroom import export as files
from ui.i18n import _, app_text

#: Settings that choose what is shown, not the numbers: left out of the sheet's settings line.
_VIEW_FIELDS = {"language", "presenter", "practice", "locked", "entry_row", "entry_col", "head",
                "trained_model.entry_row", "trained_model.entry_col"} | {page.stage_field for page in registry.PAGES if page.stage_field}


def _pdf(order: Sequence[str], steps_for: Callable[[str], StepThrough], title: str, line: str, seed_text: str,
         tr: i18n.Translator, answers: bool) -> bytes:
    """The PDF (run when its button is clicked, maybe outside the script run: no session state in here)."""
    sheet = worksheet.build_worksheet(steps_for, list(order), title=title, settings_line=line,
                                      seed_text=seed_text, tr=tr)
    return worksheet.render_pdf(sheet, answers=answers, tr=tr)


def _markdown(order: Sequence[str], steps_for: Callable[[str], StepThrough], title: str, line: str, seed_text: str,
              tr: i18n.Translator) -> str:
    """Every stage of the page as Markdown (run when its button is clicked: no session state in here)."""
    return export.steps_markdown(title, line, [steps_for(key) for key in order], tr)


def figures(page: Page, titles: Mapping[str, str], steps_for: Callable[[str], StepThrough]) -> None:
    """PNG, SVG and CSV of one heatmap of the page: a picker of every heatmap of every step, the current step's first.

    The picker names the step and the heatmap, so what is downloaded is what is named even when the step-through
    moved on since this part of the page was drawn (it is drawn outside the step-through's fragment).
    """
    current = state.settings().get(page.stage_field)
    choices, names = [], []
    for number, key in enumerate(titles, start=1):
        for index, panel in enumerate(steps_for(key).stage.panels):
            choices.append((key, index, panel))
            names.append(_("Step {number}: {title}", number=number, title=_(titles[key]))
                         + (f" · {app_text(panel.title)}" if panel.title else ""))
    default = next((i for i, (key, _index, _panel) in enumerate(choices) if key == current), 0)
    chosen = st.selectbox(_("Heatmap to download"), list(range(len(choices))), index=default,
                          format_func=names.__getitem__, key=f"worksheet_figure_{page.key}_{len(choices)}")
    key, index, panel = choices[chosen]
    files.matrix_downloads(panel.matrix, [app_text(label) for label in panel.row_labels],
                           [app_text(label) for label in panel.col_labels], names[chosen], key="worksheet_figure",
                           name=f"{page.key}-{key}-{index + 1}")


def downloads(page: Page, titles: Mapping[str, str], steps_for: Callable[[str], StepThrough],
              script: Optional[Callable[[], str]] = None, notebook: Optional[Callable[[], str]] = None) -> None:
    """A switch that shows this page's downloads (off: one element per run): the worksheet and answer-key PDFs,
    every step as Markdown, the self-checking script and Jupyter notebook (when ``script()`` and ``notebook()``
    are given) and any heatmap as PNG, SVG or CSV. ``titles``: the stages of the page's walk-through, in its
    order."""
    if not st.toggle(_("Worksheet and export"), key="worksheet_show"):
        return
    with st.container(border=True):
        st.caption(_("Up to {n} entries of every step that has something to compute, chosen from the current numbers "
                     "(the same link gives the same sheet), each with the numbers it needs. The answer key is a "
                     "separate file.", n=worksheet.PER_STAGE))
        params, _complete = share.encode(state.settings(), state.edits())
        shown = {k: v for k, v in params.items() if k not in _VIEW_FIELDS}
        line = " · ".join(f"{k}={v}" for k, v in sorted(shown.items()))
        if len(line) > 160:
            line = line[:157] + "…"
        line = _("Settings: {line}", line=line or _("the example's defaults"))
        args = (tuple(titles), steps_for, _(page.title), line, repr((page.key, sorted(shown.items()))),
                i18n.translator())
        if state.settings().language == "zh" and worksheet.cjk_font() is None:  # the other files need no font
            st.warning(_("This server has no Chinese font, so Chinese text in the PDF would not show: install one "
                         "(Debian: fonts-noto-cjk) or switch the language to English for the sheet."),
                       icon=":material/font_download_off:")
        else:
            left, right = st.columns(2)
            left.download_button(_("Worksheet (PDF)"), key="worksheet_pdf", icon=":material/description:",
                                 data=class_live.recorded(lambda: _pdf(*args, answers=False), "export", page.key,
                                                          "worksheet"), file_name=f"worksheet-{page.key}.pdf",
                                 mime="application/pdf", on_click="ignore")
            right.download_button(_("Answer key (PDF)"), key="worksheet_key", icon=":material/key:",
                                  data=class_live.recorded(lambda: _pdf(*args, answers=True), "export", page.key,
                                                           "answer_key"), file_name=f"answer-key-{page.key}.pdf",
                                  mime="application/pdf", on_click="ignore")
        st.download_button(_("Every step as Markdown"), key="export_steps_markdown", icon=":material/article:",
                           data=class_live.recorded(lambda: _markdown(*args), "export", page.key, "markdown"),
                           file_name=f"walkthrough-{page.key}.md", mime="text/markdown",
                           on_click="ignore",
                           help=_("Each step's formula (LaTeX) and every matrix with its labels, and the page's "
                                  "checks: for notes or a handout."))
        if script is not None or notebook is not None:
            left, right = st.columns(2)
            if script is not None:
                left.download_button(_("Python script that re-checks every number"), key="export_steps_script",
                                     icon=":material/code:", data=class_live.recorded(script, "export", page.key, "script"),
                                     file_name=f"attention-{page.key}.py",
                                     mime="text/x-python", on_click="ignore",
                                     help=_("Needs only torch: holds this page's inputs, recomputes every matrix of "
                                            "every step, asserts that each equals the app's numbers and checks the "
                                            "result against the same references as the page."))
            if notebook is not None:
                right.download_button(_("Download as a Jupyter notebook (.ipynb)"), key="export_steps_notebook",
                                      icon=":material/menu_book:",
                                      data=class_live.recorded(notebook, "export", page.key, "notebook"),
                                      file_name=f"attention-{page.key}.ipynb",
                                      mime="application/x-ipynb+json", on_click="ignore",
                                      help=_("The script's checks, one cell per step under its formula: run it top to "
                                             "bottom in Jupyter (needs only torch) and every cell asserts that its "
                                             "numbers equal the app's."))
        figures(page, titles, steps_for)
