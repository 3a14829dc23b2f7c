"""The step-through element's data (ui/stepper.py), read under AppTest: what the browser will show is PyTorch's
numbers, coloured as the heatmaps colour them, and every entry of a stage once the element asks for it.

The element's clicks (Next, a cell, the keys) are the browser's: tests/app/test_browser_stepper.py and
frontend/stepper/stepper.test.js.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import element, element_send, element_step, open_app, settings, shows_number
from streamlit.testing.v1 import AppTest

from attention_core.self_attention.walkthrough import build_walkthrough
from ui import stepper, stepper_data

#: float32 against float64 through four matmuls and a softmax of 7 × 7 numbers under 10.
TOLERANCE = 1e-5


def shown_matrix(panel: dict) -> tuple[np.ndarray, float]:
    """The numbers a panel's cells write, as floats, and half a unit of their last decimal (what rounding allows),
    in the units of the panel's caption (10ⁿ)."""
    text = [[cell.replace("−", "-") for cell in row] for row in panel["text"]]
    decimals = max(len(cell.partition(".")[2]) for row in text for cell in row)
    return np.array([[float(cell) for cell in row] for row in text]), 0.5 * 10.0 ** -decimals


def pytorch(at) -> dict[str, torch.Tensor]:
    """The page's matrices computed by PyTorch from its X and W (float64): SDPA for the context vectors."""
    base = {k: torch.as_tensor(np.asarray(v), dtype=torch.float64) for k, v in
            build_walkthrough(settings(at)).base.items()}
    q, k, v = (base["x"] @ base[name] for name in ("w_query", "w_key", "w_value"))
    scores = q @ k.T
    d_k = q.shape[-1]
    return {"query": q, "key": k, "value": v, "scores": scores, "scaled_scores": scores / math.sqrt(d_k),
            "weights": torch.softmax(scores / math.sqrt(d_k), dim=-1),
            "output": F.scaled_dot_product_attention(q[None], k[None], v[None])[0]}


@pytest.mark.parametrize("preset", ["seed000", "journey_v1", "custom"])
def test_every_stages_matrix_is_pytorchs_as_the_cells_write_it(preset):
    at = open_app("app_pages/self_attention.py", preset)
    data, expected = element(at), pytorch(at)
    assert data["order"] == ["inputs", *expected]
    for key, want in expected.items():
        (panel,) = data["stages"][key]["panels"]
        shown, rounding = shown_matrix(panel)
        assert shown.shape == tuple(want.shape), key
        np.testing.assert_allclose(shown, want.numpy(), rtol=0, atol=rounding + TOLERANCE, err_msg=key)
        assert len(panel["rows"]) == want.shape[0] and panel["rows"][0].startswith("1 ")


def test_the_cells_are_coloured_by_the_heatmaps_scale():
    """The weights are ≥ 0: the one-sided scheme, its darkest end at the row-wise largest weight of the matrix; the
    scores are signed: the diverging scheme, centred on 0 (a score of 0 would be its middle colour)."""
    at = open_app("app_pages/self_attention.py")
    stages = element(at)["stages"]
    weights, scores = stages["weights"]["panels"][0], stages["scores"]["panels"][0]
    assert weights["domain"][0] == 0 and scores["domain"][0] == -scores["domain"][1]
    values = pytorch(at)["weights"].numpy()
    top = np.unravel_index(values.argmax(), values.shape)
    assert weights["scheme"] == "blues" and scores["scheme"] == "redblue"  # the classic palette, as the heatmaps
    assert weights["fill"][top[0]][top[1]] == "#" + stepper_data.SCHEMES["blues"][-6:]  # its darkest blue
    zero = stepper_data.colours(np.array([0.0]), "redblue", True, *scores["domain"])[0]
    assert zero == "#" + stepper_data.SCHEMES["redblue"][30:36]  # the middle of the 11 stops: white-ish
    assert all(c.startswith("#") and len(c) == 7 for row in scores["fill"] for c in row)


def test_colours_interpolate_vegas_scheme_between_its_stops():
    blues = stepper_data.SCHEMES["blues"]
    first, last = f"#{blues[:6]}", f"#{blues[-6:]}"
    got = stepper_data.colours(np.array([0.0, 1.0, 2.0, -np.inf]), "blues", False, 0.0, 1.0)
    assert list(got) == [first, last, last, stepper_data.BLOCKED]  # clamped above, −∞ grey
    assert list(stepper_data.colours(np.array([0.0]), "blues", True, 0.0, 1.0)) == [last]  # reversed


def test_a_stage_opens_with_its_one_entry_and_sends_all_of_them_once_asked():
    """The opening stage carries the explained entry alone (a setting changed answers at once); once the element
    asked for the stage (its "need", after the paint), every entry of its matrix is there, each with its numbers."""
    at = open_app("app_pages/self_attention.py")
    stage = element(at)["stages"]["scores"]
    assert stage["partial"] and list(stage["entries"]) == ["0,0,0"]
    at.session_state[stepper._LOADED] = {"self_attention": {"scores": {2}}}  # what _need records for the element
    at.run()
    entries = element(at)["stages"]["scores"]["entries"]
    assert sorted(entries) == sorted(f"{i},{j},0" for i in range(7) for j in range(7))
    scores = pytorch(at)["scores"]
    for (i, j) in ((0, 0), (2, 1), (6, 6)):
        entry = entries[f"{i},{j},0"]
        assert entry.startswith(f"{{s}}_{{{i + 1},{j + 1}}}"), entry
        assert shows_number(entry.rpartition("=")[2], float(scores[i, j])), (i, j, entry)  # its sum, PyTorch's


def test_a_large_stage_is_sent_a_row_at_a_time():
    """12 tokens and d_k 16: the query stage has 192 entries (seconds of sympy), so the element is sent the rows it
    asked for, plus the entry shown; a stage of the default example (49 entries at most) is sent whole."""
    at = open_app("app_pages/self_attention.py")
    assert not any(stage["by_row"] for stage in element(at)["stages"].values())
    at.text_input(key="setting_sentence").set_value("the quick brown fox jumps over the lazy dog and then sleeps").run()
    at.number_input(key="setting_d_k").set_value(16).run()
    element_step(at, **{"self_attention.stage": "query", "entry_row": 0, "entry_col": 5})
    assert element(at)["stages"]["query"]["by_row"] and element(at)["stages"]["scores"]["by_row"]
    at.session_state[stepper._LOADED] = {"self_attention": {"query": {3, 11}}}
    at.run()
    query = element(at)["stages"]["query"]
    assert query["partial"] and query["rows_loaded"] == [3, 11]
    assert sorted(query["entries"]) == sorted([f"{r},{c},0" for r in (3, 11) for c in range(16)] + ["0,5,0"])
    assert query["entries"]["11,15,0"].startswith("{q}_{12,16}"), query["entries"]["11,15,0"]


def test_a_link_or_the_teacher_moves_the_element_and_a_setting_keeps_the_learners_place():
    """The position the server sends carries a token: it changes when the server moves the position on purpose (a
    link, the teacher, a reset), so the element takes it; a setting changed keeps the token (the element keeps the
    step and cell the learner clicked to)."""
    at = open_app("app_pages/self_attention.py")
    token = element(at)["token"]
    element_step(at, **{"self_attention.stage": "weights", "entry_row": 2, "entry_col": 4})
    moved = element(at)
    assert moved["token"] != token
    assert moved["position"] == {"stage": "weights", "row": 2, "col": 4, "head": 0}
    at.number_input(key="setting_d_k").set_value(2).run()
    assert element(at)["token"] == moved["token"]


def _report_script():
    import streamlit as st

    from ui import state

    if st.session_state.get("report"):  # the element's report of where it is (its "need" after the new numbers)
        state.update(own_position=True, **{"self_attention.stage": "weights", "entry_row": 1})
    elif st.session_state.get("typed"):  # the learner's own sentence on the default example
        state.update(sentence="attention is all you need")
    for message in state.messages():
        st.warning(message)
    st.markdown(f"stage {state.settings().get('self_attention.stage')}")


def test_the_elements_report_of_where_it_is_keeps_the_message_a_setting_gave():
    """The element asks for entries right after a setting changed (new numbers): that report must not wipe the
    setting's message ("your sentence now runs as Your own sentence"), seen gone once in Chromium."""
    at = AppTest.from_function(_report_script, default_timeout=60)
    at.session_state["typed"] = True
    at.run()
    said = [w.value for w in at.warning]
    assert any("Your own sentence" in text for text in said), said
    at.session_state["report"] = True
    at.run()
    assert [w.value for w in at.warning] == said
    assert at.markdown[-1].value == "stage weights"


def _mask_script():
    import streamlit as st

    from attention_core.lessons.causal.page import CAUSAL_PAGE
    from ui import state, stepper

    walk = CAUSAL_PAGE.walkthrough(state.settings(), state.edits())
    st.session_state.setdefault(stepper._WALK, {})["causal"] = walk
    sent = st.session_state.get("sent")
    if sent is not None:  # what the element's trigger brings (a click on a mask cell, or on "Reset the mask")
        st.session_state["stepper_causal"] = {sent[0]: sent[1]}
        (stepper._flip if sent[0] == "flip" else stepper._reset_mask)(CAUSAL_PAGE)
        st.session_state["sent"] = None
    st.markdown(f"mask {sorted(state.edits().get('mask', {}).items())} entry {state.settings().entry_row},"
                f"{state.settings().entry_col} token {state.position_token()}")


def test_a_click_on_a_mask_cell_flips_it_and_reset_forgets_it_and_a_forged_cell_changes_nothing():
    """The causal page's mask stage in the element: a click on a cell is an edit the server makes (the cell
    flipped, explained; the learner's position kept: no new token); "Reset the mask" forgets the flips; a cell
    outside the mask or a stage that is no mask changes nothing."""
    at = AppTest.from_function(_mask_script, default_timeout=60).run()
    assert at.markdown[-1].value == "mask [] entry 0,0 token 0"
    at.session_state["sent"] = ("flip", {"stage": "mask", "row": 0, "col": 1, "head": 0})
    at.run()
    assert at.markdown[-1].value == "mask [((0, 1), 1.0)] entry 0,1 token 0"  # −∞ -> allowed, explained
    for forged in ({"stage": "mask", "row": 0, "col": 99, "head": 0}, {"stage": "weights", "row": 1, "col": 0},
                   {"stage": "mask", "row": "0", "col": True}, {"stage": "nope", "row": 0, "col": 0}):
        at.session_state["sent"] = ("flip", forged)
        at.run()
        assert at.markdown[-1].value.startswith("mask [((0, 1), 1.0)]"), forged
    at.session_state["sent"] = ("reset_mask", {"stage": "mask", "row": 0, "col": 1, "head": 0})
    at.run()
    assert at.markdown[-1].value.startswith("mask []")


@pytest.mark.parametrize("key", ["backward", "backward_multi_head"])
def test_the_softmax_jacobian_is_sent_for_every_row_and_head_as_autograd_computes_it(key):
    """The backward pages' dS step draws the softmax's Jacobian of the explained row; the element moves the entry
    itself, so it is sent for every (head, row): each ∂softmax(s_i)/∂s_i as torch.autograd computes it from the
    page's scores (masked keys: rows and columns of 0), as the cells write it in their caption's units."""
    from attention_core import registry

    at = open_app(f"app_pages/{key}.py")
    trace = registry.BY_KEY[key].walkthrough(settings(at)).trace
    scores = trace.scores if trace.scores.dim() == 3 else trace.scores[None]
    (panel,) = [p for p in element(at)["stages"]["d_scores"]["panels"] if p.get("by_entry")]
    assert [len(rows) for rows in panel["by_entry"]] == [scores.shape[1]] * scores.shape[0]
    for head, rows in enumerate(panel["by_entry"]):
        for row, shown_panel in enumerate(rows):
            want = torch.autograd.functional.jacobian(lambda s: torch.softmax(s, -1), scores[head, row].double())
            caption = shown_panel["caption_html"]
            assert f"row {row + 1}" in caption and (scores.shape[0] == 1 or f"head {head + 1}" in caption), caption
            exponent = re.search(r"10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", caption)
            scale = 10.0 ** int(exponent.group(1).translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789"))) \
                if exponent else 1.0
            shown, rounding = shown_matrix(shown_panel)
            np.testing.assert_allclose(shown * scale, want.numpy(), rtol=0, atol=(rounding + TOLERANCE) * scale,
                                       err_msg=(head, row))


@pytest.mark.parametrize("key", ["backward", "backward_multi_head"])
def test_each_stage_carries_its_own_checks(key):
    """The backward pages check each gradient at its own step (against torch.autograd's): every stage the element
    shows, whichever it was drawn at, says its own check, as the walk-through computed it (a section built at dP once
    said dO's check)."""
    from attention_core import registry

    page = registry.BY_KEY[key]
    at = open_app(f"app_pages/{key}.py")
    walk = page.walkthrough(settings(at))
    data = element(at)
    against = set()
    for stage in data["order"]:
        want = page.step_through(walk, stage).checks
        lines = [line for line in data["stages"][stage]["checks_html"]]
        assert [line["ok"] for line in lines] == [check.matches for check in want], stage
        for line, check in zip(lines, want):
            assert check.reference in line["html"] and f"{check.max_abs_diff:.2e}" in line["html"], (stage, line)
        against.add(tuple(check.reference for check in want))
    assert len(against) > 1, "the gradients' checks differ by step"


def test_a_model_pages_matrices_come_a_block_at_a_time_with_the_models_numbers():
    """*Inside a trained model*: the head's weights (13 × 13, sent whole) are the model's own attention
    probabilities (transformers' BertModel, output_attentions=True) as the cells write them; the layer input
    (13 × 384) comes 12 columns at a time, the block around the entry, its cells at their place in the whole and the
    entries of the asked row in that block alone; the pickers get every label."""
    from attention_core.lessons.trained_model.page import MODEL_SENTENCE, head_stage_matrix
    from ui.page_parts import trained_model_data

    at = open_app("app_pages/trained_model.py")
    step = trained_model_data.head(MODEL_SENTENCE, 0, 0, 0)  # the page's head, shared with it
    data = element(at)  # each function's source sent once: every stage shows the same two
    assert [name.split("(")[0] for name in (code.split("def ")[1] for code in data["codes"])] == ["head_weights",
                                                                                                  "head_step"]
    assert all(stage["code"] == [0, 1] for stage in data["stages"].values())
    (panel,) = element(at)["stages"]["weights"]["panels"]
    shown, rounding = shown_matrix(panel)
    assert (panel["offset"], panel["shape"]) == ([0, 0], [13, 13])
    np.testing.assert_allclose(shown, step.model_weights.numpy(), rtol=0, atol=rounding + TOLERANCE)

    at = element_send(at, "need", {"stage": "inputs", "row": 3, "col": 14, "head": 0, "stages": ["inputs"]})
    stage = element(at)["stages"]["inputs"]
    (panel,) = stage["panels"]
    assert (panel["offset"], panel["shape"], panel["cols"][0], panel["cols"][-1]) == ([0, 12], [13, 384], "d13", "d24")
    assert len(panel["all_cols"]) == 384 and len(panel["all_rows"]) == 13
    assert "Showing rows 1–13 and columns 13–24" in panel["caption_html"] and "units of" not in panel["caption_html"]
    shown, rounding = shown_matrix(panel)
    whole = np.asarray(head_stage_matrix(step, "inputs"), dtype=float)
    np.testing.assert_allclose(shown, whole[:, 12:24], rtol=0, atol=rounding + TOLERANCE)
    assert stage["rows_loaded"] == [3] and sorted(stage["entries"]) == sorted(f"3,{c},0" for c in range(12, 24))
    entry = stage["entries"]["3,14,0"]
    value = entry.rpartition("=")[2].replace(r"\end{aligned}", "")
    assert "{x}_{4,15}" in entry and shows_number(value, whole[3, 14]), entry
