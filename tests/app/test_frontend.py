"""The browser side: the step-through element's own tests under Node, and the libraries the app serves itself.

KaTeX, Vega and Vega-Lite come from npm, pinned exactly in ``frontend/package.json`` with npm's integrity hashes in
``frontend/package-lock.json``; ``scripts/vendor_frontend.py`` copies what the browser needs into ``static/<package>/``
and records each file's SHA-256 in its ``SHA256SUMS``. The test command runs ``npm ci`` first, so the copies are
compared byte for byte with the packages npm verified against the lock.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "frontend"
STATIC = ROOT / "static"
KATEX = STATIC / "katex"
sys.path.insert(0, str(ROOT / "scripts"))
from vendor_frontend import PACKAGES, files  # noqa: E402

#: The licence each package is published under (its package.json and its LICENSE file).
LICENCES = {"katex": ("MIT", "MIT License"), "vega": ("BSD-3-Clause", "Redistribution and use in source and binary"),
            "vega-lite": ("BSD-3-Clause", "Redistribution and use in source and binary")}


def sums(package: str = "katex") -> tuple[str, str, dict[str, str]]:
    """(version, npm integrity, {file name: sha256}) from static/<package>/SHA256SUMS."""
    first, *lines = (STATIC / package / "SHA256SUMS").read_text().splitlines()
    _hash, name, version, integrity = first.split()
    assert name == package
    return version, integrity, {name: digest for digest, name in (line.split("  ", 1) for line in lines)}


def test_the_elements_own_tests_pass_under_node():
    node = shutil.which("node")
    assert node, "Node is needed for the browser code's tests (the machine has Node 20)"
    run = subprocess.run([node, "--test", "stepper/"], cwd=FRONTEND, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    passed = re.search(r"^# pass (\d+)", run.stdout, re.M)
    assert passed and int(passed.group(1)) >= 7, run.stdout


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_each_library_is_pinned_exactly_and_its_licence_is_served_with_it(package):
    pinned = json.loads((FRONTEND / "package.json").read_text())["dependencies"][package]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned), f"{package} must be pinned to one version, not {pinned!r}"
    entry = json.loads((FRONTEND / "package-lock.json").read_text())["packages"][f"node_modules/{package}"]
    version, integrity, _files = sums(package)
    assert entry["version"] == pinned == version
    assert entry["integrity"] == integrity and integrity.startswith("sha512-")
    licence, heading = LICENCES[package]
    assert entry["license"] == licence
    assert heading in (STATIC / package / "LICENSE").read_text()
    if package == "katex":
        assert f'content:"{version}"' in (KATEX / "katex.min.css").read_text()  # the style sheet names its version
    else:
        assert f'"{version}"' in (STATIC / package / f"{package}.min.js").read_text()  # the script names its version


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_every_served_file_matches_its_recorded_checksum(package):
    _version, _integrity, recorded = sums(package)
    folder = STATIC / package
    served = {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} - {"SHA256SUMS"}
    assert served == set(recorded), f"static/{package}/ holds exactly the files SHA256SUMS lists"
    for name, digest in recorded.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
    if package == "katex":
        css = (KATEX / "katex.min.css").read_text()
        woff2 = set(re.findall(r"url\((fonts/[^)]+\.woff2)\)", css))
        assert woff2 and woff2 <= set(recorded), "every font the style sheet asks for first (WOFF2) is served"


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_served_copies_are_npms_package_byte_for_byte(package):
    root = FRONTEND / "node_modules" / package
    if not root.is_dir():
        pytest.fail("frontend/node_modules is missing: the test command (scripts/test.sh) runs `npm ci` in frontend/")
    assert json.loads((root / "package.json").read_text())["version"] == sums(package)[0]
    copied = {name: source for source, name in files(package)}
    assert set(copied) == set(sums(package)[2])
    for name, source in copied.items():
        assert source.read_bytes() == (STATIC / package / name).read_bytes(), name


def test_the_element_loads_katex_from_the_app_and_nothing_from_elsewhere():
    script = (FRONTEND / "stepper" / "stepper.js").read_text()
    assert "katex/katex.min.js" in script and "katex/katex.min.css" in script
    assert not re.search(r"https?://", script), "the element fetches nothing from another site (a class may be offline)"


#: Typesets each formula of a JSON list ([label, latex], ...) with the pinned KaTeX as the element does (display mode,
#: Streamlit's strict "warn") and prints the labels of those KaTeX warned about.
_KATEX_WARNINGS = """
const katex = require("katex");
const items = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const warned = [];
let current = "";
console.warn = () => warned.push(current);
for (const [label, latex] of items) {
  current = label;
  katex.renderToString(latex, { displayMode: true, throwOnError: false, output: "htmlAndMathml" });
}
process.stdout.write(JSON.stringify([...new Set(warned)]));
"""


def test_every_formula_and_entry_of_every_step_page_typesets_without_a_katex_warning(tmp_path):
    """Every stage's formula and every explained entry of every step page (the default example) typeset by the pinned
    KaTeX with no warning: the element typesets the steps around the one shown in the browser's idle time, so a
    warning (a line break inside \\left … \\right, which KaTeX drops: the sinks page's long sums did) shows on any
    page's console, and the line it meant to break stays one line."""
    from attention_core import registry
    from attention_core.settings import Settings
    from ui import stepper_data

    node = shutil.which("node")
    if node is None or not (FRONTEND / "node_modules" / "katex").is_dir():
        pytest.fail("node and frontend/node_modules are needed: the test command (scripts/test.sh) installs them")
    items = []
    for page in registry.PAGES:
        if page.build is None or not page.stages:
            continue
        walk = page.walkthrough(Settings())
        for key in page.stages:
            steps = page.step_through(walk, key)
            items += [(f"{page.key} {key} formula", line) for line in steps.stage.formula(lambda text, **_: text)]
            items += [(f"{page.key} {key} {r},{c},{h}", steps.stage.entry(r, c, h, lambda text, **_: text))
                      for r, c, h in stepper_data.entry_cells(steps)]
    assert len(items) > 4000
    path = tmp_path / "latex.json"
    path.write_text(json.dumps(items))
    run = subprocess.run([node, "-e", _KATEX_WARNINGS, str(path)], cwd=FRONTEND, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []
