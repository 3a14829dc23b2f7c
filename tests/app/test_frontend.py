"""The browser side: the step-through element's own tests under Node, and the KaTeX the app serves itself.

KaTeX comes from npm, pinned exactly in ``frontend/package.json`` with npm's integrity hash in
``frontend/package-lock.json``; ``scripts/vendor_katex.py`` copies what the browser needs into ``static/katex/`` and
records each file's SHA-256 in ``static/katex/SHA256SUMS``. The test command runs ``npm ci`` first, so the copies are
compared byte for byte with the package npm verified against the lock.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "frontend"
KATEX = ROOT / "static" / "katex"


def sums() -> tuple[str, str, dict[str, str]]:
    """(version, npm integrity, {file name: sha256}) from static/katex/SHA256SUMS."""
    first, *lines = (KATEX / "SHA256SUMS").read_text().splitlines()
    _hash, _name, version, integrity = first.split()
    return version, integrity, {name: digest for digest, name in (line.split("  ", 1) for line in lines)}


def test_the_elements_own_tests_pass_under_node():
    node = shutil.which("node")
    assert node, "Node is needed for the browser code's tests (the machine has Node 20)"
    run = subprocess.run([node, "--test", "stepper/"], cwd=FRONTEND, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    passed = re.search(r"^# pass (\d+)", run.stdout, re.M)
    assert passed and int(passed.group(1)) >= 7, run.stdout


def test_katex_is_pinned_exactly_and_its_licence_is_served_with_it():
    pinned = json.loads((FRONTEND / "package.json").read_text())["dependencies"]["katex"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned), f"KaTeX must be pinned to one version, not {pinned!r}"
    entry = json.loads((FRONTEND / "package-lock.json").read_text())["packages"]["node_modules/katex"]
    version, integrity, _files = sums()
    assert entry["version"] == pinned == version
    assert entry["integrity"] == integrity and integrity.startswith("sha512-")
    assert entry["license"] == "MIT"
    assert "MIT License" in (KATEX / "LICENSE").read_text()
    assert f'content:"{version}"' in (KATEX / "katex.min.css").read_text()  # the style sheet names its version


def test_every_served_file_matches_its_recorded_checksum():
    _version, _integrity, files = sums()
    served = {str(p.relative_to(KATEX)) for p in KATEX.rglob("*") if p.is_file()} - {"SHA256SUMS"}
    assert served == set(files), "static/katex/ holds exactly the files SHA256SUMS lists"
    for name, digest in files.items():
        assert hashlib.sha256((KATEX / name).read_bytes()).hexdigest() == digest, name
    css = (KATEX / "katex.min.css").read_text()
    woff2 = set(re.findall(r"url\((fonts/[^)]+\.woff2)\)", css))
    assert woff2 and woff2 <= set(files), "every font the style sheet asks for first (WOFF2) is served"


def test_the_served_copies_are_npms_package_byte_for_byte():
    package = FRONTEND / "node_modules" / "katex"
    if not package.is_dir():
        pytest.fail("frontend/node_modules is missing: the test command (scripts/test.sh) runs `npm ci` in frontend/")
    assert json.loads((package / "package.json").read_text())["version"] == sums()[0]
    for name in sums()[2]:
        source = package / ("LICENSE" if name == "LICENSE" else f"dist/{name}")
        assert source.read_bytes() == (KATEX / name).read_bytes(), name


def test_the_element_loads_katex_from_the_app_and_nothing_from_elsewhere():
    script = (FRONTEND / "stepper" / "stepper.js").read_text()
    assert "katex/katex.min.js" in script and "katex/katex.min.css" in script
    assert not re.search(r"https?://", script), "the element fetches nothing from another site (a class may be offline)"
