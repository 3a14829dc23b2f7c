"""Widgets every page uses: messages and errors, matrix editors, the step picker, the PyTorch check (the heatmaps are
``ui.heatmaps``).

Pages call these with values from ``attention_core``; nothing here computes
attention; the step-through of a formula is drawn by ``ui.stepthrough``.
"""

from __future__ import annotations

import functools
import inspect
import re
from typing import Any, Callable, Optional, Sequence, TypeVar

import altair as alt
import numpy as np
import pandas as pd
import streamlit as st

from attention_core.errors import N_, InputError, Message
from attention_core.inputs.edits import MAX_ABS_VALUE, read_cell, refused_cell
from attention_core.inputs.matrix_text import parse_matrix
from attention_core.inputs.text import MAX_SENTENCE_CHARS, MAX_TOKENS
from attention_core.page import Page
from attention_core.self_attention.formulas import Entry, entry_latex
from attention_core.settings import EDITABLE, Edits, Settings
from attention_core.sources import for_students
from attention_core.stepthrough import FLOAT_LOOP, OTHER_ROUTE, PYTORCH, TRANSFORMERS
from ui import builds, frames, presenter, state
from ui.i18n import _

T = TypeVar("T")


# ---------------------------------------------------------------- text helpers

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>$~])")


def md_escape(text: str) -> str:
    """User text made safe for Markdown (and Streamlit's $...$ LaTeX)."""
    return _MD_SPECIAL.sub(r"\\\1", text)


def code_span(token: str) -> str:
    """A token (WordPiece, byte-level BPE) as Markdown inline code, shown literally.

    A token may itself contain backticks: the fence is then one backtick longer than its longest run.
    """
    if "`" not in token:
        return f"`{token}`"
    fence = "`" * (max(len(run) for run in re.findall(r"`+", token)) + 1)
    return f"{fence} {token} {fence}"


def number_help() -> str:
    """How every box that takes numbers as text reads them (``attention_core.inputs.numbers``)."""
    return _("A decimal comma (0,25), the minus sign − and full-width digits are read too.")


def message_markdown(message: str) -> str:
    """A message from attention_core, translated, as Markdown that shows exactly its text.

    The template is ours; every text parameter is escaped, whoever wrote it (a token, a file name, a link's value:
    user text must not render as bold, links or KaTeX). Inside a code span of the template (`` `pip install
    {package}` ``) nothing renders, so a parameter there is kept as is, only its backticks replaced. A parameter
    that is itself a :class:`Message` (a reason inside a sentence, a translated label) is rendered the same way.
    Plain text (not a Message) is escaped whole.
    """
    if isinstance(message, _Markdown):
        return message
    if isinstance(message, Message):
        in_code = {name for span in _CODE_SPAN.findall(message.template) for name in _FIELD.findall(span)}
        params = {k: _Markdown(message_markdown(v)) if isinstance(v, (Message, _Markdown))
                  else v.replace("`", "ˋ") if isinstance(v, str) and k in in_code
                  else md_escape(v) if isinstance(v, str) else v
                  for k, v in message.params.items()}
        return _(Message(message.template, **params))
    return md_escape(message)


_CODE_SPAN = re.compile(r"`[^`]*`")
_FIELD = re.compile(r"\{(\w+)[^{}]*\}")


class _Markdown(str):
    """Text already rendered for Markdown by :func:`message_markdown` (not escaped again)."""


def show_error(error: InputError) -> None:
    """The error's message, translated, its text parameters escaped (:func:`message_markdown`)."""
    st.error(message_markdown(error.message), icon=":material/error:")


def build_or_stop(build: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``build(*args, **kwargs)``; on bad input (:class:`InputError`), its message and the page stops.

    What the user typed stays in the settings, so fixing it brings the page back. Any other
    exception is a bug and propagates.

    ``build`` must be pure (attention_core's builders are: their result depends on their arguments only). When
    every argument is a plain value (settings, numbers, text, the edits' dict), the result is shared by every
    session of the server (the last :data:`SHARED_BUILDS`, least recently used dropped): thirty students who
    opened the same link, or who step back to numbers they had, get it without recomputing. Results are read,
    never changed, by the pages. Arguments such as tensors or uploaded bytes are not shared (built each time).

    A :class:`Settings` argument counts only by the fields the build read (recorded while it ran,
    :mod:`attention_core.reads`): changing the palette, the language, the stage or another page's settings reuses
    the result; so does a page's own group passed beside it (``settings.alibi``, :meth:`Page.build_args`), by the
    fields of it the build read (:func:`ui.builds.built`). A result that holds its settings (a walk-through's ``settings``) is handed back as of the current
    ones (``attention_core.stepthrough.as_of``: the same numbers).
    """
    try:
        return builds.built(build, args, kwargs)
    except InputError as error:
        show_error(error)
        way_back(error.field)
        st.stop()


def sentence_box(help_more: str = "") -> None:
    """The sentence's box, bound to the one sentence every page reads: a step page lets a learner type their own
    sentence where they are. ``help_more``: what the page adds to the box's help."""
    state.bind(st.text_input, _("Sentence"), "sentence",
               help=_("Words separated by spaces; at most {cap} tokens and {chars} characters (a longer sentence is "
                      "cut, with a message). A word outside this example's vocabulary switches to “Your own "
                      "sentence”, keeping your other settings.", cap=MAX_TOKENS, chars=MAX_SENTENCE_CHARS)
               + (" " + help_more if help_more else ""))


#: The settings that hold a text a page may fail on: the way back offers their box where the page stopped.
_TEXT_FIELDS = {"sentence": N_("Sentence"), "encoder_sentence": N_("Encoder sentence (keys and values)")}


def way_back(field: str) -> None:
    """The way back from settings a page cannot build from, right under its message: the box of the text it failed
    on (unless the page shows it already), the editor's reset of the matrix it failed on, and two buttons that
    always give a working page: the example's own settings, or every setting's default (the language, presenter
    mode, the colours and a teacher's locks are kept).

    Args:
        field: the failing input (``InputError.field``): a settings path or a matrix name ("" for none).
    """
    with st.container(border=True, key="way_back"):
        st.markdown("**" + _("Back to a working page") + "**")
        if field in _TEXT_FIELDS and field not in state.bound_fields():
            state.bind(st.text_input, _(_TEXT_FIELDS[field]), field, variant="way_back")
        if field in EDITABLE and state.edits().get(field):
            st.button(_("Reset {label}: forget your edits of it", label=EDITABLE[field]), key=f"way_back_reset_{field}",
                      on_click=reset_matrix, args=(field,), icon=":material/undo:")
        left, right = st.columns(2)
        left.button(_("Back to this example's settings"), key="way_back_example", on_click=state.reset_example,
                    icon=":material/restart_alt:", width="stretch",
                    help=_("Its sentence, widths and seed, and none of your edits of it."))
        right.button(_("Reset every setting"), key="way_back_all", on_click=state.reset_all,
                     icon=":material/settings_backup_restore:", width="stretch",
                     help=_("The app as it opens, with your language, colours and presenter mode kept."))


def walkthrough_or_stop(page: Page, settings: Settings, edits: Optional[Edits] = None) -> Any:
    """``page``'s walk-through of ``settings`` and ``edits`` (its builder with :meth:`Page.build_args`: the shared
    settings, its own group if it has one, the edits), through :func:`build_or_stop` (shared, keyed by what it
    read); on bad input, its message and the page stops.

    Args:
        page: a step page (its ``build`` is not None).
        settings: the current settings (``state.settings()``).
        edits: the current edits (``state.edits()``), or None for a page without edits.
    """
    return build_or_stop(page.build, *page.build_args(settings, edits))


def keep_in_range(**values: Any) -> None:
    """Store the settings a view moved back into range (e.g. a chosen pair on a sentence that got shorter).

    Only the fields whose value differs are written; call it before the widgets bound to them are created.
    """
    current = state.settings()
    changed = {field: value for field, value in values.items() if current.get(field) != value}
    if changed:
        state.update(**changed)


def show_messages() -> None:
    """Messages from settings validation (a value was out of range and was repaired)."""
    for message in state.messages():
        st.warning(message_markdown(message), icon=":material/info:")


def entry_formula(entry: Entry) -> None:
    """One self-attention entry's formula with its numbers in and its result (rendered once, cached in core)."""
    st.latex(entry_latex(entry))


# ---------------------------------------------------------------- heatmap


def matrix_editor(name: str, base, row_labels: Sequence[str], col_labels: Sequence[str]) -> None:
    """Edit a matrix cell by cell; edits are kept in ``ui.state`` and survive page switches.

    ``base`` is the seeded matrix; the editor shows it with the stored edits on top, each number with 4 decimals.
    The cells are text cells, so that what was typed reaches the server as typed: a cell is read as every number box
    reads numbers ("0,25", "−0.5"), and an empty, non-numeric, NaN, infinite or too large one is refused with a
    message under the editor, the cell keeping its last good value (``attention_core.inputs.edits.read_cell``).
    """
    preset = state.settings().preset
    shape = tuple(base.shape)
    cells = state.edits().get(name, {})
    data = base.detach().numpy().astype(float)  # a copy
    for (i, j), value in cells.items():
        if i < shape[0] and j < shape[1] and value is not None:
            data[i, j] = value
    shown = np.char.replace(np.char.mod("%.4f", data), "-", "−")  # the true minus sign, as in the heatmaps
    df = pd.DataFrame(shown, index=list(row_labels), columns=list(col_labels))
    key = f"editor_{preset}_{name}_{shape[0]}x{shape[1]}_{state.editor_version(name)}"
    st.data_editor(
        df,
        key=key,
        num_rows="fixed",
        on_change=_on_edit,
        args=(name, key, list(col_labels), data),
        column_config={c: st.column_config.TextColumn(c, alignment="right") for c in col_labels},
    )
    for message in st.session_state.get(_refused_key(name), ()):
        st.error(message_markdown(message), icon=":material/block:")
    label = EDITABLE[name]
    c1, c2 = st.columns([1, 3])
    c1.button(_("Reset {label}", label=label), key=f"reset_{name}", on_click=reset_matrix, args=(name,),
              disabled=not cells, help=_("Forget your edits of {label} and go back to the seeded values.", label=label))
    with c2.popover(_("Paste {label} as text", label=label)):
        st.caption(_("{rows} lines of {cols} numbers, separated by spaces, tabs, semicolons or commas (with decimal "
                     "commas: by spaces or semicolons).", rows=shape[0], cols=shape[1]) + " " + number_help())
        draft_key = f"paste_{name}"
        st.text_area(_("{label} as text", label=label), key=draft_key, height=120)
        st.button(_("Use this {label}", label=label), key=f"paste_apply_{name}", on_click=_on_paste,
                  args=(name, draft_key, shape))
        if error := st.session_state.get(f"paste_error_{name}"):
            st.error(message_markdown(error), icon=":material/error:")


def _refused_key(name: str) -> str:
    return f"refused_cells_{name}"


def reset_matrix(name: str) -> None:
    """Forget a matrix's edits (``ui.state.reset_matrix``) and the messages of its refused cells."""
    st.session_state.pop(_refused_key(name), None)
    state.reset_matrix(name)


def _on_edit(name: str, key: str, col_labels: list[str], shown: np.ndarray) -> None:
    """Take an editor's changed cells: each good one is stored, each bad one refused with a message (the cell keeps
    ``shown``'s value, what the editor showed) and the editor drawn afresh without it."""
    delta = st.session_state[key].get("edited_rows", {})
    cells, refused = {}, []
    for row, changes in delta.items():
        for col, typed in changes.items():
            if col not in col_labels:
                continue
            i, j = int(row), col_labels.index(col)
            value, problem = read_cell(typed)
            if problem:
                refused.append(refused_cell(problem, EDITABLE[name], i, j, typed, kept=float(shown[i, j])))
            else:
                cells[(i, j)] = value
    state.set_cells(name, cells)
    if refused:
        st.session_state[_refused_key(name)] = refused
        state.bump_version(name)  # a fresh editor, showing the kept values instead of what was refused
    else:
        st.session_state.pop(_refused_key(name), None)


def _on_paste(name: str, draft_key: str, shape: tuple[int, int]) -> None:
    try:
        rows = parse_matrix(st.session_state.get(draft_key, ""), *shape, label=EDITABLE[name], max_abs=MAX_ABS_VALUE)
    except InputError as error:
        st.session_state[f"paste_error_{name}"] = error.message
        return
    st.session_state.pop(f"paste_error_{name}", None)
    st.session_state.pop(_refused_key(name), None)
    state.reset_matrix(name)
    state.set_cells(name, {(i, j): v for i, row in enumerate(rows) for j, v in enumerate(row)})


# ---------------------------------------------------------------- stepping and checks


#: The line of a check, by what it was compared with (``attention_core.stepthrough.AGAINST``): (it agrees, it does not).
CHECK_LINES = {
    PYTORCH: (N_("Checked against PyTorch: max |ours − `{reference}`| = {diff} ✓"),
              N_("Checked against PyTorch: max |ours − `{reference}`| = {diff} — they disagree.")),
    TRANSFORMERS: (N_("Checked against Hugging Face transformers: max |ours − `{reference}`| = {diff} ✓"),
                   N_("Checked against Hugging Face transformers: max |ours − `{reference}`| = {diff} — they "
                      "disagree.")),
    FLOAT_LOOP: (N_("Checked against a loop in Python floats (float64): max |ours − `{reference}`| = {diff} ✓"),
                 N_("Checked against a loop in Python floats (float64): max |ours − `{reference}`| = {diff} — they "
                    "disagree.")),
    OTHER_ROUTE: (N_("Checked against a second way of computing it: max |ours − `{reference}`| = {diff} ✓"),
                  N_("Checked against a second way of computing it: max |ours − `{reference}`| = {diff} — they "
                     "disagree.")),
}


def check_text(max_abs_diff: float, matches: bool, reference: str, against: str = PYTORCH) -> str:
    """The text that states our numbers against a reference: PyTorch's own function (``against``, the default),
    Hugging Face transformers' module, a loop in Python floats or a second way of computing the same numbers
    (:data:`CHECK_LINES`: each says which), in the interface language."""
    agrees, disagrees = CHECK_LINES[against]
    return _(agrees if matches else disagrees, reference=reference, diff=f"{max_abs_diff:.2e}")


def check_line(max_abs_diff: float, matches: bool, reference: str, against: str = PYTORCH) -> None:
    """:func:`check_text` as a success (or error) line."""
    text = check_text(max_abs_diff, matches, reference, against)
    if matches:
        st.success(text, icon=":material/check_circle:")
    else:
        st.error(text, icon=":material/cancel:")


# ---------------------------------------------------------------- the code behind what is shown

@functools.lru_cache(maxsize=None)
def source(function: Callable[..., Any]) -> str:
    """The source of a function of attention_core (read once per server: the files do not change), its references
    to the seed tutorials written as their names (``attention_core.sources.for_students``)."""
    return for_students(inspect.getsource(function))


def show_code(functions: Sequence[Callable[..., Any]], *, key: str) -> None:
    """The real source of the attention_core functions behind what the page shows, in a "Show the code" expander.

    The expander opens closed and its code is drawn only while it is open (``on_change="rerun"``: opening it reruns
    the fragment or the page it stands in, and it stays open from click to click until it is closed). Closed, it
    costs a click one element instead of the code blocks that the browser would highlight again on every rerun.
    ``key``: the expander's, one per place on a page (it keeps the open state).
    """
    box = st.expander(_("Show the code"), key=key, on_change="rerun")
    if box.open:
        with box:
            for function in functions:
                st.code(source(function), language="python")


# ---------------------------------------------------------------- a 2-d rotation

@builds.spec
def _vector_pair_spec(labels: tuple[str, str], cvd: bool, size: float = 1.0) -> dict:
    """The chart of :func:`vector_pair_chart` without its data; ``size`` times larger in presenter mode (fonts at
    least ``presenter.MIN_FONT_PX``)."""
    scale = alt.Scale(domain=[-1.0, 1.0])  # the arrows' reach is set per call
    base = alt.Chart().encode(x=alt.X("x:Q", scale=scale, title=None), y=alt.Y("y:Q", scale=scale, title=None),
                              color=alt.Color("arrow:N", title=None, legend=alt.Legend(orient="bottom"),
                                              scale=alt.Scale(domain=list(labels), range=(
                                                  ["#0072B2", "#E69F00"] if cvd else ["#1f77b4", "#d62728"]))))
    lines = base.mark_line(strokeWidth=3).encode(order="order:Q", detail="arrow:N")
    tips = base.transform_filter("datum.order == 1").mark_point(size=120, filled=True)
    font = functools.partial(presenter.font_px, scale=size)
    spec = (lines + tips).properties(width=260 * size, height=260 * size).configure_axis(
        labelFontSize=font(12), titleFontSize=font(13)).configure_legend(
        labelFontSize=font(14), titleFontSize=font(14), symbolSize=100 * size ** 2).to_dict(validate=False)
    spec.pop("datasets", None)  # alt.Chart() without data: each layer's placeholder dataset; the data comes per call
    for layer in spec.get("layer", []):
        layer.pop("data", None)
    return spec


def vector_pair_chart(before: tuple[float, float], after: tuple[float, float],
                      labels: tuple[str, str]) -> tuple[dict, Any]:
    """Two arrows from the origin, before and after a rotation (``labels`` name them), on equal axes reaching 1.15 ×
    the longer one: the Vega-Lite spec (built with Altair once per labels, palette and size; the axes' reach set per
    call, on a copy) and its data. The spec describes the arrows in words (its ``description``, for a screen reader).
    Drawn under an explained entry (``ui.stepper_data.EntryChart``: in the browser, or by the server in practice mode)."""
    reach = max(1e-9, *(abs(v) for v in before + after)) * 1.15
    (a, b), (x0, y0), (x1, y1) = labels, before, after
    arrows = frames.table({"arrow": [a, a, b, b], "x": [0.0, float(x0), 0.0, float(x1)],  # each from the origin
                           "y": [0.0, float(y0), 0.0, float(y1)], "order": [0, 1, 0, 1]})
    spec = _vector_pair_spec(tuple(labels), state.settings().palette == "cvd", presenter.scale())
    spec = {**spec, "layer": [{**layer, "encoding": {**layer["encoding"], **{
        axis: {**layer["encoding"][axis], "scale": {**layer["encoding"][axis]["scale"], "domain": [-reach, reach]}}
        for axis in ("x", "y")}}} for layer in spec["layer"]]}  # a copy: the cached spec stays as it is
    spec["description"] = _("Two arrows from the origin: {a} to ({ax}, {ay}) and {b} to ({bx}, {by}).", a=labels[0],
                            ax=f"{before[0]:.3g}", ay=f"{before[1]:.3g}", b=labels[1], bx=f"{after[0]:.3g}",
                            by=f"{after[1]:.3g}")
    return spec, arrows
