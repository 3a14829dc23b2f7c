r"""The *DeepSeek sparse attention* page's heatmaps, one entry with its numbers in, and that entry as an exercise.

:func:`sparse_panels` gives each stage's panels for the walk-through's MLA head r (exactly one explained);
:func:`explain_sparse` writes the explained entry as LaTeX with its numbers in; :func:`sparse_exercise` asks it in
practice mode, naming this page's mistakes (the indexer's 1/√H_I forgotten, ReLU forgotten or put on the sum, the
head weights forgotten, the dropped keys kept in the softmax, the kept keys' mass instead of the dropped ones')
besides the shared ones.

Shape legend: T tokens, D = d_model, H_I indexer heads of width d_I, h MLA heads of width d_h. Indices on screen are
1-based: t a query, s a key, j an indexer head.

Sources: DeepSeek-AI 2025, "DeepSeek-V3.2-Exp", sec. 2.1, eqs. 1-2; DeepSeek-V2 2024, eqs. 9-19 (MLA).
"""

from __future__ import annotations

import math
from typing import Optional

import torch

from attention_core import practice
from attention_core.entry_formulas import masked_weight_entry_latex
from attention_core.errors import N_, Message
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import Translate, aligned, factor, latex_text, number, terms_lines, words_and_math
from attention_core.lessons.sparse_attention.walk import SparseWalkthrough
from attention_core.masks import causal_mask
from attention_core.modern.sparse import DEEPSEEK_V32, LONG_CONTEXT, ties_at_the_cut
from attention_core.stepthrough import Panel, explained_value

_TOKEN, _QUERY, _KEY = Message(N_("token")), Message(N_("query token")), Message(N_("key token"))
_COLUMN = Message(N_("column"))


def _blocked(scores: torch.Tensor) -> torch.Tensor:
    """``scores`` (T, T) with −inf above the diagonal (the future keys)."""
    return scores.masked_fill(~causal_mask(scores.shape[-1]), -math.inf)


def kept_matrix(walk: SparseWalkthrough) -> torch.Tensor:
    """(T, T): 1 where query t keeps key s, 0 where the indexer dropped it, −inf on the future keys."""
    return _blocked(walk.trace.indexer.kept.float())


def _work_rows(walk: SparseWalkthrough) -> tuple:
    t, k = len(walk.tokens), walk.trace.indexer.top_k
    return (Message(N_("This sentence: T = {t}, k = {k}"), t=t, k=k),
            Message(N_("{tokens:,} tokens, k = {k:,} (DeepSeek-V3.2)"), tokens=LONG_CONTEXT, k=DEEPSEEK_V32["top_k"]))


def work_table(walk: SparseWalkthrough) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """float32: (2, 1) how many times fewer pairs the main attention scores, on the sentence and at 128K tokens;
    (1, 2) the dense and sparse pairs on the sentence; (1, 2) the same at 128K tokens, in millions (each its own
    panel, so that no panel mixes a handful with billions)."""
    work = walk.trace.work
    return ((work[:, :1] / work[:, 1:]).float(), work[:1].float(), (work[1:] / 1e6).float())


def sparse_panels(walk: SparseWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage`` for MLA head r = ``walk.head``; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    tr, r = walk.trace, walk.head
    ix = tr.indexer
    rows = tuple(token_labels(walk.tokens))
    head = f"r = {r + 1}"
    if stage == "indexer":
        d_i = ix.index_dim
        q_cols = tuple(f"{c // d_i + 1}·{c % d_i + 1}" for c in range(ix.index_heads * d_i))
        return (Panel(Message(N_("The indexer's queries q^I = RoPE(c_Q W^I_Q), every indexer head")),
                      ix.query.transpose(0, 1).reshape(len(rows), -1), rows, q_cols, _TOKEN,
                      Message(N_("indexer head · column")), explained=False),
                Panel(Message(N_("The indexer's keys k^I = RoPE(X W^I_K), one per token")), ix.key, rows,
                      tuple(dim_labels("d", d_i)), _TOKEN, _COLUMN, explained=False),
                Panel(Message(N_("Each indexer head's weight w = X W^w / √H_I")), ix.head_weights, rows,
                      tuple(f"j = {j + 1}" for j in range(ix.index_heads)), _TOKEN, Message(N_("indexer head"))))
    if stage == "scores":
        heads = tuple(Panel(Message(N_("ReLU(q^I · k^I / √d_I), indexer head {j}"), j=j + 1), _blocked(ix.relu[j]),
                            rows, rows, _QUERY, _KEY, explained=False) for j in range(min(ix.index_heads, 2)))
        return heads + (Panel(Message(N_("The index scores I = Σ_j w_j · ReLU(…)")), ix.scores, rows, rows, _QUERY,
                              _KEY),)
    if stage == "topk":
        return (Panel(Message(N_("The index scores I")), ix.scores, rows, rows, _QUERY, _KEY, explained=False),
                Panel(Message(N_("Kept by the top-{k}: 1 kept, 0 dropped"), k=ix.top_k), kept_matrix(walk), rows,
                      rows, _QUERY, _KEY))
    if stage == "weights":
        return (Panel(Message(N_("MLA's scores with the sparse mask ({head})"), head=head),
                      tr.sparse.attention.masked_scores[r], rows, rows, _QUERY, _KEY, explained=False),
                Panel(Message(N_("Sparse weights, head {r}"), r=r + 1), tr.sparse.attention.weights[r], rows, rows,
                      _QUERY, _KEY),
                Panel(Message(N_("Dense weights, head {r} (every key)"), r=r + 1), tr.dense.attention.weights[r],
                      rows, rows, _QUERY, _KEY, explained=False))
    if stage == "output":
        d_model = tr.sparse.output.shape[-1]
        return (Panel(Message(N_("The head's output o = weights · V, kept keys only ({head})"), head=head),
                      tr.sparse.attention.output[r], rows, tuple(dim_labels("d", tr.sparse.head_dim)), _TOKEN,
                      _COLUMN),
                Panel("u = [o_1 … o_h] W_O", tr.sparse.output, rows, tuple(dim_labels("d", d_model)), _TOKEN,
                      _COLUMN, explained=False),
                Panel(Message(N_("Dense attention's u (every key)")), tr.dense.output, rows,
                      tuple(dim_labels("d", d_model)), _TOKEN, _COLUMN, explained=False))
    if stage == "lost":
        d_model = tr.sparse.output.shape[-1]
        return (Panel(Message(N_("Weight dense attention gave the dropped keys, per head")), tr.dropped_mass.T, rows,
                      tuple(f"r = {q + 1}" for q in range(tr.dense.num_heads)), _QUERY, Message(N_("head"))),
                Panel("|u − u_dense|", (tr.sparse.output - tr.dense.output).abs(), rows,
                      tuple(dim_labels("d", d_model)), _TOKEN, _COLUMN, explained=False))
    if stage == "work":
        ratio, here, long = work_table(walk)
        pairs = (Message(N_("dense")), Message(N_("sparse")))
        return (Panel(Message(N_("How many times fewer pairs the main attention scores")), ratio, _work_rows(walk),
                      (Message(N_("dense ÷ sparse")),), "", ""),
                Panel(Message(N_("Key–query pairs scored on this sentence")), here, _work_rows(walk)[:1], pairs, "",
                      "", explained=False),
                Panel(Message(N_("Key–query pairs scored at {tokens:,} tokens (millions)"), tokens=LONG_CONTEXT), long,
                      _work_rows(walk)[1:], pairs, "", "", explained=False))
    raise KeyError(stage)


def _dot(left: list[float], right: list[float]) -> list[str]:
    return [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(left, right)]


def _index_terms(walk: SparseWalkthrough, row: int, col: int) -> tuple[list[float], list[float]]:
    """(w_{t,j}, q^I_{t,j} · k^I_s / √d_I) for every indexer head j."""
    ix = walk.trace.indexer
    return ix.head_weights[row].tolist(), ix.dots[:, row, col].tolist()


def explain_sparse(walk: SparseWalkthrough, stage: str, row: int, col: int, tr: Translate,
                   panels: Optional[tuple[Panel, ...]] = None) -> str:
    """One entry (row, col) of ``stage``'s explained panel, numbers in, as LaTeX; ``panels``: the stage's
    :func:`sparse_panels`, when the caller has them (the step-through asks for every entry of a stage).

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(panels or sparse_panels(walk, stage), row, col)
    t, r = walk.trace, walk.head
    ix = t.indexer
    i, j = row + 1, col + 1
    if stage == "indexer":
        terms = _dot(t.dense.x[row].tolist(), ix.weights["w_iw"][:, col].tolist())
        raw = math.fsum(a * b for a, b in zip(t.dense.x[row].tolist(), ix.weights["w_iw"][:, col].tolist()))
        return aligned(f"w_{{{i},{j}}}", [f"\\frac{{1}}{{\\sqrt{{H_I}}}} \\sum_l x_{{{i},l}}\\, W^{{w}}_{{l,{j}}}",
                                          f"\\frac{{1}}{{\\sqrt{{{ix.index_heads}}}}} \\left({terms_lines(terms)}\\right)",
                                          f"\\frac{{{number(raw)}}}{{\\sqrt{{{ix.index_heads}}}}}", number(value)])
    if stage == "scores":
        if col > row:
            return f"I_{{{i},{j}}} = -\\infty \\quad ({j} > {i})"
        weights, dots = _index_terms(walk, row, col)
        terms = [f"{factor(w)} \\cdot \\max(0, {number(d)})" for w, d in zip(weights, dots)]
        kept = [f"{factor(w)} \\cdot {factor(max(0.0, d))}" for w, d in zip(weights, dots)]
        return aligned(f"I_{{{i},{j}}}", ["\\sum_j w_{" + str(i) + ",j} \\max\\!\\left(0, \\frac{q^{I}_{" + str(i)
                                          + ",j} \\cdot k^{I}_{" + str(j) + "}}{\\sqrt{d_I}}\\right)",
                                          terms_lines(terms, per_line=2), terms_lines(kept), number(value)])
    if stage == "topk":
        if col > row:
            return f"M_{{{i},{j}}} = -\\infty \\quad ({j} > {i})"
        visible = ix.scores[row, :row + 1].tolist()
        order = sorted(range(row + 1), key=lambda s: -visible[s])
        rank = order.index(col) + 1
        listed = [f"I_{{{i},{s + 1}}} = {number(visible[s])}" for s in order]
        lines = [latex_text(str(tr(N_("Row {i}'s scores, largest first:"), i=i)))]
        lines += [",\\ ".join(listed[n:n + 2]) for n in range(0, len(listed), 2)]  # two a line: a phone's width
        if row + 1 <= ix.top_k:
            lines.append(words_and_math(str(tr(N_("Query {i} may see {n} key(s) and keeps up to k = {k}: all of them "
                                                  "({cond})."), i=i, n=row + 1, k=ix.top_k, cond="{cond}")),
                                        cond=f"{row + 1} \\le k"))
        else:
            kept_ties, dropped_ties = ties_at_the_cut(ix, row)
            verdict = N_("rank {rank} {cmp} k = {k}: kept") if value == 1 else N_("rank {rank} {cmp} k = {k}: dropped")
            lines.append(words_and_math(str(tr(verdict, rank=rank, k=ix.top_k, cmp="{cmp}")),
                                        cmp=r"\le" if value == 1 else ">"))
            if dropped_ties and col in kept_ties + dropped_ties:
                lines.append(latex_text(str(tr(
                    N_("A tie at the cut: keys {tied} have the same score; torch.topk, which DeepSeek's code calls, "
                       "kept {kept}."), tied=", ".join(str(s + 1) for s in sorted(kept_ties + dropped_ties)),
                    kept=", ".join(str(s + 1) for s in kept_ties)))))
        return r"\begin{gathered} " + r" \\ ".join(lines) + r" \end{gathered}"
    if stage == "weights":
        return masked_weight_entry_latex(row, col, t.sparse.attention.masked_scores[r, row].tolist(), value, head=r,
                                         tr=tr)
    if stage == "output":
        kept = [s for s in range(row + 1) if bool(ix.kept[row, s])]
        terms = [f"{factor(float(t.sparse.attention.weights[r, row, s]))} \\cdot "
                 f"{factor(float(t.sparse.value[r, s, col]))}" for s in kept]
        sup = f"^{{({r + 1})}}"
        return aligned(f"o{sup}_{{{i},{j}}}", [f"\\sum_{{l \\in S_{{{i}}}}} \\alpha{sup}_{{{i},l}}\\, v{sup}_{{l,{j}}}",
                                              terms_lines(terms), number(value)])
    if stage == "lost":
        dropped = [s for s in range(row + 1) if not bool(ix.kept[row, s])]
        if not dropped:
            return f"m^{{({j})}}_{{{i}}} = 0 \\quad (\\lvert S_{{{i}}} \\rvert = {i})"
        weights = [float(t.dense.attention.weights[col, row, s]) for s in dropped]
        names = " + ".join(f"\\alpha^{{\\mathrm{{dense}}}}_{{{i},{s + 1}}}" for s in dropped)
        return aligned(f"m^{{({j})}}_{{{i}}}", [names, " + ".join(factor(w) for w in weights), number(value)])
    if stage == "work":
        t_, k = (len(walk.tokens), ix.top_k) if row == 0 else (LONG_CONTEXT, DEEPSEEK_V32["top_k"])
        k = min(k, t_)
        dense, sparse = (int(n) for n in t.work[row].tolist())  # pairs_scored(T, k), as the panels
        return ("\\begin{aligned} "
                f"N_{{\\mathrm{{dense}}}} &= \\frac{{{t_} \\cdot {t_ + 1}}}{{2}} = {dense:,} \\\\ "
                f"N_{{\\mathrm{{sparse}}}} &= \\frac{{{k} \\cdot {k + 1}}}{{2}} + ({t_} - {k}) \\cdot {k} = {sparse:,} \\\\ "
                f"\\frac{{N_{{\\mathrm{{dense}}}}}}{{N_{{\\mathrm{{sparse}}}}}} &= {number(value)}"
                " \\end{aligned}").replace(",", "{,}")
    raise KeyError(stage)


def _mistake(key: str, value: float, template: str, **params: object) -> practice.Mistake:
    return practice.Mistake(key, value, Message(template, value=f"{value:.4g}", **params))


def sparse_exercise(walk: SparseWalkthrough, stage: str, row: int, col: int,
                    panels: Optional[tuple[Panel, ...]] = None) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` as an exercise (none for the top-k, a choice, and the work table); ``panels`` as
    for :func:`explain_sparse`.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(panels or sparse_panels(walk, stage), row, col)
    t, r = walk.trace, walk.head
    ix = t.indexer
    i, j = row + 1, col + 1
    if stage == "indexer":
        h_i = ix.index_heads
        mistakes = [_mistake("index_weight_scale_forgotten", value * math.sqrt(h_i),
                             N_("That is {value} = x · W^w alone: divide by √H_I = √{h}."), h=h_i)] if h_i > 1 else []
        return practice.Exercise(
            f"w_{{{i},{j}}}", "\\frac{1}{\\sqrt{H_I}} \\sum_l x_{t,l}\\, W^{w}_{l,j}",
            (practice.vector(f"x_{{{i}}}", t.dense.x[row].tolist()),
             practice.vector(f"W^{{w}}_{{:,{j}}}", ix.weights["w_iw"][:, col].tolist()), f"H_I = {h_i}"),
            value, practice._kept(value, mistakes))
    if stage == "scores":
        if col > row:
            return None
        weights, dots = _index_terms(walk, row, col)
        mistakes = [_mistake("index_relu_forgotten", math.fsum(w * d for w, d in zip(weights, dots)),
                             N_("That is {value} = Σ w · (q · k): ReLU first cuts each head's negative dot product "
                                "to 0.")),
                    _mistake("index_relu_of_sum", max(0.0, math.fsum(w * d for w, d in zip(weights, dots))),
                             N_("That is {value} = ReLU(Σ w · (q · k)): ReLU acts on each head's dot product, before "
                                "the weights and the sum.")),
                    _mistake("index_weights_forgotten", math.fsum(max(0.0, d) for d in dots),
                             N_("That is {value} = Σ ReLU(q · k): multiply each head's term by its weight w_j."))]
        inputs = tuple(f"w_{{{i},{h + 1}}} = {number(w)},\\ \\frac{{q^{{I}}_{{{i},{h + 1}}} \\cdot k^{{I}}_{{{j}}}}}"
                       f"{{\\sqrt{{d_I}}}} = {number(d)}" for h, (w, d) in enumerate(zip(weights, dots)))
        return practice.Exercise(f"I_{{{i},{j}}}", "\\sum_j w_{t,j} \\max\\!\\left(0, \\frac{q^{I}_{t,j} \\cdot "
                                 "k^{I}_{s}}{\\sqrt{d_I}}\\right)", inputs, value, practice._kept(value, mistakes))
    if stage == "weights":
        exercise = practice.softmax_exercise(
            f"\\alpha_{{{i},{j}}}", f"\\frac{{e^{{a_{{{i},{j}}}}}}}{{\\sum_{{l \\in S_{{{i}}}}} e^{{a_{{{i},l}}}}}}",
            f"a_{{{i}}}", t.sparse.attention.masked_scores[r].tolist(), row, col, value)
        if math.isinf(float(t.sparse.attention.masked_scores[r, row, col])):
            return exercise
        dense = float(t.dense.attention.weights[r, row, col])
        extra = [_mistake("sparse_dropped_keys_counted", dense,
                          N_("That is {value}, dense attention's weight: the keys the indexer dropped count for "
                             "nothing, so divide by the sum over the kept keys only."))]
        return practice.Exercise(exercise.lhs, exercise.formula, exercise.inputs, value,
                                 practice._kept(value, list(exercise.mistakes) + extra), predict=exercise.predict)
    if stage == "output":
        return practice.weighted_sum_exercise(
            f"o_{{{i},{j}}}", f"\\sum_{{l \\in S_{{{i}}}}} \\alpha_{{{i},l}}\\, v_{{l,{j}}}",
            (f"\\alpha_{{{i}}}", t.sparse.attention.weights[r, row].tolist()),
            (f"v_{{:,{j}}}", t.sparse.value[r, :, col].tolist()), value)
    if stage == "lost":
        dropped = [s for s in range(row + 1) if not bool(ix.kept[row, s])]
        if not dropped:
            return None
        weights = t.dense.attention.weights[col, row]
        mistakes = [_mistake("mass_of_kept_keys", 1.0 - value,
                             N_("That is {value}, the weight of the kept keys: add the dense weights of the dropped "
                                "keys instead."))]
        return practice.Exercise(
            f"m_{{{i}}}", f"\\sum_{{s \\leq {i},\\ s \\notin S_{{{i}}}}} \\alpha^{{\\mathrm{{dense}}}}_{{{i},s}}",
            (practice.vector(f"\\alpha^{{\\mathrm{{dense}}}}_{{{i}}}", weights[:row + 1].tolist()),
             "S_{" + str(i) + "} = \\{" + ", ".join(str(s + 1) for s in range(row + 1) if bool(ix.kept[row, s]))
             + "\\}"),
            value, practice._kept(value, mistakes))
    return None
