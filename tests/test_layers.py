"""The layers of attention_core: a floor of shared pieces, the concepts in teaching order, the lessons (one folder
per page), the registry on top.

Walks every import of every module of ``attention_core`` (module level, inside functions, and any under
``if TYPE_CHECKING:``: an import for type hints ties modules as much as any other) and fails on

* a module or folder of attention_core that has no layer below (a new one must be placed);
* a floor module that imports a concept, or a concept that imports a later concept or anything above it
  (a unit of the top may import what is listed before it);
* a lesson (``lessons/<key>/``, one page) that imports another lesson: what two pages share lives below them;
* a cycle between the units (the floor modules and the concept folders), whatever the layers say;
* a cycle between two modules, inside a folder too (a walk-through and the recipe that reads it, ...).

The README's "How it is built" draws the same layers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attention_core"

#: Shared pieces named for what they are; each may import only other floor modules.
FLOOR = ("errors", "latex", "fields", "page", "inputs", "stepthrough", "practice", "masks", "positions",
         "weights", "entry_formulas", "recipe", "reads", "shared_settings", "checkpoints", "sources")
#: The concept folders, in teaching order: each may import the floor and the concepts before it.
CONCEPTS = ("self_attention", "masking", "multi_head", "transformer", "modern", "minilm", "smollm2", "backward",
            "training", "check")
#: Above every concept, in one layer: the pages, one folder each (``lessons/<key>/``), each its own unit.
LESSONS = "lessons"
#: Above the lessons, in order: the list of pages, the settings composed from them, what a class shares and
#: exports of any page (links, worksheets, scripts), the package's front door.
TOP = ("registry", "settings", "classroom", "__init__")

LAYER = {**{name: 0 for name in FLOOR}, **{name: 1 + n for n, name in enumerate(CONCEPTS)},
         LESSONS: 1 + len(CONCEPTS), **{name: 2 + len(CONCEPTS) + n for n, name in enumerate(TOP)}}


def layer(unit_name: str) -> int:
    """The layer of a unit: a lesson's (``lessons.<key>``) is the lessons' layer."""
    return LAYER[unit_name.split(".")[0]]


def unit(module: str) -> str:
    """The unit of a dotted module name: its folder under attention_core (a lesson's own folder, ``lessons.<key>``),
    or the top-level module's name."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == LESSONS:
        return f"{LESSONS}.{parts[2]}"
    return parts[1] if len(parts) > 1 else "__init__"


def _resolve(base: str, name: str) -> str:
    """``from base import name``: the module it reaches (base.name when that is a module, else base)."""
    candidate = Path(ROOT, *f"{base}.{name}".split("."))
    return f"{base}.{name}" if candidate.with_suffix(".py").exists() or candidate.is_dir() else base


def imports(package: str = "attention_core") -> list[tuple[str, str]]:
    """Every (importing module, imported module) pair inside ``package`` (attention_core or ui), both dotted (``from ui
    import x`` reaches ui.x); a relative import is paired with "relative", which the layer tests fail on."""
    pairs = []
    for path in sorted((ROOT / package).rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                pairs.append((module, "relative"))
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package:
                pairs += [(module, _resolve(node.module, alias.name)) for alias in node.names]
            elif isinstance(node, ast.Import):
                pairs += [(module, alias.name) for alias in node.names if alias.name.split(".")[0] == package]
    return pairs


def unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for importer, imported in imports():
        if unit(importer) != unit(imported):
            graph.setdefault(unit(importer), set()).add(unit(imported))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first walk (each reported once, from where the walk closes it)."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_every_module_and_folder_of_attention_core_has_a_layer():
    units = {path.stem if path.is_file() else path.name
             for path in PACKAGE.iterdir() if path.suffix == ".py" or (path / "__init__.py").exists()}
    assert units - set(LAYER) == set(), "place these in FLOOR, CONCEPTS or TOP (tests/test_layers.py)"


def test_no_import_runs_against_the_layers():
    upward = sorted({f"{importer} -> {imported}" for importer, imported in imports()
                     if unit(importer) != unit(imported) and layer(unit(imported)) >= layer(unit(importer))
                     and not layer(unit(importer)) == layer(unit(imported)) == 0  # the floor: cycles only
                     and imported != f"attention_core.{LESSONS}"})  # the lessons' package: a docstring
    assert upward == []


def test_no_lesson_imports_another():
    """Each page's folder stands alone: a page can be read, moved or removed with its folder."""
    across = sorted({f"{importer} -> {imported}" for importer, imported in imports()
                     if unit(importer).startswith(f"{LESSONS}.") and unit(imported).startswith(f"{LESSONS}.")
                     and unit(importer) != unit(imported)})
    assert across == []


def test_no_cycle_between_concept_folders_or_floor_modules():
    assert cycles(unit_graph()) == []


@pytest.mark.parametrize("graph, expected", [
    ({"masking": {"multi_head"}, "multi_head": {"masking"}}, [["masking", "multi_head", "masking"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c", "a"]]),
    ({"a": {"b"}, "b": {"c"}}, []),
])
def test_the_cycle_finder_finds_the_cycles_of_a_known_graph(graph, expected):
    assert cycles(graph) == expected


def test_the_walk_sees_the_imports_it_must_judge():
    """The checks above are only as good as the walk: it finds known imports, and skips TYPE_CHECKING ones."""
    pairs = set(imports())
    assert ("attention_core.multi_head.walkthrough", "attention_core.masking.user_mask") in pairs
    assert ("attention_core.multi_head.walkthrough", "attention_core.multi_head.formulas") in pairs
    assert not any(importer.startswith("attention_core.modern") and imported == "attention_core.settings"
                   for importer, imported in pairs)  # imported for type hints only


def module_graph(package: str = "attention_core") -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for importer, imported in imports(package):
        if importer != imported and not (ROOT / Path(*imported.split("."))).is_dir():  # a package's face
            graph.setdefault(importer, set()).add(imported)
    return graph


def test_no_cycle_between_modules():
    assert cycles(module_graph()) == []


def test_a_cycle_is_found_where_there_is_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# =========================================================================== ui/: the framework, the classroom, the parts

UI = ROOT / "ui"
#: ui's layers, lowest first: the framework every page shares (state, translation, widgets, heatmaps, charts, the
#: page's body), the classroom (the class live, the teacher's page, practice, worksheets, exports), the step-through
#: (the element every step page hands its walk-through to: it offers practice and the worksheets), and the parts
#: only one page draws (``ui/page_parts/``). Each imports only its own layer and those below.
UI_STEP_THROUGH = ("ui.stepper", "ui.stepper_data", "ui.stepthrough")


def ui_layer(module: str) -> int:
    if module.startswith("ui.classroom.store"):
        return -1  # the class store: plain SQLAlchemy, under everything else of ui
    if module.startswith("ui.page_parts"):
        return 3
    if module in UI_STEP_THROUGH:
        return 2
    if module.startswith("ui.classroom"):
        return 1
    return 0


def test_ui_imports_are_absolute_and_run_down_its_layers():
    pairs = imports("ui")
    assert [p for p in pairs if p[1] == "relative"] == []
    upward = sorted(f"{a} -> {b}" for a, b in pairs
                    if (PACKAGE.parent / Path(*b.split("."))).is_dir() is False and ui_layer(b) > ui_layer(a))
    assert upward == []


def test_no_cycle_between_ui_modules():
    """The i18n <-> state pair was one (hidden inside functions): the session's settings now sit below both."""
    assert cycles(module_graph("ui")) == []


def test_the_ui_walk_sees_the_imports_it_must_judge():
    pairs = set(imports("ui"))
    assert ("ui.stepper", "ui.classroom.practice") in pairs
    assert ("ui.i18n", "ui.session") in pairs and ("ui.state", "ui.i18n") in pairs
    assert not any(a == "ui.i18n" and b == "ui.state" for a, b in pairs)


def test_the_class_store_imports_no_streamlit_and_no_other_part_of_ui():
    """The store runs without the app too: in the lecture hall's launcher and the load scripts."""
    store = UI / "classroom" / "store"
    found = sorted(f"{path.relative_to(ROOT)}: {name}" for path in store.rglob("*.py")
                   for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                   for name in ([a.name for a in node.names] if isinstance(node, ast.Import)
                                else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                   if name.split(".")[0] == "streamlit" or (name.startswith("ui") and not name.startswith("ui.classroom.store")))
    assert found == []
    assert any(path.name == "store.py" for path in store.rglob("*.py"))


def test_no_module_is_over_500_lines():
    """A module a newcomer can read in one sitting: split by what its parts do when one grows past this."""
    long = sorted(f"{path.relative_to(ROOT)}: {n}" for folder in ("attention_core", "ui", "app_pages", "scripts",
                                                                 "deploy")
                  for path in (ROOT / folder).rglob("*.py")
                  if (n := len(path.read_text(encoding="utf-8").splitlines())) > 500)
    assert long == []
