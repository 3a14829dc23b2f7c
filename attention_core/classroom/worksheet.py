r"""A printable worksheet of a step page and its answer key, as PDF: the same settings give the same sheet.

:func:`build_worksheet` walks every stage of a step page (through the page's ``steps_for(stage)``, the one
step-through protocol), picks up to ``per_stage`` entries of each stage that has exercises (the same
:class:`~attention_core.practice.Exercise` s as practice mode), chosen by a random generator seeded from the
settings and edits (so one link gives one sheet). :func:`render_pdf` draws it with matplotlib (mathtext for the
formulas, offline, no LaTeX install): the worksheet has one A4 page per stage asked, each blank with the
numbers it needs; the answer key has the same pages with the answers filled in.

Chinese text needs a CJK font on the server (:data:`CJK_FONTS`; Debian's ``fonts-noto-cjk``, Windows' Microsoft
YaHei, macOS' PingFang); :func:`cjk_font` says whether one is there. Formulas come from the exercises' LaTeX,
turned into mathtext by :func:`mathtext_lines` (bracketed vectors, at most 8 numbers per line).
"""

from __future__ import annotations

import io
import random
import re
import zlib
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Optional, Sequence

from attention_core.errors import N_, Message
from attention_core.latex import Translate
from attention_core.practice import Exercise
from attention_core.stepthrough import StepThrough, explained_panel

#: CJK fonts matplotlib may find on a server or laptop, in order of preference.
CJK_FONTS = ("Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Microsoft YaHei", "PingFang SC",
             "Hiragino Sans GB", "WenQuanYi Zen Hei", "SimHei")
#: Entries asked per stage (fewer when a stage has fewer entries to compute).
PER_STAGE = 3
#: Numbers per line of a vector on the sheet (an A4 line at 10 pt).
PER_LINE = 8
#: A4 in inches (matplotlib's unit).
A4 = (8.27, 11.69)


@dataclass(frozen=True)
class Blank:
    """One entry to fill in: where it is (0-based row, column, head; labels as shown) and its exercise."""

    row: int
    col: int
    head: int
    row_label: str
    col_label: str
    exercise: Exercise


@dataclass(frozen=True)
class SheetStage:
    """One page: the stage's title (app text, translated when drawn), its general formula (LaTeX lines), blanks."""

    key: str
    title: str
    formula: tuple[str, ...]
    blanks: tuple[Blank, ...]


@dataclass(frozen=True)
class Worksheet:
    """A whole worksheet: its title and settings line (as given), and one :class:`SheetStage` per page."""

    title: str
    settings_line: str
    stages: tuple[SheetStage, ...]


def _choose(steps: StepThrough, rng: random.Random, per_stage: int) -> tuple[Blank, ...]:
    """Up to ``per_stage`` entries with exercises, preferring ones where the known mistakes can be told apart."""
    stage = steps.stage
    heads = range(steps.num_heads) if stage.per_head and steps.num_heads else (0,)
    candidates = []
    for head in heads:
        panel = explained_panel(stage.panels, head)
        if panel is None:
            continue
        rows, cols = panel.matrix.shape
        cells = [(r, c) for r in range(rows) for c in range(cols)]
        for row, col in rng.sample(cells, min(len(cells), 24)):
            exercise = stage.exercise(row, col, head)
            if exercise is not None:
                weight = 1 + len(exercise.mistakes) + (1 if abs(exercise.answer) > 0.05 else 0) + rng.random()
                candidates.append((weight, row, col, head, panel, exercise))
    candidates.sort(key=lambda c: -c[0])
    chosen = sorted(candidates[:per_stage], key=lambda c: (c[3], c[1], c[2]))
    return tuple(Blank(row, col, head, str(panel.row_labels[row]), str(panel.col_labels[col]), exercise)
                 for _, row, col, head, panel, exercise in chosen)


def build_worksheet(steps_for: Callable[[str], StepThrough], stage_keys: Sequence[str], *, title: str,
                    settings_line: str, seed_text: str, per_stage: int = PER_STAGE,
                    tr: Translate = Message) -> Worksheet:
    """The worksheet of a step page.

    Args:
        steps_for: the page's builder, stage key -> :class:`StepThrough` (the same the page renders).
        stage_keys: the page's stages, in order.
        title: the sheet's title (the page's name, in the interface language).
        settings_line: what fixes the numbers (e.g. the link's parameters), printed under the title.
        seed_text: text that identifies the settings and edits; the entries chosen depend only on it.
        per_stage: entries asked per stage.
        tr: the interface language's translator (for the general formulas' words).

    Returns:
        A :class:`Worksheet` with one :class:`SheetStage` per stage that has something to compute.
    """
    rng = random.Random(zlib.crc32(seed_text.encode()))
    pages = []
    for key in stage_keys:
        steps = steps_for(key)
        if steps.stage.exercise is None or steps.stage.target is None:
            continue
        blanks = _choose(steps, rng, per_stage)
        if blanks:
            pages.append(SheetStage(key, steps.titles[key], tuple(steps.stage.formula(tr)), blanks))
    return Worksheet(title, settings_line, tuple(pages))


# ---------------------------------------------------------------- LaTeX to mathtext

_MATRIX = re.compile(r"\\begin\{bmatrix\}(.*?)\\end\{bmatrix\}")


def mathtext_lines(latex: str) -> list[str]:
    r"""One exercise line as mathtext lines (``$...$``): a bracketed vector ``[a, b, ...]`` broken after every
    :data:`PER_LINE` numbers; ``\textstyle`` and ``\;`` dropped. Raises ValueError when matplotlib cannot
    typeset the result (the caller then prints the line as text)."""
    text = latex.replace(r"\textstyle", "").replace(r"\;", " ")
    match = _MATRIX.search(text)
    if match is None:
        lines = [text]
    else:
        numbers = [n.strip() for n in match.group(1).split("&")]
        chunks = [r",\ ".join(numbers[k:k + PER_LINE]) for k in range(0, len(numbers), PER_LINE)]
        head, tail = text[:match.start()], text[match.end():]
        lines = [head + r"\left[" + chunks[0] + (r"\right]" + tail if len(chunks) == 1 else r",\right.")]
        for n, chunk in enumerate(chunks[1:], start=2):
            last = n == len(chunks)
            lines.append(r"\quad\left." + chunk + (r"\right]" + tail if last else r",\right."))
    out = []
    for line in lines:
        _parse(line)
        out.append(f"${line}$")
    return out


@lru_cache(maxsize=1024)
def _parse(line: str) -> None:
    from matplotlib.mathtext import MathTextParser

    MathTextParser("path").parse(f"${line}$")


# ---------------------------------------------------------------- the PDF


def cjk_font() -> Optional[str]:
    """The first of :data:`CJK_FONTS` that matplotlib finds on this machine, or None."""
    from matplotlib import font_manager

    names = {f.name for f in font_manager.fontManager.ttflist}
    return next((name for name in CJK_FONTS if name in names), None)


def render_pdf(sheet: Worksheet, *, answers: bool, tr: Translate = Message) -> bytes:
    """The worksheet (``answers=False``: blanks) or its answer key (``answers=True``) as a PDF, one A4 page per
    stage; words in the interface language (``tr``), formulas typeset with matplotlib's mathtext.

    Returns:
        The PDF's bytes.
    """
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    families = ["DejaVu Sans"] + ([font] if (font := cjk_font()) else [])
    buffer = io.BytesIO()
    style = {"font.family": families, "mathtext.fontset": "dejavusans", "pdf.fonttype": 3}
    with matplotlib.rc_context(style), PdfPages(buffer, metadata={"Title": sheet.title, "Creator": "Attention Explorer"}) as pdf:
        total = len(sheet.stages)
        for number, stage in enumerate(sheet.stages, start=1):
            fig = Figure(figsize=A4)
            cursor = _Cursor(fig)
            heading = tr(N_("Answer key")) if answers else tr(N_("Worksheet"))
            cursor.text(f"{sheet.title} — {heading}", size=15, weight="bold")
            cursor.text(sheet.settings_line, size=8, color="#555555")
            if not answers:
                cursor.text(tr(N_("Name: ______________________    Class: __________")), size=10)
            cursor.gap()
            cursor.text(tr(N_("Step {n} of {total}: {title}"), n=number, total=total, title=tr(stage.title)),
                        size=13, weight="bold")
            for line in stage.formula:
                cursor.math(line, size=12)
            cursor.text(tr(N_("Compute each entry from the numbers given. Round to 2 decimals.")), size=10)
            for k, blank in enumerate(stage.blanks, start=1):
                cursor.gap()
                where = tr(N_("{k}. Row {row} ({row_label}), column {col} ({col_label})"), k=k, row=blank.row + 1,
                           row_label=blank.row_label, col=blank.col + 1, col_label=blank.col_label)
                if blank.head or any(b.head for b in stage.blanks):
                    where += ", " + tr(N_("head {head}"), head=blank.head + 1)
                cursor.text(where, size=11, weight="bold")
                exercise = blank.exercise
                cursor.math(f"{exercise.lhs} = {exercise.formula}", size=12)
                for line in exercise.inputs:
                    cursor.math(line, size=10)
                if answers:
                    cursor.math(f"{exercise.lhs} = {exercise.answer:.4g}", size=12, color="#0b6e0b")
                else:
                    cursor.math(f"{exercise.lhs} = ", size=12, suffix="  ________________")
            cursor.footer(tr(N_("Attention Explorer · the same link gives the same sheet · page {n} of {total}"),
                             n=number, total=total))
            pdf.savefig(fig)
    return buffer.getvalue()


class _Cursor:
    """Writes lines down an A4 figure (a top margin, then one line after another)."""

    def __init__(self, fig) -> None:
        self.fig, self.y = fig, 0.95

    def _line(self, size: float) -> float:
        return size * 1.9 / 72 / A4[1]  # the line height as a fraction of the page

    def text(self, text: str, *, size: float = 10, **style) -> None:
        # plain text: a "$" (a user's token may hold one) must not start matplotlib's mathtext
        self.fig.text(0.08, self.y, text.replace("$", r"\$"), fontsize=size, va="top", **style)
        self.y -= self._line(size)

    def math(self, latex: str, *, size: float = 10, suffix: str = "", **style) -> None:
        try:
            lines = mathtext_lines(latex)
        except ValueError:
            lines = [latex]  # matplotlib cannot typeset it: the LaTeX as text beats nothing
        for n, line in enumerate(lines):
            self.fig.text(0.1, self.y, line + (suffix if n == len(lines) - 1 else ""), fontsize=size, va="top",
                          **style)
            tall = "frac" in line or "sum" in line or "softmax" in line
            self.y -= self._line(size) * (1.7 if tall else 1.0)

    def gap(self) -> None:
        self.y -= 0.012

    def footer(self, text: str) -> None:
        self.fig.text(0.5, 0.03, text, fontsize=7, ha="center", color="#777777")
