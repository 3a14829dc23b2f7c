r"""The *Multi-head latent attention* page's heatmaps, one entry with its numbers in, and that entry as an exercise.

:func:`mla_panels` gives each stage's panels for the walk-through's chosen head r (exactly one explained);
:func:`explain_mla` writes the explained entry as LaTeX with its numbers in; :func:`mla_exercise` asks it in practice
mode, naming the mistakes of this page (the rotation's sign, RoPE forgotten, the RoPE part of the score forgotten,
÷ √d_h instead of ÷ √(d_h + d_R)) besides the shared ones.

Shape legend: T tokens, D = d_model, h heads, d_h = head_dim, d_R the RoPE part, d_c / d_c' the latents. Head r's
columns of W_UK, W_UV, W_UQ are r d_h … (r + 1) d_h − 1 (0-based). Indices on screen are 1-based.

Sources: DeepSeek-V2 (DeepSeek-AI 2024), sec. 2.1.2-2.1.3, eqs. 9-19.
"""

from __future__ import annotations

import math
from typing import Optional

import torch

from attention_core import practice
from attention_core.entry_formulas import masked_weight_entry_latex
from attention_core.errors import N_, Message
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import Translate, aligned, factor, number, terms_lines
from attention_core.lessons.mla.walk import MLAWalkthrough
from attention_core.modern.mla import DEEPSEEK_V3, V3_GQA_KV_HEADS
from attention_core.modern.rope import frequencies
from attention_core.stepthrough import Panel, explained_value

_TOKEN, _QUERY, _KEY = Message(N_("token")), Message(N_("query token")), Message(N_("key token"))
_COLUMN, _VARIANT = Message(N_("column")), Message(N_("variant"))


def _variants(walk: MLAWalkthrough) -> tuple[str, ...]:
    h, g = walk.trace.num_heads, walk.gqa_kv_heads
    return (f"MHA ({h})", f"GQA ({g})", "MQA (1)", "MLA")


def _head_columns(walk: MLAWalkthrough) -> slice:
    d_h = walk.trace.head_dim
    return slice(walk.head * d_h, (walk.head + 1) * d_h)


def mla_panels(walk: MLAWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage`` for head r = ``walk.head``; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    t, r = walk.trace, walk.head
    rows = tuple(token_labels(walk.tokens))
    d_h, d_r = t.head_dim, t.rope_dim
    head = f"r = {r + 1}"
    if stage == "latents":
        return (Panel("c^KV = X W_DKV", t.latent_kv, rows, tuple(dim_labels("c", t.latent_kv.shape[-1])), _TOKEN,
                      _COLUMN),
                Panel("c^Q = X W_DQ", t.latent_q, rows, tuple(dim_labels("c", t.latent_q.shape[-1])), _TOKEN, _COLUMN,
                      explained=False))
    if stage == "up":
        cols = tuple(dim_labels("d", d_h))
        return (Panel(f"K^C = c^KV W_UK ({head})", t.key_content[r], rows, cols, _TOKEN, _COLUMN),
                Panel(f"V = c^KV W_UV ({head})", t.value[r], rows, cols, _TOKEN, _COLUMN, explained=False),
                Panel(f"Q^C = c^Q W_UQ ({head})", t.query_content[r], rows, cols, _TOKEN, _COLUMN, explained=False))
    if stage == "rope":
        cols = tuple(dim_labels("d", d_r))
        return (Panel(Message(N_("X W_KR, before RoPE")), t.key_rope_raw, rows, cols, _TOKEN, _COLUMN,
                      explained=False),
                Panel(Message(N_("k^R = RoPE(X W_KR), shared by every head")), t.key_rope, rows, cols, _TOKEN,
                      _COLUMN),
                Panel(f"q^R = RoPE(c^Q W_QR) ({head})", t.query_rope[r], rows, cols, _TOKEN, _COLUMN,
                      explained=False))
    if stage == "scores":
        cols = tuple(dim_labels("C", d_h)) + tuple(dim_labels("R", d_r))
        return (Panel(f"q = [q^C; q^R] ({head})", t.query[r], rows, cols, _TOKEN, _COLUMN, explained=False),
                Panel(f"k = [k^C; k^R] ({head})", t.key[r], rows, cols, _TOKEN, _COLUMN, explained=False),
                Panel(Message(N_("Scores q kᵀ / √{width}, causal ({head})"), width=d_h + d_r, head=head),
                      t.attention.masked_scores[r], rows, rows, _QUERY, _KEY))
    if stage == "weights":
        return (Panel(Message(N_("Weights, head {r}"), r=r + 1), t.attention.weights[r], rows, rows, _QUERY, _KEY),
                Panel(Message(N_("The head's output o = weights · V ({head})"), head=head), t.attention.output[r], rows, tuple(dim_labels("d", d_h)), _TOKEN,
                      _COLUMN, explained=False))
    if stage == "output":
        cols = tuple(f"{k // d_h + 1}·{k % d_h + 1}" for k in range(t.concat.shape[-1]))
        return (Panel(Message(N_("The heads' outputs side by side")), t.concat, rows, cols, _TOKEN,
                      Message(N_("head · column")), explained=False),
                Panel("u = [o_1 … o_h] W_O", t.output, rows, tuple(dim_labels("d", t.output.shape[-1])), _TOKEN,
                      _COLUMN))
    if stage == "cache":
        v3 = DEEPSEEK_V3
        return (Panel(Message(N_("Numbers cached per token and layer, this page's sizes")), walk.cache[:, None],
                      _variants(walk), (Message(N_("numbers")),), _VARIANT, ""),
                Panel(Message(N_("DeepSeek-V3 (h = {h}, d_h = {d_h}, d_c = {d_c}, d_R = {d_r}; GQA with {g} key/value "
                                 "heads): numbers per token and layer, and how many times MLA's"), h=v3["num_heads"],
                              d_h=v3["head_dim"], d_c=v3["kv_latent"], d_r=v3["rope_dim"], g=V3_GQA_KV_HEADS),
                      walk.cache_v3[:, :1] / walk.cache_v3[3, 0],
                      tuple(f"{name} {int(n):,}" for name, n in zip(("MHA", "GQA", "MQA", "MLA"),
                                                                     walk.cache_v3[:, 0].tolist())),
                      (Message(N_("× MLA's")),), _VARIANT, "", explained=False))
    if stage == "absorption":
        return (Panel(f"q̃ = q^C W_UKᵀ ({head})", walk.absorbed_query[r], rows,
                      tuple(dim_labels("c", walk.absorbed_query.shape[-1])), _TOKEN, _COLUMN),
                Panel(Message(N_("(q̃ c^KVᵀ + q^R k^Rᵀ) / √(d_h + d_R): from the cache alone")), walk.absorbed[r], rows,
                      rows, _QUERY, _KEY, explained=False),
                Panel(Message(N_("Absorbed − scores (float32 rounding)")),
                      walk.absorbed[r] - t.attention.scaled_scores[r], rows, rows, _QUERY, _KEY, explained=False))
    if stage == "decoupling":
        c = walk.coupled
        return (Panel(Message(N_("RoPE inside k^C: the true scores (R_i q^C) · (R_j k^C) / √d_h")), c.scores[r], rows,
                      rows, _QUERY, _KEY, explained=False),
                Panel(Message(N_("What absorption computes from c^KV: (R_i q^C W_UKᵀ) · c^KV / √d_h")), c.absorbed[r],
                      rows, rows, _QUERY, _KEY, explained=False),
                Panel(Message(N_("Absorbed − true: the mismatch")), c.difference[r], rows, rows, _QUERY, _KEY))
    raise KeyError(stage)


def _dot_lines(lhs: str, general: str, left: list[float], right: list[float], value: float) -> str:
    terms = [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(left, right)]
    return aligned(lhs, [general, terms_lines(terms), number(value)])


def _rope_parts(raw: torch.Tensor, angles: torch.Tensor, row: int, col: int) -> tuple[float, float, float, int, int]:
    """(own, partner, φ, sign, pair) of entry (row, col) of RoPE: value = own cos φ + sign · partner sin φ, φ the
    angle of pair ``pair`` (0-based) at position m = row."""
    half = raw.shape[-1] // 2
    pair = col % half
    partner = col + half if col < half else col - half
    return float(raw[row, col]), float(raw[row, partner]), float(angles[row, pair]), (-1 if col < half else 1), pair


def explain_mla(walk: MLAWalkthrough, stage: str, row: int, col: int, tr: Translate = Message) -> str:
    """One entry (row, col) of ``stage``'s explained panel, numbers in, as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(mla_panels(walk, stage), row, col)
    t, r = walk.trace, walk.head
    i, j = row + 1, col + 1
    w = t.weights
    if stage == "latents":
        return _dot_lines(f"c^{{KV}}_{{{i},{j}}}", f"\\sum_l x_{{{i},l}}\\, W^{{DKV}}_{{l,{j}}}", t.x[row].tolist(),
                          w["w_dkv"][:, col].tolist(), value)
    if stage == "up":
        column = r * t.head_dim + col
        return _dot_lines(f"k^{{C,({r + 1})}}_{{{i},{j}}}", f"\\sum_a c^{{KV}}_{{{i},a}}\\, W^{{UK}}_{{a,{column + 1}}}",
                          t.latent_kv[row].tolist(), w["w_uk"][:, column].tolist(), value)
    if stage == "rope":
        own, partner, phi, sign, pair = _rope_parts(t.key_rope_raw, t.angles, row, col)
        p = col + t.rope_dim // 2 + 1 if sign < 0 else col - t.rope_dim // 2 + 1
        op = "-" if sign < 0 else "+"
        theta = float(frequencies(t.rope_dim)[pair])
        return aligned(f"k^{{R}}_{{{i},{j}}}", [
            f"\\tilde{{k}}^{{R}}_{{{i},{j}}} \\cos \\phi {op} \\tilde{{k}}^{{R}}_{{{i},{p}}} \\sin \\phi, \\quad "
            f"\\phi = m\\, \\theta_{{{pair + 1}}} = {row} \\cdot {number(theta)} = {number(phi)}",
            f"{factor(own)} \\cdot {factor(math.cos(phi))} {op} {factor(partner)} \\cdot {factor(math.sin(phi))}",
            number(value)])
    if stage == "scores":
        if col > row:
            return f"a^{{({r + 1})}}_{{{i},{j}}} = -\\infty \\quad ({j} > {i})"
        qc, kc = t.query_content[r, row].tolist(), t.key_content[r, col].tolist()
        qr, kr = t.query_rope[r, row].tolist(), t.key_rope[col].tolist()
        content, rope = math.fsum(a * b for a, b in zip(qc, kc)), math.fsum(a * b for a, b in zip(qr, kr))
        width = t.head_dim + t.rope_dim
        terms_c = [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(qc, kc)]
        terms_r = [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(qr, kr)]
        return ("\\begin{aligned} "
                f"q^{{C}}_{{{i}}} \\cdot k^{{C}}_{{{j}}} &= {terms_lines(terms_c, per_line=2)} = {number(content)} \\\\ "
                f"q^{{R}}_{{{i}}} \\cdot k^{{R}}_{{{j}}} &= {terms_lines(terms_r, per_line=2)} = {number(rope)} \\\\ "
                f"a^{{({r + 1})}}_{{{i},{j}}} &= \\frac{{q^{{C}}_{{{i}}} \\cdot k^{{C}}_{{{j}}} + q^{{R}}_{{{i}}} \\cdot "
                f"k^{{R}}_{{{j}}}}}{{\\sqrt{{d_h + d_R}}}} = \\frac{{{number(content)} + {factor(rope)}}}{{\\sqrt{{{width}}}}}"
                f" = {number(value)} \\end{{aligned}}")
    if stage == "weights":
        return masked_weight_entry_latex(row, col, t.attention.masked_scores[r, row].tolist(), value, head=r, tr=tr)
    if stage == "output":
        return _dot_lines(f"u_{{{i},{j}}}", f"\\sum_l o_{{{i},l}}\\, W^{{O}}_{{l,{j}}}", t.concat[row].tolist(),
                          w["w_out"][:, col].tolist(), value)
    if stage == "cache":
        h, d_h, g = t.num_heads, t.head_dim, walk.gqa_kv_heads
        return (f"N_{{\\mathrm{{MHA}}}} = 2 h d_h = 2 \\cdot {h} \\cdot {d_h} = {2 * h * d_h}",
                f"N_{{\\mathrm{{GQA}}}} = 2 g d_h = 2 \\cdot {g} \\cdot {d_h} = {2 * g * d_h}",
                f"N_{{\\mathrm{{MQA}}}} = 2 d_h = 2 \\cdot {d_h} = {2 * d_h}",
                f"N_{{\\mathrm{{MLA}}}} = d_c + d_R = {t.latent_kv.shape[-1]} + {t.rope_dim} = "
                f"{t.latent_kv.shape[-1] + t.rope_dim}")[row]
    if stage == "absorption":
        w_uk = w["w_uk"][col, r * t.head_dim:(r + 1) * t.head_dim]
        return _dot_lines(f"\\tilde{{q}}^{{({r + 1})}}_{{{i},{j}}}", f"\\sum_b q^{{C}}_{{{i},b}}\\, W^{{UK,({r + 1})}}_"
                          f"{{{j},b}}", t.query_content[r, row].tolist(), w_uk.tolist(), value)
    if stage == "decoupling":
        c = walk.coupled
        return (f"\\Delta_{{{i},{j}}} = {number(float(c.absorbed[r, row, col]))} - "
                f"{factor(float(c.scores[r, row, col]))} = {number(value)}"
                + (" \\quad (j = 1:\\ R_1 = I)" if col == 0 else ""))
    raise KeyError(stage)


def _mistake(key: str, value: float, template: str, **params: object) -> practice.Mistake:
    return practice.Mistake(key, value, Message(template, value=f"{value:.4g}", **params))


def mla_exercise(walk: MLAWalkthrough, stage: str, row: int, col: int) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` as an exercise; None for the cache table and the mismatch (read off) and for the
    masked scores above the diagonal.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(mla_panels(walk, stage), row, col)
    t, r = walk.trace, walk.head
    i, j = row + 1, col + 1
    w = t.weights
    if stage == "latents":
        return practice.dot_exercise(f"c^{{KV}}_{{{i},{j}}}", f"\\sum_l x_{{{i},l}}\\, W^{{DKV}}_{{l,{j}}}",
                                     (f"x_{{{i}}}", t.x[row].tolist()), (f"W^{{DKV}}_{{:,{j}}}", w["w_dkv"][:, col].tolist()),
                                     value)
    if stage == "up":
        column = r * t.head_dim + col
        return practice.dot_exercise(f"k^{{C}}_{{{i},{j}}}", f"\\sum_a c^{{KV}}_{{{i},a}}\\, W^{{UK}}_{{a,{column + 1}}}",
                                     (f"c^{{KV}}_{{{i}}}", t.latent_kv[row].tolist()),
                                     (f"W^{{UK}}_{{:,{column + 1}}}", w["w_uk"][:, column].tolist()), value)
    if stage == "rope":
        own, partner, phi, sign, _pair = _rope_parts(t.key_rope_raw, t.angles, row, col)
        mistakes = [_mistake("rope_not_rotated", own, N_("That is {value}, the entry before RoPE: rotate the pair by "
                                                         "φ = m θ first.")),
                    _mistake("rope_sin_sign", own * math.cos(phi) - sign * partner * math.sin(phi),
                             N_("That is {value}: the rotation went the other way. The first of a pair gets − its "
                                "partner · sin φ, the second + its partner · sin φ."))]
        p = col + t.rope_dim // 2 + 1 if sign < 0 else col - t.rope_dim // 2 + 1
        own_name, partner_name = f"\\tilde{{k}}^{{R}}_{{{i},{j}}}", f"\\tilde{{k}}^{{R}}_{{{i},{p}}}"
        op = "-" if sign < 0 else "+"
        return practice.Exercise(f"k^{{R}}_{{{i},{j}}}", f"{own_name} \\cos\\phi {op} {partner_name} \\sin\\phi",
                                 (f"{own_name} = {number(own)}", f"{partner_name} = {number(partner)}",
                                  f"\\phi = m\\, \\theta = {number(phi)}"),
                                 value, practice._kept(value, mistakes))
    if stage == "scores":
        if col > row:
            return None
        content = float(t.query_content[r, row] @ t.key_content[r, col])
        rope = float(t.query_rope[r, row] @ t.key_rope[col])
        width = t.head_dim + t.rope_dim
        mistakes = [_mistake("mla_rope_part_forgotten", content / math.sqrt(width),
                             N_("That is {value}: only q^C · k^C. The score adds the RoPE part q^R · k^R.")),
                    _mistake("mla_scale_head_dim", (content + rope) / math.sqrt(t.head_dim),
                             N_("That is {value} = (q · k) / √d_h: q and k are d_h + d_R = {width} wide, so divide by "
                                "√{width}."), width=width)]
        return practice.Exercise(
            f"a_{{{i},{j}}}", "\\frac{q^C_i \\cdot k^C_j + q^R_i \\cdot k^R_j}{\\sqrt{d_h + d_R}}",
            (practice.vector(f"q_{{{i}}}", t.query[r, row].tolist()),
             practice.vector(f"k_{{{j}}}", t.key[r, col].tolist()), f"d_h + d_R = {width}"),
            value, practice._kept(value, mistakes))
    if stage == "weights":
        return practice.softmax_exercise(
            f"\\alpha_{{{i},{j}}}", f"\\frac{{e^{{a_{{{i},{j}}}}}}}{{\\sum_l e^{{a_{{{i},l}}}}}}", f"a_{{{i}}}",
            t.attention.masked_scores[r].tolist(), row, col, value,
            unmasked=t.attention.scaled_scores[r].tolist(),
            unscaled=t.attention.scores[r].masked_fill(torch.isinf(t.attention.masked_scores[r]), -math.inf).tolist(),
            d=t.head_dim + t.rope_dim)
    if stage == "output":
        return practice.dot_exercise(f"u_{{{i},{j}}}", f"\\sum_l o_{{{i},l}}\\, W^{{O}}_{{l,{j}}}",
                                     (f"o_{{{i}}}", t.concat[row].tolist()), (f"W^{{O}}_{{:,{j}}}", w["w_out"][:, col].tolist()),
                                     value)
    if stage == "absorption":
        w_uk = w["w_uk"][col, r * t.head_dim:(r + 1) * t.head_dim]
        return practice.dot_exercise(f"\\tilde{{q}}_{{{i},{j}}}", f"\\sum_b q^{{C}}_{{{i},b}}\\, W^{{UK}}_{{{j},b}}",
                                     (f"q^{{C}}_{{{i}}}", t.query_content[r, row].tolist()),
                                     (f"W^{{UK}}_{{{j},:}}", w_uk.tolist()), value)
    return None
