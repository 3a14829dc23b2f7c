"""The multi-head backward-pass page: every stage's numbers against torch.autograd and torch.nn.MultiheadAttention's
own gradients on the worked examples (causal on and off, both targets, one to four heads), each head's panels its
slice of the whole, the finite difference of W_q, W_k, W_v and W_O, one step that lowers the loss, the mistakes it
names, and bad input."""

from __future__ import annotations

import math

import pytest
import torch

from attention_core.backward.walkthrough import EPSILON
from attention_core.errors import InputError
from attention_core.inputs.presets import PRESETS
from attention_core.lessons.backward.page import BACKWARD
from attention_core.lessons.backward_multi_head.page import BACKWARD_MULTI_HEAD, STAGE_CHECKS, TARGET_EDITS
from attention_core.settings import Settings
from attention_core.weights import module_weights


def _settings(preset: str, causal: bool, target: str, **shared) -> Settings:
    return Settings.for_preset(preset, **shared).set(**{"causal_mask": causal, "backward.target": target})


CASES = [(preset, causal, target) for preset in PRESETS for causal in (False, True) for target in ("copy", "random")]


@pytest.mark.parametrize("preset, causal, target", CASES)
def test_every_gradient_equals_autograds_on_every_worked_example(preset, causal, target):
    walk = BACKWARD_MULTI_HEAD.walkthrough(_settings(preset, causal, target))
    assert len(walk.checks) == 13
    for check in walk.checks:
        assert check.matches and check.max_abs_diff <= 1e-5, (check.reference, check.max_abs_diff)
    h = walk.trace.num_heads
    for stage in BACKWARD_MULTI_HEAD.stages:
        steps = BACKWARD_MULTI_HEAD.step_through(walk, stage)
        explained = [p for p in steps.stage.panels if p.explained]
        assert len(explained) == (h if steps.stage.per_head and stage != "step" else 1), stage
        assert steps.checks and all(c.matches for c in steps.checks), stage
    if causal:  # blocked scores get no gradient, in every head
        assert torch.all(walk.trace.d_scores[:, ~walk.trace.mask] == 0)


@pytest.mark.parametrize("d_out, num_heads", [(4, 1), (4, 2), (4, 4), (6, 3)])
@pytest.mark.parametrize("causal", [False, True])
def test_the_gradients_equal_those_of_torch_multihead_attention_with_the_pages_weights(d_out, num_heads, causal):
    settings = Settings.for_preset("custom", d_model=d_out, d_out=d_out, num_heads=num_heads).set(
        **{"causal_mask": causal, "backward.target": "random"})
    walk = BACKWARD_MULTI_HEAD.walkthrough(settings)
    t = walk.trace
    w = module_weights(settings.d_model, d_out, settings.seed, out_proj=True)
    torch.testing.assert_close(t.w_query, w["w_query"])  # the multi-head page's W (seed 001's draw)
    mha = torch.nn.MultiheadAttention(d_out, num_heads, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([t.w_query.T, t.w_key.T, t.w_value.T]))
        mha.in_proj_bias.zero_()
        mha.out_proj.weight.copy_(t.w_out.T)
        mha.out_proj.bias.copy_(t.b_out)
    x = t.x.clone().requires_grad_(True)
    mask = None if t.mask is None else ~t.mask  # torch: True = blocked
    out, _ = mha(x[None], x[None], x[None], attn_mask=mask, need_weights=False)
    (0.5 * ((out[0] - t.target) ** 2).sum()).backward()
    torch.testing.assert_close(out[0].detach(), t.output, rtol=1e-5, atol=1e-6)
    d_in = mha.in_proj_weight.grad
    for ours, theirs in ((t.d_w_query, d_in[:d_out].T), (t.d_w_key, d_in[d_out:2 * d_out].T),
                         (t.d_w_value, d_in[2 * d_out:].T), (t.d_w_out, mha.out_proj.weight.grad.T),
                         (t.d_b_out, mha.out_proj.bias.grad), (t.d_x, x.grad)):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)


def test_each_heads_panels_are_its_slice_and_its_columns_of_the_whole():
    walk = BACKWARD_MULTI_HEAD.walkthrough(Settings(d_out=6, num_heads=3))
    t = walk.trace
    for stage, name in (("d_value", "d_value_heads"), ("d_query", "d_query_heads"), ("d_key", "d_key_heads")):
        panels = [p for p in BACKWARD_MULTI_HEAD.step_through(walk, stage).stage.panels if p.head is not None]
        for r, panel in enumerate(panels):
            assert panel.head == r
            torch.testing.assert_close(panel.matrix, getattr(t, name)[r])
            whole = {"d_value_heads": t.d_value, "d_query_heads": t.d_query, "d_key_heads": t.d_key}[name]
            torch.testing.assert_close(panel.matrix, whole[:, walk.columns[r]])
    # head r's dO is its columns of dC: what it wrote into the concatenation comes back to it
    for r, cols in enumerate(walk.columns):
        torch.testing.assert_close(t.d_head_outputs[r], t.d_concat[:, cols])


def test_one_head_is_the_single_head_pass_through_W_O():
    settings = Settings(d_out=3, num_heads=1, d_k=3)
    multi = BACKWARD_MULTI_HEAD.walkthrough(settings).trace
    # with W_O the loss's gradient reaches the head as dC = dO W_O^T; the head's own pass is the single-head one
    single = BACKWARD.walkthrough(settings)
    assert multi.head_dim == single.trace.query.shape[-1] == 3
    torch.testing.assert_close(multi.d_head_outputs[0], multi.d_output @ multi.w_out.T)


def test_the_copy_target_pulls_one_row_and_a_step_lowers_the_loss():
    walk = BACKWARD_MULTI_HEAD.walkthrough(Settings())  # token 2 should copy token 1
    t, s = walk.trace, walk.step
    assert torch.count_nonzero(t.d_output.abs().sum(-1)) == 1 and float(t.d_output[1].abs().sum()) > 0
    torch.testing.assert_close(t.target[1], t.value[0] @ t.w_out + t.b_out)
    assert s.loss_after < s.loss_before
    assert s.weights_before.shape == (t.num_heads, len(walk.tokens), len(walk.tokens))
    # the stepped weights are W - η dW, all five of them
    for name in ("w_query", "w_key", "w_value", "w_out", "b_out"):
        torch.testing.assert_close(getattr(s.after, name),
                                   getattr(t, name) - s.learning_rate * getattr(t, f"d_{name}"))


@pytest.mark.parametrize("stage, which", [("d_w_query", "w_query"), ("d_w_key", "w_key"), ("d_w_value", "w_value"),
                                          ("d_w_out", "w_out")])
def test_the_finite_difference_of_the_explained_weight_moves_the_loss_by_eps_times_its_gradient(stage, which):
    walk = BACKWARD_MULTI_HEAD.walkthrough(_settings("journey_v1", True, "random", d_out=4))
    for row, col in ((0, 0), (1, 1), (2, 0)):
        fd = walk.finite_difference(which, row, col)
        assert fd.predicted_change == pytest.approx(EPSILON * walk.explained(stage, row, col), rel=1e-4)
        assert fd.actual_change == pytest.approx(fd.predicted_change, rel=1e-3, abs=1e-12)
        text = BACKWARD_MULTI_HEAD.step_through(walk, stage).stage.entry(row, col, 0, lambda s, **k: str(s).format(**k))
        assert r"\varepsilon = 0.000001" in text and "approx" in text  # ε in math: KaTeX has no ε in \text


def _mistake(walk, stage: str, key: str, head: int = 0):
    steps = BACKWARD_MULTI_HEAD.step_through(walk, stage)
    panel = next(p for p in steps.stage.panels if p.explained and p.head in (None, head))
    rows, cols = panel.matrix.shape
    for row in range(rows):
        for col in range(cols):
            found = {m.key: m.value for m in steps.stage.exercise(row, col, head).mistakes}
            if key in found:
                return row, col, found[key]
    raise AssertionError(f"{stage}: no entry offers {key}")


def test_the_mistakes_are_the_wrong_formulas_they_name():
    walk = BACKWARD_MULTI_HEAD.walkthrough(_settings("seed000", True, "random", d_out=8, num_heads=2).set(
        **{"backward.learning_rate": 1.0}))
    t, head = walk.trace, 1
    row, col, value = _mistake(walk, "d_concat", "w_out_not_transposed")
    assert value == pytest.approx(float((t.d_output @ t.w_out)[row, col]), rel=1e-5)
    row, col, value = _mistake(walk, "d_query", "scale_d_model", head)
    d_out = t.concat.shape[-1]
    assert value == pytest.approx(float((t.d_scores[head] @ t.key_heads[head])[row, col]) / math.sqrt(d_out), rel=1e-5)
    row, col, value = _mistake(walk, "d_query", "gradient_no_scale", head)
    assert value == pytest.approx(float((t.d_scores[head] @ t.key_heads[head])[row, col]), rel=1e-5)
    row, col, value = _mistake(walk, "d_key", "ds_not_transposed", head)
    assert value == pytest.approx(float((t.d_scores[head] @ t.query_heads[head])[row, col] * t.scale), rel=1e-5)
    row, col, value = _mistake(walk, "d_scores", "softmax_diagonal_only", head)
    p, dp = float(t.weights[head, row, col]), float(t.d_weights[head, row, col])
    assert value == pytest.approx(p * (1 - p) * dp)
    row, col, value = _mistake(walk, "step", "update_sign")
    assert value == pytest.approx(float(t.w_query[row, col] + walk.step.learning_rate * t.d_w_query[row, col]))


def test_every_stage_shows_the_checks_of_its_own_gradients():
    walk = BACKWARD_MULTI_HEAD.walkthrough(Settings())
    for stage, names in STAGE_CHECKS.items():
        references = [c.reference for c in BACKWARD_MULTI_HEAD.step_through(walk, stage).checks]
        assert len(references) == len(names) and all(r.startswith("torch.autograd: ") for r in references), stage
    assert [c.reference for c in BACKWARD_MULTI_HEAD.step_through(walk, "d_w_out").checks] == [
        "torch.autograd: dW_O", "torch.autograd: db_O"]


def test_heads_that_do_not_divide_d_out_get_the_multi_head_pages_message():
    with pytest.raises(InputError) as raised:
        BACKWARD_MULTI_HEAD.walkthrough(Settings(d_out=6, num_heads=4))
    assert raised.value.field == "num_heads" and "1, 2, 3, 6" in str(raised.value)


@pytest.mark.parametrize("value, words", [(None, "is empty"), (float("nan"), "is empty"), ("abc", "not a number"),
                                          (float("inf"), "values must lie between"), (1e7, "values must lie between")])
def test_a_bad_cell_of_the_target_is_named_in_the_message(value, words):
    with pytest.raises(InputError) as raised:
        BACKWARD_MULTI_HEAD.walkthrough(Settings(), {TARGET_EDITS: {(1, 0): value}})
    assert raised.value.field == TARGET_EDITS and words in str(raised.value)


def test_the_target_edits_are_this_pages_own_and_cells_outside_are_kept_not_applied():
    edits = {TARGET_EDITS: {(1, 0): 0.5, (11, 5): 3.0}}
    walk = BACKWARD_MULTI_HEAD.walkthrough(Settings(), edits)
    assert float(walk.trace.target[1, 0]) == 0.5 and all(c.matches for c in walk.checks)
    # the single-head page's target (d_k wide) is not touched by them
    assert BACKWARD.walkthrough(Settings(), edits).trace.target.equal(BACKWARD.walkthrough(Settings()).trace.target)


def test_a_links_emptied_target_cell_is_dropped_with_a_message_and_the_page_builds():
    from conftest import APP
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params[f"edit_{TARGET_EDITS}"] = "1,0,"  # an emptied cell, as a link carries it
    at.run()  # the link is read on the session's first run (AppTest opens a page with "_" in its path only after one)
    at.switch_page("app_pages/backward_multi_head.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("T row 2, column 1 was left empty" in w.value for w in at.warning), [w.value for w in at.warning]
    at.toggle(key="backward_multi_head_show_target").set_value(True).run()
    assert not at.exception
    assert len(at.dataframe) == 1
    assert at.button(key=f"reset_{TARGET_EDITS}")



def test_each_backward_walk_through_has_every_member_its_protocol_names():
    # The formulas and recipes are typed by the protocols (attention_core/backward/walk.py and the page's own walk.py), not by the walk-throughs
    # (declared above them): each walk-through must have every member, or a formula would fail on the page.
    import typing

    from attention_core.backward.walk import BackwardWalk
    from attention_core.lessons.backward_multi_head.walk import BackwardMultiHeadWalk

    settings = Settings()
    for walk, protocol in ((BACKWARD.walkthrough(settings), BackwardWalk),
                           (BACKWARD_MULTI_HEAD.walkthrough(settings), BackwardMultiHeadWalk)):
        members = set(typing.get_type_hints(protocol)) | {
            name for name in vars(protocol) if not name.startswith("_")}
        assert members >= {"tokens", "trace", "step", "jacobian_at", "explained", "head_view", "finite_difference"}
        assert [name for name in sorted(members) if not hasattr(walk, name)] == []
