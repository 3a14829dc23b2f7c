"""Tables of numbers for charts and tables, as Arrow tables: what Streamlit sends to the browser as it is.

Streamlit converts a pandas DataFrame to Arrow on every run (its column checks, its index, its string columns):
0.5–2 ms per chart or table, on the one thread every student of a class shares (a line chart of four series built
from four DataFrames and a concat: 1.9 ms; the same numbers as one Arrow table: 0.05 ms). The charts and the tables
of the pages are small (tens to hundreds of rows), so they are built here from plain columns instead.
Nothing here computes attention.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa


def _is_column(value: Any) -> bool:
    """A column of values (list, tuple, range, array), not one value repeated (number, text, bool, None)."""
    return not isinstance(value, (str, bytes)) and hasattr(value, "__len__")


def _values(value: Any) -> list:
    return value.tolist() if isinstance(value, np.ndarray) else list(value)


def _rows(columns: Mapping[str, Any]) -> int:
    """How many rows ``columns`` make: the length of its columns (1 when every value is single).

    Raises:
        ValueError: two columns of different lengths.
    """
    lengths = {len(v) for v in columns.values() if _is_column(v)}
    if len(lengths) > 1:
        raise ValueError(f"columns of different lengths: {sorted(lengths)}")
    return lengths.pop() if lengths else 1


def table(columns: Mapping[str, Any]) -> pa.Table:
    """An Arrow table of ``columns`` (name -> values), in their order; a single value (a number, a text, a bool) is
    repeated down its column, as ``pandas.DataFrame`` repeats it.

    Raises:
        ValueError: two columns of different lengths.
    """
    rows = _rows(columns)
    return pa.table({name: _values(v) if _is_column(v) else [v] * rows for name, v in columns.items()})


def stacked(parts: Sequence[Mapping[str, Any]]) -> pa.Table:
    """One Arrow table of ``parts`` (each as :func:`table` takes it) one under the other, as ``pandas.concat`` stacks
    DataFrames: the columns in the order they first appear, empty (null) where a part has no such column.

    Raises:
        ValueError: two columns of different lengths within a part.
    """
    names = list(dict.fromkeys(name for part in parts for name in part))
    columns: dict[str, list] = {name: [] for name in names}
    for part in parts:
        rows = _rows(part)
        for name in names:
            value = part.get(name)
            columns[name].extend(_values(value) if _is_column(value) else [value] * rows)
    return pa.table(columns)


def from_rows(rows: Sequence[Sequence[Any]], columns: Sequence[str]) -> pa.Table:
    """An Arrow table of ``rows`` (one tuple of values per row, in the order of ``columns``), as
    ``pandas.DataFrame(rows, columns=columns)`` reads them.

    Raises:
        ValueError: a row with more or fewer values than ``columns``.
    """
    if any(len(row) != len(columns) for row in rows):
        raise ValueError(f"every row needs {len(columns)} values")
    return pa.table({name: [row[i] for row in rows] for i, name in enumerate(columns)})
