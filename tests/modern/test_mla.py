"""Multi-head latent attention: the page's numbers equal transformers' ``DeepseekV3Attention`` (its RMSNorms on the
latents replaced by the identity, rope_interleave=False, the page's weights copied in) and a Python loop; absorption
gives the same scores; RoPE rotated inside k^C breaks absorption by a visible margin; the cache numbers are
DeepSeek-V3's; bad sizes get messages. Every comparison is float32 with rtol = atol = 1e-5 (TOL): the measured
differences are ~1e-8 against transformers and ~1e-7 against the loop and for the absorbed scores."""

from __future__ import annotations

import pytest
import torch
from conftest import APP, errors, shown_checks, shown_warnings
from streamlit.testing.v1 import AppTest
from test_stepthrough import step_through_every_stage

from attention_core.errors import InputError, Message
from attention_core.lessons.mla.page import MLA_PAGE, mla_step_through
from attention_core.modern.mla import (
    DEEPSEEK_V3,
    absorbed_scores,
    cache_numbers,
    coupled_rope_scores,
    fit_latents,
    loop_scores,
    mla_weights,
    multi_head_latent_attention,
    transformers_mla,
)
from attention_core.settings import Settings, validate_settings

TOL = 1e-5
#: The least max |absorbed − true| the rotated-inside design must show on the page's defaults (it measures ~0.24).
DECOUPLING_MARGIN = 0.05


def _trace(t=6, d_model=8, h=4, d_h=4, d_r=2, d_c=3, d_cq=5, seed=0):
    x = torch.randn(t, d_model, generator=torch.Generator().manual_seed(seed + 100))
    w = mla_weights(d_model, h, d_h, d_r, d_c, d_cq, seed)
    return multi_head_latent_attention(x, w, num_heads=h, head_dim=d_h, rope_dim=d_r)


@pytest.mark.parametrize("sizes", [dict(), dict(h=1, d_h=1, d_r=2, d_c=1, d_cq=1), dict(h=3, d_h=3, d_r=4, d_c=8, d_cq=8),
                                   dict(t=1), dict(t=12, d_model=16, h=8, d_h=2, d_r=4, d_c=6, d_cq=10, seed=7)])
def test_the_page_equals_deepseek_v3_attention_and_a_loop(sizes):
    trace = _trace(**sizes)
    output, weights = transformers_mla(trace)
    torch.testing.assert_close(trace.output, output, rtol=TOL, atol=TOL)
    torch.testing.assert_close(trace.attention.weights, weights, rtol=TOL, atol=TOL)
    torch.testing.assert_close(trace.attention.scaled_scores, loop_scores(trace), rtol=TOL, atol=TOL)
    # the shapes the paper names: one latent and one shared k^R per token
    t = trace.x.shape[0]
    assert trace.latent_kv.shape == (t, trace.weights["w_dkv"].shape[1])
    assert trace.key_rope.shape == (t, trace.rope_dim)
    assert torch.equal(trace.key[0, :, trace.head_dim:], trace.key[-1, :, trace.head_dim:])  # k^R shared


@pytest.mark.parametrize("d_r", [2, 4])
def test_deepseeks_interleaved_rope_layout_is_the_same_rotation_with_the_columns_permuted(d_r):
    trace = _trace(d_r=d_r, seed=5)
    half_split, _ = transformers_mla(trace)
    interleaved, weights = transformers_mla(trace, interleave=True)
    torch.testing.assert_close(interleaved, trace.output, rtol=TOL, atol=TOL)
    torch.testing.assert_close(weights, trace.attention.weights, rtol=TOL, atol=TOL)
    torch.testing.assert_close(half_split, interleaved, rtol=TOL, atol=TOL)


def test_the_reference_really_differs_with_its_rmsnorms_so_the_identity_is_needed():
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3RMSNorm

    trace = _trace()
    norm = DeepseekV3RMSNorm(trace.latent_kv.shape[-1])
    assert (norm(trace.latent_kv) - trace.latent_kv).abs().max() > 0.1  # the norm would change c_KV visibly


@pytest.mark.parametrize("seed", [0, 3])
def test_absorption_gives_the_same_scores_and_rope_inside_breaks_it(seed):
    trace = _trace(seed=seed)
    torch.testing.assert_close(absorbed_scores(trace), trace.attention.scaled_scores, rtol=TOL, atol=TOL)
    coupled = coupled_rope_scores(trace)
    # key position 0 is not rotated, so that column agrees; every other column misses R_j
    torch.testing.assert_close(coupled.absorbed[:, :, 0], coupled.scores[:, :, 0], rtol=TOL, atol=TOL)
    assert coupled.difference[:, :, 1:].abs().max() > DECOUPLING_MARGIN


def test_the_page_shows_the_decoupling_mismatch_by_more_than_the_margin():
    walk = MLA_PAGE.walkthrough(Settings())
    assert all(c.matches for c in walk.checks), [(c.reference, c.max_abs_diff) for c in walk.checks]
    assert max(c.max_abs_diff for c in walk.checks) < 1e-6
    assert walk.coupled.difference.abs().max() > DECOUPLING_MARGIN


def test_with_nothing_rotated_the_decoupling_step_says_so_instead_of_claiming_a_failure():
    walk = MLA_PAGE.walkthrough(Settings().set(**{"mla.head_dim": 1}))
    assert walk.coupled.difference.abs().max() < 1e-6
    assert "happens to stay right: with d_h = 1" in str(mla_step_through(walk, "decoupling").stage.remark)
    walk = MLA_PAGE.walkthrough(Settings())
    assert "largest mismatch is 0.212, at query 7 and key 4" in str(mla_step_through(walk, "decoupling").stage.remark)


def test_cache_numbers_at_deepseek_v3_sizes():
    v3 = DEEPSEEK_V3
    assert (v3["d_model"], v3["num_heads"], v3["head_dim"], v3["rope_dim"], v3["kv_latent"], v3["layers"]) == (
        7168, 128, 128, 64, 512, 61)
    per_layer = cache_numbers(128, 128, 512, 64, 8).tolist()
    assert per_layer == [2 * 128 * 128, 2 * 8 * 128, 2 * 128, 512 + 64] == [32768, 2048, 256, 576]
    all_layers = cache_numbers(128, 128, 512, 64, 8, layers=61).tolist()
    assert all_layers == [32768 * 61, 2048 * 61, 256 * 61, 576 * 61]
    walk = MLA_PAGE.walkthrough(Settings())
    assert walk.cache.tolist() == [32, 16, 8, 4]  # h 4, d_h 4, GQA 2 heads, d_c 2 + d_R 2
    assert walk.cache_v3[:, 1].tolist() == pytest.approx([32768 * 61 * 2 / 1024, 2048 * 61 * 2 / 1024,
                                                          256 * 61 * 2 / 1024, 576 * 61 * 2 / 1024])
    remark = str(mla_step_through(walk, "cache").stage.remark)
    assert "576 against 32,768, 57 × fewer" in remark and "68.6 KiB" in remark


def test_every_stage_explains_its_entries_with_the_shown_value():
    walk = MLA_PAGE.walkthrough(Settings().set(**{"mla.head": 2, "mla.head_dim": 3}))
    assert walk.head == 2
    for stage in MLA_PAGE.stages:
        step = mla_step_through(walk, stage)
        target = step.stage.target
        rows, cols = target.matrix.shape
        for row in range(rows):
            for col in range(cols):
                latex = step.stage.entry(row, col, 0, Message)
                assert latex and "nan" not in latex, (stage, row, col)
        assert step.stage.formula(Message), stage


def test_bad_sizes_get_messages_and_the_page_keeps_what_was_typed():
    kv, q, messages = fit_latents(4, 6, 3)
    assert (kv, q) == (4, 3) and len(messages) == 1 and "wider than d_model = 4" in str(messages[0])
    walk = MLA_PAGE.walkthrough(Settings().set(**{"mla.kv_latent": 9, "mla.q_latent": 16}))
    assert walk.settings.mla.kv_latent == 9 and walk.trace.latent_kv.shape[-1] == walk.trace.x.shape[-1]
    assert len(walk.warnings) == 2
    with pytest.raises(InputError, match="d_R must be even") as raised:
        MLA_PAGE.walkthrough(Settings().set(**{"mla.rope_dim": 3}))
    assert raised.value.field == "mla.rope_dim"
    fixed, messages = validate_settings(Settings().set(**{"mla.num_heads": 99, "mla.rope_dim": 0, "mla.head_dim": "x"}))
    assert (fixed.mla.num_heads, fixed.mla.rope_dim, fixed.mla.head_dim) == (8, 2, 4)
    assert len(messages) == 3
    assert MLA_PAGE.walkthrough(Settings().set(**{"mla.head": 7, "mla.num_heads": 2})).head == 1


def test_bad_input_on_the_page_shows_a_message_and_keeps_running():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/mla.py").run()
    assert not at.exception and not at.error, errors(at)
    at.number_input(key="setting_mla.rope_dim").set_value(3).run()
    assert not at.exception
    assert any("d_R must be even" in e.value for e in at.error), errors(at)
    assert at.session_state["settings"].mla.rope_dim == 3  # kept as typed
    at.number_input(key="setting_mla.rope_dim").set_value(4).run()
    at.number_input(key="setting_mla.kv_latent").set_value(9).run()
    assert not at.exception and not at.error, errors(at)
    assert any("wider than d_model" in w for w in shown_warnings(at)), shown_warnings(at)
    assert at.session_state["settings"].mla.kv_latent == 9


@pytest.mark.parametrize("language", ["en", "zh"])
def test_every_stage_of_the_mla_page(language):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["language"] = language
    at.run()
    at.switch_page("app_pages/mla.py").run()
    assert step_through_every_stage(at, "mla", f"mla, {language}") == list(MLA_PAGE.stages)
    assert any("DeepseekV3Attention" in s for s in shown_checks(at))
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, f"shown without a translation: {sorted(missing)}"
