"""The self-checking script of every step page (attention_core.classroom.checking_script), run by the suite: it exits 0 and
names every matrix of every stage; a copy with one number off by 0.01 fails with AssertionError; it holds exactly the
app's numbers; tokens with quotes, backslashes and newlines stay inside string literals. Then every step page's
"Worksheet and export" switch offers the script, the notebook (tests/classroom/test_notebook.py runs them) and a
heatmap's PNG, SVG and CSV, in English and in Chinese."""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import json
import math
import re
import runpy
import subprocess
import sys
import textwrap
import tokenize

import pytest
import torch
from conftest import APP
from streamlit.testing.v1 import AppTest

from attention_core import registry
from attention_core.classroom.checking_script import script_for
from attention_core.lessons.alibi.page import ALIBI_PAGE
from attention_core.lessons.backward.page import BACKWARD
from attention_core.lessons.backward_multi_head.page import BACKWARD_MULTI_HEAD
from attention_core.lessons.cross_attention.page import build_cross_attention_walkthrough
from attention_core.lessons.dropout.page import DROPOUT_PAGE
from attention_core.lessons.encoder_block.page import ENCODER_BLOCK
from attention_core.lessons.flash_attention.page import FLASH_ATTENTION
from attention_core.lessons.generation.page import GENERATION_PAGE
from attention_core.lessons.gqa.page import GQA_PAGE
from attention_core.lessons.linear_attention.page import LINEAR_ATTENTION
from attention_core.lessons.mla.page import MLA_PAGE
from attention_core.lessons.rope.page import ROPE_PAGE
from attention_core.lessons.sinks.page import SINKS
from attention_core.lessons.sliding_window.page import SLIDING_WINDOW
from attention_core.masking.walkthrough import build_causal_walkthrough
from attention_core.modern import alibi, rope, sliding
from attention_core.multi_head.walkthrough import build_multi_head_walkthrough
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings

#: The user's text that must stay inside string literals: a quote of each kind, a backslash, a newline escape.
NASTY = "it's a\"\"\"b x')+import\\n(os"

#: name -> (walk-through builder, its page's key): every step page and its variants.
CASES = {
    "self_attention": (lambda: build_walkthrough(Settings()), "self_attention"),
    "self_attention_nasty_tokens": (lambda: build_walkthrough(Settings.for_preset("custom", sentence=NASTY)),
                                    "self_attention"),
    "causal": (lambda: build_causal_walkthrough(Settings()), "causal"),
    "backward_copy_causal": (lambda: BACKWARD.walkthrough(Settings()), "backward"),
    "backward_random_not_causal": (lambda: BACKWARD.walkthrough(Settings().set(**{"causal_mask": False, "backward.target": "random", "backward.learning_rate": 1.0})), "backward"),
    "backward_multi_head_two_heads_causal": (lambda: BACKWARD_MULTI_HEAD.walkthrough(Settings()),
                                             "backward_multi_head"),
    "backward_multi_head_four_heads_random": (
        lambda: BACKWARD_MULTI_HEAD.walkthrough(Settings(d_out=8, num_heads=4, causal_mask=False, head=3).set(
            **{"backward.target": "random", "backward.learning_rate": 1.0})), "backward_multi_head"),
    "causal_padding_and_a_blocked_row": (
        lambda: build_causal_walkthrough(Settings(padding=2), {"mask": {(0, 0): 0.0, (3, 5): 1.0}}), "causal"),
    "dropout_eval": (lambda: DROPOUT_PAGE.walkthrough(Settings()), "dropout"),
    "dropout_p_0_5": (lambda: DROPOUT_PAGE.walkthrough(Settings().set(**{"dropout.dropout_p": 0.5, "dropout.training": True})),
                      "dropout"),
    "multi_head_two_heads": (lambda: build_multi_head_walkthrough(Settings.for_preset("journey_v1")), "multi_head"),
    "multi_head_four_heads_padding": (
        lambda: build_multi_head_walkthrough(Settings(d_out=4, num_heads=4, padding=1)), "multi_head"),
    "cross_attention": (lambda: build_cross_attention_walkthrough(Settings()), "cross_attention"),
    "encoder_post_ln": (lambda: ENCODER_BLOCK.walkthrough(Settings().set(**{"encoder_block.num_layers": 2})), "encoder_block"),
    "encoder_pre_ln": (lambda: ENCODER_BLOCK.walkthrough(Settings().set(**{"encoder_block.norm_first": True, "encoder_block.num_layers": 3, "encoder_block.block": 1})),
                       "encoder_block"),
    "generation_step_1": (lambda: GENERATION_PAGE.walkthrough(Settings().set(**{"generation.step": 0})), "generation"),
    "generation_step_3_sampled": (
        lambda: GENERATION_PAGE.walkthrough(Settings(seed=3).set(**{"generation.step": 2, "generation.layer": 0, "generation.temperature": 0.8})),
        "generation"),
    "gqa": (lambda: GQA_PAGE.walkthrough(Settings()), "gqa"),
    "mqa_not_causal": (lambda: GQA_PAGE.walkthrough(Settings().set(**{"causal_mask": False}).set(**{"gqa.num_heads": 4, "gqa.num_kv_heads": 1})), "gqa"),
    "rope": (lambda: ROPE_PAGE.walkthrough(Settings()), "rope"),
    "rope_base_and_shift": (lambda: ROPE_PAGE.walkthrough(Settings().set(**{"rope.head_dim": 6, "rope.base": 500.0, "rope.shift": 7})),
                            "rope"),
    "alibi_three_heads": (lambda: ALIBI_PAGE.walkthrough(Settings().set(**{"alibi.num_heads": 3})), "alibi"),
    "sliding_window": (lambda: SLIDING_WINDOW.walkthrough(Settings()), "sliding_window"),
    "sliding_window_both_sides": (
        lambda: SLIDING_WINDOW.walkthrough(Settings().set(**{"causal_mask": False}).set(**{"sliding_window.window": 2, "sliding_window.layers": 2})), "sliding_window"),
    "flash_attention": (lambda: FLASH_ATTENTION.walkthrough(Settings()), "flash_attention"),
    "flash_attention_not_causal_last_tile": (
        lambda: FLASH_ATTENTION.walkthrough(Settings().set(**{"causal_mask": False}).set(**{"flash_attention.block_q": 3, "flash_attention.block_k": 2, "flash_attention.tile": 99})),
        "flash_attention"),
    "linear_attention": (lambda: LINEAR_ATTENTION.walkthrough(Settings()), "linear_attention"),
    "linear_attention_last_step_strong_decay": (
        lambda: LINEAR_ATTENTION.walkthrough(Settings().set(**{"d_k": 4, "linear_attention.step": 11, "linear_attention.beta": 1.0, "linear_attention.alpha": 0.3})),
        "linear_attention"),
    "mla": (lambda: MLA_PAGE.walkthrough(Settings()), "mla"),
    "mla_odd_head_dim_last_head": (
        lambda: MLA_PAGE.walkthrough(Settings().set(**{"d_model": 6, "mla.num_heads": 3, "mla.head_dim": 3, "mla.rope_dim": 4, "mla.kv_latent": 5, "mla.head": 2})),
        "mla"),
    "sinks_strong_sink_odd_width": (
        lambda: SINKS.walkthrough(Settings().set(**{"d_k": 5, "sinks.sink_logit": 6.0})), "sinks"),
}


def _trained_head():
    from attention_core.minilm.model import head_step, load_model, run_model, tokenize

    pm = load_model()
    run = run_model(pm, tokenize(pm, "The cat sat on the mat.", padding=2))
    return head_step(pm, run, 2, 8)


CASES["trained_model_with_padding"] = (_trained_head, "trained_model")


def _modern_lm_head():
    from attention_core.smollm2 import measure
    from ui.page_parts import modern_lm_data

    decoder = modern_lm_data.decoder()  # one load per test process, shared with the pages under AppTest
    run = measure.run_model(decoder, measure.encode_prompt(decoder, "The capital of France is"))
    return measure.head(decoder, run, 17, 4)


CASES["modern_lm_layer_18_head_5"] = (_modern_lm_head, "modern_lm")
#: A step page of the registry without a case above (a new page): its own builder on the default settings, so that
#: adding a page edits nothing here.
CASES.update({page.key: (lambda page=page: page.walkthrough(Settings()), page.key) for page in registry.PAGES
              if page.build is not None and page.key not in {key for _build, key in CASES.values()}})


def run(source: str, tmp_path, name: str = "export.py") -> subprocess.CompletedProcess:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=180)


#: Runs each script given as ``python -c RUN_EACH a.py b.py ...`` in turn, as ``__main__`` in a namespace of its own
#: (runpy), with its own stdout and stderr, and prints one JSON line per script: its exit code (0, SystemExit's code,
#: or 1 and the traceback on stderr for an exception, as ``python script.py`` would exit), stdout and stderr.
RUN_EACH = """
import contextlib, io, json, runpy, sys, traceback
for path in sys.argv[1:]:
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
    print(json.dumps({"path": path, "returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}))
"""


@pytest.fixture(scope="module")
def exported_runs(tmp_path_factory) -> dict[str, tuple[object, str, subprocess.CompletedProcess]]:
    """case -> (its walk-through, its exported script, the script's run as :func:`run` gives it), every case's
    script run in one fresh interpreter, one after the other: a fresh interpreter per script cost 2-8 s of importing
    torch (and transformers) again, over a minute of the suite, for scripts that run in 0.01-0.7 s. Each script still
    runs from its own file as ``__main__`` in a namespace of its own, so a name it forgot to import is a NameError as
    in its own interpreter; the scripts set their own seeds and draw from their own generators (the tampered copies
    below run in the test's own process for the same reason)."""
    folder = tmp_path_factory.mktemp("exported")
    built = {}
    for case, (build, key) in CASES.items():
        walk = build()
        built[case] = (walk, script_for(registry.BY_KEY[key], walk), folder / f"{case}.py")
        built[case][2].write_text(built[case][1], encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", RUN_EACH, *(str(path) for _, _, path in built.values())],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = {line["path"]: subprocess.CompletedProcess(line["path"], line["returncode"], line["stdout"], line["stderr"])
            for line in map(json.loads, done.stdout.splitlines())}
    assert set(runs) == {str(path) for _, _, path in built.values()}, "every script ran"
    return {case: (walk, source, runs[str(path)]) for case, (walk, source, path) in built.items()}


def every_panel(walk, page):
    """[(stage, panel index, panel)] of every stage of the page (in this walk-through's order), from its declaration."""
    order = page.step_through(walk, next(iter(page.stages))).titles
    return order, [(stage, n, panel) for stage in order for n, panel in enumerate(page.step_through(walk, stage).stage.panels)]


def checked_literals(source: str) -> dict[str, torch.Tensor]:
    """name -> the app's numbers the script holds, parsed back from each ``check(name, ours, torch.tensor(...))``."""
    out = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check":
            name = node.args[0].value
            literal = eval(compile(ast.Expression(node.args[2].args[0]), "<literal>", "eval"),  # noqa: S307 (our text)
                           {"__builtins__": {}, "inf": math.inf, "nan": math.nan})
            out[name] = torch.tensor(literal)
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_the_script_recomputes_every_number_and_a_wrong_one_fails(case, tmp_path, exported_runs):
    walk, source, result = exported_runs[case]  # the script, and its run in a fresh interpreter
    page = registry.BY_KEY[CASES[case][1]]
    order, panels = every_panel(walk, page)

    # it holds exactly the app's numbers, every panel of every stage
    held = checked_literals(source)
    assert len(held) == len(panels)
    counts = {stage: sum(1 for s, _, _ in panels if s == stage) for stage in order}
    for stage, n, panel in panels:
        app = panel.matrix.detach().float()
        ours = held[f"{stage} {n + 1}/{counts[stage]}"]
        assert ours.shape == app.shape, (stage, n)
        assert torch.equal(ours, app), (stage, n)  # the same float32 numbers, ±inf included

    assert result.returncode == 0, result.stderr[-3000:]
    for stage, n, _panel in panels:
        assert f"{stage} {n + 1}/{counts[stage]} " in result.stdout, (stage, n, result.stdout)
    assert result.stdout.count("matches the app") == len(panels)
    assert result.stdout.count("matches ") > len(panels)  # and at least one check against PyTorch's reference
    assert result.stdout.rstrip().endswith("Every number matches.")

    # one expected number 0.01 off: the script fails, naming the matrix
    stage, n, panel = next((s, i, p) for s, i, p in reversed(panels) if torch.isfinite(p.matrix).any())
    value = float(panel.matrix[torch.isfinite(panel.matrix)][-1])
    name = f"check({f'{stage} {n + 1}/{counts[stage]}'!r}"
    start = source.index(name)
    end = source.index("\ncheck(", start) if "\ncheck(" in source[start:] else source.index("\n# ----", start)
    call = source[start:end]
    assert repr(value) in call, (value, call[-300:])
    head, _, tail = call.rpartition(repr(value))
    tampered = source[:start] + head + repr(value + 0.01) + tail + source[end:]
    # Run in this process (the script as exported ran above in a fresh interpreter): a second interpreter per case
    # cost 2-5 s of importing torch (and transformers) again, ~2 minutes of the suite over every case. The scripts
    # change no global state (their random draws use their own generators).
    path = tmp_path / "tampered.py"
    path.write_text(tampered, encoding="utf-8")
    with pytest.raises(AssertionError, match=re.escape(f"{stage} {n + 1}/{counts[stage]} differs from the app")), \
            contextlib.redirect_stdout(io.StringIO()):
        runpy.run_path(str(path), run_name="__main__")


def test_a_changed_mask_cell_fails_the_script(tmp_path):
    """A blocked (−∞) cell of the app's numbers turned into a number: the ±inf comparison catches it."""
    source = script_for(registry.BY_KEY["causal"], build_causal_walkthrough(Settings()))
    start = source.index("check('masked_scores 1/1'")
    tampered = source[:start] + source[start:].replace("-inf", "0.5", 1)
    broken = run(tampered, tmp_path)
    assert broken.returncode != 0 and "masked_scores 1/1: the -inf cells (blocked) differ" in broken.stderr


def test_user_tokens_enter_only_inside_string_literals():
    walk = build_walkthrough(Settings.for_preset("custom", sentence=NASTY))
    assert {"a\"\"\"b", "x')+import\\n(os"} <= set(walk.tokens)
    for key in ("self_attention", "causal", "multi_head", "rope", "flash_attention"):
        settings = Settings.for_preset("custom", sentence=NASTY)
        source = script_for(registry.BY_KEY[key], registry.BY_KEY[key].walkthrough(settings))
        tree = ast.parse(source)
        (tokens,) = [node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                     and getattr(node.targets[0], "id", None) == "tokens"]
        assert ast.literal_eval(tokens) == list(walk.tokens)
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                assert not any(t in token.string for t in ("a\"\"\"b", "x')+import", "(os")), token.string


def test_a_page_without_steps_or_recipe_is_refused():
    with pytest.raises(ValueError):
        script_for(registry.BY_KEY["tokens"], build_walkthrough(Settings()))  # not a step page


# ---------------------------------------------------------------- every step page offers them (AppTest)

PAGES = {f"app_pages/{page.file}": page.key for page in registry.PAGES if page.stages}  # every step page
LABELS = {
    "en": ("Python script that re-checks every number", "Download as a Jupyter notebook (.ipynb)", "Heatmap PNG",
           "Heatmap SVG", "Matrix CSV", "Heatmap to download"),
    "zh": ("重新核对每个数字的 Python 脚本", "下载为 Jupyter 笔记本（.ipynb）", "热力图 PNG", "热力图 SVG", "矩阵 CSV",
           "要下载的热力图"),
}


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("path", list(PAGES))
def test_every_step_page_offers_the_script_the_notebook_and_the_heatmap_files(path, language):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page(path).run()
    assert not {"export_steps_script", "export_steps_notebook"} & {d.key for d in at.get("download_button")}  # off
    at.toggle(key="worksheet_show").set_value(True).run()
    assert not at.exception, at.exception
    script, notebook, png, svg, csv, picker = LABELS[language]
    downloads = {d.proto.label: d for d in at.get("download_button")}
    assert {script, notebook, png, svg, csv} <= set(downloads), sorted(downloads)
    (chooser,) = [s for s in at.selectbox if s.label == picker]
    page = PAGES[path]
    field, titles = registry.BY_KEY[page].stage_field, registry.BY_KEY[page].stages
    current = list(titles).index(at.session_state["settings"].get(field)) + 1
    prefix = "Step" if language == "en" else "第"
    shown = chooser.options[chooser.index]  # the current step's first heatmap
    assert shown.startswith(prefix) and str(current) in shown.split(":")[0].split("：")[0], shown
    chooser.set_value(len(chooser.options) - 1).run()  # the last step's last heatmap
    assert not at.exception, at.exception
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"{path}: shown without a translation: {sorted(missing)}"


def test_a_per_head_heatmap_downloads_as_csv_with_its_numbers_and_translated_labels():
    """What the heatmap picker hands to the CSV button: a panel of any step, its labels in the interface language."""
    import pandas as pd

    from attention_core.lessons.multi_head.page import multi_head_step_through
    from ui.classroom.export import matrix_csv
    from ui.i18n import Translator

    panel = multi_head_step_through(build_multi_head_walkthrough(Settings.for_preset("journey_v1")), "head").stage.panels[1]
    cols = [Translator("zh")(label) for label in panel.col_labels]
    assert cols[0] != str(panel.col_labels[0])  # "col 3" in Chinese
    table = pd.read_csv(io.StringIO(matrix_csv(panel.matrix, list(panel.row_labels), cols)), index_col=0)
    assert list(table.columns) == cols and table.shape == tuple(panel.matrix.shape)
    assert torch.allclose(torch.tensor(table.to_numpy(), dtype=torch.float32), panel.matrix, atol=1e-6)


def test_every_step_page_of_the_registry_declares_a_recipe_and_has_a_case_here():
    step_pages = {page.key for page in registry.PAGES if page.stages}
    assert {page.key for page in registry.PAGES if page.recipe is not None} == step_pages
    assert {key for _build, key in CASES.values()} == step_pages


@pytest.mark.parametrize("case, functions", [
    ("alibi_three_heads", (alibi.slopes, alibi.distances)),
    ("sliding_window_both_sides", (sliding.receptive_field,)),
    ("rope_base_and_shift", (rope.rotation_angles, rope.rotate)),
])
def test_the_script_runs_the_pages_own_functions_not_a_retyped_copy(case, functions):
    build, key = CASES[case]
    source = script_for(registry.BY_KEY[key], build())
    for function in functions:
        assert textwrap.dedent(inspect.getsource(function)) in source, function.__name__
