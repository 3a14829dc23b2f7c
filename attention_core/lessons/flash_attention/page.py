r"""From settings to every number of the *FlashAttention* page, in the one step-through protocol.

:func:`build_flash_attention_walkthrough` projects the sentence's X to Q, K, V (the self-attention page's seeded weights,
d_k wide), runs :func:`online_softmax.flash_attention` tile by tile and checks the final output against
``torch.nn.functional.scaled_dot_product_attention``; :func:`flash_attention_step_through` puts one stage of the chosen tile in a
:class:`~attention_core.stepthrough.StepThrough`.

Shape legend: T tokens, d = d_k, d_v = d_k here, B_q and B_k the block sizes. Float32.

Sources: Milakov & Gimelshein 2018 (online softmax); Dao et al. 2022 (FlashAttention, Algorithm 1) and Dao 2023
(FlashAttention-2: the key loop inside the query loop); Vaswani et al. 2017, eq. 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

import sympy as sp
import torch
import torch.nn.functional as F

from attention_core import entry_formulas as entries
from attention_core import practice
from attention_core.errors import N_, Message
from attention_core.fields import IntRange, label
from attention_core.inputs.edits import Edits
from attention_core.inputs.stage import build_inputs
from attention_core.inputs.text import MAX_TOKENS
from attention_core.inputs.tokens import token_labels
from attention_core.latex import Translate, aligned, factor, number, terms_lines
from attention_core.lessons.flash_attention.recipe import flash_attention_recipe
from attention_core.lessons.flash_attention.walk import FlashWalkthrough
from attention_core.masks import causal_mask
from attention_core.modern.online_softmax import flash_attention
from attention_core.page import Page
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import Panel, Stage, StepThrough, compare, explained_value


def build_flash_attention_walkthrough(settings: SharedSettings, flash: FlashAttentionSettings,
                                      edits: Edits | None = None) -> FlashWalkthrough:
    """Tiled attention with the online softmax on the settings' sentence, checked against PyTorch.

    Args:
        settings: validated shared settings: sentence, d_model, d_k, seed, causal.
        flash: the page's own settings (``settings.flash_attention``): block_q, block_k, the tile shown.
        edits: the user's edits of X ("x"); other edits are ignored.

    Raises:
        InputError: a bad sentence or X cell; a block size larger than the sentence (field block_q / block_k).
    """
    edits = edits or {}
    inputs = build_inputs(settings, edits)
    x = inputs.x
    w = inputs.projections  # the self-attention page's W_q, W_k, W_v (D, d_k), with the learner's edits
    query, key, value = x @ w["w_query"], x @ w["w_key"], x @ w["w_value"]
    t = x.shape[0]
    mask = causal_mask(t) if settings.causal_mask else None
    trace = flash_attention(query, key, value, flash.block_q, flash.block_k, mask)
    with torch.no_grad():
        reference = F.scaled_dot_product_attention(query[None], key[None], value[None], is_causal=settings.causal_mask)[0]
    checks = (compare(trace.output, reference,
                      f"F.scaled_dot_product_attention(q, k, v, is_causal={settings.causal_mask})  # the full T × T way",
                      note=Message(N_("the tiled output O / l of every row"))),)
    return FlashWalkthrough(settings=settings, inputs=inputs, tokens=inputs.tokens, query=query, key=key, value=value,
                            trace=trace, reference=reference, tile=min(flash.tile, len(trace.tiles) - 1),
                            checks=checks)


def tile_names(walk: FlashWalkthrough) -> tuple[tuple[int, int, range, range], ...]:
    """(query block, key block, rows, keys) of every tile, 1-based blocks, for the tile picker."""
    return tuple((tile.query_block + 1, tile.key_block + 1, tile.rows, tile.cols) for tile in walk.trace.tiles)


# ---------------------------------------------------------------- panels

_QUERY, _KEY, _COLUMN = Message(N_("query token")), Message(N_("key token")), Message(N_("column"))


def _labels(walk: FlashWalkthrough, span: range) -> tuple[str, ...]:
    labels = token_labels(walk.tokens)
    return tuple(labels[i] for i in span)


def flash_panels(walk: FlashWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage`` for the shown tile; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    tile, trace = walk.current, walk.trace
    t = len(walk.tokens)
    rows, cols = _labels(walk, tile.rows), _labels(walk, tile.cols)
    every = tuple(token_labels(walk.tokens))
    values = tuple(f"v{c + 1}" for c in range(walk.value.shape[-1]))
    if stage == "tiles":
        blocks_k = math.ceil(t / trace.block_k)
        i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
        number_ = (i // trace.block_q) * blocks_k + j // trace.block_k + 1
        return (Panel(Message(N_("Tile number of every query-key pair")), number_.float(), every, every, _QUERY,
                      _KEY),)
    if stage == "tile_scores":
        return (Panel("S = Q_i K_jᵀ / √d", tile.scores, rows, cols, _QUERY, _KEY),)
    if stage == "running_max":
        table = torch.stack([tile.max_before, tile.scores.max(dim=-1).values, tile.max_after], dim=1)
        return (Panel(Message(N_("m before, the tile's row maximum, m after")), table, rows, ("m", "max S", "m'"),
                      _QUERY, ""),)
    if stage == "running_sum":
        table = torch.stack([tile.sum_before, tile.rescale, tile.exp_scores.sum(dim=-1), tile.sum_after], dim=1)
        return (Panel("P = exp(S − m')", tile.exp_scores, rows, cols, _QUERY, _KEY, explained=False),
                Panel(Message(N_("l before, the rescale e^(m − m'), Σ P, l after")), table, rows,
                      ("l", "e^(m−m')", "Σ P", "l'"), _QUERY, ""))
    if stage == "partial_output":
        return (Panel("O (before)", tile.output_before, rows, values, _QUERY, _COLUMN, explained=False),
                Panel("O' = e^(m − m') O + P V_j", tile.output_after, rows, values, _QUERY, _COLUMN))
    if stage == "final":
        return (Panel("O / l", trace.output, every, values, _QUERY, _COLUMN),
                Panel(Message(N_("Full attention: softmax(Q Kᵀ / √d) V")), walk.reference, every, values, _QUERY,
                      _COLUMN, explained=False),
                Panel(Message(N_("Difference (float32 rounding)")), trace.output - walk.reference, every, values,
                      _QUERY, _COLUMN, explained=False))
    raise KeyError(stage)


# ---------------------------------------------------------------- formulas (sympy)

@lru_cache(maxsize=None)
def flash_formula(stage: str) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines built with sympy.

    Raises:
        KeyError: an unknown stage.
    """
    i, j, c = sp.symbols("i j c", integer=True, positive=True)
    m, mn, l_, ln = sp.IndexedBase("m"), sp.IndexedBase("m'"), sp.IndexedBase("l"), sp.IndexedBase("l'")
    s, p, o, on, v = (sp.IndexedBase(n) for n in ("S", "P", "O", "O'", "v"))
    if stage == "tiles":
        return (r"(b_q, b_k) = \left(\left\lfloor \tfrac{i - 1}{B_q} \right\rfloor + 1,\ "
                r"\left\lfloor \tfrac{j - 1}{B_k} \right\rfloor + 1\right)",)
    if stage == "tile_scores":
        return (r"S = Q_i K_j^{\top} / \sqrt{d} \in \mathbb{R}^{B_q \times B_k}",)
    if stage == "running_max":
        return (sp.latex(sp.Eq(mn[i], sp.Max(m[i], sp.Symbol(r"\max_j S_{i,j}")), evaluate=False)) + r", \quad m^{(0)}_i = -\infty, "
                r"\ l^{(0)}_i = 0,\ O^{(0)} = 0",)
    if stage == "running_sum":
        return (sp.latex(sp.Eq(p[i, j], sp.exp(s[i, j] - mn[i]), evaluate=False)),
                sp.latex(sp.Eq(ln[i], sp.exp(m[i] - mn[i]) * l_[i] + sp.Sum(p[i, j], (j, 1, sp.Symbol("B_k"))), evaluate=False)))
    if stage == "partial_output":
        return (sp.latex(sp.Eq(on[i, c], sp.exp(m[i] - mn[i]) * o[i, c]
                               + sp.Sum(p[i, j] * v[j, c], (j, 1, sp.Symbol("B_k"))), evaluate=False)),)
    if stage == "final":
        return (r"\mathrm{output}_{i,c} = \frac{O_{i,c}}{l_i} = \sum_j \frac{e^{S_{i,j} - m_i}}{\sum_k e^{S_{i,k} - m_i}}"
                r"\, v_{j,c} = \left(\operatorname{softmax}(S) V\right)_{i,c}",)
    raise KeyError(stage)


# ---------------------------------------------------------------- one entry, with its numbers in

def explain_flash(walk: FlashWalkthrough, stage: str, row: int, col: int, tr: Translate = Message) -> str:
    """One entry (row, col) of ``stage``'s explained panel (rows within the tile), numbers in, as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(flash_panels(walk, stage), row, col)
    tile, trace = walk.current, walk.trace
    if stage == "tiles":
        qb, kb = row // trace.block_q + 1, col // trace.block_k + 1
        return (f"(i, j) = ({row + 1}, {col + 1}):\\ \\left(\\left\\lfloor \\tfrac{{{row}}}{{{trace.block_q}}}"
                f"\\right\\rfloor + 1,\\ \\left\\lfloor \\tfrac{{{col}}}{{{trace.block_k}}}\\right\\rfloor + 1\\right)"
                f" = ({qb}, {kb}) \\Rightarrow \\#{int(value)}")
    if stage == "final":
        # row indexes every token here
        qb = row // trace.block_q
        last = max(k for k, x in enumerate(trace.tiles) if x.query_block == qb)
        o = float(trace.tiles[last].output_after[row - trace.tiles[last].rows.start, col])
        return (f"\\mathrm{{output}}_{{{row + 1},{col + 1}}} = \\frac{{O_{{{row + 1},{col + 1}}}}}{{l_{{{row + 1}}}}}"
                f" = \\frac{{{number(o)}}}{{{number(float(trace.total[row]))}}} = {number(value)}")
    i = tile.rows[row]  # the tile stages' rows are the tile's
    if stage == "tile_scores":
        j = tile.cols[col]
        if value == float("-inf"):
            return f"S_{{{i + 1},{j + 1}}} = -\\infty \\quad ({j + 1} > {i + 1})"
        return entries.scaled_score_entry_latex(i, j, walk.query[i].tolist(), walk.key[j].tolist(), walk.query.shape[-1],
                                           value)
    if stage == "running_max":
        before, top, after = (float(x) for x in (tile.max_before[row], tile.scores[row].max(), tile.max_after[row]))
        if col == 0:
            return f"m_{{{i + 1}}} = {number(before)}"
        if col == 1:
            return (f"\\max_j S_{{{i + 1},j}} = \\max({', '.join(number(float(x)) for x in tile.scores[row])}) = "
                    f"{number(top)}")
        return f"m'_{{{i + 1}}} = \\max({number(before)}, {number(top)}) = {number(after)}"
    if stage == "running_sum":
        names = ("l", "e^{m - m'}", r"\sum_j P", "l'")
        if col < 3:
            if col == 1:
                return (f"e^{{m_{{{i + 1}}} - m'_{{{i + 1}}}}} = e^{{{number(float(tile.max_before[row]))} - "
                        f"{factor(float(tile.max_after[row]))}}} = {number(value)}")
            if col == 2:
                terms = [number(float(x)) for x in tile.exp_scores[row]]
                return aligned(f"\\sum_j P_{{{i + 1},j}}", [terms_lines(terms), number(value)])
            return f"{names[col]}_{{{i + 1}}} = {number(value)}"
        return aligned(f"l'_{{{i + 1}}}", [
            f"e^{{m - m'}} \\cdot l + \\sum_j P_{{{i + 1},j}}",
            f"{number(float(tile.rescale[row]))} \\cdot {factor(float(tile.sum_before[row]))} + "
            f"{factor(float(tile.exp_scores[row].sum()))}", number(value)])
    if stage == "partial_output":
        terms = [f"{number(float(p))} \\cdot {factor(float(walk.value[j, col]))}"
                 for p, j in zip(tile.exp_scores[row], tile.cols)]
        return aligned(f"O'_{{{i + 1},{col + 1}}}", [
            f"e^{{m - m'}} O_{{{i + 1},{col + 1}}} + \\sum_j P_{{{i + 1},j}} v_{{j,{col + 1}}}",
            f"{number(float(tile.rescale[row]))} \\cdot {factor(float(tile.output_before[row, col]))} + "
            + terms_lines(terms), number(value)])
    raise KeyError(stage)


def flash_exercise(walk: FlashWalkthrough, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` as an exercise (practice mode): a tile's score, the new running maximum, the
    final output O / l; None elsewhere (the tile numbering, and the running sum and output, which the page
    works through term by term).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(flash_panels(walk, stage), row, col)
    tile, trace = walk.current, walk.trace
    if stage == "final":
        qb = row // trace.block_q
        last = max(k for k, x in enumerate(trace.tiles) if x.query_block == qb)
        o = float(trace.tiles[last].output_after[row - trace.tiles[last].rows.start, col])
        return practice.value_exercise(f"\\mathrm{{output}}_{{{row + 1},{col + 1}}}",
                                       f"\\frac{{O_{{{row + 1},{col + 1}}}}}{{l_{{{row + 1}}}}}",
                                       (f"O_{{{row + 1},{col + 1}}} = {number(o)}",
                                        f"l_{{{row + 1}}} = {number(float(trace.total[row]))}"), value)
    if stage not in ("tile_scores", "running_max"):
        return None
    i = tile.rows[row]
    if stage == "tile_scores":
        j = tile.cols[col]
        if value == float("-inf"):
            return None
        q, k = walk.query, walk.key
        return practice.scale_exercise(
            f"S_{{{i + 1},{j + 1}}}", f"\\frac{{q_{{{i + 1}}} \\cdot k_{{{j + 1}}}}}{{\\sqrt{{d}}}}", "",
            float(q[i] @ k[j]), q.shape[-1], value, d_name="d", d_latex="d",
            dot=((f"q_{{{i + 1}}}", q[i].tolist()), (f"k_{{{j + 1}}}", k[j].tolist())), swapped=float(q[j] @ k[i]))
    if col != 2 or value == float("-inf"):
        return None  # m (before) is carried over and the tile's maximum is read off: m' is computed
    return practice.value_exercise(
        f"m'_{{{i + 1}}}", f"\\max\\left(m_{{{i + 1}}},\\ \\max_j S_{{{i + 1},j}}\\right)",
        (f"m_{{{i + 1}}} = {number(float(tile.max_before[row]))}",
         practice.vector(f"S_{{{i + 1},:}}", tile.scores[row].tolist())), value)


def flash_attention_step_through(walk: FlashWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` for the shown tile in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in FLASH_ATTENTION.stages:
        raise KeyError(stage)
    remark = None
    if stage in ("tiles", "final"):
        full, tiled = walk.trace.stored_numbers(len(walk.tokens), walk.value.shape[-1])
        remark = Message(N_("Standard attention stores all T × T = {full} scores; the tiled way keeps {tiled} numbers "
                            "at a time (one tile, and m, l and O of its rows), whatever T is. Max |tiled − full| = "
                            "{diff:.1e}."), full=full, tiled=tiled,
                         diff=float((walk.trace.output - walk.reference).abs().max()))
    return StepThrough(
        page=FLASH_ATTENTION,
        stage=Stage(key=stage, panels=flash_panels(walk, stage), formula=lambda tr: flash_formula(stage),
                    entry=lambda row, col, head, tr: explain_flash(walk, stage, row, col, tr),
                    exercise=lambda row, col, head: flash_exercise(walk, stage, row, col),
                    code=(flash_attention,), remark=remark),
        checks=walk.checks,
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class FlashAttentionSettings:
    """The FlashAttention page's own settings (``settings.flash_attention``).

    Attributes:
        block_q, block_k: B_q and B_k, the query and key block sizes (1..MAX_TOKENS; at most the sentence's length,
            checked on the page with a message).
        tile: the tile the step-through shows (0-based; the page keeps it below the number of tiles).
    """

    block_q: int = 2
    block_k: int = 3
    tile: int = 0


FLASH_ATTENTION = Page(
    key="flash_attention", title=N_("FlashAttention: online softmax"), icon=":material/bolt:", section="modern",
    summary=N_("FlashAttention: the online softmax, tile by tile, without the T × T matrix"),
    stages={
        "tiles": N_("Cut the scores into tiles: B_q queries × B_k keys"),
        "tile_scores": N_("One tile's scores: Q_i K_jᵀ / √d"),
        "running_max": N_("The running maximum m of each row"),
        "running_sum": N_("The running sum l, rescaled by e^(m − m')"),
        "partial_output": N_("The running output O, rescaled, plus P V_j"),
        "final": N_("After the last key block: O / l equals full attention"),
    },
    build=build_flash_attention_walkthrough, step_through=flash_attention_step_through, default_stage="running_sum",
    default_stage_why=N_("The running sum, rescaled as each tile arrives, is the heart of the online softmax; the tiles and the running maximum come before."), recipe=flash_attention_recipe,
    settings=FlashAttentionSettings,
    fields=(
        IntRange("block_q", 1, MAX_TOKENS, "block_q"),
        IntRange("block_k", 1, MAX_TOKENS, "block_k"),
        IntRange("tile", 0, MAX_TOKENS * MAX_TOKENS - 1, label(N_("The tile")), one_based=True),
    ),
    legacy={"block_q": "block_q", "block_k": "block_k", "flash_tile": "tile", "flash_stage": "stage"},
)
