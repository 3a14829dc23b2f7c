r"""From settings to every number of the *Encoder block* page, its formulas (sympy) and its step-through.

:func:`build_encoder_walkthrough` runs N encoder blocks (:mod:`attention_core.transformer.encoder`) on the
sentence's X and checks them against ``torch.nn.TransformerEncoderLayer``; :func:`encoder_step_through` puts one
stage of the chosen block in the one step-through protocol (:mod:`attention_core.stepthrough`).
:func:`encoder_formula` writes each stage's general formula with sympy; :func:`explain_encoder` one entry
with its numbers in.

Shape legend: T tokens, D = d_model, F = dim_feedforward, h = num_heads of the block's attention,
N = num_layers. Matrices are float32.

Sources: Vaswani et al. 2017, sec. 3.1 (residual connection and layer normalisation around each
sublayer, LayerNorm(x + Sublayer(x))), sec. 3.3 eq. 2 (FFN); Ba et al. 2016 (LayerNorm); Xiong et al. 2020
(pre-LN); seed 003 (``003_734755b2d0b981d3.txt``) §2.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import sympy as sp
import torch
import torch.nn.functional as F

from attention_core import practice
from attention_core.errors import N_, InputError, Message
from attention_core.fields import IntRange, Switch, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import Translate, aligned, factor, number, terms_lines
from attention_core.lessons.encoder_block.recipe import encoder_block_recipe
from attention_core.lessons.encoder_block.walk import ENCODER_POST_LN, EncoderWalkthrough
from attention_core.page import Page
from attention_core.shared_settings import MAX_DIM, SharedSettings
from attention_core.stepthrough import Check, Panel, Stage, StepThrough, compare, explained_value
from attention_core.transformer.encoder import (
    BlockWeights,
    EncoderBlockTrace,
    LayerNormTrace,
    block_weights,
    encoder_block,
    encoder_stack,
    layer_norm,
    torch_layer,
    torch_stack_output,
)

#: The feed-forward width F (d_ff) a user can choose, 1..MAX_FEEDFORWARD: the paper's d_ff = 4 · d_model at the
#: widest d_model, and a T × F heatmap still fits a projector.
MAX_FEEDFORWARD = 4 * MAX_DIM

#: The most encoder blocks stacked on the page (each one's output is shown side by side).
MAX_LAYERS = 4


def check_heads(d_model: int, num_heads: int) -> None:
    """Raise :class:`InputError` (field ``encoder_block.num_heads``) when h does not divide d_model, naming the h that do."""
    if d_model % num_heads:
        fits = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise InputError(
            N_("d_model = {d_model} cannot be split into {num_heads} equal heads: num_heads must divide d_model. "
               "With d_model = {d_model} you can use {fits} heads."),
            field="encoder_block.num_heads", d_model=d_model, num_heads=num_heads, fits=", ".join(map(str, fits)))


def build_encoder_walkthrough(settings: SharedSettings, encoder_block: EncoderBlockSettings,
                              edits: Optional[Edits] = None) -> EncoderWalkthrough:
    """N encoder blocks on the settings' sentence, every intermediate, checked against PyTorch.

    Block ℓ (0-based) draws its weights with :func:`block_weights` from seed ``settings.seed + ℓ``.

    Args:
        settings: validated shared settings: sentence, d_model, seed.
        encoder_block: the page's own settings (``settings.encoder_block``): num_heads, dim_feedforward, num_layers
            N, norm_first, the block shown.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell, or num_heads not dividing d_model.
    """
    edits = edits or {}
    inputs = build_inputs(settings, edits, edited=("x",))
    x = inputs.x  # (T, D)
    d_model = x.shape[-1]
    check_heads(d_model, encoder_block.num_heads)
    weights = tuple(block_weights(d_model, encoder_block.dim_feedforward, settings.seed + layer)
                    for layer in range(encoder_block.num_layers))
    blocks = encoder_stack(x, weights, encoder_block.num_heads, encoder_block.norm_first)
    block = min(encoder_block.block, len(blocks) - 1)
    checks = _torch_checks(x, blocks, weights, block, encoder_block)
    return EncoderWalkthrough(settings=settings, inputs=inputs, tokens=inputs.tokens, x=x, blocks=blocks, block=block,
                              checks=checks)


def _torch_checks(x: torch.Tensor, blocks: tuple[EncoderBlockTrace, ...], weights: tuple[BlockWeights, ...],
                  block: int, encoder_block: EncoderBlockSettings) -> tuple[Check, ...]:
    h, nf, f = encoder_block.num_heads, encoder_block.norm_first, encoder_block.dim_feedforward
    layer_call = (f"torch.nn.TransformerEncoderLayer({x.shape[-1]}, nhead={h}, dim_feedforward={f}, dropout=0.0, "
                  f"batch_first=True, norm_first={nf})")
    shown = blocks[block]
    with torch.no_grad():
        one = torch_layer(weights[block], h, nf)(shown.x[None])[0]
    ln = shown.norm_1
    checks = [
        compare(shown.output, one, layer_call, note=Message(N_("block {block}'s output, same weights"),
                                                             block=block + 1)),
        compare(ln.output, F.layer_norm(ln.x, ln.x.shape[-1:], ln.gamma, ln.beta, ln.eps),
                "torch.nn.functional.layer_norm(z, (d_model,), γ₁, β₁)"),
    ]
    if len(blocks) > 1:
        checks.append(compare(blocks[-1].output, torch_stack_output(x, weights, h, nf),
                              f"{len(blocks)} × {layer_call}",
                              note=Message(N_("the stack's output after all {count} blocks"), count=len(blocks))))
    return tuple(checks)


# ---------------------------------------------------------------- panels

def _labels(walk: EncoderWalkthrough, width: int, prefix: str = "d") -> tuple[tuple[str, ...], tuple[str, ...]]:
    return tuple(token_labels(walk.tokens)), tuple(dim_labels(prefix, width))


_TOKEN = Message(N_("token"))
_SUB = {1: "₁", 2: "₂"}
_DIM = Message(N_("dimension"))


def _panel(walk: EncoderWalkthrough, title: str, matrix: torch.Tensor, explained: bool = False,
           prefix: str = "d") -> Panel:
    rows, cols = _labels(walk, matrix.shape[-1], prefix)
    return Panel(title, matrix, rows, cols, row_title=_TOKEN, col_title=_DIM, explained=explained)


def _norm_panels(walk: EncoderWalkthrough, ln: LayerNormTrace, number_: int) -> tuple[Panel, ...]:
    stats = torch.stack([ln.mean, ln.var], dim=1)  # (T, 2)
    rows = tuple(token_labels(walk.tokens))
    return (
        _panel(walk, f"z ({_input_name(walk, number_)})", ln.x),
        Panel("μ_i, σ_i²", stats, rows, ("μ", "σ²"), row_title=_TOKEN, col_title="", explained=False),
        _panel(walk, "(z − μ) / √(σ² + ε)", ln.normalized),
        _panel(walk, f"LayerNorm{_SUB[number_]}(z) = γ ⊙ ẑ + β", ln.output, explained=True),
    )


def _input_name(walk: EncoderWalkthrough, number_: int) -> str:
    """What LayerNorm number ``number_`` normalises, as plain math text."""
    if walk.norm_first:
        return "X" if number_ == 1 else "H"
    return "X + MultiHead" if number_ == 1 else "H + FFN"


def encoder_panels(walk: EncoderWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage`` for the shown block; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    t = walk.trace
    pre = walk.norm_first
    if stage == "inputs":
        return (_panel(walk, "X", t.x, explained=True),)
    if stage == "norm_1":
        return _norm_panels(walk, t.norm_1, 1)
    if stage == "norm_2":
        return _norm_panels(walk, t.norm_2, 2)
    if stage == "attention":
        return (_panel(walk, "LayerNorm₁(X)" if pre else "X", t.attention_input),
                _panel(walk, "MultiHead(·) = Concat(head₁, …, head_h) W_O + b_O", t.attention.output, explained=True))
    if stage == "residual_1":
        return (_panel(walk, "X", t.x), _panel(walk, "MultiHead(·)", t.attention.output),
                _panel(walk, "X + MultiHead(·)", t.residual_1, explained=True))
    if stage == "ffn_hidden":
        return (_panel(walk, "LayerNorm₂(H)" if pre else "H", t.ffn_input),
                _panel(walk, "ReLU(· W₁ + b₁)", t.ffn_hidden, explained=True, prefix="f"))
    if stage == "ffn_output":
        return (_panel(walk, "ReLU(· W₁ + b₁)", t.ffn_hidden, prefix="f"),
                _panel(walk, "FFN(·) = ReLU(· W₁ + b₁) W₂ + b₂", t.ffn_output, explained=True))
    if stage == "residual_2":
        return (_panel(walk, "H", t.hidden), _panel(walk, "FFN(·)", t.ffn_output),
                _panel(walk, "H + FFN(·)", t.residual_2, explained=True))
    if stage == "stack":
        last = len(walk.blocks)
        return (_panel(walk, "X", walk.x),) + tuple(
            _panel(walk, f"Y⁽{_superscript(k + 1)}⁾", b.output, explained=k + 1 == last)
            for k, b in enumerate(walk.blocks))
    raise KeyError(stage)


def _superscript(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))


# ---------------------------------------------------------------- formulas (sympy)

_i, _j, _l = sp.symbols("i j l", integer=True, positive=True)
_D = sp.Symbol("D", integer=True, positive=True)
_F = sp.Symbol("F", integer=True, positive=True)
_eps = sp.Symbol(r"\varepsilon", positive=True)


@lru_cache(maxsize=None)
def encoder_formula(stage: str, norm_first: bool) -> tuple[str, ...]:
    """The general formula of ``stage`` (matrix form, then element form), as LaTeX built with sympy.

    Raises:
        KeyError: an unknown stage.
    """
    z, y, zh = sp.IndexedBase("z"), sp.IndexedBase("y"), sp.IndexedBase(r"\hat{z}")
    gamma, beta = sp.IndexedBase(r"\gamma"), sp.IndexedBase(r"\beta")
    mu, var = sp.IndexedBase(r"\mu"), sp.IndexedBase(r"\sigma^{2}")
    x, a, r, h, f = (sp.IndexedBase(s) for s in ("x", "a", "r", "h", "f"))
    w1, b1, w2, b2, hid = (sp.IndexedBase(s) for s in ("W^{(1)}", "b^{(1)}", "W^{(2)}", "b^{(2)}", "u"))
    # matrices do not commute: sympy keeps Z W in that order
    X, H, Z, U = (sp.Symbol(n, commutative=False) for n in ("X", "H", "Z", "U"))
    W1, B1, W2, B2 = (sp.Symbol(n, commutative=False) for n in ("W^{(1)}", "b^{(1)}", "W^{(2)}", "b^{(2)}"))
    mha, ffn, ln1, ln2 = (sp.Function(s) for s in (r"\operatorname{MultiHead}", r"\operatorname{FFN}",
                                                    r"\operatorname{LayerNorm}_1", r"\operatorname{LayerNorm}_2"))
    relu = sp.Function(r"\operatorname{ReLU}")
    if stage == "inputs":
        return (sp.latex(sp.Eq(sp.Symbol(r"X^{(1)}"), X, evaluate=False)),
                r"X \in \mathbb{R}^{T \times D}, \quad Y^{(\ell)} = X^{(\ell + 1)}")
    if stage in ("norm_1", "norm_2"):
        which = ln1 if stage == "norm_1" else ln2
        if norm_first:
            arg = X if stage == "norm_1" else H
        else:
            arg = X + mha(X) if stage == "norm_1" else H + ffn(H)
        return (
            sp.latex(which(sp.Symbol("z"))) + r", \quad z = " + sp.latex(arg),
            sp.latex(sp.Eq(mu[_i], sp.Sum(z[_i, _l], (_l, 1, _D)) / _D, evaluate=False)) + r", \quad "
            + sp.latex(sp.Eq(var[_i], sp.Sum((z[_i, _l] - mu[_i]) ** 2, (_l, 1, _D)) / _D, evaluate=False)),
            sp.latex(sp.Eq(zh[_i, _j], (z[_i, _j] - mu[_i]) / sp.sqrt(var[_i] + _eps), evaluate=False)) + r", \quad "
            + sp.latex(sp.Eq(y[_i, _j], gamma[_j] * zh[_i, _j] + beta[_j], evaluate=False)),
        )
    if stage == "attention":
        arg = ln1(X) if norm_first else X
        return (sp.latex(sp.Eq(sp.Symbol("A"), mha(arg, arg, arg), evaluate=False)),
                r"\operatorname{MultiHead}(Q, K, V) = \operatorname{Concat}(\mathrm{head}_1, \ldots, "
                r"\mathrm{head}_h)\, W^{O} + b^{O}")
    if stage == "residual_1":
        arg = ln1(X) if norm_first else X
        lhs = sp.Symbol("H") if norm_first else sp.Symbol("R_1")
        return (sp.latex(sp.Eq(lhs, X + mha(arg), evaluate=False)),
                sp.latex(sp.Eq(r[_i, _j], x[_i, _j] + a[_i, _j], evaluate=False)))
    if stage == "ffn_hidden":
        arg = ln2(H) if norm_first else H
        return (sp.latex(sp.Eq(U, relu(arg * W1 + B1), evaluate=False)),
                sp.latex(sp.Eq(hid[_i, _j], sp.Max(0, sp.Sum(h[_i, _l] * w1[_l, _j], (_l, 1, _D)) + b1[_j]), evaluate=False)))
    if stage == "ffn_output":
        return (sp.latex(sp.Eq(ffn(Z), U * W2 + B2, evaluate=False)),
                sp.latex(sp.Eq(f[_i, _j], sp.Sum(hid[_i, _l] * w2[_l, _j], (_l, 1, _F)) + b2[_j], evaluate=False)))
    if stage == "residual_2":
        arg = ln2(H) if norm_first else H
        lhs = sp.Symbol("Y") if norm_first else sp.Symbol("R_2")
        return (sp.latex(sp.Eq(lhs, H + ffn(arg), evaluate=False)),
                sp.latex(sp.Eq(r[_i, _j], h[_i, _j] + f[_i, _j], evaluate=False)))
    if stage == "stack":
        return (r"X^{(\ell + 1)} = \operatorname{Block}_{\ell}\!\left(X^{(\ell)}\right), \quad \ell = 1, \ldots, N",)
    raise KeyError(stage)


# ---------------------------------------------------------------- one entry, with its numbers in

def _sum_of_products(left: list[float], right: list[float]) -> list[str]:
    return [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(left, right)]


def _norm_entry(ln: LayerNormTrace, row: int, col: int) -> str:
    i, j = row + 1, col + 1
    mean, var = float(ln.mean[row]), float(ln.var[row])
    zhat, out = float(ln.normalized[row, col]), float(ln.output[row, col])
    g, b = float(ln.gamma[col]), float(ln.beta[col])
    return aligned(
        f"y_{{{i},{j}}}",
        [f"\\gamma_{{{j}}} \\cdot \\frac{{z_{{{i},{j}}} - \\mu_{{{i}}}}}{{\\sqrt{{\\sigma^2_{{{i}}} + \\varepsilon}}}}"
         f" + \\beta_{{{j}}}",
         f"{factor(g)} \\cdot \\frac{{{number(float(ln.x[row, col]))} - {factor(mean)}}}"
         f"{{\\sqrt{{{number(var)} + 10^{{-5}}}}}} + {factor(b)}",
         f"{factor(g)} \\cdot {factor(zhat)} + {factor(b)}",
         number(out)],
    ) + f"\\qquad \\mu_{{{i}}} = {number(mean)},\\ \\sigma^2_{{{i}}} = {number(var)}"


def explain_encoder(walk: EncoderWalkthrough, stage: str, row: int, col: int, tr: Translate = Message) -> str:
    """One entry (row, col) of ``stage``'s explained panel with its numbers substituted, as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(encoder_panels(walk, stage), row, col)
    t, i, j = walk.trace, row + 1, col + 1
    if stage == "inputs":
        return f"x_{{{i},{j}}} = {number(value)}"
    if stage == "norm_1":
        return _norm_entry(t.norm_1, row, col)
    if stage == "norm_2":
        return _norm_entry(t.norm_2, row, col)
    if stage == "attention":
        concat = t.attention.concat[row].tolist()
        terms = _sum_of_products(concat, t.weights.w_out[:, col].tolist())
        return aligned(f"a_{{{i},{j}}}", [r"\sum_{l} c_{" + f"{i}" + r",l}\, W^{O}_{l," + f"{j}" + r"} + b^{O}_{"
                                          + f"{j}" + "}",
                                          terms_lines(terms + [factor(float(t.weights.b_out[col]))]), number(value)])
    if stage in ("residual_1", "residual_2"):
        skip, sub = (t.x, t.attention.output) if stage == "residual_1" else (t.hidden, t.ffn_output)
        names = ("x", "a") if stage == "residual_1" else ("h", "f")
        return aligned(f"r_{{{i},{j}}}", [f"{names[0]}_{{{i},{j}}} + {names[1]}_{{{i},{j}}}",
                                          f"{number(float(skip[row, col]))} + {factor(float(sub[row, col]))}",
                                          number(value)])
    if stage == "ffn_hidden":
        terms = _sum_of_products(t.ffn_input[row].tolist(), t.weights.w_1[:, col].tolist())
        pre = float(t.ffn_pre_activation[row, col])
        # \bigl( … \bigr), not \left( … \right): the sum breaks over lines, and a line break inside \left … \right
        # is none (KaTeX warned "\\ or \newline does nothing in display mode" and drew one long line)
        return aligned(f"u_{{{i},{j}}}", [r"\max\bigl(0,\ " + terms_lines(terms + [factor(float(t.weights.b_1[col]))])
                                          + r"\bigr)", r"\max\left(0,\ " + number(pre) + r"\right)", number(value)])
    if stage == "ffn_output":
        terms = _sum_of_products(t.ffn_hidden[row].tolist(), t.weights.w_2[:, col].tolist())
        return aligned(f"f_{{{i},{j}}}", [terms_lines(terms + [factor(float(t.weights.b_2[col]))]), number(value)])
    if stage == "stack":
        return f"y^{{({len(walk.blocks)})}}_{{{i},{j}}} = {number(value)}"
    raise KeyError(stage)


def encoder_exercise(walk: EncoderWalkthrough, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` as an exercise (practice mode); None for the inputs and the stack (read off).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(encoder_panels(walk, stage), row, col)
    t, i, j = walk.trace, row + 1, col + 1
    w = t.weights
    if stage == "attention":
        return practice.dot_exercise(f"a_{{{i},{j}}}", f"\\sum_l c_{{{i},l}}\\, W^O_{{l,{j}}} + b^O_{{{j}}}",
                                     (f"c_{{{i}}}", t.attention.concat[row].tolist()),
                                     (f"W^O_{{:,{j}}}", w.w_out[:, col].tolist()), value,
                                     extra=(f"b^O_{{{j}}} = {number(float(w.b_out[col]))}",))
    if stage in ("residual_1", "residual_2"):
        skip, sub = (t.x, t.attention.output) if stage == "residual_1" else (t.hidden, t.ffn_output)
        names = ("x", "a") if stage == "residual_1" else ("h", "f")
        return practice.value_exercise(f"r_{{{i},{j}}}", f"{names[0]}_{{{i},{j}}} + {names[1]}_{{{i},{j}}}",
                                       (f"{names[0]}_{{{i},{j}}} = {number(float(skip[row, col]))}",
                                        f"{names[1]}_{{{i},{j}}} = {number(float(sub[row, col]))}"), value)
    if stage in ("norm_1", "norm_2"):
        ln = t.norm_1 if stage == "norm_1" else t.norm_2
        return practice.value_exercise(
            f"y_{{{i},{j}}}",
            f"\\gamma_{{{j}}} \\cdot \\frac{{z_{{{i},{j}}} - \\mu_{{{i}}}}}{{\\sqrt{{\\sigma^2_{{{i}}} + \\varepsilon}}}} + "
            f"\\beta_{{{j}}}",
            (f"z_{{{i},{j}}} = {number(float(ln.x[row, col]))}",
             f"\\mu_{{{i}}} = {number(float(ln.mean[row]))},\\ \\sigma^2_{{{i}}} = {number(float(ln.var[row]))},"
             f"\\ \\varepsilon = 10^{{-5}}",
             f"\\gamma_{{{j}}} = {number(float(ln.gamma[col]))},\\ \\beta_{{{j}}} = {number(float(ln.beta[col]))}"),
            value)
    if stage == "ffn_hidden":
        return practice.dot_exercise(f"u_{{{i},{j}}}", f"\\max\\left(0,\\ \\sum_l z_{{{i},l}}\\, W^1_{{l,{j}}} + b^1_{{{j}}}\\right)",
                                     (f"z_{{{i}}}", t.ffn_input[row].tolist()), (f"W^1_{{:,{j}}}", w.w_1[:, col].tolist()),
                                     value, extra=(f"b^1_{{{j}}} = {number(float(w.b_1[col]))}",))
    if stage == "ffn_output":
        return practice.dot_exercise(f"f_{{{i},{j}}}", f"\\sum_l u_{{{i},l}}\\, W^2_{{l,{j}}} + b^2_{{{j}}}",
                                     (f"u_{{{i}}}", t.ffn_hidden[row].tolist()), (f"W^2_{{:,{j}}}", w.w_2[:, col].tolist()),
                                     value, extra=(f"b^2_{{{j}}} = {number(float(w.b_2[col]))}",))
    return None


def encoder_step_through(walk: EncoderWalkthrough, stage: str) -> StepThrough:
    """The *Encoder block* page's ``stage`` (of its post-LN or pre-LN order) in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in walk.order:
        raise KeyError(stage)
    return StepThrough(
        page=ENCODER_BLOCK, order=walk.order,
        stage=Stage(
            key=stage, panels=encoder_panels(walk, stage),
            formula=lambda tr: encoder_formula(stage, walk.norm_first),
            entry=lambda row, col, head, tr: explain_encoder(walk, stage, row, col, tr),
            exercise=lambda row, col, head: encoder_exercise(walk, stage, row, col),
            code=(encoder_block, layer_norm, block_weights),
        ),
        checks=walk.checks,
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class EncoderBlockSettings:
    """The encoder block page's own settings (``settings.encoder_block``).

    Attributes:
        num_heads: h of the block's self-attention (1..MAX_DIM); must divide d_model (checked on the page, where the
            message can say which head counts fit).
        dim_feedforward: F (d_ff), the feed-forward layer's hidden width (1..MAX_FEEDFORWARD).
        num_layers: N, the number of blocks stacked (1..MAX_LAYERS).
        norm_first: False = post-LN (Vaswani et al. 2017), True = pre-LN (GPT-2 and later).
        block: the block the step-through opens (0-based; the page keeps it below num_layers).
    """

    num_heads: int = 1
    dim_feedforward: int = 8
    num_layers: int = 2
    norm_first: bool = False
    block: int = 0


ENCODER_BLOCK = Page(
    key="encoder_block", title=N_("The encoder block"), icon=":material/stacks:", section="transformer",
    summary=N_("The encoder block: residuals, LayerNorm and the feed-forward layer around attention"),
    stages=ENCODER_POST_LN, build=build_encoder_walkthrough, step_through=encoder_step_through, default_stage="norm_1",
    default_stage_why=N_("LayerNorm is what the block adds around attention; the attention and the residual that feed it come before."), recipe=encoder_block_recipe,
    settings=EncoderBlockSettings,
    fields=(
        IntRange("num_heads", 1, MAX_DIM, label(N_("The number of heads"))),
        IntRange("dim_feedforward", 1, MAX_FEEDFORWARD, "dim_feedforward"),
        IntRange("num_layers", 1, MAX_LAYERS, label(N_("The number of blocks"))),
        Switch("norm_first", label(N_("The pre-LN switch"))),
        IntRange("block", 0, MAX_LAYERS - 1, label(N_("The block")), one_based=True),
    ),
    legacy={"encoder_num_heads": "num_heads", "dim_feedforward": "dim_feedforward", "num_layers": "num_layers",
            "norm_first": "norm_first", "encoder_block": "block", "encoder_stage": "stage"},
)
