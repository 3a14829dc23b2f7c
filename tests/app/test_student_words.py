"""Every reference a student sees is one a student can follow (issue 60): no seed file names, no "seed 00N" labels,
no test or source-file paths, in the catalogs, on every page at every step in both languages, and in the worksheets,
notebooks, Markdown exports and scripts of every step page; and every check says what it was compared with (PyTorch,
transformers' module, a loop in Python floats, or a second way of computing the same numbers), never "PyTorch" for a
check that is not.

The seeds are the tutorials the app teaches from: a student cannot open "003_734755b2d0b981d3.txt", "seed 003 §1.3"
or "tests/self_attention/test_functional.py", but can look up "Hung-yi Lee's Transformer lecture" or "Raschka, *Build a
Large Language Model (From Scratch)*, ch. 3". Random seeds ("seed 123", ``torch.manual_seed(12)``) are fine.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest
from babel.messages.pofile import read_po
from conftest import APP, element_step, has_element, shown_checks
from google.protobuf.message import Message as Proto
from streamlit.testing.v1 import AppTest

from attention_core import registry
from attention_core.settings import Settings
from attention_core.stepthrough import FLOAT_LOOP, OTHER_ROUTE, PYTORCH, TRANSFORMERS

ROOT = Path(__file__).resolve().parents[2]

#: what a student cannot follow -> how it is found (English and Chinese)
UNFOLLOWABLE = {
    "a seed file's name": re.compile(r"\d{3}_[0-9a-f]{16}(\.txt)?"),
    "a seed's number": re.compile(r"\bseeds? 00\d\b|\bseeds? 00\d(,| and| or) 00\d|种子(文章|教程)?\s*00\d", re.I),
    "the seeds as such": re.compile(r"\bseed (article|tutorial|text|file)s?\b|种子(文章|教程)", re.I),
    "rasbt's ch03": re.compile(r"rasbt|\bch03\b", re.I),
    "a test's path": re.compile(r"\btests/|\btest_\w+\.py\b"),
    "a source file's path": re.compile(r"\b(attention_core|app_pages|ui|locales)/|\b[\w/.-]+\.py\b"),
}


def unfollowable(text: str) -> list[str]:
    """What of ``text`` a student cannot follow: ``"<kind>: <the words around it>"`` for each find."""
    return [f"{kind}: …{text[max(0, m.start() - 40):m.end() + 40]}…"
            for kind, pattern in UNFOLLOWABLE.items() for m in pattern.finditer(text)]


def test_the_patterns_find_what_they_are_for():
    for bad in ("Source: 000_9be6d646ed7e85e8.txt", "(seed 000)", "Seed 003 §1.3", "seeds 001 and 004",
                "种子文章 004", "种子教程 003（§1.7）", "after rasbt's ch03", "The seed articles' first attempt",
                "tests/self_attention/test_functional.py checks", "derived in `attention_core/lessons/why_sqrt_dk/page.py`"):
        assert unfollowable(bad), bad
    for fine in ("SelfAttention_v1 (seed 123)", "torch.manual_seed(12)", "Vaswani et al. 2017, sec. 3.2.3",
                 "The seeded mask", "seed = 3", "随机种子", "Raschka, Build a Large Language Model (From Scratch), ch. 3",
                 "torch.nn.functional.scaled_dot_product_attention(Q, K, V)", "numpy"):
        assert not unfollowable(fine), fine


# ---------------------------------------------------------------- (a) the catalogs


def test_no_catalog_text_names_a_seed_file_a_seed_number_or_a_path():
    found = []
    for path in sorted((ROOT / "locales").glob("*/LC_MESSAGES/*.po")):
        with path.open("rb") as f:
            for message in read_po(f):
                for text in (message.id, message.string):
                    for one in (text if isinstance(text, (tuple, list)) else (text,)):
                        found += [f"{path.name}: {bad}" for bad in unfollowable(one or "")]
    assert not found, "\n".join(found)


# ---------------------------------------------------------------- (b) every page, every step, both languages

#: proto fields that are no text a student reads: ids, keys, a download's address (AppTest's media file: a training
#: script's ends in ".py"), a chart's data (a chart's spec: its description only), a
#: Components v2 element's own code (its data, ``json``, is read: every text the element shows)
_NOT_TEXT = {"id", "element_id", "form_id", "page_script_hash", "key", "data", "page", "icon", "tag", "type", "url",
             "js_content", "css_content", "html_content", "js_source_path", "css_source_path", "component_name"}


def _proto_texts(proto: Proto, out: list[str]) -> None:
    for field, value in proto.ListFields():
        if field.name in _NOT_TEXT:
            continue
        if field.name == "spec" and isinstance(value, str):
            out.append(str(json.loads(value).get("description", "")) if value.startswith("{") else "")
            continue
        for one in (value if field.is_repeated else [value]):
            if isinstance(one, Proto):
                _proto_texts(one, out)
            elif isinstance(one, str):
                out.append(one)


def page_texts(at: AppTest) -> list[str]:
    """Every string of every element and block on the page (markdown, captions, LaTeX, alerts, titles, labels, help,
    options, expander and tab labels, chart descriptions), read from their protobufs."""
    out: list[str] = []

    def walk(node) -> None:
        if isinstance(getattr(node, "proto", None), Proto):
            _proto_texts(node.proto, out)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at._tree)
    return out


def _open(path: str, language: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("page", registry.PAGES, ids=[page.key for page in registry.PAGES])
def test_every_page_at_every_step_names_only_references_a_student_can_follow(page, language):
    at = _open(f"app_pages/{page.file}", language)
    found = [f"opened: {bad}" for text in page_texts(at) for bad in unfollowable(text)]
    if page.stages:
        at.toggle(key="worksheet_show").set_value(True).run()  # the downloads' labels and help
        found += [f"downloads: {bad}" for text in page_texts(at) for bad in unfollowable(text)]
        at.toggle(key="worksheet_show").set_value(False).run()
        for stage in page.stages:
            if has_element(at):  # the browser's step-through: every stage's texts, each stage's entries once shown
                element_step(at, **{page.stage_field: stage})
            else:
                at.selectbox(key=f"setting_{page.stage_field}").set_value(stage).run()
            assert not at.exception, (stage, at.exception)
            found += [f"{stage}: {bad}" for text in page_texts(at) for bad in unfollowable(text)]
    assert not found, "\n".join(dict.fromkeys(found))


# ---------------------------------------------------------------- (c) worksheets, notebooks, Markdown, scripts


def _walk(page):
    """The page's walk-through on the default settings (the model pages: one head of their model)."""
    if page.key == "trained_model":
        from attention_core.minilm.model import head_step, load_model, run_model, tokenize

        model = load_model()
        return head_step(model, run_model(model, tokenize(model, "The cat sat on the mat.")), 2, 8)
    if page.key == "modern_lm":
        from attention_core.smollm2 import measure
        from ui.page_parts import modern_lm_data

        decoder = modern_lm_data.decoder()
        return measure.head(decoder, measure.run_model(decoder, measure.encode_prompt(decoder, "The capital of France is")),
                            17, 4)
    return page.walkthrough(Settings())


STEP_PAGES = [page for page in registry.PAGES if page.stages]


@pytest.mark.parametrize("page", STEP_PAGES, ids=[page.key for page in STEP_PAGES])
def test_every_worksheet_notebook_markdown_and_script_names_only_references_a_student_can_follow(page):
    from attention_core.classroom import checking_script, export, notebook, worksheet
    from ui.i18n import Translator

    walk = _walk(page)
    order = page.step_through(walk, next(iter(page.stages))).titles
    found = [f"script: {bad}" for bad in unfollowable(checking_script.script_for(page, walk))]
    for language in ("en", "zh"):
        tr = Translator(language)
        cells = json.loads(notebook.notebook_for(page, walk, tr))["cells"]
        found += [f"{language} notebook: {bad}" for cell in cells for bad in unfollowable("".join(cell["source"]))]
        steps = [page.step_through(walk, stage) for stage in order]
        markdown = export.steps_markdown(tr(page.title), "Settings: d_k=3", steps, tr)
        found += [f"{language} Markdown: {bad}" for bad in unfollowable(markdown)]
        sheet = worksheet.build_worksheet(lambda stage: page.step_through(walk, stage), list(order), title=tr(page.title),
                                          settings_line="Settings: d_k=3", seed_text="link", tr=tr)
        texts = [sheet.title, sheet.settings_line]
        for stage in sheet.stages:
            texts += [str(tr(stage.title)), *stage.formula]
            for blank in stage.blanks:
                texts += [blank.row_label, blank.col_label, blank.exercise.lhs, blank.exercise.formula,
                          *blank.exercise.inputs]
        found += [f"{language} worksheet: {bad}" for text in texts for bad in unfollowable(text)]
    assert not found, "\n".join(dict.fromkeys(found))


# ---------------------------------------------------------------- every check says what it was compared with

#: how a check's reference code shows what it is compared with (the kinds' own words on the page)
KIND_OF_CODE = [
    (re.compile(r"loop", re.I), FLOAT_LOOP),
    (re.compile(r"transformers|apply_rotary_pos_emb|DeepseekV3|GptOss|gated_delta_rule|model\(\.\.\.\)\.attentions|"
                r"model\.model\.layers"), TRANSFORMERS),
    (re.compile(r"\bvs\b|multi_head_attention\(|linear_attention\(|W_UK"), OTHER_ROUTE),
]


def _kind(code: str) -> str:
    return next((kind for pattern, kind in KIND_OF_CODE if pattern.search(code)), PYTORCH)


@pytest.mark.parametrize("page", STEP_PAGES, ids=[page.key for page in STEP_PAGES])
def test_every_check_of_every_step_page_is_labelled_with_what_it_was_compared_with(page):
    walk = _walk(page)
    checks = {check.reference: check for stage in page.stages for check in page.step_through(walk, stage).checks}
    assert checks, page.key
    wrong = {code: (check.against, _kind(code)) for code, check in checks.items() if check.against != _kind(code)}
    assert not wrong, wrong


@pytest.mark.parametrize("language, loop_label, torch_label", [
    ("en", "Checked against a loop in Python floats (float64)", "Checked against PyTorch"),
    ("zh", "已与 Python 浮点数（float64）逐项循环的结果核对", "已与 PyTorch 核对"),
])
@pytest.mark.parametrize("path, loop, with_torch", [
    ("app_pages/linear_attention.py", "loop_linear_attention(q, k, v)", False),
    ("app_pages/mla.py", "loop_scores(trace)", False),
    ("app_pages/alibi.py", "alibi_weights_loop(...)", True),
])
def test_a_check_against_a_float_loop_says_so_and_not_pytorch(path, loop, with_torch, language, loop_label,
                                                               torch_label):
    at = _open(path, language)
    lines = shown_checks(at) + [e.value for e in at.error]
    (line,) = [line for line in lines if loop in line]
    assert line.startswith(loop_label) and "PyTorch" not in line.split("`")[0], line
    # the page's checks against PyTorch's own functions keep their label
    assert any(other.startswith(torch_label) for other in lines) == with_torch, lines


# ---------------------------------------------------------------- "Show the code"


def shown_functions() -> set:
    """Every function a "Show the code" expander shows: every stage's code of every step page (default settings) and
    the experiment pages' own."""
    from attention_core.lessons.additive import page as additive
    from attention_core.lessons.image_attention import page as image
    from attention_core.lessons.positional_encoding import page as positional
    from attention_core.lessons.positional_encoding.page import sinusoidal_encoding
    from attention_core.lessons.temperature import page as temperature
    from attention_core.lessons.why_sqrt_dk import page as scaling

    functions = {additive.additive_attention, image.flatten_image, image.image_attention, sinusoidal_encoding,
                 positional.equivariance, temperature.temperature_attention, scaling.run_scaling_experiment,
                 scaling.variance_derivation}
    settings = Settings()
    for page in registry.PAGES:
        if page.build is None or not page.stages:
            continue
        walk = page.walkthrough(settings)
        for stage in page.stages:
            functions |= set(page.step_through(walk, stage).stage.code)
    return functions


def test_the_code_a_page_shows_names_the_tutorials_not_their_files():
    """"Show the code" shows the real source of attention_core's functions, whose docstrings cite the seeds for the
    developers: the student sees each reference as the tutorial's name, and no test's path."""
    from attention_core.sources import for_students

    found = []
    for function in sorted(shown_functions(), key=lambda f: f.__qualname__):
        shown = for_students(inspect.getsource(function))
        found += [f"{function.__qualname__}: {problem}" for problem in unfollowable(shown)
                  if not problem.startswith("a source file's path")]  # code may name a module
    assert not found, "\n".join(found[:20])
    assert for_students("Seed 003 (``003_734755b2d0b981d3.txt``) §1.7 contrasts") == (
        "The Chinese notes on Hung-yi Lee's Transformer lecture contrasts")



def test_show_the_code_writes_the_source_in_those_names():
    from attention_core.inputs.text import tokenize
    from ui import widgets

    assert "seed 000" in inspect.getsource(tokenize)  # the developers' citation
    assert not unfollowable(widgets.source(tokenize))
