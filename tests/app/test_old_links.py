"""Links made before the pages were declared in one registry (issue 25) still open the same numbers.

``data/old_links.json`` was captured from main at 5a8a8b5 (before the move) by opening each link with AppTest:
for every link, its page's title, the numbers of every formula (st.latex) and every table (each link has
``tables=1``, so every chart's numbers are a table too). A link opened today must show the same numbers.

The causal, dropout, ALiBi, sliding-window and FlashAttention links were captured again when those pages took the
self-attention page's W_q, W_k, W_v instead of drawing their own (issue 60: pages that continue that page's
numbers use exactly its numbers): such a link made before opens the new numbers, on the same settings.

A matrix editor shows its cells as text with 4 decimals (what a learner sees and types), so its numbers are
compared to the 4th significant digit.

That capture was made on another processor, in float32: its numbers are compared as numbers (``same_number``: within
``FLOAT32_RTOL`` / ``FLOAT32_ATOL``; a formula's numbers, written with 4 significant digits, within one unit of
the 4th), never as exact text, so the
suite passes on any machine of our kind. Text that is not a number (a title, a token, an index pair) stays exact.
"""

from __future__ import annotations

import json
import math
import re
import urllib.parse
from pathlib import Path

import pandas as pd
import pytest
from conftest import APP, FLOAT32_ATOL, FLOAT32_RTOL, differing_numbers, element, element_latex, has_element
from streamlit.testing.v1 import AppTest

CAPTURED = json.loads((Path(__file__).parent / "data" / "old_links.json").read_text())
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?")


def page_file(url_path: str) -> str:
    """The page file a URL path opens, as the router declares it."""
    return "app_pages/" + url_path.strip("/").replace("-", "_") + ".py"


@pytest.mark.parametrize("link", list(CAPTURED))
def test_an_old_link_opens_the_same_numbers(link):
    path, query = link.split("?")
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(dict(urllib.parse.parse_qsl(query + "&tables=1")))
    at.run()  # the link is read on the session's first run
    at.switch_page(page_file(path)).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    before = CAPTURED[link]
    assert at.title[0].value == before["title"]
    if has_element(at):  # the step-through in the browser: its formulas and matrices are the element's data
        assert_same_numbers([NUMBER.findall(line) for line in element_latex(at).split("\n") if line.strip("$ ")],
                            before["latex"], "formula", digits=4)
        data = element(at)
        shown = len(data["stages"][data["position"]["stage"]]["panels"])
        # the step-through's tables were captured first, then the page's own below it (the KV cache's sizes); on a
        # model page the step-through comes last, below the head's map and the heads' scores
        if path in ("/trained-model", "/modern-lm"):
            assert_shown_numbers(at, before["tables"][-shown:])
            assert_tables(at, before["tables"][:-shown])
        else:
            assert_shown_numbers(at, before["tables"][:shown])
            assert_tables(at, before["tables"][shown:])
        return
    assert_same_numbers([NUMBER.findall(e.value) for e in at.latex], before["latex"], "formula", digits=4)
    assert_tables(at, before["tables"])


def assert_tables(at: AppTest, tables: list[list[str]]) -> None:
    """The page's tables (its dataframes) hold the captured tables' numbers."""
    frames = [d.value for d in at.dataframe]
    assert len(frames) == len(tables), f"{len(frames)} tables, captured {len(tables)}"
    for n, (frame, captured) in enumerate(zip(frames, tables)):
        ours = editor_numbers(frame)
        if any(pd.api.types.is_numeric_dtype(dtype) for dtype in frame.dtypes) or not all(map(is_number, ours)):
            assert_same_numbers([ours], [captured], f"table {n + 1}")
        else:  # a matrix editor's text cells, written with 4 decimals: within half a unit of the 4th, and float32's
            differ = [(i, a, b) for i, (a, b) in enumerate(zip(ours, captured))
                      if abs(float(a) - float(b)) > 0.5e-4 + FLOAT32_ATOL + FLOAT32_RTOL * abs(float(b))]
            assert len(ours) == len(captured) and not differ, f"table {n + 1}: {differ[:5]}"


def assert_shown_numbers(at: AppTest, captured: list[list[str]]) -> None:
    """The element's matrices at its position hold the captured tables' numbers, as a heatmap's cells write them
    (3 significant digits, or a shared factor 10ⁿ its caption states): within half a unit of the last digit written."""
    data = element(at)
    panels = data["stages"][data["position"]["stage"]]["panels"]
    assert len(panels) == len(captured), f"{len(panels)} matrices, captured {len(captured)} tables"
    for n, (panel, numbers) in enumerate(zip(panels, captured)):
        units = re.search(r"10([⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)", panel["caption_html"])
        factor = 10.0 ** int(units.group(1).translate(str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789"))) if units else 1.0
        cells = [text.replace("−", "-") for row in panel["text"] for text in row]
        differ = [(i, a, b) for i, (a, b) in enumerate(zip(cells, numbers)) if not (
            a == "-∞" and float(b) == -math.inf or abs(float(a) * factor - float(b)) <= factor * (
                0.5 * 10.0 ** -(len(a.split(".")[1]) if "." in a else 0)) + FLOAT32_ATOL + FLOAT32_RTOL * abs(float(b)))]
        assert len(cells) == len(numbers) and not differ, f"matrix {n + 1}: {differ[:5]}"


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def editor_numbers(frame) -> list[str]:
    """A table's cells as text: a number as ``str``, a matrix editor's text cell ("−0.2310") with an ASCII minus."""
    return [v.replace("−", "-") if isinstance(v, str) else str(v) for v in frame.to_numpy().ravel().tolist()]


def assert_same_numbers(ours: list[list[str]], captured: list[list[str]], what: str, digits: int | None = None) -> None:
    """Each list of ``ours`` (a formula's or a table's numbers, as text) holds the same numbers as ``captured``'s."""
    assert len(ours) == len(captured), f"{len(ours)} {what}s, captured {len(captured)}"
    for n, (a, b) in enumerate(zip(ours, captured)):
        differ = differing_numbers(a, b, digits)
        assert not differ, f"{what} {n + 1}: (place, today, captured) {differ[:5]}"
