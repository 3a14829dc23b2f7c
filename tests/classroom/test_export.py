"""Exports of the self-attention page: the Markdown walk-through and the self-checking script (which the suite runs;
tests/classroom/test_checking_script.py runs every step page's)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import shows_number

from attention_core.classroom.checking_script import script_for
from attention_core.classroom.export import walkthrough_markdown
from attention_core.inputs.presets import PRESETS
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings


def run_script(source: str, tmp_path) -> subprocess.CompletedProcess:
    path = tmp_path / "export.py"
    path.write_text(source)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("preset", list(PRESETS))
def test_exported_script_recomputes_every_number(preset, tmp_path):
    walk = build_walkthrough(Settings.for_preset(preset), {"x": {(0, 0): 0.25}})
    result = run_script(script_for(SELF_ATTENTION_PAGE, walk), tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("matches the app") == 8  # X and the 7 matrices computed from it
    assert "matches torch.nn.functional.scaled_dot_product_attention" in result.stdout


def test_exported_script_fails_when_a_number_is_wrong(tmp_path):
    walk = build_walkthrough(Settings.for_preset("journey_v1"))
    source = script_for(SELF_ATTENTION_PAGE, walk)
    weights = repr(walk.trace.attention.weights[0, 0].item())
    assert weights in source
    result = run_script(source.replace(weights, repr(float(weights) + 0.01), 1), tmp_path)
    assert result.returncode != 0
    assert "differs from the app" in result.stderr


def test_exported_script_keeps_user_tokens_inside_strings(tmp_path):
    settings = Settings.for_preset("custom", sentence="it's a\"\"\"b x')+import\\n(os")
    walk = build_walkthrough(settings)
    assert "a\"\"\"b" in walk.tokens and "x')+import\\n(os" in walk.tokens
    result = run_script(script_for(SELF_ATTENTION_PAGE, walk), tmp_path)
    assert result.returncode == 0, result.stderr


def test_markdown_has_every_stage_formula_and_matrix():
    walk = build_walkthrough(Settings.for_preset("journey_v1"))
    text = walkthrough_markdown(walk)
    assert text.count("## ") == 9  # 8 stages and the check
    assert r"\frac{{s}_{i,j}}{\sqrt{d_{k}}}" in text
    assert shows_number(text, 0.3061, before="| 2 journey | ", digits=3)  # rasbt ch03's "journey": [0.3061, 0.8210]
    assert "max |difference|" in text


def test_markdown_escapes_user_tokens():
    text = walkthrough_markdown(build_walkthrough(Settings.for_preset("custom", sentence="a*b [c](d) e")))
    assert r"a\*b" in text and r"\[c\]\(d\)" in text


def test_heatmap_exports_png_svg_and_csv():
    import io

    import pandas as pd

    from attention_core.self_attention.walkthrough import stage_labels
    from ui.classroom.export import heatmap_png, heatmap_svg, matrix_csv

    walk = build_walkthrough(Settings.for_preset("journey_v1"))
    weights = walk.trace.attention.weights
    rows, cols = stage_labels(walk, "weights")
    png = heatmap_png(weights, rows, cols, "Weights")
    assert png.startswith(b"\x89PNG") and len(png) > 5_000
    svg = heatmap_svg(weights, rows, cols, "Weights")
    assert svg.lstrip().startswith("<svg") and "2 journey" in svg and shows_number(svg, float(weights[1, 1]), before=">", digits=3)  # a weight, in its cell
    table = pd.read_csv(io.StringIO(matrix_csv(weights, rows, cols)), index_col=0)
    assert list(table.index) == rows and table.to_numpy().shape == (6, 6)
    assert abs(table.loc["2 journey", "2 journey"] - float(weights[1, 1])) < 1e-6
