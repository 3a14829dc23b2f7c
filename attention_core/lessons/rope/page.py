r"""From settings to every number of the *RoPE* page, in the one step-through protocol.

:func:`build_rope_walkthrough` projects the sentence's X to one head's Q and K with weights of its own,
``module_weights(d_model, head_dim, seed)`` (RoPE rotates pairs, so the head is head_dim wide, even: not the
self-attention page's d_k-wide W, and the page says so), rotates them with :func:`rope.rope_scores` and checks the
rotation against Hugging Face transformers' Llama implementation (``LlamaRotaryEmbedding`` and
``apply_rotary_pos_emb``); :func:`rope_step_through` puts one stage in a :class:`~attention_core.stepthrough.StepThrough`.

Shape legend: T tokens, D = d_model, d = head_dim (even), d/2 pairs. Float32.

Sources: Su et al. 2021 (RoFormer), eq. 13-16 and sec. 3.4.2 (θᵢ = 10000^(−2i/d)); Vaswani et al. 2017, eq. 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import sympy as sp
import torch

from attention_core import entry_formulas as entries
from attention_core import practice
from attention_core.errors import N_, Message
from attention_core.fields import FloatRange, IntRange, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.tokens import dim_labels
from attention_core.latex import Translate, aligned, factor, number, terms_lines
from attention_core.lessons.rope.recipe import rope_recipe
from attention_core.lessons.rope.walk import RopeWalkthrough
from attention_core.modern.rope import BASES, check_head_dim, frequencies, rope_scores, rotate
from attention_core.page import Page
from attention_core.positions import sinusoidal_encoding
from attention_core.shared_settings import MAX_DIM, SharedSettings
from attention_core.stepthrough import TRANSFORMERS, Panel, Stage, StepThrough, compare, explained_value
from attention_core.weights import module_weights

#: RoPE: head_dim (even, 2..MAX_DIM), the base (MIN_ROPE_BASE..MAX_ROPE_BASE) and the shift s of every position.
MIN_ROPE_BASE, MAX_ROPE_BASE = 2.0, 1e7

MAX_ROPE_SHIFT = 1000


@lru_cache(maxsize=64)
def _llama_cos_sin(head_dim: int, base: float, positions: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (1, T, d) of ``transformers``' ``LlamaRotaryEmbedding`` (imported here, on first use)."""
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=head_dim, num_attention_heads=1, head_dim=head_dim,
                         max_position_embeddings=max(positions, 1),
                         rope_parameters={"rope_type": "default", "rope_theta": base})
    return LlamaRotaryEmbedding(config)(torch.zeros(1, positions, head_dim), torch.arange(positions)[None])


def llama_rotation(query: torch.Tensor, key: torch.Tensor, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Q and K (T, d) rotated by ``transformers.models.llama.modeling_llama.apply_rotary_pos_emb``."""
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    cos, sin = _llama_cos_sin(query.shape[-1], base, query.shape[0])
    q, k = apply_rotary_pos_emb(query[None, None], key[None, None], cos, sin)
    return q[0, 0], k[0, 0]


def build_rope_walkthrough(settings: SharedSettings, rope: RopeSettings,
                           edits: Edits | None = None) -> RopeWalkthrough:
    """RoPE on one head's queries and keys of the settings' sentence, checked against transformers.

    Args:
        settings: validated shared settings: sentence, d_model, seed.
        rope: the page's own settings (``settings.rope``): head_dim d, base, shift s.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell; an odd head_dim (field ``rope.head_dim``).
    """
    edits = edits or {}
    check_head_dim(rope.head_dim)
    inputs = build_inputs(settings, edits, edited=("x",))
    x = inputs.x
    w = module_weights(x.shape[-1], rope.head_dim, settings.seed, out_proj=False)
    trace = rope_scores(x @ w["w_query"], x @ w["w_key"], rope.base, rope.shift)
    with torch.no_grad():
        q, k = llama_rotation(trace.query, trace.key, rope.base)
    checks = (
        compare(torch.cat([trace.query_rotated, trace.key_rotated]), torch.cat([q, k]),
                "transformers.models.llama.modeling_llama.apply_rotary_pos_emb(q, k, *LlamaRotaryEmbedding(...))",
                note=Message(N_("the rotated queries and keys")), against=TRANSFORMERS),
    )
    return RopeWalkthrough(settings=settings, inputs=inputs, tokens=inputs.tokens, w_query=w["w_query"], trace=trace,
                           checks=checks)


# ---------------------------------------------------------------- panels

_TOKEN, _DIM, _PAIR = Message(N_("token (position m)")), Message(N_("dimension")), Message(N_("pair i"))


def _rows(walk: RopeWalkthrough, shift: int = 0) -> tuple[str, ...]:
    """Row labels "m token": the position m (from 0, plus the shift) and the token."""
    return tuple(f"{m + shift} {token}" for m, token in enumerate(walk.tokens))


def _pairs(head_dim: int) -> tuple[str, ...]:
    return tuple(f"i={i} ({i + 1}, {i + 1 + head_dim // 2})" for i in range(head_dim // 2))


def rope_panels(walk: RopeWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage``; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    t = walk.trace
    rows, dims = _rows(walk), tuple(dim_labels("d", t.head_dim))
    if stage == "projections":
        return (Panel("Q = X W_q", t.query, rows, dims, _TOKEN, _DIM),
                Panel("K = X W_k", t.key, rows, dims, _TOKEN, _DIM, explained=False))
    if stage == "angles":
        return (Panel("θᵢ", t.theta[None], ("θ",), _pairs(t.head_dim), "", _PAIR, explained=False),
                Panel(Message(N_("m · θᵢ (radians)")), t.angles, rows, _pairs(t.head_dim), _TOKEN, _PAIR))
    if stage == "sinusoidal":
        pairs = tuple(f"i={i}" for i in range(t.head_dim // 2))
        return (Panel(Message(N_("Sinusoidal encoding PE (the Positional encoding page), same base")),
                      sinusoidal_encoding(len(walk.tokens), t.head_dim, base=t.base), rows, dims, _TOKEN, _DIM),
                Panel("cos(m θᵢ)", torch.cos(t.angles), rows, pairs, _TOKEN, _PAIR, explained=False),
                Panel("sin(m θᵢ)", torch.sin(t.angles), rows, pairs, _TOKEN, _PAIR, explained=False))
    if stage == "rotate_query":
        return (Panel("Q", t.query, rows, dims, _TOKEN, _DIM, explained=False),
                Panel(Message(N_("Q' = Q rotated")), t.query_rotated, rows, dims, _TOKEN, _DIM))
    if stage == "rotate_key":
        return (Panel("K", t.key, rows, dims, _TOKEN, _DIM, explained=False),
                Panel(Message(N_("K' = K rotated")), t.key_rotated, rows, dims, _TOKEN, _DIM))
    if stage == "scores":
        return (Panel("Q' K'ᵀ / √d", t.scores, rows, rows, Message(N_("query token")), Message(N_("key token"))),)
    if stage == "relative":
        shifted = _rows(walk, t.shift)
        return (Panel(Message(N_("Scores at positions m")), t.scores, rows, rows, Message(N_("query token")),
                      Message(N_("key token")), explained=False),
                Panel(Message(N_("Scores at positions m + {s}"), s=t.shift), t.shifted_scores, shifted, shifted,
                      Message(N_("query token")), Message(N_("key token")), explained=False),
                Panel(Message(N_("Difference (float32 rounding)")), t.shifted_scores - t.scores, rows, rows,
                      Message(N_("query token")), Message(N_("key token"))))
    if stage == "base":
        bases = _bases(walk)
        return (Panel(Message(N_("θᵢ for each base")), torch.stack([frequencies(t.head_dim, b) for b in bases]),
                      tuple(f"base {b:g}" for b in bases), _pairs(t.head_dim), Message(N_("base")), _PAIR),)
    raise KeyError(stage)


def _bases(walk: RopeWalkthrough) -> tuple[float, ...]:
    return tuple(sorted(set(BASES) | {walk.trace.base}))


# ---------------------------------------------------------------- formulas (sympy)

@lru_cache(maxsize=None)
def rope_formula(stage: str) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines built with sympy.

    Raises:
        KeyError: an unknown stage.
    """
    i, j, m, n, l_ = sp.symbols("i j m n l", integer=True, nonnegative=True)
    d, base = sp.symbols("d b", positive=True)
    theta, q, k, x, w = (sp.IndexedBase(s) for s in (r"\theta", "q", "k", "x", "W"))
    qr, kr = sp.IndexedBase("q'"), sp.IndexedBase("k'")
    half = d / 2
    if stage == "projections":
        return (sp.latex(sp.Eq(q[m, j], sp.Sum(x[m, l_] * w[l_, j], (l_, 1, sp.Symbol("D"))), evaluate=False)),)
    if stage == "sinusoidal":
        return (r"PE_{m,2i} = \sin(m\,\theta_i),\quad PE_{m,2i+1} = \cos(m\,\theta_i) \qquad "
                r"x_m + PE_m \quad\longleftrightarrow\quad R_{m\theta}\, q_m",)
    if stage == "angles":
        return (sp.latex(sp.Eq(theta[i], base ** (-2 * i / d), evaluate=False)) + r", \quad i = 0, \ldots, \tfrac{d}{2} - 1",
                sp.latex(sp.Eq(sp.Symbol(r"\varphi_{m,i}"), m * theta[i], evaluate=False)))
    if stage in ("rotate_query", "rotate_key"):
        v, vr = (q, qr) if stage == "rotate_query" else (k, kr)
        phi = m * theta[i]
        rot = sp.Matrix([[sp.cos(phi), -sp.sin(phi)], [sp.sin(phi), sp.cos(phi)]])
        return (sp.latex(sp.Eq(sp.Matrix([vr[m, i], vr[m, i + half]]),
                               sp.MatMul(rot, sp.Matrix([v[m, i], v[m, i + half]])), evaluate=False)),)
    if stage == "scores":
        return (sp.latex(sp.Eq(sp.Symbol("s_{m,n}"), sp.Sum(qr[m, l_] * kr[n, l_], (l_, 1, d)) / sp.sqrt(d), evaluate=False)),
                r"q'_m \cdot k'_n = q_m^{\top} R_{(n - m)\theta}\, k_n")
    if stage == "relative":
        return (r"q'_{m+s} \cdot k'_{n+s} = q_m^{\top} R_{(n + s - m - s)\theta}\, k_n = q'_m \cdot k'_n",)
    if stage == "base":
        return (sp.latex(sp.Eq(theta[i], base ** (-2 * i / d), evaluate=False)),
                r"\lambda_i = \frac{2\pi}{\theta_i}")
    raise KeyError(stage)


# ---------------------------------------------------------------- one entry, with its numbers in

def _rotation_entry(name: str, v: torch.Tensor, walk: RopeWalkthrough, row: int, col: int, value: float) -> str:
    t = walk.trace
    half = t.head_dim // 2
    pair = col % half
    phi = float(t.angles[row, pair])
    own, other = float(v[row, col]), float(v[row, (col + half) % t.head_dim])
    c, s = math.cos(phi), math.sin(phi)
    lhs = f"{name}'_{{{row},{col + 1}}}"
    if col < half:
        general = f"{name}_{{{row},{col + 1}}} \\cos\\varphi - {name}_{{{row},{col + 1 + half}}} \\sin\\varphi"
        numbers = f"{number(own)} \\cdot {factor(c)} - {factor(other)} \\cdot {factor(s)}"
    else:
        general = f"{name}_{{{row},{col + 1}}} \\cos\\varphi + {name}_{{{row},{col + 1 - half}}} \\sin\\varphi"
        numbers = f"{number(own)} \\cdot {factor(c)} + {factor(other)} \\cdot {factor(s)}"
    return (aligned(lhs, [general, numbers, number(value)])
            + f"\\qquad \\varphi = m\\,\\theta_{{{pair}}} = {row} \\cdot {number(float(t.theta[pair]))} = {number(phi)}")


def explain_rope(walk: RopeWalkthrough, stage: str, row: int, col: int, tr: Translate = Message) -> str:
    """One entry (row, col) of ``stage``'s explained panel, numbers in, as LaTeX (positions m are 0-based).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    t = walk.trace
    value = explained_value(rope_panels(walk, stage), row, col)
    if stage == "projections":
        return entries.projection_entry_latex("q", row, col, walk.inputs.x[row].tolist(), walk.w_query[:, col].tolist(),
                                         value)
    if stage == "angles":
        d, base = t.head_dim, t.base
        return (f"\\varphi_{{{row},{col}}} = m\\, \\theta_{{{col}}} = {row} \\cdot {number(base)}^{{-2 \\cdot {col} / {d}}}"
                f" = {row} \\cdot {number(float(t.theta[col]))} = {number(value)}")
    if stage == "sinusoidal":
        pair, fn = col // 2, ("\\sin" if col % 2 == 0 else "\\cos")
        return (f"PE_{{{row},{col + 1}}} = {fn}(m\\,\\theta_{{{pair}}}) = {fn}({row} \\cdot "
                f"{number(float(t.theta[pair]))}) = {fn}({number(float(t.angles[row, pair]))}) = {number(value)}")
    if stage == "rotate_query":
        return _rotation_entry("q", t.query, walk, row, col, value)
    if stage == "rotate_key":
        return _rotation_entry("k", t.key, walk, row, col, value)
    if stage == "scores":
        terms = [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(t.query_rotated[row].tolist(),
                                                                   t.key_rotated[col].tolist())]
        return aligned(f"s_{{{row},{col}}}", [f"\\left({terms_lines(terms)}\\right) / \\sqrt{{{t.head_dim}}}",
                                              number(value)])
    if stage == "relative":
        return (f"s^{{(+{t.shift})}}_{{{row},{col}}} - s_{{{row},{col}}} = "
                f"{number(float(t.shifted_scores[row, col]))} - {factor(float(t.scores[row, col]))} = {number(value)}")
    if stage == "base":
        base = _bases(walk)[row]
        return (f"\\theta_{{{col}}} = {number(base)}^{{-2 \\cdot {col} / {t.head_dim}}} = {number(value)}, \\quad "
                f"\\lambda_{{{col}}} = 2\\pi / \\theta_{{{col}}} = {number(2 * math.pi / value)}")
    raise KeyError(stage)


def rope_exercise(walk: RopeWalkthrough, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` as an exercise (practice mode): a projection, an angle, a rotated entry, a
    score; None elsewhere (the sinusoidal comparison, the shift, the bases are looked at, not computed).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    t = walk.trace
    value = explained_value(rope_panels(walk, stage), row, col)
    d, half = t.head_dim, t.head_dim // 2
    if stage == "projections":
        x = walk.inputs.x
        return practice.dot_exercise(f"q_{{{row},{col + 1}}}", f"\\sum_l x_{{{row},l}}\\, W^q_{{l,{col + 1}}}",
                                     (f"x_{{{row}}}", x[row].tolist()), (f"W^q_{{:,{col + 1}}}", walk.w_query[:, col].tolist()),
                                     value)
    if stage == "angles":
        return practice.value_exercise(f"\\varphi_{{{row},{col}}}", f"m\\, \\theta_{{{col}}}",
                                       (f"m = {row}", f"\\theta_{{{col}}} = {number(float(t.theta[col]))}"), value)
    if stage in ("rotate_query", "rotate_key"):
        name, v = ("q", t.query) if stage == "rotate_query" else ("k", t.key)
        pair, other = col % half, (col + half) % d
        sign = "-" if col < half else "+"
        formula = (f"{name}_{{{row},{col + 1}}} \\cos\\varphi {sign} {name}_{{{row},{other + 1}}} \\sin\\varphi")
        inputs = (f"{name}_{{{row},{col + 1}}} = {number(float(v[row, col]))}",
                  f"{name}_{{{row},{other + 1}}} = {number(float(v[row, other]))}",
                  f"\\varphi = m\\, \\theta_{{{pair}}} = {number(float(t.angles[row, pair]))}")
        return practice.value_exercise(f"{name}'_{{{row},{col + 1}}}", formula, inputs, value)
    if stage == "scores":
        q, k = t.query_rotated, t.key_rotated
        return practice.scale_exercise(
            f"s_{{{row},{col}}}", f"\\frac{{q'_{{{row}}} \\cdot k'_{{{col}}}}}{{\\sqrt{{d}}}}", "", float(q[row] @ k[col]),
            d, value, d_name="d", d_latex="d", dot=((f"q'_{{{row}}}", q[row].tolist()), (f"k'_{{{col}}}", k[col].tolist())),
            swapped=float(q[col] @ k[row]))
    return None


def pair_vectors(walk: RopeWalkthrough, stage: str, row: int, col: int) -> tuple[tuple[float, float],
                                                                                 tuple[float, float], float]:
    """The pair of the explained entry before and after its rotation, and the angle: for the drawing.

    Args:
        stage: "rotate_query" or "rotate_key". row: the position m. col: a dimension of the pair (either one).

    Returns:
        ((v_i, v_{i+d/2}), (v'_i, v'_{i+d/2}), φ = m θᵢ in radians).

    Raises:
        KeyError: another stage. IndexError: (row, col) outside Q or K.
    """
    t = walk.trace
    before, after = {"rotate_query": (t.query, t.query_rotated), "rotate_key": (t.key, t.key_rotated)}[stage]
    half = t.head_dim // 2
    i = col % half
    return ((float(before[row, i]), float(before[row, i + half])), (float(after[row, i]), float(after[row, i + half])),
            float(t.angles[row, i]))


def rope_step_through(walk: RopeWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in ROPE_PAGE.stages:
        raise KeyError(stage)
    remark = None
    if stage == "sinusoidal":
        remark = Message(N_("The columns of PE are sin and cos of exactly RoPE's angles m θᵢ. The sinusoidal encoding "
                            "adds them to X before any projection; RoPE uses them to rotate q and k, so only the "
                            "difference of positions survives in q · k."))
    if stage == "relative":
        diff = float((walk.trace.shifted_scores - walk.trace.scores).abs().max())
        remark = Message(N_("Every position moved by {s}, and the largest change of a score is {diff:.1e}: "
                            "float32 rounding. The scores depend only on m − n."), s=walk.trace.shift, diff=diff)
    return StepThrough(
        page=ROPE_PAGE,
        stage=Stage(key=stage, panels=rope_panels(walk, stage), formula=lambda tr: rope_formula(stage),
                    entry=lambda row, col, head, tr: explain_rope(walk, stage, row, col, tr),
                    exercise=lambda row, col, head: rope_exercise(walk, stage, row, col),
                    code=(rope_scores, rotate), remark=remark),
        checks=walk.checks,
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class RopeSettings:
    """The RoPE page's own settings (``settings.rope``).

    Attributes:
        head_dim: d, the width of q and k (1..MAX_DIM; RoPE needs it even, checked on the page).
        base: the base of θᵢ = base^(−2i/d) (MIN_ROPE_BASE..MAX_ROPE_BASE; 10000 in RoFormer and Llama 2).
        shift: s, added to every position to show that the scores do not change (0..MAX_ROPE_SHIFT).
    """

    head_dim: int = 4
    base: float = 10000.0
    shift: int = 5


ROPE_PAGE = Page(
    key="rope", title=N_("RoPE: rotary positions"), icon=":material/rotate_right:", section="modern",
    summary=N_("RoPE: rotating queries and keys by their position; only the offset counts"),
    stages={
        "projections": N_("Queries and keys: Q = X W_q, K = X W_k"),
        "angles": N_("Angles: position m times θᵢ = base^(−2i/d)"),
        "sinusoidal": N_("The same angles in the sinusoidal encoding: added there, rotated here"),
        "rotate_query": N_("Rotate each pair of q's dimensions by m θᵢ"),
        "rotate_key": N_("Rotate k the same way"),
        "scores": N_("Scores: q' · k' / √d"),
        "relative": N_("Shift every position by s: the scores do not change"),
        "base": N_("What the base changes: how fast each pair turns"),
    },
    build=build_rope_walkthrough, step_through=rope_step_through, default_stage="rotate_query",
    default_stage_why=N_("The rotation is what RoPE adds; the projections and the angles it uses come before."), recipe=rope_recipe,
    settings=RopeSettings,
    fields=(
        IntRange("head_dim", 1, MAX_DIM, "head_dim"),
        FloatRange("base", MIN_ROPE_BASE, MAX_ROPE_BASE, "base",
                   malformed=N_("The base must be a number; got “{raw}”, using {value:g}."),
                   out_of_range=N_("The base must be between {low:g} and {high:g}; got {base:g}, using {clamped:g}."),
                   clamp_infinite=True),
        IntRange("shift", 0, MAX_ROPE_SHIFT, label(N_("The shift s"))),
    ),
    legacy={"rope_head_dim": "head_dim", "rope_base": "base", "rope_shift": "shift", "rope_stage": "stage"},
)
