r"""From settings to every number of the *Linear attention and the delta rule* page, in the one step-through protocol.

:func:`build_linear_attention_walkthrough` projects the sentence's X to Q, K, V (the self-attention page's seeded
weights, d_k wide, so d_v = d_k), runs causal linear attention in its parallel and its recurrent form, the delta rule
(α = 1) and the gated delta rule (the page's β and α for every token), and checks them: the two forms against each
other and against a Python loop, the delta rules against a Python loop and against transformers' Qwen3-Next kernels
``torch_recurrent_gated_delta_rule`` and ``torch_chunk_gated_delta_rule`` (imported on the first build, ~3 s once per
server); :func:`linear_attention_step_through` puts one stage, at the chosen step t, in a
:class:`~attention_core.stepthrough.StepThrough`.

Shape legend: T tokens, D = d_model, d = d_k = d_v; states (d, d). Float32. Every check: rtol = atol = 1e-5 (measured
differences are ~1e-7; transformers' chunked kernel solves a triangular system, ~2e-7).

Sources: Katharopoulos et al. 2020 ("Transformers are RNNs"), Yang et al. 2024 (DeltaNet), Yang, Kautz & Hatamizadeh
2025 (Gated DeltaNet); transformers' ``models/qwen3_next/modeling_qwen3_next.py`` for the kernels' conventions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch

from attention_core import practice
from attention_core.entry_formulas import two_steps
from attention_core.errors import N_, Message
from attention_core.fields import FloatRange, IntRange, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.text import MAX_TOKENS
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import Translate, aligned, factor, number, terms_lines
from attention_core.lessons.linear_attention.formulas import linear_formula
from attention_core.lessons.linear_attention.recipe import linear_attention_recipe
from attention_core.lessons.linear_attention.walk import LinearWalkthrough
from attention_core.masks import causal_mask
from attention_core.modern.linear_attention import (
    MODEL_CONTEXTS,
    MODEL_HEAD_DIM,
    DeltaTrace,
    check_gates,
    feature_map,
    gated_delta_rule,
    l2_normalise,
    linear_attention,
    loop_gated_delta_rule,
    loop_linear_attention,
    memory_numbers,
    recurrent_linear_attention,
    transformers_gated_delta_rule,
)
from attention_core.page import Page
from attention_core.self_attention.functional import scaled_dot_product_attention
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import (
    FLOAT_LOOP,
    OTHER_ROUTE,
    TRANSFORMERS,
    Panel,
    Stage,
    StepThrough,
    compare,
    explained_value,
)

#: Linear attention and the delta rule: the decay α of the gated delta rule is in [MIN_DECAY, 1]. α = 0 would erase
#: the state at every step and make g = log α = −∞ (transformers' chunked kernel then computes −∞ − (−∞) = NaN);
#: 0.01 forgets 99 % per step, about as fast as anyone would want to watch. β (how much of the error is written) is in [0, 1].
MIN_DECAY = 0.01

#: The tolerance of every check on this page (float32; the measured differences are ~1e-7).
TOLERANCE = 1e-5


def build_linear_attention_walkthrough(settings: SharedSettings, linear: LinearAttentionSettings,
                                       edits: Edits | None = None) -> LinearWalkthrough:
    """Linear attention and the (gated) delta rule on the settings' sentence, checked against a loop and transformers.

    Args:
        settings: validated shared settings: sentence, d_model, d_k, seed.
        linear: the page's own settings (``settings.linear_attention``): beta β, alpha α, the step t shown.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell; a query so negative that φ(q) underflows (field ``x``); β or α out of
            range (only when the settings were not validated).
    """
    check_gates(linear.beta, linear.alpha)
    inputs = build_inputs(settings, edits or {})
    x = inputs.x
    w = inputs.projections  # the self-attention page's W_q, W_k, W_v (D, d_k), with the learner's edits
    query, key, value = x @ w["w_query"], x @ w["w_key"], x @ w["w_value"]  # (T, d) each
    t, d = query.shape
    parallel = linear_attention(query, key, value)
    recurrent = recurrent_linear_attention(query, key, value)
    softmax = scaled_dot_product_attention(query, key, value, attn_mask=causal_mask(t)).weights
    beta, alpha = torch.full((t,), float(linear.beta)), torch.full((t,), float(linear.alpha))
    delta = gated_delta_rule(query, key, value, beta, torch.ones(t))
    gated = gated_delta_rule(query, key, value, beta, alpha)

    q, k, v = query.tolist(), key.tolist(), value.tolist()
    loop_out, loop_state = loop_gated_delta_rule(q, k, v, beta.tolist(), alpha.tolist())
    ours = torch.cat([gated.output, gated.states[-1]])  # (T + d, d): the outputs o_1..o_T, then S_T
    ungated = torch.cat([delta.output, delta.states[-1]])
    recurrent_hf = torch.cat(transformers_gated_delta_rule(query, key, value, beta, alpha, chunked=False))
    chunk_hf = torch.cat(transformers_gated_delta_rule(query, key, value, beta, alpha, chunked=True))
    delta_hf = torch.cat(transformers_gated_delta_rule(query, key, value, beta, torch.ones(t), chunked=False))
    both = Message(N_("the outputs o_1 … o_T and the last state S_T"))
    checks = (
        compare(recurrent.output, parallel.output, "linear_attention(q, k, v).output  # the parallel form",
                note=Message(N_("the recurrent form's outputs S_tᵀ φ(q_t) / z_tᵀ φ(q_t)")), tolerance=TOLERANCE,
                against=OTHER_ROUTE),
        compare(parallel.output, torch.tensor(loop_linear_attention(q, k, v)),
                "loop_linear_attention(q, k, v)  # Python floats and math.exp, entry by entry",
                note=Message(N_("the parallel form's outputs")), tolerance=TOLERANCE, against=FLOAT_LOOP),
        compare(ours, recurrent_hf, "transformers…qwen3_next.torch_recurrent_gated_delta_rule(q, k, v, g=log α, β, "
                "use_qk_l2norm_in_kernel=True)", note=both, tolerance=TOLERANCE, against=TRANSFORMERS),
        compare(ours, chunk_hf, "transformers…qwen3_next.torch_chunk_gated_delta_rule(q, k, v, g=log α, β, "
                "use_qk_l2norm_in_kernel=True)  # chunk_size=64", note=both, tolerance=TOLERANCE,
                against=TRANSFORMERS),
        compare(ours, torch.cat([torch.tensor(loop_out), torch.tensor(loop_state)]),
                "loop_gated_delta_rule(q, k, v, β, α)  # Python floats, entry by entry", note=both,
                tolerance=TOLERANCE, against=FLOAT_LOOP),
        compare(ungated, delta_hf, "torch_recurrent_gated_delta_rule(q, k, v, g=0, β, use_qk_l2norm_in_kernel=True)",
                note=Message(N_("the delta rule (α = 1): the outputs and the last state")), tolerance=TOLERANCE,
                against=TRANSFORMERS),
    )
    return LinearWalkthrough(
        settings=settings, inputs=inputs, tokens=inputs.tokens, query=query, key=key, value=value, parallel=parallel,
        recurrent=recurrent, softmax=softmax, delta=delta, gated=gated,
        memory=memory_numbers(range(1, t + 1), d, d),
        memory_at_scale=memory_numbers(MODEL_CONTEXTS, MODEL_HEAD_DIM, MODEL_HEAD_DIM),
        step=min(linear.step, t - 1), checks=checks)


# ---------------------------------------------------------------- panels

_QUERY, _KEY, _TOKEN = Message(N_("query token")), Message(N_("key token")), Message(N_("token"))
_KEY_DIM, _VALUE_DIM = Message(N_("component of the key")), Message(N_("component of the value"))
_MEMORY_COLUMNS = (Message(N_("KV cache")), Message(N_("S and z")), Message(N_("S (delta rule)")))


def _rule(walk: LinearWalkthrough, stage: str) -> DeltaTrace:
    return walk.gated if stage == "gated" else walk.delta


def linear_panels(walk: LinearWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage`` at the shown step; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    rows = tuple(token_labels(walk.tokens))
    d = walk.query.shape[-1]
    dims, keys, values = tuple(dim_labels("d", d)), tuple(dim_labels("k", d)), tuple(dim_labels("v", d))
    t = walk.step
    step = f"t = {t + 1}"
    if stage == "features":
        return (Panel("φ(Q) = elu(Q) + 1", walk.parallel.phi_query, rows, dims, _TOKEN, Message(N_("column"))),
                Panel("φ(K) = elu(K) + 1", walk.parallel.phi_key, rows, dims, _TOKEN, Message(N_("column")),
                      explained=False))
    if stage == "parallel":
        return (Panel(Message(N_("Linear attention's weights φ(q_i)·φ(k_j) / Σ_l φ(q_i)·φ(k_l)")), walk.parallel.weights,
                      rows, rows, _QUERY, _KEY),
                Panel(Message(N_("Softmax attention's weights on the same Q, K (causal)")), walk.softmax, rows, rows,
                      _QUERY, _KEY, explained=False),
                Panel("O = A V", walk.parallel.output, rows, values, _QUERY, _VALUE_DIM, explained=False))
    if stage == "recurrent":
        r = walk.recurrent
        return (Panel(f"S ({step})", r.states[t], keys, values, _KEY_DIM, _VALUE_DIM),
                Panel(f"z ({step})", r.sums[t][:, None], keys, ("z",), _KEY_DIM, "", explained=False),
                Panel(Message(N_("Outputs of the recurrent form, every t")), r.output, rows, values, _TOKEN, _VALUE_DIM,
                      explained=False),
                Panel(Message(N_("Recurrent − parallel (float32 rounding)")), r.output - walk.parallel.output, rows,
                      values, _TOKEN, _VALUE_DIM, explained=False))
    if stage == "memory":
        contexts = tuple(f"t = {n:,}" for n in (*range(1, len(walk.tokens) + 1),))
        at_scale = tuple(f"t = {n:,}" for n in MODEL_CONTEXTS)
        return (Panel(Message(N_("Numbers kept after t tokens (d_k = d_v = {d})"), d=d), walk.memory, contexts,
                      _MEMORY_COLUMNS, Message(N_("tokens so far")), ""),
                Panel(Message(N_("One head of d_k = d_v = {d}, as in Qwen3-Next"), d=MODEL_HEAD_DIM),
                      walk.memory_at_scale, at_scale, _MEMORY_COLUMNS, Message(N_("tokens so far")), "",
                      explained=False))
    if stage in ("delta", "gated"):
        rule = _rule(walk, stage)
        table = torch.stack([rule.value[t], rule.predictions[t], rule.errors[t]])  # (3, d_v)
        prediction = "(α S)ᵀ k̂" if stage == "gated" else "Sᵀ k̂"
        before = (Panel(f"S (t − 1 = {t})", rule.previous[t], keys, values, _KEY_DIM, _VALUE_DIM, explained=False),)
        if stage == "gated":
            before += (Panel(f"α S (t − 1 = {t}), α = {walk.alpha:g}", rule.decayed[t], keys, values, _KEY_DIM,
                             _VALUE_DIM, explained=False),)
        after = (Panel(f"k̂ = k / ‖k‖ ({step})", rule.key[t][None, :], (f"k̂ {t + 1}",), keys, "", _KEY_DIM,
                       explained=False),
                 Panel(Message(N_("The value, the state's prediction and the error ({step})"), step=step), table,
                       ("v", prediction, "v − " + prediction), values, "", _VALUE_DIM, explained=False),
                 Panel(f"S ({step})", rule.states[t], keys, values, _KEY_DIM, _VALUE_DIM))
        if stage == "gated":
            after += (Panel(Message(N_("Outputs o = Sᵀ q̂, every t (what transformers' kernels return)")),
                            rule.output, rows, values, _TOKEN, _VALUE_DIM, explained=False),)
        return before + after
    raise KeyError(stage)


# ---------------------------------------------------------------- one entry, with its numbers in

def explain_linear(walk: LinearWalkthrough, stage: str, row: int, col: int, tr: Translate = Message) -> str:
    """One entry (row, col) of ``stage``'s explained panel, numbers in, as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(linear_panels(walk, stage), row, col)
    t = walk.step
    if stage == "features":
        q = float(walk.query[row, col])
        lhs = f"\\phi(q_{{{row + 1},{col + 1}}})"
        if q > 0:
            return f"{lhs} = q_{{{row + 1},{col + 1}}} + 1 = {number(q)} + 1 = {number(value)}"
        return f"{lhs} = e^{{q_{{{row + 1},{col + 1}}}}} = e^{{{number(q)}}} = {number(value)} \\quad (q \\le 0)"
    if stage == "parallel":
        i, j = row + 1, col + 1
        if col > row:
            return f"A_{{{i},{j}}} = 0 \\quad ({j} > {i})"
        kernel = walk.parallel.kernel[row, : row + 1]
        terms = [number(float(x)) for x in kernel]
        return two_steps(f"\\textstyle\\sum_{{l \\le {i}}} \\phi(q_{{{i}}})^{{\\top}} \\phi(k_l)", terms,
                         float(walk.parallel.normaliser[row]), f"A_{{{i},{j}}}",
                         f"\\frac{{\\phi(q_{{{i}}})^{{\\top}} \\phi(k_{{{j}}})}}{{\\sum_l \\phi(q_{{{i}}})^{{\\top}} "
                         f"\\phi(k_l)}}", terms[col], float(kernel[col]), value)
    if stage == "recurrent":
        a, b = row + 1, col + 1
        before = float(walk.recurrent.states[t - 1, row, col]) if t > 0 else 0.0
        phi_k, v = float(walk.parallel.phi_key[t, row]), float(walk.value[t, col])
        return aligned(f"S^{{({t + 1})}}_{{{a},{b}}}", [
            f"S^{{({t})}}_{{{a},{b}}} + \\phi(k_{{{t + 1},{a}}})\\, v_{{{t + 1},{b}}}",
            f"{number(before)} + {factor(phi_k)} \\cdot {factor(v)}", number(value)])
    if stage == "memory":
        d = walk.query.shape[-1]
        n = row + 1
        if col == 0:
            return f"N_{{\\mathrm{{KV}}}}({n}) = t\\,(d_k + d_v) = {n} \\cdot ({d} + {d}) = {int(value)}"
        if col == 1:
            return f"N_{{S,z}} = d_k d_v + d_k = {d} \\cdot {d} + {d} = {int(value)} \\quad (t = {n})"
        return f"N_{{S}} = d_k d_v = {d} \\cdot {d} = {int(value)} \\quad (t = {n})"
    if stage in ("delta", "gated"):
        rule = _rule(walk, stage)
        a, b = row + 1, col + 1
        gated = stage == "gated"
        old = rule.previous[t, :, col]  # (d,): column b of S_{t−1}
        k_hat = rule.key[t]
        alpha = f"{number(walk.alpha)} \\cdot " if gated else ""
        decay = "\\alpha_t " if gated else ""
        terms = [f"{factor(float(s))} \\cdot {factor(float(k))}" for s, k in zip(old, k_hat)]
        prediction, error = float(rule.predictions[t, col]), float(rule.errors[t, col])
        s_before = float(rule.decayed[t, row, col])
        return ("\\begin{aligned} "
                f"\\hat{{p}}_{{{b}}} &= {decay}\\textstyle\\sum_c S^{{({t})}}_{{c,{b}}}\\, \\hat{{k}}_{{{t + 1},c}} = "
                f"{alpha}\\left({terms_lines(terms)}\\right) = {number(prediction)} \\\\ "
                f"e_{{{b}}} &= v_{{{t + 1},{b}}} - \\hat{{p}}_{{{b}}} = {number(float(rule.value[t, col]))} - "
                f"{factor(prediction)} = {number(error)} \\\\ "
                f"S^{{({t + 1})}}_{{{a},{b}}} &= {decay}S^{{({t})}}_{{{a},{b}}} + \\beta_t\\, \\hat{{k}}_{{{t + 1},{a}}}"
                f"\\, e_{{{b}}} = {number(s_before)} + {number(walk.beta)} \\cdot {factor(float(k_hat[row]))} \\cdot "
                f"{factor(error)} = {number(value)} \\end{{aligned}}")
    raise KeyError(stage)


# ---------------------------------------------------------------- practice


def _mistake(key: str, value: float, template: str, **params: object) -> practice.Mistake:
    return practice.Mistake(key, value, Message(template, value=f"{value:.4g}", **params))


def linear_exercise(walk: LinearWalkthrough, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` as an exercise (practice mode); None for the memory table (read off) and for the
    weights above the diagonal (0 by the mask).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(linear_panels(walk, stage), row, col)
    t = walk.step
    if stage == "features":
        q = float(walk.query[row, col])
        other = math.exp(q) if q > 0 else q + 1.0
        mistakes = [_mistake("phi_no_plus_one", value - 1.0, N_("That is {value} = elu(q): φ adds 1, so that every "
                                                                "feature is positive.")),
                    _mistake("phi_wrong_branch", other, N_("That is {value}, the other branch of φ: x + 1 is for "
                                                           "x > 0, e^x for x ≤ 0."))]
        return practice.Exercise(f"\\phi(q_{{{row + 1},{col + 1}}})", "\\mathrm{elu}(q) + 1",
                                 (f"q_{{{row + 1},{col + 1}}} = {number(q)}",), value, practice._kept(value, mistakes))
    if stage == "parallel":
        if col > row:
            return None
        i, j = row + 1, col + 1
        every = (walk.parallel.phi_query[row] @ walk.parallel.phi_key.T)  # (T,): every key, the future too
        mistakes = [_mistake("linear_not_normalised", float(every[col]),
                             N_("That is {value} = φ(q_i)·φ(k_j) itself: divide it by the row's sum over l ≤ i, so "
                                "that the weights sum to 1.")),
                    _mistake("linear_future_keys", float(every[col] / every.sum()),
                             N_("That is {value}: the sum ran over every key, the future ones too. Causal attention "
                                "sums over l ≤ i only."))]
        return practice.Exercise(
            f"A_{{{i},{j}}}", f"\\frac{{\\phi(q_{{{i}}}) \\cdot \\phi(k_{{{j}}})}}{{\\sum_{{l \\leq {i}}} "
            f"\\phi(q_{{{i}}}) \\cdot \\phi(k_l)}}",
            (practice.vector(f"\\phi(q_{{{i}}}) \\cdot \\phi(k_l),\\ l = 1..{len(walk.tokens)}", every.tolist()),),
            value, practice._kept(value, mistakes))
    if stage == "recurrent":
        a, b = row + 1, col + 1
        before = float(walk.recurrent.states[t - 1, row, col]) if t > 0 else 0.0
        k, v = float(walk.key[t, row]), float(walk.value[t, col])
        phi_k = float(walk.parallel.phi_key[t, row])
        mistakes = [_mistake("state_not_accumulated", phi_k * v,
                             N_("That is {value} = φ(k_t) v_t alone: the state keeps what it held, S_t = S_(t−1) + "
                                "φ(k_t) v_tᵀ.")),
                    _mistake("state_raw_key", before + k * v,
                             N_("That is {value}: you used k_t itself. The state stores φ(k_t) = elu(k_t) + 1."))]
        return practice.Exercise(
            f"S^{{({t + 1})}}_{{{a},{b}}}", f"S^{{({t})}}_{{{a},{b}}} + \\phi(k_{{{t + 1},{a}}})\\, v_{{{t + 1},{b}}}",
            (f"S^{{({t})}}_{{{a},{b}}} = {number(before)}", f"k_{{{t + 1},{a}}} = {number(k)}",
             f"v_{{{t + 1},{b}}} = {number(v)}"), value, practice._kept(value, mistakes))
    if stage in ("delta", "gated"):
        rule = _rule(walk, stage)
        a, b = row + 1, col + 1
        gated = stage == "gated"
        old = rule.previous[t, :, col]  # (d,)
        k_hat, v = rule.key[t], float(rule.value[t, col])
        alpha, beta = (walk.alpha if gated else 1.0), walk.beta
        s = float(rule.previous[t, row, col])
        recalled = float(old @ k_hat)  # S_{t−1}ᵀ k̂ before any decay
        error = v - alpha * recalled
        k_a = float(k_hat[row])
        mistakes = [
            _mistake("delta_no_beta", alpha * s + k_a * error,
                     N_("That is {value}: the whole error was written. Only β = {beta} of it is: add β k̂_a e_b."),
                     beta=f"{beta:g}"),
            _mistake("delta_error_sign", alpha * s - beta * k_a * error,
                     N_("That is {value}: the error is the value minus the prediction, e = v − Sᵀk̂, not the "
                        "other way round.")),
            _mistake("delta_no_error", alpha * s + beta * k_a * v,
                     N_("That is {value}: you wrote β v_t, as plain linear attention would. The delta rule writes "
                        "only the error v_t − Sᵀk̂, what the state did not already predict.")),
        ]
        if gated:
            mistakes += [
                _mistake("decay_forgotten", s + beta * k_a * (v - recalled),
                         N_("That is {value}, the ungated delta rule: multiply the old state by α = {alpha} first."),
                         alpha=f"{alpha:g}"),
                _mistake("decay_after_prediction", alpha * s + beta * k_a * (v - recalled),
                         N_("That is {value}: the prediction used the old state before its decay. The state is "
                            "decayed first, then asked: e = v − (α S)ᵀk̂.")),
            ]
        decay = "\\alpha " if gated else ""
        inputs = (practice.vector(f"S^{{({t})}}_{{:,{b}}}", old.tolist()),
                  practice.vector(f"\\hat{{k}}_{{{t + 1}}}", k_hat.tolist()),
                  f"v_{{{t + 1},{b}}} = {number(v)}", f"\\beta = {number(beta)}") + (
                      (f"\\alpha = {number(alpha)}",) if gated else ())
        return practice.Exercise(
            f"S^{{({t + 1})}}_{{{a},{b}}}",
            f"{decay}S^{{({t})}}_{{{a},{b}}} + \\beta\\, \\hat{{k}}_{{{a}}} \\left(v_{{{b}}} - "
            f"{decay}\\sum_c S^{{({t})}}_{{c,{b}}} \\hat{{k}}_c\\right)", inputs, value,
            practice._kept(value, mistakes))
    return None


def linear_attention_step_through(walk: LinearWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` at the shown step in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in LINEAR_ATTENTION.stages:
        raise KeyError(stage)
    t = walk.step
    d = walk.query.shape[-1]
    remark, code = None, ()
    if stage == "features":
        code = (feature_map,)
    elif stage == "parallel":
        code = (feature_map, linear_attention)
        remark = Message(N_("Every row of the linear weights sums to 1 like softmax's, but φ(q)·φ(k) is gentler than "
                            "e^(q·k/√d): the largest weight of the last row is {linear:.3f} here, softmax's "
                            "{softmax:.3f}."), linear=float(walk.parallel.weights[-1].max()),
                         softmax=float(walk.softmax[-1].max()))
    elif stage == "recurrent":
        code = (recurrent_linear_attention,)
        diff = float((walk.recurrent.output - walk.parallel.output).abs().max())
        remark = Message(N_("Token {t} needs only S ({d} × {d}) and z ({d}): {n} numbers, whatever came before. "
                            "Max |recurrent − parallel| = {diff:.1e}: the same outputs."), t=t + 1, d=d, n=d * d + d,
                         diff=diff)
    elif stage == "memory":
        code = (memory_numbers,)
        last = walk.memory[-1]
        scale = walk.memory_at_scale[-1]
        remark = Message(N_("After {t} tokens softmax attention keeps {kv} numbers (the KV cache) and they grow with "
                            "every token; linear attention keeps {state}, always. For one head of d = {big} at "
                            "{context} tokens: {kv_big} against {state_big}."), t=len(walk.tokens), kv=int(last[0]),
                         state=int(last[1]), big=MODEL_HEAD_DIM, context=f"{MODEL_CONTEXTS[-1]:,}",
                         kv_big=f"{int(scale[0]):,}", state_big=f"{int(scale[1]):,}")
    else:
        code = (l2_normalise, gated_delta_rule)
        rule = _rule(walk, stage)
        remark = Message(N_("At t = {t} the state predicted {prediction} for this key; the error ‖v − prediction‖ = "
                            "{error:.3f} is what gets written, times β = {beta}."), t=t + 1,
                         prediction="[" + ", ".join(f"{float(x):.3f}" for x in rule.predictions[t]) + "]",
                         error=float(rule.errors[t].norm()), beta=f"{walk.beta:g}")
    return StepThrough(
        page=LINEAR_ATTENTION,
        stage=Stage(key=stage, panels=linear_panels(walk, stage), formula=lambda tr: linear_formula(stage, tr),
                    entry=lambda row, col, head, tr: explain_linear(walk, stage, row, col, tr),
                    exercise=lambda row, col, head: linear_exercise(walk, stage, row, col),
                    code=code, remark=remark),
        checks=walk.checks,
        check_caption=Message(N_("Every check: rtol = atol = 1e-5 in float32. The loops use Python floats; "
                                 "transformers' kernels are Qwen3-Next's PyTorch code, with g = log α.")),
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class LinearAttentionSettings:
    """The linear-attention page's own settings (``settings.linear_attention``).

    Attributes:
        beta: β, the share of the prediction error the delta rule writes, the same for every token (0..1).
        alpha: α, the gated delta rule's decay per step, the same for every token (MIN_DECAY..1; 1 = no decay).
        step: the step t the recurrent and delta stages show (0-based; the page keeps it below the number of tokens).
    """

    beta: float = 0.5
    alpha: float = 0.9
    step: int = 3


LINEAR_ATTENTION = Page(
    key="linear_attention", title=N_("Linear attention and the delta rule"), icon=":material/linear_scale:",
    section="modern",
    summary=N_("Linear attention and the delta rule: a state of fixed size instead of a growing KV cache"),
    stages={
        "features": N_("The feature map φ(x) = elu(x) + 1 on Q and K"),
        "parallel": N_("The parallel form: φ(q_i)·φ(k_j), normalised, no softmax"),
        "recurrent": N_("The recurrent form: the state S_t and z_t give the same output"),
        "memory": N_("Memory: a state of fixed size against the growing KV cache"),
        "delta": N_("The delta rule: write only the prediction error"),
        "gated": N_("The gated delta rule: decay the state by α first"),
    },
    build=build_linear_attention_walkthrough, step_through=linear_attention_step_through, default_stage="recurrent",
    default_stage_why=N_("The recurrence over a state of fixed size is what makes linear attention an RNN; the feature "
                         "map and the parallel form it equals come before."),
    recipe=linear_attention_recipe,
    settings=LinearAttentionSettings,
    fields=(
        FloatRange("beta", 0.0, 1.0, "beta",
                   malformed=N_("β must be a number between 0 and 1; got “{raw}”, using {value:g}."),
                   out_of_range=N_("β must be between 0 and 1 (the share of the prediction error written into the "
                                   "state); got {beta:g}, using {clamped:g}."),
                   clamp_infinite=True),
        FloatRange("alpha", MIN_DECAY, 1.0, "alpha",
                   malformed=N_("The decay α must be a number above 0 and at most 1; got “{raw}”, using {value:g}."),
                   out_of_range=N_("The decay α must be above 0: α = 0 would erase the state at every step (and "
                                   "g = log α = −∞); got {alpha:g}, using {clamped:g}."),
                   beyond=(1.0, N_("The decay α must be at most 1: above 1 the state would grow at every step; got "
                                   "{alpha:g}, using {clamped:g}.")),
                   clamp_infinite=True),
        IntRange("step", 0, MAX_TOKENS - 1, label(N_("The step t")), one_based=True),
    ),
)
