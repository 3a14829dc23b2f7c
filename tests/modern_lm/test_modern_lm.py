"""The "Inside a modern language model" page on SmolLM2-135M-Instruct: its measurements against the model's own
outputs (hidden states, attentions, greedy generation, the KV cache), the step-through against the model's own
attention code, every stage's entries and exercises, and the page under AppTest (every stage in both languages,
bad prompts, the package missing, the page turned off)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import charts, element, element_entry, element_send, element_step, entry_map, errors, open_link, warnings
from streamlit.testing.v1 import AppTest
from test_practice import _check_stage
from test_stepthrough import result_of, step_through_every_stage

from attention_core import registry
from attention_core.errors import InputError, Message
from attention_core.lessons.modern_lm.page import MODERN_LM, entry_latex, modern_lm_step_through, stage_matrix
from attention_core.smollm2 import checkpoint, measure
from attention_core.smollm2.model import MODERN_LM_MAX_TOKENS, load_decoder, run_prompt

PROMPTS = ["The capital of France is", "猫坐在垫子上。 🐈 ¿Qué? " * 3, "one two three four five six " * 8]


@pytest.fixture(scope="module")
def decoder():
    from ui.page_parts import modern_lm_data

    return modern_lm_data.decoder()  # one load per test process, shared with the page under AppTest


@pytest.fixture(scope="module")
def runs(decoder):
    return {text: measure.run_model(decoder, measure.encode_prompt(decoder, text)) for text in PROMPTS}


@pytest.mark.parametrize("text", PROMPTS)
def test_the_run_holds_the_models_hidden_states_and_each_heads_patterns(decoder, runs, text):
    run, reference = runs[text], run_prompt(decoder, text)
    assert torch.equal(run.prompt.ids, reference.input_ids) and run.prompt.tokens == reference.tokens
    torch.testing.assert_close(run.hidden_states, reference.hidden_states, rtol=0, atol=1e-5)
    # the run computes the last position's logits alone (logits_to_keep=1), the reference all T positions': matrix
    # products of other shapes, which round differently in float32 (measured up to 1.3e-6)
    torch.testing.assert_close(torch.softmax(run.logits, -1), reference.next_token_probs, rtol=0, atol=5e-6)
    weights = reference.attentions  # (L, H, T, T), as the model reports them
    t = weights.shape[-1]
    rows = torch.arange(1, t)
    torch.testing.assert_close(run.patterns["previous"], weights[..., rows, rows - 1].mean(-1))
    torch.testing.assert_close(run.patterns["first"], weights[..., 1:, 0].mean(-1))
    torch.testing.assert_close(run.patterns["current"], weights.diagonal(dim1=-2, dim2=-1).mean(-1))
    torch.testing.assert_close(run.focus, weights.amax(-1).mean(-1))
    assert run.sink == pytest.approx(float(weights[..., 1:, 0].mean()), abs=1e-6)
    assert run.baselines["first"] == pytest.approx(sum(1 / (i + 1) for i in range(1, t)) / (t - 1))
    expected = weights if t <= measure.PICTURE else F.adaptive_avg_pool2d(weights, measure.PICTURE)
    torch.testing.assert_close(run.pictures, expected, rtol=0, atol=1e-6)


def test_the_findings_name_the_strongest_heads(runs):
    run = runs[PROMPTS[0]]
    for finding in measure.findings(run):
        scores = run.patterns[finding.key]
        layer, head, score = finding.top[0]
        assert score == pytest.approx(float(scores.max())) and float(scores[layer, head]) == score
        assert [s for _l, _h, s in finding.top] == sorted((s for _l, _h, s in finding.top), reverse=True)
    # on the default prompt the sink is real: far more weight on the first token than an even spread gives it
    assert run.sink > 2 * run.baselines["first"]


@pytest.mark.parametrize("layer, head", [(0, 0), (5, 4), (18, 8), (29, 2)])
@pytest.mark.parametrize("text", PROMPTS[:2])
def test_the_step_through_equals_the_models_own_attention_and_output(decoder, runs, text, layer, head):
    step = measure.head(decoder, runs[text], layer, head)
    reference = run_prompt(decoder, text)
    torch.testing.assert_close(step.model_weights, reference.attentions[layer, head], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(step.weights, reference.attentions[layer, head], rtol=1e-4, atol=1e-5)
    assert step.kv_head == head // 3
    checks = modern_lm_step_through(step, "weights").checks
    assert len(checks) == 2 and all(check.matches for check in checks), checks
    assert max(check.max_abs_diff for check in checks) < 1e-4


def test_a_check_fails_when_the_numbers_differ(decoder, runs):
    step = measure.head(decoder, runs[PROMPTS[0]], 3, 1)
    import dataclasses

    wrong = dataclasses.replace(step, weights=step.weights + 1e-3 * torch.eye(len(step.tokens)))
    assert not modern_lm_step_through(wrong, "weights").checks[0].matches


def test_every_stage_explains_its_entries_ending_with_the_panels_number(decoder, runs):
    step = measure.head(decoder, runs[PROMPTS[0]], 12, 6)
    t = len(step.tokens)
    for stage in MODERN_LM.stages:
        matrix = stage_matrix(step, stage)
        for row, col in ((t - 1, 0), (2, 1), (t - 1, matrix.shape[1] - 1)):
            text = entry_latex(step, stage, row, col, Message)
            value = float(matrix[row, col])
            if stage == "masked_scores" and math.isinf(value):
                assert r"-\infty" in text, text
            elif stage == "rope_query" or stage == "rope_key":
                assert result_of(text.split(r"\qquad")[0]) == pytest.approx(value, rel=1e-3, abs=1e-4), (stage, text)
            else:
                assert result_of(text) == pytest.approx(value, rel=1e-3, abs=1e-4), (stage, row, col, text)
        with pytest.raises(IndexError):
            entry_latex(step, stage, t, 0)


def test_a_weights_entry_says_why_it_subtracts_the_rows_largest_score(decoder, runs):
    """The softmax entry writes e^(ã − 2.703): it names 2.703 as the row's largest score and says why it is
    subtracted (no e^x overflows) and why the weight is the same (the factor cancels in the ratio)."""
    from attention_core.latex import number

    step = measure.head(decoder, runs[PROMPTS[0]], 12, 6)
    row = len(step.tokens) - 1
    top = float(step.masked_scores[row].max())
    assert top != 0
    text = entry_latex(step, "weights", row, 0, Message)
    shift = f"{number(top)} = \\max_{{l \\le {row + 1}}}"
    assert shift in text.split(r"\alpha")[0] and "largest score" in text, text  # said before the entry's lines
    assert r"\begin{gathered}" in text  # lines one under another, inside an environment (KaTeX warned of \\ outside)
    assert "overflow" in text and "same factor" in text, text
    assert result_of(text) == pytest.approx(float(step.weights[row, 0]), rel=1e-3, abs=1e-4)
    assert "largest score" not in entry_latex(step, "weights", 0, 1, Message)  # a blocked key: 0, no e^x at all


def test_the_exercises_grade_answers_and_name_mistakes(decoder, runs):
    step = measure.head(decoder, runs[PROMPTS[0]], 2, 2)
    seen: dict[str, int] = {}
    asked = {stage: _check_stage(stage, modern_lm_step_through(step, stage), seen) for stage in MODERN_LM.stages}
    assert {stage for stage, n in asked.items() if n} == {"scaled_scores", "weights", "output"}
    assert {"no_scale", "scale_d_k", "softmax_column", "max_not_sum"} <= set(seen)


def test_the_next_token_distribution_at_a_temperature(decoder, runs):
    run = runs[PROMPTS[0]]
    top = measure.next_tokens(decoder, run.logits, 1.0)
    assert top.tokens[0] == " Paris" and float(top.probabilities[0]) > 0.5
    full = torch.softmax(run.logits, -1)
    torch.testing.assert_close(top.probabilities, torch.topk(full, 10).values)
    assert top.rest == pytest.approx(1 - float(torch.topk(full, 10).values.sum()), abs=1e-6)
    cold, hot = measure.next_tokens(decoder, run.logits, 0.01), measure.next_tokens(decoder, run.logits, 100.0)
    assert float(cold.probabilities[0]) == pytest.approx(1.0) and float(hot.probabilities[0]) < 1e-3
    torch.testing.assert_close(hot.probabilities, torch.topk(torch.softmax(run.logits / 100, -1), 10).values)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(InputError):
            measure.next_tokens(decoder, run.logits, bad)


def test_generation_with_the_kv_cache_is_greedy_decoding_and_the_cache_grows_by_the_formula(decoder):
    prompt = measure.encode_prompt(decoder, "The capital of France is")
    steps = measure.generate(decoder, prompt, 5)
    with torch.no_grad():
        reference = decoder.model.generate(prompt.ids[None], max_new_tokens=5, do_sample=False)[0, len(prompt.ids):]
    assert [s.token_id for s in steps] == reference.tolist()
    assert "".join(s.token for s in steps).startswith(" Paris.")
    assert measure.generate(decoder, prompt, 5) == steps  # stable
    t = len(prompt.ids)
    for n, step in enumerate(steps):
        assert step.cache_tokens == t + n
        assert step.cache_bytes == measure.decoder_kv_cache_bytes(decoder, t + n) == 2 * 30 * 3 * 64 * (t + n) * 4
    assert measure.decoder_kv_cache_bytes(decoder, 1, kv_heads=9) == 3 * measure.decoder_kv_cache_bytes(decoder, 1)


def test_a_512_token_run_and_one_head_hold_what_the_cache_docs_say(decoder):
    """ui.page_parts.modern_lm_data keeps RUNS runs and HEADS heads; one of each at 512 tokens is within RUN_MB and HEAD_MB (the model's
    own parameters left out: every session shares them), and a cached head holds no view of its run."""
    from ui.page_parts import modern_lm_data, trained_model_data

    run = modern_lm_data.prompt_run("word " * 700, False)
    assert run.hidden_states.shape == (31, 512, 576) and run.logits.shape == (49152,)
    run_bytes = trained_model_data.held_bytes(run, shared=decoder.model)
    assert 36e6 < run_bytes <= modern_lm_data.RUN_MB * 1e6  # the hidden states alone are 31·512·576·4 = 36.6 MB
    step = modern_lm_data.head("word " * 700, False, 4, 2)
    head_bytes = trained_model_data.held_bytes(step, shared=decoder.model)
    assert 5e6 < head_bytes <= modern_lm_data.HEAD_MB * 1e6
    assert trained_model_data.held_bytes(step, shared=(decoder.model, run)) == head_bytes  # no view of the run's tensors
    assert float((step.weights - step.model_weights).abs().max()) <= 1e-4  # and it still checks against the model


def test_a_generation_from_the_run_rebuilds_the_models_own_cache_and_goes_on_where_it_stopped(decoder, runs):
    text = PROMPTS[2]
    run = runs[text]
    with torch.no_grad():
        own = decoder.model(input_ids=run.prompt.ids[None], use_cache=True).past_key_values
    rebuilt = measure.prompt_cache(decoder, run)
    for mine, theirs in zip(rebuilt.layers, own.layers, strict=True):  # the same numbers the prompt's pass stores
        assert torch.equal(mine.keys, theirs.keys) and torch.equal(mine.values, theirs.values)
    going = measure.Continuation(decoder, run.prompt, run)
    first_two = going.steps(2)
    assert going.run is None  # it keeps the cache, not the run
    assert going.steps(5)[:2] == first_two and going.steps(5) == measure.generate(decoder, run.prompt, 5)
    assert going.steps(3) == going.steps(5)[:3]  # asking for fewer makes nothing new


def test_a_512_token_generation_keeps_its_cache_within_what_the_cache_docs_say(decoder):
    from ui.page_parts import modern_lm_data, trained_model_data

    going = modern_lm_data.continuation("word " * 700, False)
    steps = going.steps(12)
    assert [s.cache_tokens for s in steps] == list(range(512, 524))
    assert trained_model_data.held_bytes(going, shared=decoder.model) <= modern_lm_data.CONTINUATION_MB * 1e6
    assert steps[-1].cache_bytes == measure.decoder_kv_cache_bytes(decoder, 523) > 23e6


def test_prompts_any_script_the_chat_template_a_cut_and_an_empty_one(decoder):
    emoji = measure.encode_prompt(decoder, "猫 🐈 Ünïcödé ")
    assert "".join(emoji.tokens).encode() != b"" and decoder.tokenizer.decode(emoji.ids) == "猫 🐈 Ünïcödé "
    chat = measure.encode_prompt(decoder, "What is attention?", chat_template=True)
    assert chat.tokens[0] == "<|im_start|>" and "".join(chat.tokens).endswith("<|im_start|>assistant\n")
    assert " attention" in chat.tokens and not chat.cut
    long = measure.encode_prompt(decoder, "word " * 700)
    assert MODERN_LM_MAX_TOKENS == 512
    assert long.cut and len(long.ids) == MODERN_LM_MAX_TOKENS and long.text_tokens == 701  # 700 words and the trailing space
    long_chat = measure.encode_prompt(decoder, "word " * 700, chat_template=True)
    assert long_chat.cut and len(long_chat.ids) <= MODERN_LM_MAX_TOKENS
    assert "".join(long_chat.tokens).endswith("<|im_start|>assistant\n")
    assert measure.shown_token_labels((" a", "\n")) == ("1 ␣a", "2 ↵")
    for empty in ("", "   "):
        with pytest.raises(InputError, match="Type a prompt"):
            measure.encode_prompt(decoder, empty)


# ---------------------------------------------------------------- the page (AppTest)

PAGE = "app_pages/modern_lm.py"


def _open(language: str = "en", **params) -> AppTest:
    return open_link(PAGE, language, **params)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_step_of_the_page_in_both_languages(language):
    at = _open(language)
    assert not at.error, errors(at)
    assert any("Paris" in str(df.value) for df in at.dataframe)
    seen = step_through_every_stage(at, "modern_lm", f"modern_lm, {language}")
    assert seen == list(registry.BY_KEY["modern_lm"].stages)
    at.button(key="lm_generate").click().run()
    at.button(key="lm_generate").click().run()
    assert at.session_state["settings"].modern_lm.generated == 2 and not at.exception
    at.toggle(key="setting_modern_lm.chat_template").set_value(True).run()
    assert not at.exception and not at.error, errors(at)
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"


def test_the_tables_write_tokens_as_the_heatmaps_do():
    """The next tokens and the generated ones were written in Python's quotes (' Paris'), the heatmaps' labels with
    ␣ for a space: the tables now write a token as the heatmaps do, without quotes."""
    at = _open()
    at.button(key="lm_generate").click().run()
    at.button(key="lm_generate").click().run()
    assert not at.exception and not at.error, errors(at)
    (top,) = [df.value for df in at.dataframe if list(df.value.columns) == ["token", "probability", "logit z"]]
    (generated,) = [df.value for df in at.dataframe if "tokens in the cache" in list(df.value.columns)]
    assert top.iloc[0, 0] == "␣Paris" and list(generated.iloc[:, 0]) == ["␣Paris", "."]
    for table in (top, generated):
        for token in table.iloc[:, 0]:
            assert " " not in token and "\n" not in token and token[:1] not in ("'", '"'), token
    assert "5 ␣is" in set(entry_map(at)["query"])  # the open head's map: the same marks, after a position


def test_a_finding_opens_its_head_and_a_weight_cell_explains_it():
    at = _open()
    finding = next(b for b in at.button if b.key == "lm_find_previous_0")
    finding.click().run()
    own = at.session_state["settings"].modern_lm
    assert (own.layer, own.head) == (16, 0)  # layer 17, head 1: the previous-token head on this prompt
    assert any("Layer 17, head 1 (key/value head 1)" == s.value for s in at.subheader)
    assert not at.error, errors(at)


def _grid_layers(at) -> list[set[int]]:
    return [set(data["layer"]) for spec, data in charts(at) if "head_pick" in str(spec)]


def test_the_grid_shows_ten_layers_at_a_time_and_follows_the_open_head():
    """30 layers at once left each picture ~20 px: the grid shows a block of 10, the open head's, with a picker."""
    at = _open()
    assert _grid_layers(at) == [set(range(1, 11))] * 3  # three grids, one per key/value head, layers 1-10
    at.get("segmented_control")[0].set_value(20).run()  # the learner looks at layers 21-30
    assert _grid_layers(at) == [set(range(21, 31))] * 3
    own = at.session_state["settings"].modern_lm
    assert (own.layer, own.head) == (0, 0)  # browsing the grid opens no head
    next(b for b in at.button if b.key == "lm_find_previous_0").click().run()  # opens layer 17
    assert _grid_layers(at) == [set(range(11, 21))] * 3


def test_bad_prompts_get_a_message_and_the_page_keeps_running():
    at = _open(**{"modern_lm.prompt": ""})
    assert "Type a prompt" in errors(at)
    at.text_area(key="setting_modern_lm.prompt").set_value("word " * 700).run()
    assert not at.exception and "was cut after its first 512" in warnings(at), warnings(at)
    assert at.text_area(key="setting_modern_lm.prompt").value == "word " * 700  # nothing typed is lost
    at.text_area(key="setting_modern_lm.prompt").set_value("🐈‍⬛ ẞ ñ 中文").run()
    assert not at.exception and not at.error, errors(at)


def test_a_512_token_prompt_every_view_windowed_and_a_cell_maps_back_to_its_place():
    at = _open(**{"modern_lm.prompt": "word " * 700, "modern_lm.layer": "2", "modern_lm.head": "4"})
    assert not at.error, errors(at)
    assert "was cut after its first 512" in warnings(at) and any(s.value == "512 tokens" for s in at.subheader)
    for spec, data in charts(at):  # no chart draws more than a window's marks
        assert len(data) <= 64 * 64, (spec.get("description"), len(data))
    # the learner moves the entry in the step-through (its pickers, its keys): the block there comes, one round trip
    at = element_send(at, "need", {"stage": "weights", "row": 400, "col": 130, "head": 0, "stages": ["weights"]})
    own = at.session_state["settings"].modern_lm
    assert (own.entry_row, own.entry_col) == (400, 130)
    (panel,) = element(at)["stages"]["weights"]["panels"]
    assert (panel["offset"], panel["shape"], len(panel["rows"]), len(panel["cols"])) == ([396, 120], [512, 512], 12, 12)
    assert panel["rows"][4] == "401 ␣word" and panel["cols"][10] == "131 ␣word" and len(panel["all_cols"]) == 512
    assert r"\cdots" in element_entry(at)  # the softmax's 401 terms elided
    at = element_step(at, **{"modern_lm.entry_row": 400, "modern_lm.entry_col": 130})  # the map follows the server's
    own = at.session_state["settings"].modern_lm
    assert (own.layer, own.head, own.entry_row, own.entry_col) == (2, 4, 400, 130)
    cells = entry_map(at)
    assert len(cells) == 64 * 64
    assert (cells["i"].min(), cells["i"].max(), cells["j"].min(), cells["j"].max()) == (384, 447, 128, 191)
    (chosen,) = cells.index[cells["selected"]]
    assert (cells["i"][chosen], cells["j"][chosen]) == (400, 130)
    from ui.page_parts import modern_lm_data

    step = modern_lm_data.head("word " * 700, False, 2, 4)  # the page's cached head: the model's own weights too
    assert cells["weight"][chosen] == pytest.approx(float(step.model_weights[400, 130]), abs=1e-4)
    assert cells["query"][chosen] == "401 ␣word" and cells["key"][chosen] == "131 ␣word"
    assert any("Showing rows 385–448 and columns 129–192 of the 512 × 512 weights." in c.value for c in at.caption)
    assert len(at.success) >= 2 and not at.error, errors(at)  # the checks against the model still match
    at.selectbox(key="lm_map_2_4_block_1").set_value(448).run()  # the column block: the same place in it
    own = at.session_state["settings"].modern_lm
    assert (own.entry_row, own.entry_col, own.stage) == (400, 450, "weights")  # above the diagonal: masked, 0
    (chosen,) = entry_map(at).index[entry_map(at)["selected"]]
    assert entry_map(at)["weight"][chosen] == 0.0 and not at.exception


def test_a_link_with_a_head_out_of_range_says_so():
    at = _open(**{"modern_lm.layer": "31", "modern_lm.head": "0"})
    own = at.session_state["settings"].modern_lm
    assert (own.layer, own.head) == (0, 0)
    assert "layers 1 to 30" in warnings(at) + errors(at) + " ".join(m.value for m in at.markdown)


def test_the_package_missing_says_how_to_install_it_and_other_pages_work(monkeypatch):
    from ui.page_parts import modern_lm_data

    # the page's loader as on a server without the package (the loaded model stays cached for the other tests)
    monkeypatch.setattr(checkpoint.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(modern_lm_data, "decoder", load_decoder)
    at = _open()
    assert "is not installed" in errors(at) and "requirements-models.txt" in errors(at)
    at.switch_page("app_pages/rope.py").run()
    assert not at.exception and not at.error


def test_a_host_turns_the_page_off(monkeypatch):
    from ui.page_parts import modern_lm_data

    monkeypatch.setenv(modern_lm_data.SWITCH, "off")
    at = _open()
    assert any("turned off" in i.value for i in at.info)
    assert not at.dataframe and not at.error


def test_the_grid_follows_the_colour_blind_palette():
    import base64
    import io

    import numpy as np
    from PIL import Image

    from ui.page_parts import model_view

    at = _open(palette="cvd")
    urls = [data["url"].iloc[0] for spec, data in charts(at) if "head_pick" in str(spec)]
    assert len(urls) == 3
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(urls[0].split(",", 1)[1]))))
    assert {tuple(p) for p in pixels.reshape(-1, 3)} <= {tuple(c) for c in model_view._LUTS["cvd"]}
