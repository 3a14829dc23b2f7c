"""DeepSeek sparse attention: the page's kept keys equal transformers' ``DeepseekV32Indexer``'s top-k indices (exactly),
its output and weights ``DeepseekV32Attention``'s (the indexer's key LayerNorm and MLA's latent RMSNorms replaced by the
identity, the page's weights copied in), its index scores and sparse outputs a float64 loop's and SDPA's with the sparse
mask; the top-k keeps the largest scores, ties as torch.topk breaks them; k ≥ t keeps every key and k ≥ T is dense
attention; the work counts the kept pairs; each named mistake fires on its own wrong value only; bad input gets messages.
Every comparison is float32 with rtol = atol = 1e-5 (TOL): the measured differences are ~1e-7."""

from __future__ import annotations

import math

import pytest
import torch
from conftest import APP, errors, shown_checks, shown_warnings
from streamlit.testing.v1 import AppTest
from test_practice import _check_stage

from attention_core import registry
from attention_core.errors import InputError
from attention_core.lessons.sparse_attention.page import SPARSE_ATTENTION, sparse_attention_step_through
from attention_core.masks import causal_mask
from attention_core.modern.mla import mla_weights
from attention_core.modern.sparse import (
    LONG_CONTEXT,
    indexer_loop,
    indexer_weights,
    kept_keys,
    pairs_scored,
    sparse_attention,
    sparse_loop,
    ties_at_the_cut,
    transformers_dsa,
)
from attention_core.settings import Settings, validate_settings

TOL = 1e-5


def _trace(t=6, d_model=8, h=2, d_h=4, d_r=2, d_c=4, d_cq=4, index_heads=2, index_dim=4, top_k=3, seed=0):
    x = torch.randn(t, d_model, generator=torch.Generator().manual_seed(seed + 100))
    w = mla_weights(d_model, h, d_h, d_r, d_c, d_cq, seed)
    iw = indexer_weights(d_model, d_cq, index_heads, index_dim, seed)
    return sparse_attention(x, w, iw, num_heads=h, head_dim=d_h, rope_dim=d_r, index_heads=index_heads,
                            index_dim=index_dim, top_k=top_k)


SIZES = [dict(), dict(index_heads=1, top_k=2), dict(t=12, d_model=16, h=4, d_r=4, index_heads=4, index_dim=6, top_k=5,
                                                    seed=7),
         dict(t=1, top_k=1), dict(t=9, h=1, d_h=1, index_dim=2, top_k=8, seed=3), dict(t=10, index_heads=3, top_k=1,
                                                                                     seed=11)]


@pytest.mark.parametrize("sizes", SIZES)
def test_the_page_equals_deepseek_v32_attention_its_indexer_sdpa_and_float64_loops(sizes):
    trace = _trace(**sizes)
    t = trace.dense.x.shape[0]
    chosen, output, weights = transformers_dsa(trace)
    assert torch.equal(kept_keys(chosen, t), trace.indexer.kept)  # the same keys, ties included
    torch.testing.assert_close(trace.sparse.output, output, rtol=TOL, atol=TOL)
    torch.testing.assert_close(trace.sparse.attention.weights, weights, rtol=TOL, atol=TOL)
    loop = indexer_loop(trace.indexer)
    finite = torch.isfinite(loop)
    assert torch.equal(finite, causal_mask(t)) and torch.equal(torch.isfinite(trace.indexer.scores), finite)
    torch.testing.assert_close(trace.indexer.scores.double()[finite], loop[finite], rtol=TOL, atol=TOL)
    torch.testing.assert_close(trace.sparse.attention.output.double(), sparse_loop(trace), rtol=TOL, atol=TOL)
    sdpa = torch.nn.functional.scaled_dot_product_attention(trace.sparse.query, trace.sparse.key, trace.sparse.value,
                                                            attn_mask=trace.indexer.kept)
    torch.testing.assert_close(trace.sparse.attention.output, sdpa, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("sizes", SIZES)
def test_each_query_keeps_its_k_largest_scores(sizes):
    trace = _trace(**sizes)
    ix, loop = trace.indexer, indexer_loop(trace.indexer)
    for row in range(loop.shape[0]):
        kept = ix.kept[row, :row + 1]
        assert int(kept.sum()) == min(ix.top_k, row + 1)  # k ≥ t: every key it may see
        scores = loop[row, :row + 1]
        if not kept.all():
            assert float(scores[kept].min()) >= float(scores[~kept].max()) - 1e-9, row


def test_a_tie_at_the_cut_is_broken_as_torch_topk_breaks_it_and_transformers_agrees():
    """One indexer head: ReLU cuts many scores to exactly 0, so keys tie at the cut (a case the sizes above also
    compare with the module); ties_at_the_cut names them and the module keeps the same ones."""
    for seed in range(20):
        trace = _trace(t=8, index_heads=1, top_k=2, seed=seed)
        tied = [row for row in range(8) if ties_at_the_cut(trace.indexer, row)[1]]
        if tied:
            break
    else:
        pytest.fail("no tie at the cut in 20 seeds")
    row = tied[0]
    kept_ties, dropped_ties = ties_at_the_cut(trace.indexer, row)
    scores = trace.indexer.scores[row]
    assert len({float(scores[s]) for s in kept_ties + dropped_ties}) == 1
    chosen, _, _ = transformers_dsa(trace)
    assert torch.equal(kept_keys(chosen, 8), trace.indexer.kept)
    step = sparse_attention_step_through(SPARSE_ATTENTION.walkthrough(Settings()), "topk")  # renders a tie's words
    assert step.stage.remark is not None


def test_k_at_least_t_keeps_every_key_and_k_at_least_T_is_dense_attention():
    trace = _trace(t=5, top_k=5)
    assert torch.equal(trace.indexer.kept, causal_mask(5))
    assert trace.max_difference == 0.0 and float(trace.dropped_mass.max()) == 0.0
    walk = SPARSE_ATTENTION.walkthrough(Settings().set(**{"sparse_attention.top_k": 40}))
    assert any("dense attention" in str(w) for w in walk.warnings)
    assert walk.trace.max_difference == 0.0
    lost = sparse_attention_step_through(walk, "lost")
    assert "0.0000" in str(lost.stage.remark)


def test_dropped_keys_lose_exactly_their_dense_weight_and_the_work_counts_the_kept_pairs():
    trace = _trace(t=9, top_k=3)
    t = 9
    dropped = causal_mask(t) & ~trace.indexer.kept
    manual = torch.stack([(trace.dense.attention.weights[r] * dropped).sum(-1) for r in range(trace.dense.num_heads)])
    torch.testing.assert_close(trace.dropped_mass, manual)
    assert float(trace.dropped_mass.max()) > 0.05  # something was lost on these numbers
    dense, sparse = pairs_scored(t, 3)
    assert (dense, sparse) == (float(causal_mask(t).sum()), float(trace.indexer.kept.sum())) == (45.0, 24.0)
    long_dense, long_sparse = trace.work[1].tolist()
    assert long_dense == LONG_CONTEXT * (LONG_CONTEXT + 1) / 2 and long_sparse == 2048 * 2049 / 2 + (LONG_CONTEXT - 2048) * 2048
    assert 32 < long_dense / long_sparse < 33


def test_the_page_checks_pass_on_the_mla_pages_numbers():
    walk = SPARSE_ATTENTION.walkthrough(Settings())
    assert [c.against for c in walk.checks] == ["transformers", "transformers", "transformers", "float_loop",
                                                "float_loop", "pytorch"]
    assert all(c.matches for c in walk.checks), [(c.reference, c.max_abs_diff) for c in walk.checks]
    assert walk.checks[0].max_abs_diff == 0.0 and max(c.max_abs_diff for c in walk.checks) < 1e-6
    assert walk.warnings == ()
    mla_page = registry.BY_KEY["mla"]
    own, theirs = walk.settings.sparse_attention, Settings().mla
    sizes = ("num_heads", "head_dim", "rope_dim", "kv_latent", "q_latent")
    assert [getattr(own, f) for f in sizes] == [getattr(theirs, f) for f in sizes]  # the MLA page's defaults
    assert [(f.low, f.high) for f in SPARSE_ATTENTION.fields if f.name in sizes] == [
        (f.low, f.high) for f in mla_page.fields if f.name in sizes]  # and its ranges
    mla_walk = mla_page.walkthrough(Settings())
    torch.testing.assert_close(walk.trace.dense.output, mla_walk.trace.output, rtol=0, atol=0)  # the MLA page's numbers


@pytest.mark.parametrize("changes", [{}, {"sparse_attention.top_k": 2, "sparse_attention.index_heads": 1},
                                     {"sparse_attention.top_k": 4, "sparse_attention.head": 2, "seed": 5}])
def test_each_named_mistake_fires_on_its_own_wrong_value_only(changes):
    walk = SPARSE_ATTENTION.walkthrough(Settings().set(**changes))
    seen: dict[str, int] = {}
    for stage in SPARSE_ATTENTION.stages:  # answer, rounding, each mistake named by its own value only
        _check_stage(f"sparse/{stage}", sparse_attention_step_through(walk, stage), seen)
    assert {"index_relu_forgotten", "index_weights_forgotten", "sparse_dropped_keys_counted",
            "mass_of_kept_keys"} <= set(seen)
    assert ("index_weight_scale_forgotten" in seen) == (walk.trace.indexer.index_heads > 1)


def test_the_mistakes_values_are_what_the_mistakes_compute():
    walk = SPARSE_ATTENTION.walkthrough(Settings())
    t, r = walk.trace, walk.head
    row, col = 5, 2
    ex = sparse_attention_step_through(walk, "scores").stage.exercise(row, col, 0)
    w, d = t.indexer.head_weights[row].tolist(), t.indexer.dots[:, row, col].tolist()
    assert ex.answer == pytest.approx(math.fsum(a * max(0.0, b) for a, b in zip(w, d)), abs=1e-6)
    values = {m.key: m.value for m in ex.mistakes}
    assert values.get("index_relu_forgotten", math.fsum(a * b for a, b in zip(w, d))) == pytest.approx(
        math.fsum(a * b for a, b in zip(w, d)))
    kept_col = int(torch.nonzero(t.indexer.kept[row])[0])
    weights_ex = sparse_attention_step_through(walk, "weights").stage.exercise(row, kept_col, 0)
    assert {m.key: m.value for m in weights_ex.mistakes}["sparse_dropped_keys_counted"] == pytest.approx(
        float(t.dense.attention.weights[r, row, kept_col]))
    lost = sparse_attention_step_through(walk, "lost").stage.exercise(row, r, 0)
    assert lost.answer == pytest.approx(float(t.dropped_mass[r, row]))
    assert {m.key: m.value for m in lost.mistakes}["mass_of_kept_keys"] == pytest.approx(1 - lost.answer)


def test_bad_settings_are_repaired_with_messages():
    fixed, messages = validate_settings(Settings().set(**{"sparse_attention.top_k": 0,
                                                         "sparse_attention.index_heads": 99,
                                                         "sparse_attention.index_dim": "abc"}))
    assert (fixed.sparse_attention.top_k, fixed.sparse_attention.index_heads, fixed.sparse_attention.index_dim) == (
        1, 8, 4)
    assert len(messages) == 3 and any("k must be between 1" in str(m) for m in messages)
    narrow = SPARSE_ATTENTION.walkthrough(Settings().set(**{"sparse_attention.index_dim": 1,
                                                            "sparse_attention.rope_dim": 4}))
    assert narrow.trace.indexer.index_dim == 4 and any("narrower than" in str(w) for w in narrow.warnings)
    assert narrow.settings.sparse_attention.index_dim == 1  # what was typed is kept
    with pytest.raises(InputError) as error:
        SPARSE_ATTENTION.walkthrough(Settings().set(**{"sparse_attention.rope_dim": 3}))
    assert error.value.field == "sparse_attention.rope_dim"
    with pytest.raises(InputError, match="at least two words"):  # the app's message (one token: _trace(t=1) above)
        SPARSE_ATTENTION.walkthrough(Settings.for_preset("custom", sentence="alone"))
    assert SPARSE_ATTENTION.walkthrough(Settings().set(**{"sparse_attention.head": 7,
                                                        "sparse_attention.num_heads": 2})).head == 1


def test_bad_input_on_the_page_shows_a_message_and_keeps_running():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/sparse_attention.py").run()
    assert not at.exception and not at.error, errors(at)
    assert any("DeepseekV32Indexer" in s for s in shown_checks(at))
    at.number_input(key="setting_sparse_attention.top_k").set_value(0).run()
    assert not at.exception and not at.error, errors(at)
    assert at.session_state["settings"].sparse_attention.top_k == 1
    at.number_input(key="setting_sparse_attention.top_k").set_value(30).run()
    assert not at.exception and not at.error, errors(at)
    assert any("dense attention" in w for w in shown_warnings(at)), shown_warnings(at)
    at.number_input(key="setting_sparse_attention.index_dim").set_value(1).run()
    assert not at.exception and not at.error, errors(at)
    assert any("narrower than" in w for w in shown_warnings(at)), shown_warnings(at)
    assert at.session_state["settings"].sparse_attention.index_dim == 1
