"""A number widget states its field's range as the field's row declares it (issue 40): ``state.range_help`` fills a
help text's ``{low}`` and ``{high}`` from the row, so the numbers a page shows are the ones validation keeps to."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import ROOT, open_app, page_paths

from attention_core.fields import FloatRange, IntRange
from attention_core.settings import ROWS
from attention_core.transformer.generation import MIN_TOY_TEMPERATURE
from ui import state

ROW = dict(ROWS)

#: Each page's number widgets whose help states their range through ``state.range_help`` (shown on the page as it
#: opens): the test below must find every one of them, so that it cannot pass by finding none.
RANGE_HELP: dict[str, set[str]] = {
    "tokens.py": {"d_model"},
    "self_attention.py": {"d_k"},
    "causal.py": {"d_k"},
    "multi_head.py": {"d_out"},
    "cross_attention.py": {"d_out"},
    "why_sqrt_dk.py": {"why_sqrt_dk.samples", "why_sqrt_dk.keys"},
    "positional_encoding.py": {"positional_encoding.positions", "positional_encoding.width"},
    "additive.py": {"additive.hidden"},
    "image_attention.py": {"image_attention.d_k"},
    "encoder_block.py": {"encoder_block.dim_feedforward", "encoder_block.num_layers"},
    "gqa.py": {"gqa.num_heads", "gqa.head_dim"},
    "rope.py": {"rope.base"},
    "alibi.py": {"alibi.num_heads", "d_k"},
    "sliding_window.py": {"d_k"},
    "flash_attention.py": {"d_k"},
    "linear_attention.py": {"linear_attention.beta", "linear_attention.alpha", "d_k"},
    "mla.py": {"mla.num_heads", "d_model", "mla.head_dim", "mla.rope_dim", "mla.kv_latent", "mla.q_latent"},
    "sinks.py": {"sinks.sink_logit", "d_k", "sinks.window", "sinks.sinks"},
    "backward.py": {"d_k"},
    "training.py": {"training.learning_rate"},
}

#: Helps whose first number is not the field's lower limit, on purpose: field -> the number they state instead.
OTHER_LOW = {
    # "0 always takes the most likely token. From 0.01 to 10.0 the token is drawn ...": the range that samples; a τ
    # in (0, 0.01) is moved to 0.01 (the row's snap).
    "generation.temperature": MIN_TOY_TEMPERATURE,
    # "Even, 2 to 16": RoPE turns pairs of dimensions; the row lets 1 through and the page says why it cannot be.
    "rope.head_dim": 2,
}

_NUMBER = r"[−-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?"
#: A stated range: "1 to 16", "2 to 1e+07", "1e-05 to 1.0" (not "1 to the number of tokens").
_RANGE = re.compile(rf"(?<![\w.])({_NUMBER}) to ({_NUMBER})(?![\w])")


def _number(text: str) -> float:
    return float(text.replace("−", "-"))


def test_field_range_is_the_rows():
    assert state.field_range("d_k") == (ROW["d_k"].low, ROW["d_k"].high)
    assert state.field_range("alibi.num_heads") == (ROW["alibi.num_heads"].low, ROW["alibi.num_heads"].high)
    assert state.field_range("training.learning_rate") == (1e-5, 1.0)
    ranged = {path for path, row in ROWS if isinstance(row, (IntRange, FloatRange))}
    assert all(state.field_range(path) == (ROW[path].low, ROW[path].high) for path in ranged)


@pytest.mark.parametrize("field", ["sentence", "causal_mask", "preset", "head_count", "alibi.nope"])
def test_a_field_without_a_number_range_has_no_range(field):
    with pytest.raises(KeyError, match="no number range"):
        state.field_range(field)


@pytest.mark.parametrize("page", page_paths())
def test_every_number_widget_states_its_rows_range(page):
    at = open_app(page)
    checked, wrong = set(), []
    for widget in at.number_input:
        key = widget.key or ""
        if not key.startswith("setting_"):
            continue
        field = key.removeprefix("setting_").split("__")[0]
        found = _RANGE.search(widget.help or "")
        if found is None or not isinstance(ROW.get(field), (IntRange, FloatRange)):
            continue
        low, high = ROW[field].low, ROW[field].high
        shown = (_number(found.group(1)), _number(found.group(2)))
        if shown != (OTHER_LOW.get(field, low), high):
            wrong.append(f"{field}: help says {found.group(0)!r}, its row {low} to {high}: {widget.help!r}")
        checked.add(field)
    assert not wrong, f"{page}:\n" + "\n".join(wrong)
    missing = RANGE_HELP.get(Path(page).name, set()) - checked
    assert not missing, f"{page}: no number widget stated the range of {sorted(missing)}"


#: Texts with {low} that are not a setting's range: a chart's numbers (ui/heatmaps.describe, ui/charts), and the
#: generation page's sampling range (see OTHER_LOW).
NOT_A_SETTING = {
    ("ui/heatmaps.py", "{kind}: {rows} × {cols} numbers ({row_title} × {col_title}), from {low} to {high}."),
    ("ui/charts.py", "Red shows the attention weights, from {low} to {high}."),
    ("app_pages/generation.py", "0 always takes the most likely token. From {low} to {high} the token is drawn from "
                                "softmax(logits / τ)."),
}


def test_no_page_types_a_settings_range_by_hand():
    by_hand = []
    for folder in ("app_pages", "ui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_"
                        and node.args and isinstance(node.args[0], ast.Constant)
                        and isinstance(node.args[0].value, str)):
                    continue
                if {"low", "high"} & {k.arg for k in node.keywords} and "{low" in node.args[0].value \
                        and (where, node.args[0].value) not in NOT_A_SETTING:
                    by_hand.append(f"{where}:{node.lineno}: {node.args[0].value!r}")
    assert not by_hand, "a range typed at the call, not taken from the row (state.range_help):\n" + "\n".join(by_hand)
