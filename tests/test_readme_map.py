"""The README's map of the code ("How it is built") names every module of attention_core and ui, so a newcomer
finds any formula's code from it; a module added without a line there fails here."""

from __future__ import annotations

import re

from conftest import ROOT


def readme_map() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("## How it is built")
    return text[start:text.index("```", text.index("```", start) + 3)]


def test_the_readme_map_names_every_module_and_package():
    words = set(re.findall(r"[\w.]+", readme_map()))
    missing = []
    for folder in ("attention_core", "ui"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "__init__.py":
                name = path.parent.name
                if path.parent.name != folder and name not in words and f"{name}/" not in readme_map():
                    missing.append(str(path.parent.relative_to(ROOT)) + "/")
            elif path.name not in words:
                missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"not in the README's map: {missing}"
