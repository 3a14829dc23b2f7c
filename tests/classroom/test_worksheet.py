"""The printable worksheet and its answer key: one page per stage asked, the key's numbers are the app's, the same
settings give the same sheet, Chinese text is in the PDF, and every exercise's formulas can be typeset."""

from __future__ import annotations

import io
import re

import pytest
from pypdf import PdfReader

from attention_core import registry
from attention_core.classroom import worksheet
from attention_core.errors import Message
from attention_core.lessons.causal.page import causal_step_through
from attention_core.lessons.multi_head.page import multi_head_step_through
from attention_core.lessons.self_attention.page import self_attention_step_through
from attention_core.lessons.sinks.page import SINKS, sinks_step_through
from attention_core.masking.walkthrough import build_causal_walkthrough
from attention_core.multi_head.walkthrough import build_multi_head_walkthrough
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings
from attention_core.stepthrough import explained_value


def _self_attention_sheet(settings: Settings | None = None, seed_text: str = "link") -> worksheet.Worksheet:
    walk = build_walkthrough(settings or Settings())
    return worksheet.build_worksheet(lambda stage: self_attention_step_through(walk, stage), list(registry.BY_KEY["self_attention"].stages),
                                     title="Scaled dot-product self-attention", settings_line="Settings: d_k=3",
                                     seed_text=seed_text)


def _pages(pdf: bytes) -> list[str]:
    return [page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages]


def test_one_page_per_stage_asked_and_the_key_holds_the_apps_numbers():
    settings = Settings()
    walk = build_walkthrough(settings)
    sheet = _self_attention_sheet(settings)
    asked = [s.key for s in sheet.stages]
    assert asked == ["query", "key", "value", "scores", "scaled_scores", "weights", "output"]  # X: nothing to compute
    blank_pages = _pages(worksheet.render_pdf(sheet, answers=False))
    key_pages = _pages(worksheet.render_pdf(sheet, answers=True))
    assert len(blank_pages) == len(key_pages) == len(asked)
    for stage, blank_page, key_page in zip(sheet.stages, blank_pages, key_pages):
        assert "Worksheet" in blank_page and "Name:" in blank_page and "________" in blank_page
        assert "Answer key" in key_page and "Name:" not in key_page
        assert len(stage.blanks) == worksheet.PER_STAGE
        steps = self_attention_step_through(walk, stage.key)
        for blank in stage.blanks:
            shown = explained_value(steps.stage.panels, blank.row, blank.col)
            assert blank.exercise.answer == pytest.approx(shown, abs=1e-6)
            printed = f"{blank.exercise.answer:.4g}".replace("-", "−")
            assert printed in key_page.replace("-", "−"), (stage.key, printed, key_page)
            assert printed not in blank_page.split("Compute each entry")[1] or printed in " ".join(
                blank.exercise.inputs)  # the blank sheet does not give the answer away


def test_the_same_link_gives_the_same_sheet_and_another_link_another():
    first, again = _self_attention_sheet(seed_text="a"), _self_attention_sheet(seed_text="a")
    assert first == again
    entries = lambda sheet: [(b.row, b.col) for s in sheet.stages for b in s.blanks]  # noqa: E731
    assert entries(first) == entries(again)
    assert entries(_self_attention_sheet(seed_text="b")) != entries(first)


def test_chinese_text_is_in_the_pdf():
    from ui.i18n import Translator

    assert worksheet.cjk_font() is not None, "install Debian's fonts-noto-cjk (scripts/test.sh does)"
    sheet = _self_attention_sheet()
    pages = _pages(worksheet.render_pdf(sheet, answers=True, tr=Translator("zh")))
    assert "答案" in pages[0] and "第 1 步" in pages[0], pages[0][:200]


def test_a_users_dollar_sign_does_not_break_the_sheet():
    settings = Settings.for_preset("custom", sentence="cost $5 and $6 today")
    sheet = _self_attention_sheet(settings)
    text = " ".join(_pages(worksheet.render_pdf(sheet, answers=False)))
    assert "$5" in text or "$6" in text or "Row" in text


def _registered(key: str, **changes):
    """The registry's step-through of page ``key`` on the default settings with ``changes``."""
    page = registry.BY_KEY[key]
    walk = page.walkthrough(Settings().set(**changes))
    return lambda stage: page.step_through(walk, stage)


# (page, its step-through, how many of its stages ask at least: the pages whose every computed stage asks)
@pytest.mark.parametrize(("page", "steps_for", "asked_at_least"), [
    ("self_attention", lambda: (lambda w: lambda s: self_attention_step_through(w, s))(build_walkthrough(Settings())), 1),
    ("causal", lambda: (lambda w: lambda s: causal_step_through(w, s))(build_causal_walkthrough(Settings())), 1),
    ("multi_head", lambda: (lambda w: lambda s: multi_head_step_through(w, s))(
        build_multi_head_walkthrough(Settings.for_preset("journey_v1"))), 1),
    ("sinks", lambda: (lambda w: lambda s: sinks_step_through(w, s))(SINKS.walkthrough(Settings())), 1),
    ("mla", lambda: _registered("mla", **{"mla.head": 1}), 5),
    ("gated_attention", lambda: _registered("gated_attention", **{"gated_attention.gate_shift": 1.0}), 5),
    ("differential_attention", lambda: _registered("differential_attention"), 6),
    ("sparse_attention", lambda: _registered("sparse_attention"), 5),
])
def test_every_asked_formula_can_be_typeset(page, steps_for, asked_at_least):
    sheet = worksheet.build_worksheet(steps_for(), list(registry.BY_KEY[page].stages), title=page, settings_line="",
                                      seed_text=page)
    asked = [stage for stage in sheet.stages if stage.blanks]
    assert len(asked) >= asked_at_least
    for stage in asked:
        for blank in stage.blanks:
            e = blank.exercise
            for latex in (f"{e.lhs} = {e.formula}",) + e.inputs:
                lines = worksheet.mathtext_lines(latex)  # raises when matplotlib cannot typeset it
                assert all(line.startswith("$") for line in lines)


def test_long_vectors_are_broken_into_lines():
    latex = r"x_{1} = \begin{bmatrix} " + " & ".join(str(n) for n in range(20)) + r" \end{bmatrix}"
    lines = worksheet.mathtext_lines(latex)
    assert len(lines) == 3
    assert [len(re.findall(r"\d+", line.split("=")[-1])) for line in lines] == [8, 8, 4]


@pytest.mark.parametrize("page", ["self_attention", "causal", "multi_head"])
def test_every_step_as_markdown_holds_each_stage_its_formula_and_its_numbers(page):
    from attention_core.classroom.export import steps_markdown

    builders = {
        "self_attention": lambda: (lambda w: lambda s: self_attention_step_through(w, s))(build_walkthrough(Settings())),
        "causal": lambda: (lambda w: lambda s: causal_step_through(w, s))(build_causal_walkthrough(Settings())),
        "multi_head": lambda: (lambda w: lambda s: multi_head_step_through(w, s))(
            build_multi_head_walkthrough(Settings.for_preset("journey_v1"))),
    }
    steps_for = builders[page]()
    steps = [steps_for(key) for key in registry.BY_KEY[page].stages]
    text = steps_markdown("A page", "Settings: d_k=3", steps)
    for step in steps:
        for line in step.stage.formula(Message):
            assert f"$${line}$$" in text
        for panel in step.stage.panels:
            first = float(panel.matrix.flatten()[0])
            assert f"{first:.6g}" in text or first == float("-inf")
    assert text.count("\n## ") == len(steps) + 1  # every stage, and the checks
    checks = text.split("## Checks")[1]
    assert "match" in checks and checks.count("- Against PyTorch: `") == len(steps[-1].checks)  # these pages' checks
