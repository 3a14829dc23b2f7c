r"""A step page as a self-checking PyTorch script: the :class:`Recipe` every step page declares, and the writer.

Each step page declares a *recipe* beside its walk-through (``Page.recipe``: the walk-through -> :class:`Recipe`):
its inputs as literals, the torch lines that recompute every intermediate (where the page's own function is plain
torch, its source itself, read with :func:`source`), one expression per panel of every stage, and its checks
against PyTorch. :func:`write` turns a recipe and the page's panels into the script's text (its pieces,
:func:`header`, :func:`input_lines` and :func:`stage_checks`, are the cells of the page's notebook too,
:mod:`attention_core.classroom.notebook`):

1. the inputs, written with ``repr`` of their float32 values, so the script starts from exactly the app's numbers;
2. the formulas, as plain torch code, with the source of each (Vaswani et al. 2017, eq. 1, ...) and the shapes;
3. one ``check(...)`` per heatmap of every stage of the page, each holding the app's numbers as a literal: same
   shape, the same ±∞ cells (masks), the rest equal to rtol = atol = 1e-5; it prints one line per matrix and raises
   ``AssertionError`` at the first that differs;
4. the page's comparisons with its references (PyTorch's ``F.scaled_dot_product_attention``,
   ``nn.MultiheadAttention``, ...; transformers' modules where installed; loops in Python floats).

Tokens (user text) enter the script only inside ``repr`` string literals, never in comments or code.

A floor module (imports only torch, :mod:`attention_core.stepthrough`, :mod:`attention_core.weights` and the input
stage's :class:`attention_core.inputs.stage.Inputs`). Shape legend (in the scripts' comments):
T tokens (m queries, n keys in cross-attention), D = d_model, d_k the width of q and k, h = num_heads,
kv = num_kv_heads, F = dim_feedforward, V = vocabulary size. Everything is float32.
"""

from __future__ import annotations

import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch

from attention_core.inputs.stage import Inputs
from attention_core.stepthrough import StepThrough
from attention_core.weights import module_weights

#: The tolerance of every comparison with the app's numbers (and of the PyTorch checks, unless a page states another).
TOLERANCE = 1e-5


@dataclass(frozen=True)
class Recipe:
    """How one page's numbers are recomputed in a script.

    Attributes:
        title: what the page computes (the script's first line).
        sources: the formula and where it comes from, one line each (the script's docstring).
        inputs: (name, value, comment): tensors (float32, bool or int64), numbers, strings (tokens), and lists and
            dicts of them; written as literals. Comments are ours (shapes), never user text.
        code: the torch lines that compute every named intermediate from the inputs.
        panels: stage key -> one Python expression per panel of that stage, in the page's order.
        references: lines comparing our numbers with the page's references (``same_as(name, ours, reference,
            tolerance)``: PyTorch's, transformers', a loop's).
    """

    title: str
    sources: tuple[str, ...]
    inputs: tuple[tuple[str, Any, str], ...]
    code: tuple[str, ...]
    panels: Mapping[str, tuple[str, ...]]
    references: tuple[str, ...] = field(default=())


# ---------------------------------------------------------------- the writer

def literal(value: Any, indent: str = "") -> str:
    """``value`` as Python source: tensors as ``torch.tensor(<repr of its list>)``, one row per line."""
    if isinstance(value, torch.Tensor):
        dtype = ", dtype=torch.bool" if value.dtype == torch.bool else ""
        value = value if value.dtype in (torch.bool, torch.int64) else value.float()
        if value.dim() < 2 or value.numel() <= 12:
            return f"torch.tensor({value.tolist()!r}{dtype})"
        rows = "".join(f"{indent}    {row!r},\n" for row in value.tolist())
        return f"torch.tensor([\n{rows}{indent}]{dtype})"
    if isinstance(value, Mapping):
        items = "".join(f"{indent}    {k!r}: {literal(v, indent + '    ')},\n" for k, v in value.items())
        return "{\n" + items + indent + "}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, (torch.Tensor, Mapping)) for v in value):
        items = "".join(f"{indent}    {literal(v, indent + '    ')},\n" for v in value)
        return "[\n" + items + indent + "]"
    if isinstance(value, tuple):
        value = list(value)
    return repr(value)


_HEADER = '''import math

import torch
import torch.nn.functional as F

inf, nan = math.inf, math.nan  # how the app's blocked (-inf) cells are written below
TOLERANCE = {tolerance!r}  # rtol = atol of every comparison with the app's numbers


def check(name, ours, app, tolerance=TOLERANCE):
    """Assert that ``ours`` is the matrix the app showed: same shape, the same +-inf cells, the rest within tolerance."""
    ours = ours.detach().float()
    assert ours.shape == app.shape, f"{{name}}: shape {{tuple(ours.shape)}}, the app showed {{tuple(app.shape)}}"
    infinite = torch.isinf(app)
    assert torch.equal(torch.isinf(ours), infinite) and torch.equal(ours[infinite], app[infinite]), \\
        f"{{name}}: the -inf cells (blocked) differ from the app's"
    finite = ~infinite
    difference = (ours[finite] - app[finite]).abs().max().item() if finite.any() else 0.0
    assert torch.allclose(ours[finite], app[finite], rtol=tolerance, atol=tolerance), \\
        f"{{name}} differs from the app: max |difference| = {{difference:.2e}}"
    print(f"{{name:<22}} {{str(tuple(ours.shape)):<10}} matches the app (max |difference| {{difference:.1e}})")


def same_as(name, ours, reference, tolerance=TOLERANCE):
    """Assert that our numbers equal the reference's (PyTorch's, transformers', a loop's; rtol = atol = tolerance)."""
    difference = (ours - reference).abs().max().item() if ours.numel() else 0.0
    assert torch.allclose(ours, reference, rtol=tolerance, atol=tolerance), \\
        f"{{name}} differs from the reference: max |difference| = {{difference:.2e}}"
    print(f"matches {{name}}: max |difference| = {{difference:.2e}}")
'''


def header() -> str:
    """The script's imports and its two assertions, ``check`` (a matrix the app showed) and ``same_as`` (PyTorch)."""
    return _HEADER.format(tolerance=TOLERANCE)


def input_lines(recipe: Recipe) -> list[str]:
    """The recipe's inputs, one ``name = <literal>  # comment`` line each (tensors over several lines)."""
    return [f"{name} = {literal(value)}" + (f"  # {comment}" if comment else "")
            for name, value, comment in recipe.inputs]


def stage_checks(recipe: Recipe, steps: Sequence[StepThrough]) -> list[tuple[StepThrough, list[str]]]:
    """(step, its ``check(...)`` lines) for every stage of ``steps``, in order: one line per panel, named
    ``"<stage> <k>/<n>"`` and holding the app's numbers as a literal.

    Raises:
        KeyError: a stage of ``steps`` the recipe has no expressions for.
        ValueError: a stage whose number of panels differs from the recipe's expressions (the recipe is stale).
    """
    out = []
    for step in steps:
        key = step.stage.key
        expressions = recipe.panels[key]
        panels = step.stage.panels
        if len(expressions) != len(panels):
            raise ValueError(f"stage {key!r} shows {len(panels)} panels, the recipe has {len(expressions)}")
        out.append((step, [f"check({f'{key} {number}/{len(panels)}'!r}, {expression}, "
                           f"{literal(panel.matrix.detach())})"
                           for number, (expression, panel) in enumerate(zip(expressions, panels), start=1)]))
    return out


#: The script's and the notebook's last line.
DONE = "print('Every number matches.')"


def write(recipe: Recipe, steps: Sequence[StepThrough]) -> str:
    """The script of ``recipe``, asserting every panel of ``steps`` (one :class:`StepThrough` per stage, in order).

    Raises:
        KeyError: a stage of ``steps`` the recipe has no expressions for.
        ValueError: a stage whose number of panels differs from the recipe's expressions (the recipe is stale).
    """
    lines = [
        f'"""Attention Explorer export: {recipe.title}, recomputed and checked.',
        "",
        *recipe.sources,
        "",
        "Every matrix the page shows, on every step, is recomputed below from the inputs and compared with the",
        "numbers the app showed; then with the references the page checks against.",
        "Run it as a Python script (it needs only torch): any difference raises AssertionError.",
        '"""',
        header(),
        "",
        "# ---------------------------------------------------------------- the inputs (the app's float32 numbers)",
        "",
        *input_lines(recipe),
        "", "# ---------------------------------------------------------------- every step, recomputed", "",
        *recipe.code,
        "", "# ---------------------------------------------------------------- every matrix the page shows",
    ]
    for step, checks in stage_checks(recipe, steps):
        lines += ["", f"# {step.titles[step.stage.key]}", *checks]
    if recipe.references:
        lines += ["", "# ---------------------------------------------------------------- against the page's references", ""]
        lines += list(recipe.references)
    lines += ["", DONE, ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- what recipes share

#: ``attend(q, k, v, mask, bias)``: eq. 1 with a mask and an additive bias, the script's one attention function.
ATTEND = '''
def attend(q, k, v, mask=None, bias=None):
    """softmax(q k^T / sqrt(d_k) + bias) v, -inf where mask is False (Vaswani et al. 2017, eq. 1).

    q (..., m, d_k), k (..., n, d_k), v (..., n, d_v); mask bool (..., m, n), True = may attend.
    A row with every key blocked gets weight 0 (softmax over no keys is 0 / 0), as PyTorch's SDPA gives.
    Returns scaled_scores, masked_scores (..., m, n), weights (..., m, n), output (..., m, d_v).
    """
    scaled_scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1]))  # (..., m, n)
    masked_scores = scaled_scores if bias is None else scaled_scores + bias
    if mask is not None:
        masked_scores = masked_scores.masked_fill(~mask, -inf)
    weights = torch.softmax(masked_scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.expand_as(weights).any(dim=-1, keepdim=True), 0.0)
    return scaled_scores, masked_scores, weights, weights @ v
'''.strip("\n").split("\n")


def projection_inputs(inputs: Inputs) -> tuple[tuple[str, Any, str], ...]:
    """The inputs X, W_q, W_k, W_v of the pages that project X with the self-attention page's weights
    (``Inputs.projections``), as the page used them (with the learner's edits)."""
    return (("X", inputs.x, "(T, D)"),) + tuple(
        (f"W_{name[2]}", weight, "(D, d_k), the self-attention page's (seeded, with any edits)")
        for name, weight in inputs.projections.items())


def drawn_weights(x: torch.Tensor, width: int, seed: int, value: bool = True) -> tuple[tuple[str, Any, str], ...]:
    """The inputs X, W_q, W_k (and W_v) of the pages that draw their W like seed 001's CausalAttention."""
    w = module_weights(x.shape[-1], width, seed, out_proj=False)
    names = ("w_query", "w_key", "w_value") if value else ("w_query", "w_key")
    return (("X", x, "(T, D)"),) + tuple(
        (f"W_{name[2]}", w[name], f"(D, {width}), drawn like nn.Linear after torch.manual_seed({seed})")
        for name in names)


def source(*functions: Callable[..., Any]) -> tuple[str, ...]:
    """The source lines of the page's own functions (``inspect.getsource``), for a recipe's ``code``.

    Only for functions that need nothing but ``math`` and ``torch``: the script runs them exactly as the page does
    (the ALiBi slopes, the window's receptive field, the RoPE rotation, ...). Each is followed by a blank line.
    """
    lines: list[str] = []
    for function in functions:
        lines += textwrap.dedent(inspect.getsource(function)).rstrip("\n").split("\n") + [""]
    return tuple(lines)
