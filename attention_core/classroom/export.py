"""Exports of a step page as Markdown with LaTeX: every stage's formula (LaTeX from sympy), every matrix as a
Markdown table, the page's checks (:func:`steps_markdown`; :func:`walkthrough_markdown` for the
self-attention page). Tokens enter the Markdown escaped. The self-checking script of every step page is
:func:`attention_core.classroom.checking_script.script_for`.
"""

from __future__ import annotations

import re
from typing import Sequence

import torch

from attention_core.errors import N_, Message
from attention_core.latex import Translate
from attention_core.lessons.self_attention.page import SELF_ATTENTION_PAGE
from attention_core.self_attention.formulas import self_attention_formula, stage_matrix
from attention_core.self_attention.walkthrough import Walkthrough, stage_labels
from attention_core.stepthrough import AGAINST_LABEL, StepThrough

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~])")


def markdown_text(text: str) -> str:
    """``text`` (a token, a title) with every Markdown special character escaped: shown as it is written."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def _table(matrix: torch.Tensor, rows: list[str], cols: list[str]) -> str:
    head = "| | " + " | ".join(markdown_text(c) for c in cols) + " |"
    rule = "|---|" + "---:|" * len(cols)
    body = [
        "| " + markdown_text(r) + " | " + " | ".join(f"{v:.6g}" for v in values) + " |"
        for r, values in zip(rows, matrix.tolist())
    ]
    return "\n".join([head, rule, *body])


def walkthrough_markdown(walk: Walkthrough) -> str:
    """The walk-through as Markdown: settings, tokens, each stage's formulas and matrix, the check.

    Formulas are ``$$...$$`` blocks (LaTeX from sympy), rendered by any
    Markdown viewer with math support (GitHub, Jupyter, Obsidian, pandoc).
    """
    s = walk.settings
    lines = [
        "# Scaled dot-product self-attention, step by step",
        "",
        f"Example: {markdown_text(walk.preset.title)} (source: {markdown_text(walk.preset.source)})  ",
        f"Sentence: {markdown_text(s.sentence)}  ",
        f"d_model = {s.d_model}, d_k = {s.d_k}, seed = {s.seed}",
        "",
        "$$\\operatorname{Attention}(Q, K, V) = \\operatorname{softmax}\\left(\\frac{Q K^\\top}{\\sqrt{d_k}}\\right) V$$",
        "",
        "Tokens and ids: " + ", ".join(f"{markdown_text(t)} → {i}" for t, i in zip(walk.tokens, walk.token_ids)),
    ]
    for stage, title in SELF_ATTENTION_PAGE.stages.items():
        matrix_form, element_form = self_attention_formula(stage)
        rows, cols = stage_labels(walk, stage)
        lines += [
            "", f"## {markdown_text(title)}", "",
            f"$${matrix_form}$$", "", f"$${element_form}$$", "",
            _table(stage_matrix(walk.trace, stage), rows, cols),
        ]
    verdict = "match" if walk.torch_matches else "DO NOT match"
    lines += [
        "", "## Check", "",
        f"Our output and `torch.nn.functional.scaled_dot_product_attention(Q, K, V)` {verdict}: "
        f"max |difference| = {walk.torch_max_abs_diff:.2e}.",
        "",
    ]
    return "\n".join(lines)


def steps_markdown(title: str, settings_line: str, steps: Sequence[StepThrough], tr: Translate = Message) -> str:
    """Any step page's walk-through as Markdown, from the step-through protocol: each stage's title, its general
    formula (``$$...$$``, LaTeX from sympy), every heatmap as a table with its labels, and the page's checks, each
    under what it was compared with (PyTorch, transformers, a float loop, a second route). ``tr`` translates the app's words (stage and panel titles, labels); tokens are escaped.
    """
    def text(value: str) -> str:
        return markdown_text(str(tr(value)) if isinstance(value, Message) else str(value))

    lines = [f"# {markdown_text(title)}", "", markdown_text(settings_line)]
    for step in steps:
        lines += ["", f"## {text(step.titles[step.stage.key])}", ""]
        lines += [f"$${line}$$\n" for line in step.stage.formula(tr)]
        for panel in step.stage.panels:
            if panel.title:
                lines += [f"**{text(panel.title)}**", ""]
            lines += [_table(panel.matrix, [text(r) for r in panel.row_labels], [text(c) for c in panel.col_labels]), ""]
    checks = steps[-1].checks if steps else ()
    if checks:
        lines += [f"## {text(Message(N_('Checks')))}", ""]
        lines += [f"- {text(Message(AGAINST_LABEL[c.against]))}: `{c.reference}`: max |difference| = "
                  f"{c.max_abs_diff:.2e} ({'match' if c.matches else 'DO NOT match'})" for c in checks]
    return "\n".join(lines) + "\n"
