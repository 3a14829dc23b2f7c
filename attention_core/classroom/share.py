"""Settings and matrix edits to and from a shareable link's query parameters.

A link holds every settings field that differs from its default, by its path
(``d_k=2``, ``alibi.num_heads=3``), and the user's matrix edits of the current
example (``edit_x=0,1,0.5;2,2,-1``). A link made before the pages had their own
settings names them as they were then (``alibi_num_heads=3``): read as today's.
Reading a link never trusts it: unknown or malformed parameters are ignored
with a message, values go through :func:`settings.validate_settings`, and
numbers are read with ``int()`` / ``float()`` only (never ``eval``).

All plain Python; the app writes the result to ``st.query_params``.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Mapping, Optional

from attention_core.errors import N_, Message, quote, quote_list
from attention_core.inputs.edits import read_cell, refused_cell
from attention_core.masking.user_mask import MASK_EDITS
from attention_core.settings import EDITABLE, LEGACY, Settings, validate_settings

#: The matrices whose edits travel in a link: name -> label.
SHARED_MATRICES = {**EDITABLE, MASK_EDITS: Message(N_("the attention mask"))}

#: Query-parameter prefix of a matrix's edits.
EDIT_PREFIX = "edit_"
#: The longest link (in characters of query string) we produce; edits beyond it are left out.
MAX_QUERY_CHARS = 1800
#: Parameters Streamlit or the browser may add that are not ours (ignored silently).
FOREIGN = {"embed", "embed_options"}

Cells = dict[tuple[int, int], Optional[float]]


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _format_cells(cells: Mapping[tuple[int, int], Optional[float]]) -> str:
    return ";".join(
        f"{i},{j},{'' if v is None else repr(float(v))}" for (i, j), v in sorted(cells.items())
    )


@functools.lru_cache(maxsize=None)
def _preset_defaults(preset: str) -> Settings:
    """``Settings.for_preset(preset)``, validated once per preset (settings are frozen: shared)."""
    return Settings.for_preset(preset)


def encode(settings: Settings, edits: Mapping[str, Mapping[tuple[int, int], Optional[float]]]) -> tuple[dict[str, str], bool]:
    """Query parameters for ``settings`` and the current example's ``edits``.

    Returns:
        (parameters, complete): ``complete`` is False when the edits made the link
        too long and were left out (the page says so).
    """
    # Only what differs from the example's own defaults: a preset's link stays short.
    default = _preset_defaults(settings.preset)
    params = {"preset": settings.preset}
    for path, read in Settings.readers():
        value = read(settings)
        if value != read(default):
            params[path] = _format_value(value)
    edit_params = {
        f"{EDIT_PREFIX}{name}": _format_cells(cells)
        for name, cells in edits.items()
        if cells and name in SHARED_MATRICES
    }
    size = sum(len(k) + len(v) + 2 for k, v in {**params, **edit_params}.items())
    if size > MAX_QUERY_CHARS:
        return params, not edit_params
    return {**params, **edit_params}, True


def _parse_value(raw: str, like: Any) -> Any:
    if isinstance(like, bool):
        if raw in ("1", "true", "True"):
            return True
        if raw in ("0", "false", "False"):
            return False
        raise ValueError(raw)
    if isinstance(like, int):
        return int(raw)
    if isinstance(like, float):
        value = float(raw)
        if not math.isfinite(value):
            raise ValueError(raw)
        return value
    return raw


#: The most refused cells of one matrix a link's messages name one by one (the rest are counted).
MAX_NAMED_CELLS = 3


def _parse_cells(raw: str, matrix: str) -> tuple[Cells, list[Message]]:
    """A link's edits of one matrix (``"row,col,value;..."``, 0-based): each good cell kept, each bad one dropped.

    A cell whose value is empty, not a number, NaN, ±inf or beyond ±MAX_ABS_VALUE is checked as a typed cell is
    (:func:`attention_core.inputs.edits.read_cell`) and dropped with the same message: the page then builds from
    the example's value there, never from the bad one. An item that is not "row,col,value" with whole numbers
    in [0, 1024) is dropped too.

    Returns:
        (the good cells, messages: at most :data:`MAX_NAMED_CELLS` named, then one counting the rest).
    """
    cells: Cells = {}
    refused: list[Message] = []
    unreadable = 0
    for item in filter(None, raw.split(";")):
        try:
            i, j, typed = item.split(",")
            row, col = int(i), int(j)
        except ValueError:
            unreadable += 1
            continue
        if not (0 <= row < 1024 and 0 <= col < 1024):
            unreadable += 1
            continue
        value, problem = read_cell(typed)
        if problem:
            refused.append(refused_cell(problem, matrix, row, col, typed))
            continue
        cells[(row, col)] = value
    messages = [Message(N_("The link's edit was dropped: {problem}"), problem=message)
                for message in refused[:MAX_NAMED_CELLS]]
    more = len(refused) - len(messages) + unreadable
    if more:
        messages.append(Message(N_("The link's edits of {matrix}: {n} more could not be used and were dropped."),
                                matrix=matrix, n=more))
    return cells, messages


def decode(params: Mapping[str, str]) -> tuple[Settings, dict[str, Cells], list[str]]:
    """Settings and edits from a link's query parameters.

    Never raises on bad input: what cannot be read is skipped and reported. A message quotes at most
    ``errors.QUOTE_CHARS`` characters of a value, and all unknown parameters share one message.

    Returns:
        (validated settings, edits by matrix name, messages for the user).
    """
    messages: list[str] = []
    fields = set(Settings.paths())
    preset = params.get("preset", Settings().preset)
    base = Settings.for_preset(preset) if isinstance(preset, str) else Settings()
    values: dict[str, Any] = {}
    edits: dict[str, Cells] = {}
    unknown: list[str] = []
    for key, raw in params.items():
        if key in FOREIGN:
            continue
        name = key[len(EDIT_PREFIX):]
        if key.startswith(EDIT_PREFIX) and name in SHARED_MATRICES:
            cells, problems = _parse_cells(str(raw), SHARED_MATRICES[name])
            if cells:
                edits[name] = cells
            messages += problems
            continue
        path = LEGACY.get(key, key)  # a link from before the pages had their own settings
        if path not in fields:
            unknown.append(key)
            continue
        try:
            values[path] = _parse_value(str(raw), base.get(path))
        except (ValueError, TypeError):
            messages.append(Message(N_("The link's value for {key} (“{raw}”) could not be read; ignored."),
                                    key=key, raw=quote(raw)))
    if len(unknown) == 1:
        messages.insert(0, Message(N_("The link has an unknown setting “{key}”; ignored."), key=quote(unknown[0])))
    elif unknown:  # one message for all of them: a link with 1,000 made-up parameters gets one line
        messages.insert(0, Message(N_("The link has {n} unknown settings ({keys}); ignored."), n=len(unknown),
                                   keys=quote_list(unknown)))
    settings, repaired = validate_settings(base.set(**values))
    return settings, edits, messages + repaired
