"""The map of the code (``docs/architecture.md``, "How it is built") names every module of attention_core and ui, so a
newcomer finds any formula's code from it; a module added without a line there fails here. The README's table of
pages ("What it shows") has a row for every page of the registry, in the navigation's order, and so has
``docs/pages.md``; the README stays a front door (at most 300 lines) and every document it links to exists.

A page's own folder is found by its name instead, as the map says: ``lessons/<page key>/`` for a page of the
registry, its files named as in every lesson (``page.py``, ``walk.py``, ...: those names are in the map), so adding a
page does not edit the map.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys

from conftest import ROOT

from attention_core import registry


def readme_map() -> str:
    """The map: the first code block of docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("# How it is built")
    return text[start:text.index("```", text.index("```", start) + 3)]


#: The lessons' folder: one folder per page, named by its key.
LESSONS = ROOT / "attention_core" / "lessons"


def test_the_readme_map_names_every_module_and_package():
    words = set(re.findall(r"[\w.]+", readme_map()))
    missing = []
    for folder in ("attention_core", "ui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.parent.parent == LESSONS:  # a page's folder: named by its key, its files as in every lesson
                if path.parent.name not in registry.BY_KEY:
                    missing.append(f"{path.parent.relative_to(ROOT)}/ (no page has this key)")
                elif path.name != "__init__.py" and path.name not in words:
                    missing.append(str(path.relative_to(ROOT)))
            elif path.name == "__init__.py":
                name = path.parent.name
                if path.parent.name != folder and name not in words and f"{name}/" not in readme_map():
                    missing.append(str(path.parent.relative_to(ROOT)) + "/")
            elif path.name not in words:
                missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"not in the README's map: {missing}"


def test_the_readme_states_the_page_module_convention_the_map_relies_on():
    assert "lessons/<page key>/" in readme_map()


def readme_pages(path: str = "README.md", heading: str = "## What it shows") -> list[str]:
    """The page titles of a table of pages: each row's bold first cell, in order."""
    text = (ROOT / path).read_text()
    start = text.index(heading)
    table = text[start:text.index("\n\n", text.index("| --- |", start))]
    return re.findall(r"^\| \*\*(.+?)\*\* \|", table, flags=re.MULTILINE)


def test_the_readme_table_of_pages_has_every_page_of_the_registry_in_order():
    """Watch attention learn had no row: a page added to the registry without one fails here."""
    assert readme_pages() == [page.title for page in registry.PAGES]
    assert readme_pages("docs/pages.md", "# The pages, in full") == [page.title for page in registry.PAGES]


def test_the_readme_is_a_front_door_and_its_links_lead_somewhere():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    assert not re.search(r"\b[0-9a-f]{7,40}\b", text), "a commit hash in the README: history is git log's"
    linked = set(re.findall(r"`(docs/[\w.-]+)`|\]\((docs/[\w.-]+)\)", text))
    files = {a or b for a, b in linked}
    assert {"docs/architecture.md", "docs/classroom.md", "docs/deploy.md", "docs/lecture-hall.md",
            "docs/models.md", "docs/performance.md"} <= files
    assert [f for f in files if not (ROOT / f).exists()] == []


# ---------------------------------------------------------------- the commands the README and docs show

DOCUMENTS = ("README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")))


def doc_commands() -> dict[tuple[str, ...], str]:
    """Every ``.venv/bin/python <script>.py ...`` command the README and docs show (a line continued with ``\\`` read
    as one; a placeholder's brackets and ``...`` dropped, ``<commit>`` read as a word), as its arguments -> the first
    document showing it."""
    commands: dict[tuple[str, ...], str] = {}
    for name in DOCUMENTS:
        text = (ROOT / name).read_text().replace("\\\n", " ")
        for script, rest in re.findall(r"\.venv/bin/python ((?:scripts|deploy)/[\w/.-]+\.py)([^\n`#|]*)", text):
            words = [w.strip("[]") for w in shlex.split(rest.replace("<", "").replace(">", "")) if w != "..."]
            commands.setdefault((script, *[w for w in words if w]), name)
    return commands


def test_the_docs_show_the_benchmarks_commands():
    scripts = {command[0] for command in doc_commands()}
    assert {"scripts/benchmark_load.py", "scripts/train_toy_reverser.py"} <= scripts, scripts


def test_every_path_under_scripts_the_docs_name_exists():
    """A renamed or removed script leaves no mention behind (the benchmarks are one command line now)."""
    missing = [(name, path) for name in DOCUMENTS
               for path in re.findall(r"\bscripts/[\w/.-]*\w", (ROOT / name).read_text())
               if not (ROOT / path).exists()]
    assert missing == []


def help_of(command: tuple[str, ...]) -> tuple[int, str, str]:
    """``command --help``: (exit status, stdout, stderr). The benchmarks' command line in this process (it imports
    the app's registry, torch with it: seconds a process), anything else as a process of this venv's Python."""
    if command[0] != "scripts/benchmark_load.py":
        result = subprocess.run([sys.executable, *command, "--help"], cwd=ROOT, capture_output=True, text=True,
                                timeout=120)
        return result.returncode, result.stdout, result.stderr
    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))
    import benchmark_load

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            benchmark_load.main([*command[1:], "--help"])
            code = 1  # --help exits: returning means it did not
        except SystemExit as exit_:
            code = exit_.code or 0
    return code, out.getvalue(), err.getvalue()


def test_every_command_the_docs_show_runs_as_written_up_to_its_help():
    """Each command as written, with ``--help`` after it: the script exists, its mode and the values given are
    accepted (argparse reads them before it meets --help), and every option it names is one the script has."""
    failures = []
    for command, name in doc_commands().items():
        code, out, err = help_of(command)
        unknown = [w.split("=")[0] for w in command if w.startswith("--") and w.split("=")[0] not in out]
        if code != 0 or not out.startswith("usage:") or unknown:
            failures.append(f"{name}: {' '.join(command)}: exit {code}, options not in its help {unknown}: "
                            f"{err[-500:]}")
    assert failures == [], "\n".join(failures)
