r"""The one step-through protocol: what every page that steps through a formula hands to the one renderer.

A page that steps (self-attention, causal attention, dropout, multi-head attention, cross-attention, one head
of a trained model, ...) builds a :class:`StepThrough` for each stage from attention_core (its declaration's
``step_through(walk, stage)``) and hands its walk-through to the step-through element (``ui.stepper.live``), which shows
every stage in the browser. A *stage* is one part of a page's computation (the scores, the weights, the context
vectors, ...), shown in the interface as a step ("Step", Previous / Next); in the code "step" is kept for what
steps in time (a gradient-descent step, a training step, a generated token). A :class:`StepThrough` holds one
:class:`Stage`:

* its heatmaps (:class:`Panel`: a matrix, row/column labels, axis titles, which head it belongs to, whether a
  click explains that entry);
* its general formula (``formula(tr)``: LaTeX lines built with sympy, words in the interface language);
* its explained entry (``entry(row, col, head, tr)``: the element formula with the real numbers substituted);
* the functions that computed it (``code``: shown with ``inspect.getsource``, so it never goes stale);
* its explained entry as an exercise (``exercise(row, col, head)``: practice mode, :mod:`attention_core.practice`);

and the page's checks (:class:`Check`: against PyTorch, transformers, a float loop or a second route), its warnings
and notes. The stage titles and the settings field that holds the current stage come from the page's declaration
(:class:`attention_core.page.Page`).

Adding a stage to a page: its key and title in the page's declaration (``Page.stages``), its panels and its entry
formula in the page's builder (one branch each), its general formula beside the torch code that computes it.

Shape legend: rows × columns of a panel's matrix are (query tokens × key tokens) for scores and weights,
(tokens × dims) for X, Q, K, V and outputs; matrices are 2-d float tensors, −inf where a mask blocks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import torch

from attention_core.errors import N_, Message
from attention_core.latex import Translate
from attention_core.page import Page
from attention_core.practice import Exercise


@dataclass(frozen=True)
class Panel:
    """One heatmap of a stage.

    App text (titles, axis titles, labels such as "col 1") is a :class:`~attention_core.errors.Message`,
    which the renderer translates; plain strings (math such as "K = X W_k", tokens) are shown as they are.

    Attributes:
        title: shown above the heatmap ("" for none).
        matrix: 2-d float tensor (rows, cols); -inf cells are drawn grey and labelled −∞.
        row_labels, col_labels: one label per row / column.
        row_title, col_title: axis titles.
        head: the head this panel belongs to (clicking selects it), or None.
        explained: whether clicking a cell explains that entry (the stage's explained panel).
        by_entry: for a panel that follows the explained entry (the backward pages' softmax Jacobian of the explained
            row): the panel of every entry, ``by_entry[head][row]`` (one tuple per head; a single-head page has one).
            This panel itself is the one of the entry explained now, as the walk-through's settings say; a renderer
            that moves the entry without the server (the step-through element) shows ``by_entry``'s. Empty for a
            panel that depends on the numbers alone.
    """

    title: str
    matrix: torch.Tensor
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    row_title: str = Message(N_("query token"))
    col_title: str = Message(N_("key token"))
    head: Optional[int] = None
    explained: bool = True
    by_entry: tuple[tuple["Panel", ...], ...] = ()


#: What a check compares our numbers with (:attr:`Check.against`), each labelled so on the page: PyTorch's own
#: functions and modules (``torch.nn.functional``, ``torch.nn``, ``torch.autograd``); a module or function of Hugging
#: Face transformers (a model's layer, Qwen3-Next's kernels); a loop in plain Python floats (float64), entry by entry;
#: the same numbers computed a second way by our own code (the recurrent against the parallel form, a KV cache
#: against recomputing everything).
PYTORCH, TRANSFORMERS, FLOAT_LOOP, OTHER_ROUTE = "pytorch", "transformers", "float_loop", "other_route"
AGAINST = (PYTORCH, TRANSFORMERS, FLOAT_LOOP, OTHER_ROUTE)
#: What a check was compared with, as a heading of the exports' checks (marked with ``N_``).
AGAINST_LABEL = {
    PYTORCH: N_("Against PyTorch"),
    TRANSFORMERS: N_("Against Hugging Face transformers"),
    FLOAT_LOOP: N_("Against a loop in Python floats (float64)"),
    OTHER_ROUTE: N_("Against a second way of computing it"),
}


@dataclass(frozen=True)
class Check:
    """One comparison of our numbers with a reference: PyTorch's, transformers', a float loop's or a second route's.

    Attributes:
        reference: the reference's call, as code (shown on the page).
        max_abs_diff: max |ours - reference| over the compared entries (float, same units as the numbers).
        matches: whether they agree to rtol = atol = 1e-5.
        note: what was compared, when not obvious (e.g. rows left out).
        against: what the reference is, one of :data:`AGAINST` (the page's label for the check says it).
    """

    reference: str
    max_abs_diff: float
    matches: bool
    note: str = ""
    against: str = PYTORCH

    def __post_init__(self) -> None:
        if self.against not in AGAINST:
            raise ValueError(f"a check against {self.against!r}: not one of {AGAINST}")


def compare(ours: torch.Tensor, reference: torch.Tensor, code: str, note: str = "", tolerance: float = 1e-5,
            against: str = PYTORCH) -> Check:
    """A :class:`Check` of ``ours`` against ``reference`` (same shape), rtol = atol = ``tolerance``; empty tensors pass.

    1e-5 suits one layer in float32; a whole model (several layers, torch's fused kernels) may differ a little
    more, and its check says which tolerance it used in its ``note``. ``against``: what ``reference`` is
    (:data:`AGAINST`; PyTorch's own functions unless said).
    """
    if ours.numel() == 0:
        return Check(code, 0.0, True, note, against)
    diff = float((ours - reference).abs().max())
    return Check(code, diff, bool(torch.allclose(ours, reference, rtol=tolerance, atol=tolerance)), note, against)


def _no_formula(tr: Translate) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class Stage:
    """One stage: its heatmaps, its general formula, its explained entry and the code that computed it.

    Attributes:
        key: a key of the page's stages (``Page.stages``).
        panels: the heatmaps, in order; exactly one has ``explained=True`` (the one whose entry is explained),
            or none.
        formula: ``formula(tr)`` -> the general formula as LaTeX lines (matrix form, element form, remarks).
        entry: ``entry(row, col, head, tr)`` -> the explained entry with its numbers in, as LaTeX
            (0-based indices into the explained panel; ``head`` 0-based, 0 on one-head pages).
            Raises IndexError outside the explained panel.
        code: the functions that compute this stage, for "Show the code".
        exercise: ``exercise(row, col, head)`` -> the explained entry as an
            :class:`~attention_core.practice.Exercise` for practice mode, or None when that entry has nothing
            to compute (it is read off, like X, or a mask's 0 / −∞); None for a stage without exercises.
        mask: a clickable mask to draw instead of the panels (the causal page's mask stage), or None.
        remark: a result stated under the panels as a success line (a :class:`Message`), or None.
        details: sentences shown under the panels, joined on one line (Messages).
    """

    key: str
    panels: tuple[Panel, ...]
    formula: Callable[[Translate], tuple[str, ...]] = _no_formula
    entry: Optional[Callable[[int, int, int, Translate], str]] = None
    code: tuple[Callable[..., Any], ...] = ()
    exercise: Optional[Callable[[int, int, int], Optional[Exercise]]] = None
    mask: Any = None
    remark: Optional[str] = None
    details: tuple[str, ...] = ()

    @property
    def target(self) -> Optional[Panel]:
        """The explained panel (the one a click or the pickers explain), or None."""
        return next((p for p in self.panels if p.explained), None)

    @property
    def per_head(self) -> bool:
        """Whether the stage shows one panel per head (then the head picker applies)."""
        return any(p.head is not None for p in self.panels)


#: The settings fields of the explained entry (row, column) and head on the step pages: a :class:`StepThrough`'s
#: defaults, and ``HEAD_FIELD`` on the pages with heads. The model pages name fields of their own.
ROW_FIELD, COL_FIELD, HEAD_FIELD = "entry_row", "entry_col", "head"


@dataclass(frozen=True)
class StepThrough:
    """A step page's current stage, with the page's checks and messages.

    Attributes:
        page: the page's declaration (:class:`attention_core.page.Page`: its stages and their settings field).
        stage: the current :class:`Stage`.
        checks: the page's comparisons with its references (:class:`Check`).
        warnings: explanations of trouble (e.g. a row with every key blocked); may hold the user's tokens.
        notes: other remarks; may hold the user's tokens.
        num_heads: h on the multi-head pages (a head picker is shown), 0 elsewhere.
        row_field, col_field, head_field: the settings fields of the explained entry (no head field: no head).
        check_caption: a sentence under the checks (a :class:`Message`), or None.
        order: this variant's stages, in order, where they differ from the page's (the encoder block pre-LN),
            or None.
    """

    page: Page
    stage: Stage
    checks: tuple[Check, ...] = ()
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    num_heads: int = 0
    row_field: str = ROW_FIELD
    col_field: str = COL_FIELD
    head_field: Optional[str] = None
    check_caption: Optional[str] = None
    order: Optional[Mapping[str, str]] = None

    @property
    def field(self) -> str:
        """The settings field that holds this page's current stage."""
        return self.page.stage_field

    @property
    def titles(self) -> Mapping[str, str]:
        """The page's stages (this variant's), in order: key -> title (marked for translation)."""
        return self.order if self.order is not None else self.page.stages


def explained_panel(panels: tuple[Panel, ...], head: int = 0) -> Optional[Panel]:
    """The explained panel (``head``'s, when the panels are per head), or None."""
    return next((p for p in panels if p.explained and p.head in (None, head)), None)


def explained_value(panels: tuple[Panel, ...], row: int, col: int, head: int = 0) -> float:
    """Entry (row, col) of the explained panel (``head``'s, when the panels are per head): what an entry formula
    explains and ends with.

    Raises:
        IndexError: no explained panel (for that head), or (row, col) outside it.
    """
    target = explained_panel(panels, head)
    if target is None:
        raise IndexError(f"no explained panel for head {head}")
    if not (0 <= row < target.matrix.shape[0] and 0 <= col < target.matrix.shape[1]):
        raise IndexError(f"entry ({row}, {col}) is outside {tuple(target.matrix.shape)}")
    return float(target.matrix[row, col])


def clamp_entry(stage: Stage, row: int, col: int, head: int = 0, num_heads: int = 1) -> tuple[int, int, int]:
    """(row, col, head) moved inside the stage's explained panel and the heads 0..num_heads - 1.

    Shapes change with the stage, the sentence and the dims, so a remembered entry may fall outside; it moves
    to the nearest entry that exists. A stage without an explained panel leaves (row, col) alone.
    """
    head = min(max(head, 0), max(num_heads, 1) - 1)
    target = stage.target
    if target is None:
        return row, col, head
    rows, cols = target.matrix.shape
    return min(max(row, 0), rows - 1), min(max(col, 0), cols - 1), head


def as_of(walk: Any, settings: Any) -> Any:
    """``walk``, a page's walk-through built from its own ``walk.settings``, as of ``settings``.

    A click inside the step-through (Previous / Next, the step picker, the entry pickers, a click on a cell) reruns
    the step-through alone, with the walk-through of the last whole-page run: ``settings`` then differ from the
    walk-through's own only in what such a click changes (the stage, the explained entry and head, practice), which
    changes no number the walk-through computed but can change what a stage draws from the explained entry (the
    backward pages' softmax Jacobian is the explained row's). So the stage is built from ``as_of(walk, settings)``:
    the same numbers, the current settings; every panel follows the explained entry whatever reran.

    Returns ``walk`` itself when it has no ``settings`` field (not a dataclass) or the settings are equal; otherwise a
    shallow copy (``dataclasses.replace``: no tensor is copied).
    """
    if not dataclasses.is_dataclass(walk) or "settings" not in {f.name for f in dataclasses.fields(walk)}:
        return walk
    if walk.settings == settings:
        return walk
    return dataclasses.replace(walk, settings=settings)
