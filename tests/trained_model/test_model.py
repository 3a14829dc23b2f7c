"""The trained model (all-MiniLM-L6-v2): our step-through against the model's own numbers, the file checks,
tokenising edge cases, the guided findings, and the page "Inside a trained model" under AppTest.

The model is loaded once for the module (``pm`` fixture); the page's own ``st.cache_resource`` loads it once
more for the AppTests (a second copy, ~1 s).
"""

from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from conftest import charts, element, element_entry, element_latex, element_send, element_step, entry_map, shown
from streamlit.testing.v1 import AppTest

from attention_core.checkpoints import sha256_of
from attention_core.errors import InputError
from attention_core.lessons.trained_model.page import (
    TRAINED_MODEL,
    head_entry_latex,
    head_entry_of,
    head_formula,
    head_stage_matrix,
)
from attention_core.minilm import head_findings
from attention_core.minilm.model import (
    EXPECTED_SHA256,
    TRAINED_MODEL_MAX_CHARS,
    TRAINED_MODEL_MAX_PADDING,
    TRAINED_MODEL_MAX_TOKENS,
    ModelRun,
    PretrainedModel,
    head_step,
    load_model,
    model_folder,
    run_model,
    tokenize,
    verify_model_files,
)
from attention_core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
PAGE = "app_pages/trained_model.py"

SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "Unbelievably, tokenization splits rare words into WordPieces!",
    "Attention is all you need.",
    "A",
]
HEADS = [(0, 0), (0, 2), (2, 8), (3, 11), (5, 5)]
UNUSUAL = [
    "🙂🙂 emoji only 🙂",
    "x\ud800y lone surrogate",
    "שלום עולם and مرحبا",
    "zero\u200bwidth\u200d joiners",
    "NUL\x00 and bell\x07 controls",
    "e\u0301cole with a combining accent",
    "日本語のテキスト",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝔪𝔞𝔱𝔥 letters",
    "a" * 400,  # one 400-character "word": longer than WordPiece's 100-character limit -> [UNK]
]


@pytest.fixture(scope="module")
def pm() -> PretrainedModel:
    return load_model()


@pytest.fixture(scope="module")
def runs(pm) -> dict[str, ModelRun]:
    return {text: run_model(pm, tokenize(pm, text)) for text in SENTENCES}


# ---------------------------------------------------------------- the model and its files


def test_model_is_the_verified_six_by_twelve_bert(pm):
    assert (pm.num_layers, pm.num_heads, pm.hidden_size, pm.head_dim) == (6, 12, 384, 32)
    assert not pm.model.training
    assert all(not p.requires_grad for p in pm.model.parameters())
    assert pm.model.config._attn_implementation == "eager"
    for name, digest in EXPECTED_SHA256.items():
        assert sha256_of(pm.folder / name) == digest


def _copy_small_files(tmp_path: Path) -> Path:
    """A model folder in tmp_path: copies of the small files, a link to the 87 MiB weights."""
    source = model_folder()
    folder = tmp_path / "model"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(source / name, folder / name)
    (folder / "model.safetensors").symlink_to(source / "model.safetensors")
    return folder


def test_a_modified_byte_is_refused(tmp_path):
    folder = _copy_small_files(tmp_path)
    verify_model_files(folder)  # the untouched copy passes
    data = bytearray((folder / "config.json").read_bytes())
    data[10] ^= 1
    (folder / "config.json").write_bytes(bytes(data))
    with pytest.raises(InputError, match=r"config\.json failed its checksum") as caught:
        load_model(folder)
    assert EXPECTED_SHA256["config.json"] in caught.value.message


def test_a_wrong_expected_hash_is_refused(monkeypatch):
    monkeypatch.setitem(EXPECTED_SHA256, "model.safetensors", "0" * 64)
    with pytest.raises(InputError, match=r"model\.safetensors failed its checksum"):
        verify_model_files(model_folder())


def test_a_missing_file_is_refused(tmp_path):
    folder = _copy_small_files(tmp_path)
    (folder / "tokenizer.json").unlink()
    with pytest.raises(InputError, match=r"tokenizer\.json is missing"):
        verify_model_files(folder)


def test_a_missing_package_is_refused():
    with pytest.raises(InputError, match="not installed"):
        model_folder("no_such_model_package_here")


def test_importing_the_core_and_the_page_helpers_loads_no_transformers():
    code = ("import sys, attention_core, attention_core.minilm.model, attention_core.settings, ui.page_parts.trained_model_data, "
            "ui.page_parts.model_view; assert 'transformers' not in sys.modules, 'transformers was imported'")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_other_pages_run_without_transformers():
    code = (
        "import sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        f"at = AppTest.from_file({APP!r}, default_timeout=120).run()\n"
        "for page in ('app_pages/tokens.py', 'app_pages/self_attention.py'):\n"
        "    at.switch_page(page).run()\n"
        "    assert not at.exception, at.exception\n"
        "assert 'transformers' not in sys.modules, 'a page other than the trained model imported transformers'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


# ---------------------------------------------------------------- our step-through = the model


@pytest.mark.parametrize("layer, head", HEADS)
@pytest.mark.parametrize("text", SENTENCES)
def test_step_through_reproduces_the_models_attention(pm, runs, text, layer, head):
    step = head_step(pm, runs[text], layer, head)
    assert step.trace.x.shape == (runs[text].encoding.n, 384)
    assert step.trace.w_query.shape == (384, 32) and step.trace.b_query.shape == (32,)
    torch.testing.assert_close(step.trace.attention.weights, runs[text].attentions[layer, head], atol=1e-5, rtol=0)
    assert step.matches and step.max_abs_diff <= 1e-5


def test_every_head_of_every_layer_matches(pm, runs):
    run = runs[SENTENCES[0]]
    worst = max(head_step(pm, run, layer, head).max_abs_diff for layer in range(6) for head in range(12))
    assert worst <= 1e-5


@pytest.mark.parametrize("padding", [0, 3])
def test_concatenated_head_outputs_equal_the_layers_attention_output(pm, padding):
    """weights · V of all 12 heads, side by side, is what BertSelfAttention returns (captured with a hook)."""
    encoding = tokenize(pm, SENTENCES[1], padding)
    captured = {}
    hooks = [pm.model.encoder.layer[layer].attention.self.register_forward_hook(
        lambda module, args, output, layer=layer: captured.__setitem__(layer, output[0][0]))
        for layer in range(6)]
    try:
        run = run_model(pm, encoding)
    finally:
        for hook in hooks:
            hook.remove()
    for layer in range(6):
        ours = torch.cat([head_step(pm, run, layer, head).trace.output for head in range(12)], dim=-1)
        torch.testing.assert_close(ours, captured[layer], atol=1e-5, rtol=1e-5)  # (n, 384)


def test_each_stage_agrees_with_torch_sdpa_and_the_additive_mask(pm):
    run = run_model(pm, tokenize(pm, SENTENCES[0], padding=2))
    step = head_step(pm, run, 2, 8)
    att = step.trace.attention
    assert torch.equal(att.masked_scores, att.scaled_scores + step.additive_mask)
    assert torch.isneginf(step.additive_mask[:, -2:]).all() and (step.additive_mask[:, :-2] == 0).all()
    assert (att.weights[:, -2:] == 0).all() and (step.model_weights[:, -2:] == 0).all()
    reference = F.scaled_dot_product_attention(att.query, att.key, att.value, attn_mask=att.attn_mask)
    torch.testing.assert_close(att.output, reference, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("stage", list(TRAINED_MODEL.stages))
def test_every_entry_recomputes_with_a_plain_loop(pm, runs, stage):
    run = run_model(pm, tokenize(pm, SENTENCES[1], padding=1))
    step = head_step(pm, run, 1, 3)
    rows, cols = head_stage_matrix(step, stage).shape
    for row, col in [(0, 0), (rows - 1, cols - 1), (rows // 2, cols // 3)]:
        entry = head_entry_of(step, stage, row, col)
        expected = entry.recompute()
        assert (math.isinf(expected) and expected == entry.value) or math.isclose(expected, entry.value, abs_tol=1e-4)
        text = head_entry_latex(entry)
        assert text.startswith(r"\begin{aligned}") and f"{row + 1},{col + 1}" in text
    matrix_form, element_form = head_formula(stage)
    assert matrix_form and element_form


def test_long_sums_are_elided_with_their_count(pm, runs):
    step = head_step(pm, runs[SENTENCES[0]], 0, 0)
    assert r"\text{(384 terms)}" in head_entry_latex(head_entry_of(step, "query", 1, 2))
    assert r"\text{(32 terms)}" in head_entry_latex(head_entry_of(step, "scores", 1, 2))
    assert r"\cdots" in head_entry_latex(head_entry_of(step, "weights", 1, 2))


def test_a_512_token_sum_writes_its_first_three_and_last_two_terms_only(pm):
    import sympy as sp

    from attention_core.latex import number_expr

    step = head_step(pm, run_model(pm, tokenize(pm, "word " * 600)), 1, 1)
    weights, values = step.trace.attention.weights[300].tolist(), step.trace.attention.value[:, 5].tolist()
    terms = [sp.latex(sp.Mul(number_expr(weights[k]), number_expr(values[k]), evaluate=False), mul_symbol="dot")
             for k in (0, 1, 2, 510, 511)]
    tex = head_entry_latex(head_entry_of(step, "output", 300, 5))
    assert " + ".join(terms[:3]) + r" + \cdots + " + " + ".join(terms[3:]) in tex
    assert r"\text{(512 terms)}" in tex and tex.count(r"\cdot ") == 5
    softmax = head_entry_latex(head_entry_of(step, "weights", 300, 5))
    assert r"\text{(512 terms)}" in softmax and softmax.count("e^{") == 2 + 6  # the formula's 2; the numbers' 1 + 5


def test_bad_layer_or_head_is_refused(pm, runs):
    with pytest.raises(InputError, match="layers 1 to 6"):
        head_step(pm, runs[SENTENCES[0]], 6, 0)
    with pytest.raises(InputError, match="heads 1 to 12"):
        head_step(pm, runs[SENTENCES[0]], 0, -1)


# ---------------------------------------------------------------- tokenising


def test_wordpieces_with_cls_and_sep(pm):
    encoding = tokenize(pm, "Unbelievably simple")
    assert encoding.tokens == ("[CLS]", "un", "##bel", "##ie", "##va", "##bly", "simple", "[SEP]")
    assert encoding.word_ids == (None, 0, 0, 0, 0, 0, 1, None)
    assert not encoding.truncated and encoding.num_padding == 0


def test_text_over_512_wordpieces_is_cut_to_512_with_its_padding(pm):
    encoding = tokenize(pm, "word " * 600, padding=2)
    assert TRAINED_MODEL_MAX_TOKENS == 512 == pm.model.config.max_position_embeddings  # every position the model has
    assert encoding.truncated and encoding.text_tokens == 600
    assert encoding.n == 512 and encoding.num_real == 510 and encoding.num_padding == 2  # [PAD]s count too
    assert encoding.tokens[0] == "[CLS]" and encoding.tokens[509] == "[SEP]" and encoding.tokens[-1] == "[PAD]"
    assert encoding.kept_chars == len("word " * 508) - 1
    run = run_model(pm, encoding)
    assert run.attentions.shape == (6, 12, 512, 512)
    assert head_step(pm, run, 4, 7).matches


def test_held_bytes_counts_each_storage_once_a_view_in_full_and_leaves_out_the_shared():
    from ui.page_parts import trained_model_data

    whole = torch.zeros(4, 100)  # 1600 bytes
    assert trained_model_data.held_bytes(whole[0]) == 1600  # a view keeps all of its storage alive
    assert trained_model_data.held_bytes({"a": (whole, whole[1:]), "b": [torch.ones(3)]}) == 1600 + 12
    assert trained_model_data.held_bytes((whole[2], torch.ones(3)), shared=whole) == 12


def test_a_512_token_text_and_one_head_hold_what_the_cache_docs_say(pm):
    """ui.page_parts.trained_model_data keeps TEXTS texts and HEADS heads; one of each at 512 tokens is within TEXT_MB and HEAD_MB, and
    a cached head keeps nothing of its text's run alive (it holds copies, no views)."""
    from ui.page_parts import trained_model_data

    data = trained_model_data.sentence_data("word " * 600, 0)  # the page's cache (loads the page's model once)
    assert data.run.attentions.shape == (6, 12, 512, 512)
    text_bytes = trained_model_data.held_bytes(data)
    assert 75e6 < text_bytes <= trained_model_data.TEXT_MB * 1e6  # the attentions alone are 6·12·512²·4 = 75.5 MB
    step = trained_model_data.head("word " * 600, 0, 3, 5)
    head_bytes = trained_model_data.held_bytes(step)
    assert 5e6 < head_bytes <= trained_model_data.HEAD_MB * 1e6
    assert trained_model_data.held_bytes(step, shared=data) == head_bytes  # no storage shared with the run
    assert trained_model_data.held_bytes(head_step(pm, pm_run_small(pm), 0, 0)) < 0.5e6  # a short sentence


def pm_run_small(pm) -> ModelRun:
    return run_model(pm, tokenize(pm, SENTENCES[0]))


def test_text_of_exactly_510_wordpieces_is_not_cut(pm):
    encoding = tokenize(pm, "word " * 510)
    assert not encoding.truncated and encoding.n == 512
    assert tokenize(pm, "word " * 510, padding=1).truncated  # the [PAD] takes the last position


def test_text_beyond_the_character_cap_is_flagged(pm):
    encoding = tokenize(pm, "a " * TRAINED_MODEL_MAX_CHARS)
    assert encoding.chars_cut and encoding.truncated


@pytest.mark.parametrize("text", ["", "   \n\t ", "\u200b\u200b", "\x00\x01\x02"])
def test_empty_text_is_refused(pm, text):
    with pytest.raises(InputError, match="empty|no WordPiece"):
        tokenize(pm, text)


@pytest.mark.parametrize("padding", [-1, TRAINED_MODEL_MAX_PADDING + 1])
def test_padding_out_of_range_is_refused(pm, padding):
    with pytest.raises(InputError, match=r"\[PAD\]"):
        tokenize(pm, "hello", padding)


@pytest.mark.parametrize("text", UNUSUAL)
def test_unusual_unicode_runs(pm, text):
    encoding = tokenize(pm, text)
    assert encoding.tokens[0] == "[CLS]" and encoding.tokens[-1] == "[SEP]" and encoding.n >= 3
    run = run_model(pm, encoding)
    assert torch.isfinite(run.attentions).all()
    assert head_step(pm, run, 0, 0).matches


# ---------------------------------------------------------------- guided findings


def test_findings_are_measured_on_the_text(pm, runs):
    run = runs[SENTENCES[0]]
    findings = {f.key: f for f in head_findings.guided_findings(run.attentions, run.encoding)}
    assert list(findings) == list(head_findings.FINDINGS)
    m = run.encoding.num_real
    for key, (rows, cols) in {"previous": (range(1, m), range(0, m - 1)), "next": (range(0, m - 1), range(1, m)),
                              "self": (range(m), range(m)), "cls": (range(m), [0] * m),
                              "sep": (range(m), [m - 1] * m)}.items():
        finding = findings[key]
        layer, head, score = finding.top[0]
        by_hand = sum(float(run.attentions[layer, head, i, j]) for i, j in zip(rows, cols)) / len(rows)
        assert math.isclose(score, by_hand, abs_tol=1e-9)
        assert score == max(max(row) for row in finding.scores)
        assert finding.baseline == pytest.approx(1 / m)
    assert findings["same_word"].rows == 0 and findings["same_word"].top == ()  # no word is split here
    split = {f.key: f for f in head_findings.guided_findings(runs[SENTENCES[1]].attentions, runs[SENTENCES[1]].encoding)}
    assert split["same_word"].rows > 0 and len(split["same_word"].top) == 3
    assert split["previous"].scores != findings["previous"].scores  # measured, not hard-coded


@pytest.mark.parametrize("text", [SENTENCES[1], SENTENCES[1] * 40])  # 15 tokens, and 512 (cut)
def test_the_own_word_finding_is_each_pieces_weight_on_its_words_other_pieces(pm, text):
    encoding = tokenize(pm, text)
    run = run_model(pm, encoding)
    finding = {f.key: f for f in head_findings.guided_findings(run.attentions, encoding)}["same_word"]
    m, words = encoding.num_real, encoding.word_ids
    pieces = {i: [j for j in range(m) if j != i and words[i] is not None and words[j] == words[i]] for i in range(m)}
    split = [i for i in range(m) if pieces[i]]
    assert finding.rows == len(split) > 0
    for layer, head in [(0, 2), (3, 7), (5, 11)]:
        by_hand = sum(sum(float(run.attentions[layer, head, i, j]) for j in pieces[i]) for i in split) / len(split)
        assert finding.scores[layer][head] == pytest.approx(by_hand, rel=1e-6)
    assert finding.baseline == pytest.approx(sum(len(pieces[i]) for i in split) / len(split) / m)


def test_head_focus_is_each_heads_mean_largest_weight_over_the_real_tokens(pm, runs):
    run = runs[SENTENCES[0]]
    focus = head_findings.head_focus(run.attentions, run.encoding)
    m = run.encoding.num_real
    assert focus.shape == (6, 12)
    for layer, head in [(0, 0), (2, 7), (5, 11)]:
        by_hand = sum(max(float(w) for w in run.attentions[layer, head, i]) for i in range(m)) / m
        assert math.isclose(float(focus[layer, head]), by_hand, rel_tol=1e-6)
    assert bool(((focus >= 1 / m - 1e-6) & (focus <= 1 + 1e-6)).all())
    # padding rows are left out: the same text padded gives the same focus
    padded = run_model(pm, tokenize(pm, SENTENCES[0], 3))
    assert torch.allclose(head_findings.head_focus(padded.attentions, padded.encoding), focus, atol=1e-5)
    with pytest.raises(ValueError, match="L, H, n, n"):
        head_findings.head_focus(run.attentions[0], run.encoding)


def test_settings_validate_the_model_fields():
    fixed, messages = Settings().replace(**{"trained_model.layer": 9, "trained_model.head": "two", "trained_model.padding": 99, "trained_model.stage": "nope", "trained_model.sentence": None})
    assert (fixed.trained_model.layer, fixed.trained_model.head, fixed.trained_model.padding, fixed.trained_model.stage) == (0, 0, 8, "weights")
    assert fixed.trained_model.sentence == Settings().trained_model.sentence
    text = " ".join(messages)
    assert "layers 1 to 6" in text and "heads 1 to 12" in text and "[PAD]" in text and "Unknown step" in text


# ---------------------------------------------------------------- the page under AppTest


def open_page() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def settings(at: AppTest) -> Settings:
    return at.session_state["settings"]


def texts(elements) -> str:
    return " ".join(e.value for e in elements)


def test_page_renders_the_model_and_its_check():
    at = open_page()
    assert at.title[0].value == "Inside a trained model"
    assert not at.error, texts(at.error)
    assert "13 WordPiece tokens" in texts(at.subheader)
    (check,) = [s.value for s in at.success]
    assert "model(...).attentions[0][0, 0]" in check
    assert float(check.split("= ")[-1].split(" ")[0]) <= 1e-5
    assert element(at)["position"]["stage"] == "weights"  # the default step is the softmax
    assert r"\alpha" in element_latex(at)
    assert element(at)["stages"]["weights"]["checks_html"] == []  # the check is said once, beside the head's map


def test_changing_layer_and_head_changes_what_is_shown():
    at = open_page()
    before = element_latex(at)
    at.selectbox(key="setting_trained_model.layer").set_value(2).run()
    at.selectbox(key="setting_trained_model.head").set_value(8).run()
    assert (settings(at).trained_model.layer, settings(at).trained_model.head) == (2, 8)
    assert "Layer 3, head 9" in texts(at.subheader)
    assert "attentions[2][0, 8]" in at.success[0].value
    assert element_latex(at) != before


def test_a_finding_opens_its_head():
    at = open_page()
    at.button(key="tm_find_previous_0").click().run()
    label = at.button(key="tm_find_previous_0").label  # "Layer 1, head 3: 1.00"
    layer, head = (int(part.split()[-1]) for part in label.split(":")[0].split(","))
    assert (settings(at).trained_model.layer + 1, settings(at).trained_model.head + 1) == (layer, head)


def test_stepping_through_every_stage():
    """Every stage in the element: its matrix form, element form and the explained entry with its numbers, the
    block sent of each matrix at the entry's place (the element steps in the browser: a stage's entries come when it
    asks, as here)."""
    at = open_page()
    data = element(at)
    assert data["order"] == list(TRAINED_MODEL.stages)
    for stage in TRAINED_MODEL.stages:
        at = element_send(at, "need", {"stage": stage, "row": 8, "col": 2, "head": 0, "stages": [stage]})
        assert not at.exception and not at.error
        data = element(at)
        assert data["position"]["stage"] == stage
        shown_stage = data["stages"][stage]
        assert len(shown_stage["formula"]) >= 2  # the matrix form and the element form
        (panel,) = shown_stage["panels"]
        rows, cols = panel["shape"]
        assert panel["offset"] == [0, 0] and len(panel["rows"]) == rows == 13  # 13 tokens: every row
        assert len(panel["cols"]) == (cols if cols <= 14 else 12)  # up to 14 whole, else a block of 12
        assert set(shown_stage["entries"]) == {f"8,{col},0" for col in range(len(panel["cols"]))}  # the row's
        assert "=" in element_entry(at)


def test_padding_shows_the_mask():
    at = open_page()
    at.number_input(key="setting_trained_model.padding").set_value(3).run()
    assert "16 WordPiece tokens" in texts(at.subheader)
    at.button(key="tm_show_pad").click().run()
    assert (settings(at).trained_model.stage, settings(at).trained_model.entry_col) == ("mask", 13)
    assert element(at)["position"] == {"stage": "mask", "row": 8, "col": 13, "head": 0}
    (panel,) = element(at)["stages"]["mask"]["panels"]  # 16 columns: the block of the [PAD] ones, 13-16
    assert panel["offset"] == [0, 12] and panel["cols"] == ["13 [SEP]", "14 [PAD]", "15 [PAD]", "16 [PAD]"]
    assert panel["text"][8] == ["0", "−∞", "−∞", "−∞"]
    assert r"\text{(token 14 is [PAD])}" in element_entry(at)
    assert float(at.success[0].value.split("= ")[-1].split(" ")[0]) <= 1e-5


@pytest.mark.parametrize("text", ["", "   ", "\u200b"])
def test_empty_text_gets_a_message_and_is_kept(text):
    at = open_page()
    at.text_area(key="setting_trained_model.sentence").set_value(text).run()
    assert not at.exception
    assert "Type" in texts(at.error) or "type" in texts(at.error)
    assert settings(at).trained_model.sentence == text


def test_long_text_is_cut_with_a_message():
    at = open_page()
    at.text_area(key="setting_trained_model.sentence").set_value("word " * 600).run()
    assert not at.exception and not at.error
    assert "600 WordPiece tokens" in texts(at.warning) and "cut after the first 510" in texts(at.warning)
    assert "512 WordPiece tokens" in texts(at.subheader)


#: Prose of 660 WordPieces: the page reads its first 510 and [CLS] and [SEP], 512 tokens.
LONG_TEXT = "The cat sat on the mat because it was tired. " * 60


def test_a_512_token_text_every_view_windowed_and_a_cell_maps_back_to_its_place():
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["trained_model.sentence"] = LONG_TEXT  # a link that carries the text
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception and not at.error, (at.exception, texts(at.error))
    assert "512 WordPiece tokens" in texts(at.subheader) and "660 WordPiece tokens" in texts(at.warning)
    assert "each picture averages blocks of tokens" in texts(at.caption)
    for spec, data in charts(at):  # no chart draws more than a window's marks; the grid 72 pictures
        assert len(data) <= 64 * 64, (spec.get("description"), len(data))
    # the map: the block of 64 × 64 around the explained entry (8, 2), its selected cell at its global place
    cells = entry_map(at)
    assert len(cells) == 64 * 64 and (cells["i"].max(), cells["j"].max()) == (63, 63)
    assert "Showing rows 1–64 and columns 1–64 of the 512 × 512 weights." in texts(at.caption)
    # the step-through sends a block of 12 × 12 around the entry, its cells at their global place
    (panel,) = element(at)["stages"]["weights"]["panels"]
    assert (panel["offset"], panel["shape"], len(panel["rows"]), len(panel["cols"])) == ([0, 0], [512, 512], 12, 12)
    assert len(panel["all_rows"]) == len(panel["all_cols"]) == 512  # the pickers reach every token
    # the learner moves the entry far away in the element (its pickers, its keys): the block there, one round trip
    at = element_send(at, "need", {"stage": "weights", "row": 300, "col": 5, "head": 0, "stages": ["weights"]})
    assert (settings(at).trained_model.entry_row, settings(at).trained_model.entry_col) == (300, 5)
    (panel,) = element(at)["stages"]["weights"]["panels"]
    assert panel["offset"] == [300, 0] and panel["rows"][0].startswith("301 ")
    assert "Showing rows 301–312 and columns 1–12" in panel["caption_html"]
    assert r"\text{(512 terms)}" in element_entry(at) and r"\cdots" in element_entry(at)
    # the map follows an entry the server moves to (a link, the teacher, a click on the map)
    at = element_step(at, **{"trained_model.entry_row": 300, "trained_model.entry_col": 5})
    cells = entry_map(at)
    assert (cells["i"].min(), cells["i"].max(), cells["j"].min(), cells["j"].max()) == (256, 319, 0, 63)
    (chosen,) = cells.index[cells["selected"]]
    assert (cells["i"][chosen], cells["j"][chosen]) == (300, 5)
    from ui.page_parts import trained_model_data

    data = trained_model_data.sentence_data(LONG_TEXT, 0)  # the page's cached run: its numbers are the model's
    assert cells["weight"][chosen] == pytest.approx(float(data.run.attentions[0, 0, 300, 5]), abs=1e-7)
    assert cells["key"][chosen] == f"6 {data.run.encoding.tokens[5]}" and cells["query"][chosen].startswith("301 ")
    # the block pickers move the window and explain the weight at the same place in the new block
    at.selectbox(key="tm_map_0_0_block_0").set_value(448).run()
    assert (settings(at).trained_model.entry_row, settings(at).trained_model.entry_col) == (492, 5)
    cells = entry_map(at)
    (chosen,) = cells.index[cells["selected"]]
    assert (cells["i"].min(), cells["i"].max(), cells["i"][chosen], cells["j"][chosen]) == (448, 511, 492, 5)
    # the check against the model still matches; the softmax's sum over 512 keys is elided in the formula
    (check,) = [s.value for s in at.success]
    assert "model(...).attentions[0][0, 0]" in check and float(check.split("= ")[-1].split(" ")[0]) <= 1e-5
    assert r"\text{(512 terms)}" in element_entry(at) and r"\cdots" in element_entry(at)
    # a stage whose columns are the head's features: the map goes around the entry's row, on the diagonal
    at = element_step(at, **{"trained_model.stage": "query"})
    assert not at.exception and not at.error
    cells = entry_map(at)
    assert (cells["i"].min(), cells["j"].min()) == (448, 448) and not cells["selected"].any()


def test_unusual_unicode_on_the_page():
    at = open_page()
    # (a lone surrogate cannot come from a browser; the core test above covers it)
    at.text_area(key="setting_trained_model.sentence").set_value("🙂 xy שלום \x00 é\u200b 𝔘").run()
    assert not at.exception and not at.error
    assert "[UNK]" in texts(at.info)


def test_checksum_mismatch_on_the_page_leaves_the_rest_of_the_app_working(monkeypatch):
    from ui.page_parts import trained_model_data

    trained_model_data.model.clear()
    monkeypatch.setitem(EXPECTED_SHA256, "config.json", "f" * 64)
    try:
        at = open_page()
        assert "config.json failed its checksum" in shown(texts(at.error))
        assert not at.success
        at.switch_page("app_pages/self_attention.py").run()
        assert not at.exception and not at.error
        assert at.title[0].value.startswith("Scaled dot-product self-attention")
    finally:
        monkeypatch.undo()
        trained_model_data.model.clear()  # the failed load was not cached; the next visit loads the model


def test_missing_package_on_the_page(monkeypatch):
    from ui.page_parts import trained_model_data

    trained_model_data.model.clear()
    real = model_folder
    monkeypatch.setattr("attention_core.minilm.model.model_folder", lambda module=None: real("no_such_model_package_here"))
    try:
        at = open_page()
        assert "is not installed" in texts(at.error)
    finally:
        monkeypatch.undo()
        trained_model_data.model.clear()
