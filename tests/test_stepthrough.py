"""The one step-through protocol: every step of every step page, on every worked example, again with a row whose
every key is blocked, renders without an exception; in Chinese too, with every text translated, on two examples (one with
random embeddings, one with fixed ones: the texts that depend on the example are of those two kinds; every marked text
has its translation by tests/app/test_i18n.py)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import APP, element, element_entry, element_step, errors, has_element, shown_warnings
from streamlit.testing.v1 import AppTest

from attention_core import registry
from attention_core.errors import Message
from attention_core.inputs.presets import PRESETS
from attention_core.lessons.multi_head.page import multi_head_step_through
from attention_core.multi_head.walkthrough import build_multi_head_walkthrough
from attention_core.settings import Settings
from ui.stepper_data import entry_cells

#: Step pages stepped elsewhere, with what they read: generation reads no example (its own word; stepped in
#: tests/transformer/test_generation.py), the trained model its own text (below), the modern language model its own
#: prompt (tests/modern_lm/test_modern_lm.py).
ELSEWHERE = {"generation", "trained_model", "modern_lm"}
#: step page file -> its key: every step page of the registry (the encoder block post-LN here, pre-LN in
#: tests/transformer/test_encoder.py)
STEP_PAGES = {f"app_pages/{page.file}": page.key for page in registry.PAGES
              if page.stages and page.key not in ELSEWHERE}
#: the pages with a mask (cross-attention has none; self-attention has none)
MASKED = {"causal", "dropout", "multi_head"}
#: query 1 may only look at key 1: blocking that cell blocks its whole row
BLOCKED_ROW = {"mask": {(0, 0): 0.0}}
#: The examples stepped in Chinese: random embeddings (the default) and fixed ones.
CHINESE_PRESETS = ("seed000", "journey_v1")
assert set(CHINESE_PRESETS) <= set(PRESETS)


def step_through_every_stage(at: AppTest, page: str, context: str) -> list[str]:
    """Every stage of the page's step-through element (its Next is the browser's: each stage moved to as a link does);
    each renders with no exception and no error, its formula and its explained entry in the element's data."""
    field, titles = registry.BY_KEY[page].stage_field, registry.BY_KEY[page].stages
    assert has_element(at), context
    seen = []
    for key in titles:
        element_step(at, **{field: key})
        seen.append(at.session_state["settings"].get(field))
        assert not at.exception, (context, seen[-1], at.exception)
        assert not at.error, (context, seen[-1], errors(at))
        stage = element(at)["stages"][key]
        assert stage["formula"], (context, key, "no formula")
        assert not stage["has_entry"] or element_entry(at), (context, key, "no explained entry")
    return seen


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("path", list(STEP_PAGES))
def test_every_step_of_every_step_page_on_every_example_and_with_a_blocked_row(path, language):
    page = STEP_PAGES[path]
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page(path).run()
    for preset in PRESETS if language == "en" else CHINESE_PRESETS:
        at.selectbox(key="setting_preset").set_value(preset).run()
        for blocked in (False, True) if page in MASKED else (False,):
            edits = at.session_state["edits"] if "edits" in at.session_state else {}
            edits[preset] = dict(BLOCKED_ROW) if blocked else {}
            at.session_state["edits"] = edits
            at.run()
            context = (page, language, preset, "blocked row" if blocked else "")
            if blocked:
                assert any("every key blocked" in w or "所有" in w or "全部" in w
                           for w in shown_warnings(at)), (context, shown_warnings(at))
            seen = step_through_every_stage(at, page, str(context))
            assert seen == list(registry.BY_KEY[page].stages), context
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"{page}: shown without a translation: {sorted(missing)}"


def test_the_multi_head_weights_entry_of_a_blocked_row_explains_it_instead_of_crashing():
    """The crash this protocol removed: a local `tr = walk.trace` shadowed the translate callback `tr`."""
    settings = Settings.for_preset("journey_v1")
    walk = build_multi_head_walkthrough(settings, BLOCKED_ROW)
    assert walk.blocked_rows == (0,)
    steps = multi_head_step_through(walk, "weights")
    text = steps.stage.entry(0, 0, 1, Message)
    assert r"\alpha^{(2)}_{1,1}" in text and "0" in text
    with pytest.raises(IndexError):
        steps.stage.entry(0, len(walk.tokens), 0, Message)


def result_of(latex: str) -> float:
    r"""The number after the last "=" of an entry's LaTeX (``1.5 \cdot 10^{-5}`` read as 1.5e-5)."""
    tail = latex.replace(r"\end{aligned}", "").replace(r"\end{gathered}", "").rsplit("=", 1)[-1].strip()
    tail = tail.split(r"\qquad")[0].strip()
    if r"\cdot 10^{" in tail:
        mantissa, exponent = tail.split(r"\cdot 10^{")
        return float(mantissa) * 10 ** int(exponent.rstrip("} "))
    return float(tail)


@pytest.mark.parametrize("page", ["causal", "dropout"])
def test_every_causal_stage_has_one_explained_panel_and_its_entry_states_the_panels_number(page):
    settings = Settings.for_preset("journey_v1")
    walk = registry.BY_KEY[page].walkthrough(settings, {})
    declared = registry.BY_KEY[page]
    for key in declared.stages:
        stage = declared.step_through(walk, key).stage
        assert [p.explained for p in stage.panels].count(True) == 1, key
        rows, cols = stage.target.matrix.shape
        value = float(stage.target.matrix[rows - 1, 0])
        text = stage.entry(rows - 1, 0, 0, Message)
        if key == "mask":
            assert text.startswith(f"M_{{{rows},1}} = 0"), text
        elif key == "dropout_mask":
            assert text.startswith(f"d_{{{rows},1}} = {int(value)}"), text
        else:
            assert result_of(text) == pytest.approx(value, rel=1e-3, abs=1e-4), (key, text)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_step_of_the_trained_head_with_and_without_pad_tokens(language):
    """The trained model's head steps through the same protocol; [PAD] keys are its mask (no row is all blocked)."""
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["language"] = language
    at.run()
    at.switch_page("app_pages/trained_model.py").run()
    for padding in (0, 2):
        at.number_input(key="setting_trained_model.padding").set_value(padding).run()
        seen = step_through_every_stage(at, "trained_model", f"trained, {language}, padding {padding}")
        assert seen == list(registry.BY_KEY["trained_model"].stages)
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"


# ---------------------------------------------------------------- every panel follows the explained entry

def _builders() -> dict:
    """Every step page of the step-through element (``ui.stepper.live``) -> its walk-through from one settings object
    (its declaration's ``build`` through ``Page.walkthrough``; the model pages have none)."""
    return {page.key: page.walkthrough for page in registry.PAGES if page.build is not None}


FRAGMENT_PAGES = sorted(_builders())


def _drawn(steps) -> list:
    """What a stage draws: each panel's title, labels and matrix (as a list, −inf and NaN included)."""
    return [(p.title, p.row_labels, p.col_labels, p.head, p.matrix.tolist()) for p in steps.stage.panels]


def _moved(steps, settings: Settings, row: int, col: int, head: int) -> Settings:
    changes = {steps.row_field: row, steps.col_field: col}
    if steps.head_field:
        changes[steps.head_field] = head
    return settings.set(**changes)


def test_every_fragment_page_is_stepped_here():
    from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE  # noqa: F401 (the registry's pages)
    with_stages = {page.key for page in registry.PAGES if page.stages} - {"trained_model", "modern_lm"}
    # the model pages' walk-through is one head of a model, built from the model's run, not from the settings
    assert set(FRAGMENT_PAGES) == with_stages


@pytest.mark.parametrize("key", FRAGMENT_PAGES)
def test_every_panel_follows_the_explained_entry_on_a_fragment_rerun(key):
    """A click inside the step-through reruns it alone, with the walk-through built before the click (the entry it
    had then): ``as_of`` that walk-through and the new settings draws exactly what a whole-page build of the new
    settings draws, on every stage, for entries in the last row and column, the middle and another head."""
    from attention_core.stepthrough import as_of

    page, build = registry.BY_KEY[key], _builders()[key]
    before = Settings(d_out=4, num_heads=2)
    walk = build(before)
    checked = 0
    for stage in page.stages:
        steps = page.step_through(walk, stage)
        if steps.stage.target is None:
            continue
        rows, cols = steps.stage.target.matrix.shape
        for row, col, head in {(rows - 1, cols - 1, 1), (rows // 2, cols // 2, 0), (1, 0, 1)}:
            after = _moved(steps, before.set(**{page.stage_field: stage}), min(row, rows - 1), col, head)
            fresh = page.step_through(build(after), stage)
            assert _drawn(page.step_through(as_of(walk, after), stage)) == _drawn(fresh), (stage, row, col, head)
            checked += 1
    assert checked >= 2


@pytest.mark.parametrize("key", ["backward", "backward_multi_head"])
def test_the_softmax_jacobian_is_the_explained_rows_after_a_click(key):
    """The bug this guards against: on "dS through the softmax", choosing row 2 left the Jacobian panel on row 1."""
    from attention_core.stepthrough import as_of

    page, build = registry.BY_KEY[key], _builders()[key]
    before = Settings()
    walk = build(before)
    after = before.set(entry_row=1, **{page.stage_field: "d_scores"})
    titles = [p.title for p in page.step_through(as_of(walk, after), "d_scores").stage.panels]
    stale = [p.title for p in page.step_through(walk, "d_scores").stage.panels]
    (jacobian,) = [t for t in titles if "Jacobian" in str(getattr(t, "text", t))]
    assert jacobian.params.get("row") == 2 and jacobian not in stale


@pytest.mark.parametrize("key", [page.key for page in registry.PAGES if page.default_stage])
def test_a_page_that_opens_past_step_1_says_why_and_only_there(key):
    page = registry.BY_KEY[key]
    n, total = list(page.stages).index(page.default_stage) + 1, len(page.stages)
    assert n > 1 and page.default_stage_why, "a page that opens past step 1 says why"
    if key in ELSEWHERE:  # the model pages load their models: their captions are checked in their own tests
        return
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(f"app_pages/{page.file}").run()
    if has_element(at):  # the element shows a stage's opened_html on that stage (the page's default) only
        said = {k: v["opened_html"] for k, v in element(at)["stages"].items() if v["opened_html"]}
        assert list(said) == [page.default_stage] and element(at)["default_stage"] == page.default_stage, said
        assert said[page.default_stage].startswith(f"This page opens at step {n} of {total}."), said
        assert page.default_stage_why.split(";")[0] in said[page.default_stage], said
        return
    opened = [c.value for c in at.caption if c.value.startswith(f"This page opens at step {n} of {total}.")]
    assert opened and page.default_stage_why in opened[0]
    at.button(key="step_prev").click().run()
    assert not [c for c in at.caption if c.value.startswith("This page opens at step")]


#: A number's width in the heatmap's font, per character, in em: measured in Chromium on the app's heatmaps (digits,
#: point and minus of "−0.00582" at 15 px: 56 px, 0.47 em a character), rounded up.
EM_PER_CHAR = 0.5


def _top_level_breaks(latex: str) -> int:
    r"""How many ``\\`` stand outside an environment: at the top level of a display formula, or in a group inside an
    environment's cell (braces, ``\left … \right``), where KaTeX does not break the line either."""
    import re

    opened: list[str] = []  # the innermost last: "env" or "group"
    breaks, previous = 0, ""
    for token in re.findall(r"\\begin\{[^}]*\}|\\end\{[^}]*\}|\\\\|\\left\b|\\right\b|\\[A-Za-z]+|\\.|[{}]|[^\\{}]+",
                           latex):
        if token.startswith(r"\begin{") or (token == "{" and previous == r"\substack"):  # \substack{a \\ b}: rows
            opened.append("env")
        elif token in ("{", r"\left"):
            opened.append("group")
        elif (token.startswith(r"\end{") or token in ("}", r"\right")) and opened:
            opened.pop()
        elif token == "\\\\" and (not opened or opened[-1] != "env"):
            breaks += 1
        previous = token
    return breaks


def _without_a_font(latex: str) -> set[str]:
    r"""The characters KaTeX has no font for where they stand (a console warning each, "Unrecognized Unicode
    character" or "No character metrics", and a fallback font): in ``\text{…}`` anything but ASCII, Latin-1 and CJK
    (ε, −, ✓), in math anything but ASCII (LaTeX's commands say it: ``\varepsilon``, ``-``, ``\checkmark``)."""
    import re

    words, math, i = [], [], 0
    for found in re.finditer(r"\\text\{", latex):
        if found.start() < i:
            continue
        math.append(latex[i:found.start()])
        i, depth = found.end(), 1
        while i < len(latex) and depth:
            depth += {"{": 1, "}": -1}.get(latex[i], 0)
            i += 2 if latex[i] == "\\" else 1
        words.append(latex[found.end():i - 1])
    math.append(latex[i:])
    fonted = lambda ch: ord(ch) < 0x100 or 0x3000 <= ord(ch) <= 0x9FFF or 0xFF00 <= ord(ch) <= 0xFFEF  # noqa: E731
    return {ch for text in words for ch in text if not fonted(ch)} | {ch for text in math for ch in text if ord(ch) > 127}


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("key", FRAGMENT_PAGES)
def test_every_formula_is_one_katex_draws_without_a_warning(key, language):
    r"""KaTeX breaks a line at a top-level ``\\`` of a display formula but warns in the browser's console that LaTeX
    would not ("\\ or \newline does nothing in display mode"): the backward pages' dS, D and dW entries did, and the
    encoder block's ReLU entry, a sum broken over lines inside ``\left( … \right)``. It warns of a character it has
    no font for: the sliding-window mask's ✓ and ✗, the backward pages' "nudge by ε", MLA's "depends on j − i". Every
    stage's formula and its entries break lines inside an environment (``attention_core.latex.stacked``) and write
    such symbols in math (``attention_core.latex.words_and_math``), in both languages."""
    from ui.i18n import Translator

    assert _top_level_breaks(r"a \\[6pt] \begin{aligned} b &= c \\ &= d \end{aligned}") == 1  # the checks themselves
    assert _top_level_breaks(r"\begin{aligned} u &= \max\left(0,\ a \\ &\quad + b\right) \end{aligned}") == 1
    assert _without_a_font(r"\text{by ε = 1: 词元} \le − \checkmark") == {"ε", "−"}
    tr = Message if language == "en" else Translator(language)
    page, walk = registry.BY_KEY[key], _builders()[key](Settings())
    for stage in page.stages:
        shown = page.step_through(walk, stage).stage
        texts = list(shown.formula(tr))
        for row, col in ((0, 0), (1, 0), (2, 1), (0, 1)):  # (0, 1): a key the causal mask blocks
            try:
                texts.append(shown.entry(row, col, 0, tr))
            except IndexError:
                pass
        for text in texts:
            assert not _top_level_breaks(text), (stage, text)
            assert not _without_a_font(text), (stage, _without_a_font(text), text)


@pytest.mark.parametrize("key", FRAGMENT_PAGES)
def test_every_cells_number_fits_its_cell_on_every_stage_at_the_default_settings(key):
    """Each matrix writes its numbers with one format (ui.heatmaps.cell_number_format): the widest fits its cell with
    2 px to spare either side, on every stage of every step page (the browser test measures the default stages)."""
    from ui import heatmaps
    from ui.stepthrough import window

    page, walk = registry.BY_KEY[key], _builders()[key](Settings())
    for stage in page.stages:
        for panel in page.step_through(walk, stage).stage.panels:
            matrix = panel.matrix.double().numpy()
            c0, c1 = window(matrix.shape[-1], 0)
            r0, r1 = window(matrix.shape[0], 0)
            shown = matrix[r0:r1, c0:c1]
            cell = heatmaps.cell_px(c1 - c0)
            font = heatmaps.NUMBER_FONT if cell == heatmaps.cell_px(1) else heatmaps.NARROW_NUMBER_FONT
            finite = shown[np.isfinite(shown)]
            labels = heatmaps.cell_labels(shown, *heatmaps.cell_number_format(finite))
            widest = max(labels.ravel(), key=len)
            assert len(widest) * EM_PER_CHAR * font <= cell - 4, (stage, str(panel.title), widest, cell)


@pytest.mark.parametrize(("values", "exponent", "decimals", "written"), [
    ([0.939, 0.0001, 0.0], 0, 3, ["0.939", "0.000", "0"]),  # a weight: 3 digits; a tiny one is not an exact 0
    ([1.0, 0.9386, -0.5], 0, 2, ["1.00", "0.94", "−0.50"]),
    ([29.34, -0.1], 0, 1, ["29.3", "−0.1"]),
    ([-0.00273, 0.00156, -0.00112], -3, 2, ["−2.73", "1.56", "−1.12"]),  # cells in units of 10⁻³
    ([1234.5, 7.0], 3, 2, ["1.23", "0.01"]),
    ([float("-inf"), 0.25], 0, 3, ["−∞", "0.250"]),
    ([1.0, 0.0, 1.0, 1.0], 0, 0, ["1", "0", "1", "1"]),  # a dropout mask: whole numbers are written whole
    ([2.0, 0.0, float("-inf")], 0, 0, ["2", "0", "−∞"]),  # the mask rescaled by 1 / (1 − p) at p = 0.5
    ([12.0, -3.0], 0, 0, ["12", "−3"]),
    ([1.0, 0.5], 0, 2, ["1.00", "0.50"]),  # one number not whole: every cell gets the decimals
])
def test_cell_numbers_share_one_format_per_matrix(values, exponent, decimals, written):
    from ui import heatmaps

    values = np.array(values)
    assert heatmaps.cell_number_format(values[np.isfinite(values)]) == (exponent, decimals)
    assert heatmaps.cell_labels(values, exponent, decimals).tolist() == written


#: The step pages built from the settings alone (the two model pages load a model: their own tests).
BUILT_FROM_SETTINGS = [p.key for p in registry.PAGES if p.step_through is not None and p.key not in ("trained_model",
                                                                                                 "modern_lm")]


@pytest.mark.parametrize("key", BUILT_FROM_SETTINGS)
def test_every_entry_of_every_stage_explains_when_the_widths_outnumber_the_tokens(key):
    """The step-through element is sent every explained entry of a stage: each must explain, on the default example
    and on a 3-token sentence with d_k = d_out = 8 (an output's columns then outnumber the tokens: the causal page
    read its mask at (row, column) on every stage and raised there)."""
    page = registry.BY_KEY[key]
    small, _messages = Settings.for_preset("hello").replace(d_k=8, d_out=8)
    for settings in (Settings(), small):
        walk = page.walkthrough(settings)
        for stage in page.stages:
            steps = page.step_through(walk, stage)
            cells = entry_cells(steps)
            assert cells or steps.stage.entry is None or steps.stage.target is None, (key, stage)
            for row, col, head in cells:
                text = steps.stage.entry(row, col, head, Message)
                assert text and "nan" not in text.lower(), (key, stage, row, col, head)


#: Settings that reach a page's rarer entries (a head-wise gate; a later head; k = 1 with one indexer head, so many
#: ties at the cut), besides the defaults.
STRESSED = {"gated_attention": {"gated_attention.headwise": True, "gated_attention.head": 1},
            "differential_attention": {"differential_attention.head": 1},
            "sparse_attention": {"sparse_attention.top_k": 1, "sparse_attention.index_heads": 1,
                                 "sparse_attention.head": 3}}


@pytest.mark.parametrize("page", sorted(STRESSED))
def test_every_entry_of_every_stage_is_written_on_the_defaults_and_on_settings_that_stress_it(page):
    declared = registry.BY_KEY[page]
    for changes in ({}, STRESSED[page]):
        walk = declared.walkthrough(Settings().set(**changes))
        for stage in declared.stages:
            step = declared.step_through(walk, stage)
            rows, cols = step.stage.target.matrix.shape
            for row in range(rows):
                for col in range(cols):
                    latex = step.stage.entry(row, col, 0, Message)
                    assert latex and "nan" not in latex, (page, changes, stage, row, col)
            assert step.stage.formula(Message), (page, stage)
