"""Copy the pinned KaTeX from npm into static/katex/, which the app serves itself (no CDN: a classroom may be offline).

    cd frontend && npm ci && cd .. && .venv/bin/python scripts/vendor_katex.py

``frontend/package.json`` pins KaTeX exactly (the version Streamlit's own ``st.latex`` bundles, so a formula looks the
same in the step-through element as in ``st.latex``) and ``frontend/package-lock.json`` holds npm's integrity hash of
its tarball. This script copies what the browser needs from ``frontend/node_modules/katex`` (the minified script, its
style sheet, the WOFF2 fonts, the licence) and writes ``static/katex/SHA256SUMS``: the package's version and npm
integrity, then one SHA-256 per file. ``tests/app/test_katex.py`` checks the copies against that file and, after
``npm ci`` (which the test command runs), against the package itself.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "frontend" / "node_modules" / "katex"
TARGET = ROOT / "static" / "katex"

#: What the browser needs, relative to the package: the script (UMD, defines ``katex``), its styles, the fonts in the
#: one format every browser we support reads (the style sheet lists WOFF2 first), and the licence.
FILES = ("dist/katex.min.js", "dist/katex.min.css", "LICENSE")


def files() -> list[tuple[Path, str]]:
    """(source in the package, name under static/katex/) of every file copied."""
    listed = [(PACKAGE / name, Path(name).name) for name in FILES]
    fonts = sorted((PACKAGE / "dist" / "fonts").glob("*.woff2"))
    return listed + [(font, f"fonts/{font.name}") for font in fonts]


def lock_entry() -> dict:
    """KaTeX's entry in frontend/package-lock.json (its version, resolved tarball and integrity)."""
    lock = json.loads((ROOT / "frontend" / "package-lock.json").read_text())
    return lock["packages"]["node_modules/katex"]


def main() -> int:
    if not PACKAGE.is_dir():
        print("frontend/node_modules/katex is missing: run `npm ci` in frontend/ first.", file=sys.stderr)
        return 1
    version = json.loads((PACKAGE / "package.json").read_text())["version"]
    entry = lock_entry()
    if version != entry["version"]:
        print(f"node_modules has KaTeX {version}, the lock pins {entry['version']}: run `npm ci`.", file=sys.stderr)
        return 1
    if TARGET.exists():
        shutil.rmtree(TARGET)
    lines = [f"# katex {version} {entry['integrity']}"]
    for source, name in files():
        (TARGET / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, TARGET / name)
        lines.append(f"{hashlib.sha256(source.read_bytes()).hexdigest()}  {name}")
    (TARGET / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    print(f"copied KaTeX {version}: {len(lines) - 1} files into {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
