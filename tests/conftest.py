"""Shared by every test: the repository root, the app, and the AppTest helpers (open a page on a worked example,
read its errors, warnings, formulas, settings and pickers).

The tests mirror ``attention_core``: ``tests/<concept>/`` holds the tests of ``attention_core/<concept>/`` and of
its pages; ``tests/app/`` the app as a whole (every page, both languages, the browser, the real server).
Test modules import these helpers with ``from conftest import ...`` (pytest puts this folder on sys.path).
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import settings
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent

# Property tests draw the same examples on every run and every machine (a red CI is a bug, not a roll of the dice);
# HYPOTHESIS_PROFILE=explore draws fresh ones, to look for new counterexamples on purpose.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
APP = str(ROOT / "app.py")
# The class store's default SQLite file goes to a folder of this test run, never to the checkout's data/ (servers the
# tests start inherit it); tests of a store of their own give its URL (ATTENTION_EXPLORER_CLASS_STORE).
# The folder is this process's own (removed when the session finishes) unless the environment named one.
_OWN_DATA: str | None = None
if "ATTENTION_EXPLORER_DATA" not in os.environ:
    _OWN_DATA = os.environ["ATTENTION_EXPLORER_DATA"] = tempfile.mkdtemp(prefix="attention-test-data-")

# The test command runs the suite in worker processes (pytest-xdist, one per core, scripts/test.sh): each
# worker gets a data folder of its own (not the one it inherits from the process that started it), and torch's OpenMP
# threads sleep when they wait instead of spinning (OMP_WAIT_POLICY=PASSIVE, before torch is imported here or in a
# process the tests start): two processes spinning on two cores took 4 times as long for the toy model's training.
if os.environ.get("PYTEST_XDIST_WORKER"):
    if Path(os.environ["ATTENTION_EXPLORER_DATA"]).name.startswith("attention-test-data-"):
        _OWN_DATA = os.environ["ATTENTION_EXPLORER_DATA"] = tempfile.mkdtemp(
            prefix=f"attention-test-data-{os.environ['PYTEST_XDIST_WORKER']}-")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's data folder goes when the run ends (every server the tests started has stopped by then)."""
    if _OWN_DATA is not None:
        shutil.rmtree(_OWN_DATA, ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _components_scanned_once():
    """Streamlit's scan for installed custom components, once per test run instead of once per AppTest.

    Every AppTest's first run scans the metadata of every installed distribution for component manifests
    (``streamlit.components.v2.manifest_scanner``: ~0.3 s here, ~600 distributions), and the suite makes thousands of
    AppTests; the installed distributions do not change during a run, so the scan's result is kept (the same list the
    scan gives: the app uses no custom component)."""
    from streamlit.components.v2 import manifest_scanner

    manifests = manifest_scanner.scan_component_manifests()
    scan = manifest_scanner.scan_component_manifests
    manifest_scanner.scan_component_manifests = lambda *args, **kwargs: list(manifests)
    yield
    manifest_scanner.scan_component_manifests = scan


def page_paths() -> list[str]:
    """Every page of the app, as AppTest opens it (``app_pages/<key>.py``), from the one registry, in its order."""
    from attention_core import registry

    return [f"app_pages/{page.file}" for page in registry.PAGES]


def open_app(page: str = "app_pages/overview.py", preset: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, at.exception
    if preset is not None:
        at.selectbox(key="setting_preset").set_value(preset).run()
    if page != "app_pages/overview.py":
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def open_link(page: str, language: str = "en", timeout: float = 300, **params) -> AppTest:
    """The app opened on ``page`` as a link with these query parameters (``language``, ``prompt``, ...) would open it,
    with no exception."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.query_params["language"] = language
    for name, value in params.items():
        at.query_params[name] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def shown(markdown: str) -> str:
    """What a reader sees of Markdown source: the backslash escapes of user text (``ui.widgets.md_escape``) undone."""
    return _ESCAPED.sub(r"\1", markdown)


_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>$~])")


# Numbers computed here in float32 and compared with numbers computed on another machine (captured files, the seeds'
# printed numbers) are compared as numbers, never as text: another processor (another SIMD width, FMA or not, another
# BLAS kernel's summation order) rounds the last bits of float32 differently. One rounding is at most 2^-24 ≈ 6e-8
# relative, but a sum's error is relative to the size of its terms, not of its result: an entry that cancels to near 0
# keeps the absolute error of its neighbours. So the tolerance is relative to the larger of the number and the largest
# number of the same matrix: |ours − theirs| ≤ FLOAT32_ATOL + FLOAT32_RTOL · max(|theirs|, max |matrix|). Measured on
# the old links (2788 numbers, 18 pages) against this machine's AVX2 kernels, with torch's scalar kernels
# (ATEN_CPU_CAPABILITY=default), MKL limited to SSE4.2, or MKL's compatible mode: at most 0.09 of that tolerance
# (the largest difference 1.2e-5, in MiniLM's hidden states, whose matrix reaches 36).
FLOAT32_RTOL = 1e-5
FLOAT32_ATOL = 1e-6


def digit_unit(value: float, digits: int) -> float:
    """One unit in the ``digits``-th significant digit of ``value``: (0.8603, 4) → 1e-4, (4.026e-05, 4) → 1e-8."""
    return 10.0 ** (math.floor(math.log10(abs(value))) - digits + 1) if value else 10.0 ** -digits


def same_number(ours: str, theirs: str, digits: int | None = None, scale: float = 0.0) -> bool:
    """Whether two numbers written as text (this machine's and another's) are the same float32 number.

    Within :data:`FLOAT32_ATOL` + :data:`FLOAT32_RTOL` · max(|theirs|, ``scale``), ``scale`` being the largest number
    of the matrix both come from; or, for numbers written rounded to ``digits`` significant digits (the formulas write
    4), within one unit of that digit: a value a few float32 ulps from a rounding boundary is written one digit apart
    on two processors ("0.5493" and "0.5494"). Text that is not a number ("saw", "(3, 5)") must be equal; NaN equals
    NaN, ±inf itself.
    """
    try:
        a, b = float(ours), float(theirs)
    except ValueError:
        return ours == theirs
    if not (math.isfinite(a) and math.isfinite(b)):
        return a == b or (math.isnan(a) and math.isnan(b))
    tolerance = FLOAT32_ATOL + FLOAT32_RTOL * max(abs(b), scale)
    if digits is not None:
        tolerance = max(tolerance, digit_unit(max(abs(a), abs(b)), digits) * (1 + 1e-9))
    return abs(a - b) <= tolerance


def differing_numbers(ours: list[str], theirs: list[str], digits: int | None = None) -> list[tuple[int, str, str]]:
    """The places where two lists of numbers written as text (one matrix's, or one formula's) are not
    :func:`same_number`, at the scale of the largest finite number of ``theirs``: (index, ours, theirs). Lists of
    different lengths also differ at the first place one of them lacks."""
    scale = max((abs(v) for v in map(_as_float, theirs) if math.isfinite(v)), default=0.0)
    differ = [(i, a, b) for i, (a, b) in enumerate(zip(ours, theirs)) if not same_number(a, b, digits, scale)]
    if len(ours) != len(theirs):
        n = min(len(ours), len(theirs))
        differ.append((n, ours[n] if n < len(ours) else "(none)", theirs[n] if n < len(theirs) else "(none)"))
    return differ


def _as_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


_NUMBER = r"[−-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?"


def shows_number(text: str, value: float, before: str = "", digits: int = 4) -> bool:
    """Whether ``text`` writes ``value``, a number known from elsewhere (a seed's print, worked by hand), rounded for
    display: a number written right after ``before`` (e.g. ``"= "``; anywhere if empty) within one unit of the
    ``digits``-th significant digit of ``value``, since a float32 result near a rounding boundary may round either way
    on another processor ("0.8210" or "0.8211"). Minus signs may be ASCII or U+2212."""
    unit = digit_unit(value, digits)
    found = re.findall(re.escape(before) + "(" + _NUMBER + ")", text)
    return any(abs(float(n.replace("−", "-")) - value) <= unit * (1 + 1e-9) for n in found)


def errors(at: AppTest) -> str:
    return " ".join(e.value for e in at.error)


def warnings(at: AppTest) -> str:
    """Every warning the page shows (the step-through element's too), one string."""
    return " ".join(shown_warnings(at))


def latex(at: AppTest) -> str:
    return "\n".join(element.value for element in at.latex)


def settings(at: AppTest):
    return at.session_state["settings"]


# ---------------------------------------------------------------- the step-through element (ui/stepper.py)
# A page whose step-through is the browser element sends its whole walk-through as the element's data; AppTest sees
# that data (what the element will show) but cannot click inside it: its clicks are the browser tests' and Node's.


def element(at: AppTest) -> dict:
    """The data of the page's step-through element: every stage's formula, matrices and (loaded) entries, the
    checks, the position."""
    (found,) = [e for e in at.get("bidi_component") if e.proto.component_name == "attention_explorer.stepper"]
    return json.loads(found.proto.json)


def has_element(at: AppTest) -> bool:
    return any(e.proto.component_name == "attention_explorer.stepper" for e in at.get("bidi_component"))


def element_send(at: AppTest, event: str, value: dict, name: str = "attention_explorer.stepper") -> AppTest:
    """What the element ``name`` sends the server with ``setTriggerValue(event, value)`` (a practice answer, a mask
    cell clicked; the class's reporter: the step reached): the page's run with that trigger among its widget states,
    as the browser's request carries it."""
    from streamlit.components.v2.bidi_component.main import _make_trigger_id

    (found,) = [e for e in at.get("bidi_component") if e.proto.component_name == name]
    states = at._tree.get_widget_states()
    trigger = states.widgets.add()
    trigger.id = _make_trigger_id(found.proto.id, "events")
    trigger.json_trigger_value = json.dumps([{"event": event, "value": value}])
    return at._run(states)


def element_step(at: AppTest, **changes) -> AppTest:
    """Move the step-through's position as the server does on purpose (a link, the teacher): the settings' stage /
    entry fields (``self_attention.stage=...``, ``entry_row=...``) changed, then the page's run; the element takes it
    (a page on the server's renderer draws that stage and entry)."""
    from ui.state import _ENTRY_CHOSEN, ENTRY_FIELDS

    at.session_state["settings"] = settings(at).replace(**changes)[0]
    if ENTRY_FIELDS & changes.keys():  # an entry moved to on purpose is a choice (ui.state.update)
        at.session_state[_ENTRY_CHOSEN] = True
    at.session_state["position_token"] = at.session_state["position_token"] + 1 if "position_token" in \
        at.session_state else 1
    return at.run()


def shown_latex(at: AppTest) -> str:
    """Every formula the page typesets at its step-through's position, one a line: :func:`element_latex` on a page
    whose step-through is the element, else :func:`latex`."""
    return element_latex(at) if has_element(at) else latex(at)


def _text(html_text: str) -> str:
    """An element's HTML as the Markdown text it was made from reads: tags dropped, code in backticks."""
    return html.unescape(re.sub(r"<[^>]+>", "", re.sub(r"</?code>", "`", html_text)))


def shown_warnings(at: AppTest) -> list[str]:
    """The page's warnings, as text: its warning messages and the element's."""
    return [w.value for w in at.warning] + ([_text(w) for w in element(at)["warnings_html"]] if has_element(at) else [])


def shown_notes(at: AppTest) -> list[str]:
    """The page's notes (info messages), as text: its info messages and the element's."""
    return [i.value for i in at.info] + ([_text(n) for n in element(at)["notes_html"]] if has_element(at) else [])


def shown_markdown(at: AppTest) -> str:
    """The page's Markdown texts and, on a page with the element, what its stage shown says (what the step does, its
    remark and details), as text, one string."""
    texts = [m.value for m in at.markdown]
    if has_element(at):
        data = element(at)
        stage = data["stages"][data["position"]["stage"]]
        texts += [_text(stage[name]) for name in ("opened_html", "explain_html", "remark_html", "details_html")]
    return " ".join(texts)


def shown_checks(at: AppTest) -> list[str]:
    """The page's check lines and the stage's remark (its success lines), as text: its success messages, and the
    element's check lines and the remark of the stage it shows."""
    found = [s.value for s in at.success]
    if has_element(at):
        data = element(at)
        remark = data["stages"][data["position"]["stage"]]["remark_html"]
        found += element_checks(at) + ([_text(remark)] if remark else [])
    return found


def element_latex(at: AppTest) -> str:
    """What the page typesets at the element's position, one formula a line: the page's own formulas (its header),
    the stage's formula and the explained entry (when its entries were sent)."""
    data = element(at)
    pos = data["position"]
    stage = data["stages"][pos["stage"]]
    entry = (stage["entries"] or {}).get(f"{pos['row']},{pos['col']},{pos['head']}")
    return "\n".join([latex(at), *stage["formula"], *([entry] if entry else [])])


def element_entry(at: AppTest) -> str:
    """The explained entry at the element's position (LaTeX)."""
    data = element(at)
    pos = data["position"]
    return data["stages"][pos["stage"]]["entries"][f"{pos['row']},{pos['col']},{pos['head']}"]


def element_checks(at: AppTest, stage: str = "") -> list[str]:
    """The element's check lines of ``stage`` (default: the stage shown), as text (its HTML without tags)."""
    data = element(at)
    return [_text(check["html"]) for check in data["stages"][stage or data["position"]["stage"]]["checks_html"]]


def charts(at: AppTest) -> list[tuple[dict, pd.DataFrame]]:
    """Every Vega-Lite chart on the page: its spec and its data (one row per mark's datum), in page order."""
    from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df

    return [(json.loads(chart.proto.spec), convert_arrow_bytes_to_pandas_df(chart.proto.data.data))
            for chart in at.get("vega_lite_chart")]


def entry_map(at: AppTest) -> pd.DataFrame:
    """The data of the page's one map whose cells explain their weight when clicked (``ui.page_parts.model_view.attention_map``)."""
    (found,) = [data for spec, data in charts(at) if '"entry_pick"' in json.dumps(spec)]
    return found


def picker(at: AppTest, label: str):
    """The one selectbox labelled ``label`` (the explained entry's column picker gets a fresh key per label set)."""
    (found,) = [s for s in at.selectbox if s.label == label]
    return found


def train_and_wait(at: AppTest, timeout: float = 120) -> None:
    """On *Watch attention learn*: click Train, wait for the run's ``finished`` event (not a sleep) and run the page
    again, which now shows the run's charts and sections. Other pages: nothing."""
    from attention_core.lessons.training.page import run_key
    from ui.page_parts import training

    trains = [b for b in at.button if b.label == "Train"]
    if not trains:
        return
    trains[0].click().run()
    run = training.runs().get(run_key(settings(at)))
    assert run is not None and run.finished.wait(timeout), "the run did not finish"
    at.run()


# ---------------------------------------------------------------- a real PostgreSQL server for the class store

@pytest.fixture(scope="session")
def postgres_cluster():
    """A PostgreSQL server of Debian's package (``ui.classroom.store.cluster``), started on loopback in a temporary folder
    for this test session and stopped after it; as root, it runs as the ``postgres`` user. Fails (never skips) when
    the binaries are missing: ``scripts/test.sh`` installs them."""
    from ui.classroom.store.cluster import Cluster

    folder = Path(tempfile.mkdtemp(prefix="attention-pg-"))
    folder.chmod(0o755)  # the server's user must reach its folder inside
    cluster = Cluster(folder / "cluster").start()
    yield cluster
    cluster.remove()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    """The class store's URL on each real database: a fresh SQLite file, or the session's PostgreSQL server (one
    database; tests keep apart by their classes' random codes)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'classes.sqlite'}"
    return request.getfixturevalue("postgres_cluster").url
