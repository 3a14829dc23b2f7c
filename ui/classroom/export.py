"""Download buttons of one heatmap: PNG and SVG (the chart), CSV (its matrix); used by ``ui.classroom.worksheet``.

Files are made only when a button is clicked (``st.download_button`` with a
callable), so a page rerun pays nothing for them. Heatmaps are converted with
vl-convert (Vega-Lite to PNG / SVG, offline).
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

import pandas as pd
import streamlit as st

from ui.heatmaps import heatmap_figure
from ui.i18n import _


def _standalone_spec(matrix, row_labels: Sequence[str], col_labels: Sequence[str], title: str) -> dict:
    table, spec = heatmap_figure(matrix, row_labels, col_labels)
    records = table.to_pylist()  # nulls stay None, numbers plain Python
    return {**spec, "data": {"values": records}, "title": title, "background": "white"}


def heatmap_png(matrix, row_labels: Sequence[str], col_labels: Sequence[str], title: str) -> bytes:
    import vl_convert  # imported on first export only: it starts a JavaScript engine

    return vl_convert.vegalite_to_png(_standalone_spec(matrix, row_labels, col_labels, title), scale=2)


def heatmap_svg(matrix, row_labels: Sequence[str], col_labels: Sequence[str], title: str) -> str:
    import vl_convert

    return vl_convert.vegalite_to_svg(_standalone_spec(matrix, row_labels, col_labels, title))


def matrix_csv(matrix, row_labels: Sequence[str], col_labels: Sequence[str]) -> str:
    return pd.DataFrame(matrix.tolist(), index=list(row_labels), columns=list(col_labels)).to_csv()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "matrix"


def matrix_downloads(matrix, row_labels: Sequence[str], col_labels: Sequence[str], title: str, key: str,
                     name: Optional[str] = None) -> None:
    """PNG, SVG and CSV buttons for one matrix shown as a heatmap (files named ``name``, else after the title)."""
    name = name or _slug(title)
    png, svg, csv = st.columns(3)
    png.download_button(_("Heatmap PNG"), key=f"{key}_png", icon=":material/image:", mime="image/png",
                        file_name=f"{name}.png", on_click="ignore",
                        data=lambda: heatmap_png(matrix, row_labels, col_labels, title))
    svg.download_button(_("Heatmap SVG"), key=f"{key}_svg", icon=":material/draw:", mime="image/svg+xml",
                        file_name=f"{name}.svg", on_click="ignore",
                        data=lambda: heatmap_svg(matrix, row_labels, col_labels, title))
    csv.download_button(_("Matrix CSV"), key=f"{key}_csv", icon=":material/table:", mime="text/csv",
                        file_name=f"{name}.csv", on_click="ignore",
                        data=lambda: matrix_csv(matrix, row_labels, col_labels))
