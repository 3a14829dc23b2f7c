r"""One explained update as LaTeX with its numbers: the gradient as the backward pass's dW = Xᵀ dP summed over the
batch, then Adam's rule (Kingma & Ba 2015, Algorithm 1) step by step.

Every number is written by :mod:`attention_core.latex` (4 significant digits); no user text enters a formula.
"""

from __future__ import annotations

from attention_core.latex import aligned, factor, index, number
from attention_core.lessons.training.page import WEIGHTS
from attention_core.training.update import ExplainedUpdate


def weight_symbol(update: ExplainedUpdate) -> str:
    r"""The explained entry, 1-based, its layer as a superscript: ``\left(W^{(2)}_{q}\right)_{1,3}``."""
    letter = WEIGHTS[update.which].removeprefix("W_")
    return index(f"\\left(W^{{({update.layer + 1})}}_{{{letter}}}\\right)", update.row, update.col)


def gradient_latex(update: ExplainedUpdate) -> str:
    r"""g = ∂L/∂W_{r,c} = Σ_{b,t} X_{b,t,r} dQ_{b,t,c} (dK, dV for W_k, W_v; over the batch's sequences b and
    positions t) = its value."""
    w = weight_symbol(update)
    projection = WEIGHTS[update.which].replace("W_", "")
    return aligned(f"g = \\frac{{\\partial L}}{{\\partial {w}}}", [
        f"\\sum_{{b,t}} X_{{b,t,{update.row + 1}}}\\,\\frac{{\\partial L}}{{\\partial {projection.upper()}_{{b,t,"
        f"{update.col + 1}}}}}",
        number(update.gradient)])


def adam_latex(update: ExplainedUpdate) -> list[str]:
    """Adam's step for the entry, one line per quantity, each with the numbers put in."""
    t, b1, b2 = update.step, update.beta1, update.beta2
    w = weight_symbol(update)
    return [
        aligned(f"m_{{{t}}} = \\beta_1 m_{{{t - 1}}} + (1 - \\beta_1)\\, g",
                [f"{number(b1)} \\cdot {factor(update.m_before)} + {number(1 - b1)} \\cdot {factor(update.gradient)}",
                 number(update.m)]),
        aligned(f"v_{{{t}}} = \\beta_2 v_{{{t - 1}}} + (1 - \\beta_2)\\, g^2",
                [f"{number(b2)} \\cdot {factor(update.v_before)} + {number(1 - b2)} \\cdot {factor(update.gradient)}^2",
                 number(update.v)]),
        aligned(f"\\hat m = \\frac{{m_{{{t}}}}}{{1 - \\beta_1^{{{t}}}}},\\quad "
                f"\\hat v = \\frac{{v_{{{t}}}}}{{1 - \\beta_2^{{{t}}}}}",
                [f"\\frac{{{number(update.m)}}}{{{number(1 - b1 ** t)}}},\\quad "
                 f"\\frac{{{number(update.v)}}}{{{number(1 - b2 ** t)}}}",
                 f"{number(update.m_hat)},\\quad {number(update.v_hat)}"]),
        aligned(f"{w} \\leftarrow {w} - \\eta\\, \\frac{{\\hat m}}{{\\sqrt{{\\hat v}} + \\epsilon}}",
                [f"{number(update.weight_before)} - {number(update.learning_rate)} \\cdot "
                 f"\\frac{{{factor(update.m_hat)}}}{{\\sqrt{{{number(update.v_hat)}}} + {number(update.eps)}}}",
                 number(update.weight_after)]),
    ]
