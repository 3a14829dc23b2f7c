"""Copy the pinned browser libraries from npm into static/, which the app serves itself (no CDN: a classroom may be
offline).

    cd frontend && npm ci && cd .. && .venv/bin/python scripts/vendor_frontend.py

``frontend/package.json`` pins each package exactly and ``frontend/package-lock.json`` holds npm's integrity hash of
its tarball:

- KaTeX, the version Streamlit's own ``st.latex`` bundles, so that a formula looks the same in the step-through
  element as in ``st.latex``: the minified script, its style sheet, the WOFF2 fonts, the licence (``static/katex``);
- Vega and Vega-Lite, which draw a chart inside the step-through element from the same Vega-Lite spec the page's
  ``st.vega_lite_chart`` draws (RoPE's rotated pair: the version of the spec's schema, Altair's); loaded only where
  such a chart is shown (``static/vega``, ``static/vega-lite``).

This script copies what the browser needs from ``frontend/node_modules/<package>`` and writes
``static/<package>/SHA256SUMS``: the package's version and npm integrity, then one SHA-256 per file.
``tests/app/test_frontend.py`` checks the copies against that file and, after ``npm ci`` (which the test command
runs), against the packages themselves.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = ROOT / "frontend" / "node_modules"
STATIC = ROOT / "static"

#: What the browser needs of each package, relative to the package: the script (UMD: it defines a global), the style
#: sheet and fonts where there are any (KaTeX's: the one format every browser we support reads, which its style
#: sheet lists first), and the licence. ``fonts`` adds every WOFF2 file of that folder.
PACKAGES = {
    "katex": {"files": ("dist/katex.min.js", "dist/katex.min.css", "LICENSE"), "fonts": "dist/fonts"},
    "vega": {"files": ("build/vega.min.js", "LICENSE")},
    "vega-lite": {"files": ("build/vega-lite.min.js", "LICENSE")},
}


def files(package: str) -> list[tuple[Path, str]]:
    """(source in the package, name under static/<package>/) of every file copied."""
    root, wanted = MODULES / package, PACKAGES[package]
    listed = [(root / name, Path(name).name) for name in wanted["files"]]
    if "fonts" not in wanted:
        return listed
    fonts = sorted((root / wanted["fonts"]).glob("*.woff2"))
    return listed + [(font, f"fonts/{font.name}") for font in fonts]


def lock_entry(package: str) -> dict:
    """The package's entry in frontend/package-lock.json (its version, resolved tarball and integrity)."""
    lock = json.loads((ROOT / "frontend" / "package-lock.json").read_text())
    return lock["packages"][f"node_modules/{package}"]


def vendor(package: str) -> int:
    """Copy one package; 0, or 1 with a message when node_modules does not hold the version the lock pins."""
    root = MODULES / package
    if not root.is_dir():
        print(f"frontend/node_modules/{package} is missing: run `npm ci` in frontend/ first.", file=sys.stderr)
        return 1
    version = json.loads((root / "package.json").read_text())["version"]
    entry = lock_entry(package)
    if version != entry["version"]:
        print(f"node_modules has {package} {version}, the lock pins {entry['version']}: run `npm ci`.",
              file=sys.stderr)
        return 1
    target = STATIC / package
    if target.exists():
        shutil.rmtree(target)
    lines = [f"# {package} {version} {entry['integrity']}"]
    for source, name in files(package):
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target / name)
        lines.append(f"{hashlib.sha256(source.read_bytes()).hexdigest()}  {name}")
    (target / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    print(f"copied {package} {version}: {len(lines) - 1} files into {target.relative_to(ROOT)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)  # no options: --help only
    return max(vendor(package) for package in PACKAGES)


if __name__ == "__main__":
    sys.exit(main())
