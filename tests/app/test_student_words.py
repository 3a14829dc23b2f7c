"""Every check says what it was compared with (issue 60): PyTorch's own functions, transformers' module, a loop in
Python floats (float64), or a second way of computing the same numbers; never "PyTorch" for a check that is not.
"""

from __future__ import annotations

import re

import pytest
from conftest import APP
from streamlit.testing.v1 import AppTest

from attention_core import registry
from attention_core.settings import Settings
from attention_core.stepthrough import FLOAT_LOOP, OTHER_ROUTE, PYTORCH, TRANSFORMERS


def _open(path: str, language: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page(path).run()
    assert not at.exception, at.exception
    return at



def _walk(page):
    """The page's walk-through on the default settings (the model pages: one head of their model)."""
    if page.key == "trained_model":
        from attention_core.trained_model.model import head_step, load_model, run_model, tokenize

        model = load_model()
        return head_step(model, run_model(model, tokenize(model, "The cat sat on the mat.")), 2, 8)
    if page.key == "modern_lm":
        from attention_core.modern_lm import measure
        from ui import modern_lm_data

        decoder = modern_lm_data.decoder()
        return measure.head(decoder, measure.run_model(decoder, measure.encode_prompt(decoder, "The capital of France is")),
                            17, 4)
    return page.walkthrough(Settings())


STEP_PAGES = [page for page in registry.PAGES if page.stages]


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
    checks = {check.reference: check for stage in page.stages for check in page.steps(walk, stage).checks}
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
    lines = [s.value for s in at.success] + [e.value for e in at.error]
    (line,) = [line for line in lines if loop in line]
    assert line.startswith(loop_label) and "PyTorch" not in line.split("`")[0], line
    # the page's checks against PyTorch's own functions keep their label
    assert any(other.startswith(torch_label) for other in lines) == with_torch, lines
