"""Links made before the pages were declared in one registry (issue 25) still open the same numbers.

``data/old_links.json`` was captured from main at 5a8a8b5 (before the move) by opening each link with AppTest:
for every link, its page's title, the numbers of every formula (st.latex) and every table (each link has
``tables=1``, so every chart's numbers are a table too). A link opened today must show exactly those.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path

import pytest
from conftest import APP
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
    assert [NUMBER.findall(e.value) for e in at.latex] == before["latex"]
    assert [[str(v) for v in d.value.to_numpy().ravel().tolist()] for d in at.dataframe] == before["tables"]
