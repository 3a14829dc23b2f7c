"""The Jupyter notebook of every step page (attention_core.classroom.notebook), run by the suite: valid nbformat 4; a
Markdown cell per stage with its title and formulas above a code cell that checks every panel of that stage; it runs
top to bottom in a fresh kernel (this interpreter's, with ipykernel), naming every matrix; a copy with one of the
app's numbers off by 0.01 fails with CellExecutionError at that stage's cell. Tokens stay out of the Markdown.

One kernel for every page, in turn: each notebook and its tampered copy run after ``%reset -f`` (nothing left from
the notebook before but the imported modules: a name a notebook forgot to import is still a NameError). A kernel per
page cost 3-20 s of importing torch, transformers and the models again for notebooks that run in seconds.
"""

from __future__ import annotations

import copy
import re
import sys

import nbformat
import pytest
from ipykernel import kernelspec
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbformat import v4
from test_checking_script import CASES, NASTY, every_panel

from attention_core import registry
from attention_core.classroom.notebook import notebook_for
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings

#: page key -> the first case of test_checking_script for it (its default settings): one notebook per step page.
PAGES = {}
for _build, _key in CASES.values():
    PAGES.setdefault(_key, _build)


@pytest.fixture(scope="module")
def notebook_client(tmp_path_factory):
    """A notebook client with a running ``python3`` kernel of this interpreter (the venv's, its kernelspec found
    before any other Jupyter knows of), shared by the module's notebooks: a test sets ``client.nb`` and runs its
    cells. Shut down afterwards."""
    root = tmp_path_factory.mktemp("jupyter")
    kernelspec.install(prefix=str(root))  # argv[0] = sys.executable
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(root / "share" / "jupyter"))  # searched first
        patch.setenv("JUPYTER_RUNTIME_DIR", str(root / "runtime"))  # connection files here, not in $HOME
        assert KernelSpecManager().get_kernel_spec("python3").argv[0] == sys.executable
        client = NotebookClient(v4.new_notebook(), timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path_factory.mktemp("notebooks"))}})
        with client.setup_kernel():
            yield client


def check_names(walk, page) -> list[str]:
    """Every ``"<stage> <k>/<n>"`` the page's checks name, in the walk-through's order."""
    order, panels = every_panel(walk, page)
    counts = {stage: sum(1 for s, _, _ in panels if s == stage) for stage in order}
    return [f"{stage} {n + 1}/{counts[stage]}" for stage, n, _panel in panels]


def tampered(nb, walk, page) -> tuple[nbformat.NotebookNode, int, str]:
    """A copy whose last finite number of the app's (in the last check that has one) is 0.01 off, starting with
    ``%reset -f``; the index of the changed cell in the copy, and the check's name."""
    order, panels = every_panel(walk, page)
    names = check_names(walk, page)
    index = max(i for i, (_s, _n, panel) in enumerate(panels) if panel.matrix.isfinite().any())
    matrix, name = panels[index][2].matrix, names[index]
    value = float(matrix[matrix.isfinite()][-1])
    out = copy.deepcopy(nb)
    out.cells.insert(0, v4.new_code_cell("%reset -f", id="reset"))
    (cell_index,) = [i for i, cell in enumerate(out.cells) if f"check({name!r}" in cell.source]
    source = out.cells[cell_index].source
    start = source.index(f"check({name!r}")
    end = source.find("\ncheck(", start)
    end = len(source) if end < 0 else end  # the next check, or the cell's end
    head, found, tail = source[start:end].rpartition(repr(value))
    assert found, (value, source[start:end][-300:])
    out.cells[cell_index].source = source[:start] + head + repr(value + 0.01) + tail + source[end:]
    return out, cell_index, name


def printed(nb) -> str:
    return "".join(output.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                   for output in cell.outputs if output.output_type == "stream")


@pytest.mark.parametrize("key", list(PAGES))
def test_the_notebook_runs_top_to_bottom_and_a_tampered_copy_fails(key, notebook_client):
    walk, page = PAGES[key](), registry.BY_KEY[key]
    nb = nbformat.reads(notebook_for(page, walk), as_version=4)
    nbformat.validate(nb)
    names = check_names(walk, page)

    # title, setup, inputs, every step recomputed; then per stage its formula and its checks; then PyTorch's
    kinds = [cell.cell_type for cell in nb.cells]
    stages = len(every_panel(walk, page)[0])
    assert kinds == ["markdown", "code", "code", "code"] + ["markdown", "code"] * stages + ["markdown", "code"]
    for number, stage in enumerate(every_panel(walk, page)[0], start=1):
        text, checks = nb.cells[2 + 2 * number].source, nb.cells[3 + 2 * number].source
        assert text.startswith(f"## Step {number}: ") and "$$" in text
        assert checks.startswith(f"check('{stage} 1/")
    assert sum(cell.source.count("check('") for cell in nb.cells if cell.cell_type == "code") == len(names)

    client = notebook_client
    broken, changed, name = tampered(nb, walk, page)
    nb.cells.insert(0, v4.new_code_cell("%reset -f", id="reset"))  # the notebooks before: gone
    client.nb = nb
    for index, cell in enumerate(nb.cells):
        client.execute_cell(cell, index)
    out = printed(nb)
    assert out.count("matches the app") == len(names)
    assert all(f"{name} " in out for name in names), out
    assert out.count("matches ") > len(names)  # and at least one check against PyTorch's reference
    assert out.rstrip().endswith("Every number matches.")

    client.nb = broken
    with pytest.raises(CellExecutionError, match=re.escape(f"{name} differs from the app")) as error:
        for index, cell in enumerate(broken.cells):
            client.execute_cell(cell, index)
    assert index == changed and "AssertionError" in str(error.value)


def test_the_markdown_holds_no_token_and_the_code_holds_them_as_literals():
    walk = build_walkthrough(Settings.for_preset("custom", sentence=NASTY))
    nb = nbformat.reads(notebook_for(registry.BY_KEY["self_attention"], walk), as_version=4)
    markdown = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "markdown")
    assert not any(part in markdown for part in ("a\"\"\"b", "x')+import", "(os", "it's"))
    (inputs,) = [cell.source for cell in nb.cells if cell.get("id") == "inputs"]
    assert f"tokens = {list(walk.tokens)!r}" in inputs


def test_the_notebook_speaks_the_interface_language_and_is_the_same_file_each_time():
    from ui.i18n import Translator

    page, walk = registry.BY_KEY["causal"], PAGES["causal"]()
    english = notebook_for(page, walk)
    assert english == notebook_for(page, walk)  # fixed cell ids: the same settings give the same file
    chinese = nbformat.reads(notebook_for(page, walk, Translator("zh")), as_version=4)
    assert chinese.cells[0].source.startswith("# 注意力探索器：")
    assert chinese.cells[4].source.startswith("## 第 1 步：")
    english_nb = nbformat.reads(english, as_version=4)
    assert [c.source for c in chinese.cells if c.cell_type == "code"] == [
        c.source for c in english_nb.cells if c.cell_type == "code"]  # the checks are the same code
    assert chinese.metadata.kernelspec.name == "python3"


def test_a_page_without_steps_or_recipe_is_refused():
    with pytest.raises(ValueError):
        notebook_for(registry.BY_KEY["tokens"], build_walkthrough(Settings()))
