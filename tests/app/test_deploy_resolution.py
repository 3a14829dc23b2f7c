"""deploy/requirements.txt resolves under both installers Community Cloud uses: uv first, pip as its fallback.

Offline and fast: one HTTP server on 127.0.0.1, started here, plays both indexes. Under /whl/cpu/ it stands in for
PyTorch's CPU index, which, like the real one, carries more than torch: an old numpy and sympy next to the +cpu torch
wheels (cp311, cp312). Under /pypi/simple/ it stands in for PyPI: newer numpy and sympy, and a plain torch 2.13.0 in
place of the CUDA build. The resolved file has the deploy file's shape: its index options and torch lines verbatim
with only the host rewritten, then `-r` of a small root file holding the real root's torch, numpy and sympy lines.
uv's default index strategy (first-index) takes a package from the first index that has it, so with the old
`--extra-index-url` form it takes numpy and sympy from the CPU stand-in (or fails on sympy's pin); it must not.
"""

from __future__ import annotations

import base64
import glob
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTORCH = "https://download.pytorch.org"
CPU_TAGS = ["cp311-cp311-manylinux_2_28_x86_64", "cp312-cp312-manylinux_2_28_x86_64"]
# name -> (version on the CPU stand-in, version on the PyPI stand-in)
SHARED = {"numpy": ("1.0.0", "2.0.0"), "sympy": ("1.13.3", "1.14.0")}


def _uv() -> str | None:
    try:
        from uv import find_uv_bin  # the uv package from requirements-dev.txt
        return find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def _python(version: str) -> str | None:
    """An interpreter of that version to run pip under (pip evaluates markers against the Python it runs for)."""
    if sys.version.startswith(version + "."):
        return sys.executable
    minor = f"python{version}"
    for candidate in [shutil.which(minor), *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/{minor}")))]:
        if candidate and subprocess.run([candidate, "-c", f"import sys; assert sys.version.startswith('{version}.')"],
                                        capture_output=True).returncode == 0:
            return candidate
    return None


def _wheel(folder: Path, name: str, version: str, tag: str = "py3-none-any") -> str:
    dist = f"{name}-{version}"
    files = {f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}.dist-info/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n"}
    record = "".join(f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
                     f"{len(text.encode())}\n" for path, text in files.items())
    files[f"{dist}.dist-info/RECORD"] = record + f"{dist}.dist-info/RECORD,,\n"
    filename = f"{dist}-{tag}.whl"
    with zipfile.ZipFile(folder / filename, "w") as whl:
        for path, text in files.items():
            whl.writestr(path, text)
    return filename


def _project(index: Path, name: str, filenames: list[str], prefix: str) -> None:
    """A PEP 503 project page linking to the files under `prefix` (the server unquotes %2B back to +)."""
    (index / name).mkdir(parents=True)
    links = "".join(f'<a href="{prefix}{f.replace("+", "%2B")}">{f}</a>\n' for f in filenames)
    (index / name / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")


@pytest.fixture(scope="module")
def indexes(tmp_path_factory):
    """Serves both stand-ins; yields (base URL, the list of paths asked for)."""
    site = tmp_path_factory.mktemp("site")
    cpu, pypi_files = site / "whl" / "cpu", site / "files"
    cpu.mkdir(parents=True)
    pypi_files.mkdir()
    _project(cpu, "torch", [_wheel(cpu, "torch", "2.13.0+cpu", tag) for tag in CPU_TAGS], "/whl/cpu/")
    _project(site / "pypi" / "simple", "torch", [_wheel(pypi_files, "torch", "2.13.0")], "/files/")
    for name, (old, new) in SHARED.items():
        _project(cpu, name, [_wheel(cpu, name, old)], "/whl/cpu/")
        _project(site / "pypi" / "simple", name, [_wheel(pypi_files, name, new)], "/files/")
    requested: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(site), **kwargs)

        def do_GET(self):
            requested.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    # Bound and listening once constructed: a client that connects before serve_forever runs waits in the backlog.
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _shaped_like_deploy(folder: Path, base: str) -> Path:
    """deploy/requirements.txt's index options and torch lines (host rewritten), then -r of a small root file."""
    root_lines = (ROOT / "requirements.txt").read_text().splitlines()
    mini_root = [line for line in root_lines if re.match(r"(torch|numpy|sympy)\b", line)]
    assert len(mini_root) == 3, mini_root
    (folder / "root.txt").write_text("\n".join(mini_root) + "\n")
    shaped = []
    for line in (ROOT / "deploy" / "requirements.txt").read_text().splitlines():
        if line.startswith("-r "):
            shaped.append("-r root.txt")
        elif line.startswith(("--", "torch")):
            shaped.append(line.replace(PYTORCH, base))
    assert any(line.startswith("torch") for line in shaped)
    (folder / "requirements.txt").write_text("\n".join(shaped) + "\n")
    return folder / "requirements.txt"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith(("PIP_", "UV_")) and "proxy" not in k.lower()}
    env.update(PIP_CONFIG_FILE=os.devnull, UV_PYTHON_DOWNLOADS="never", NO_PROXY="127.0.0.1")
    return env


def _uv_compile(tmp_path: Path, base: str, python: str) -> subprocess.CompletedProcess:
    uv = _uv()
    if uv is None:
        pytest.skip("uv is not installed (requirements-dev.txt pins it)")
    return subprocess.run(
        [uv, "pip", "compile", str(_shaped_like_deploy(tmp_path, base)), "--no-config", "--no-header",
         "--no-annotate", "--cache-dir", str(tmp_path / "uv-cache"), "--python", sys.executable,
         "--python-version", python, "--python-platform", "x86_64-manylinux_2_28",
         "--index-url", f"{base}/pypi/simple"],
        capture_output=True, text=True, env=_env(), timeout=120)


def _expected(base: str, python: str) -> dict[str, str]:
    cp = "cp" + python.replace(".", "")
    return {"torch": f"{base}/whl/cpu/torch-2.13.0%2Bcpu-{cp}-{cp}-manylinux_2_28_x86_64.whl",
            **{name: new for name, (_, new) in SHARED.items()}}


@pytest.mark.parametrize("python", ["3.11", "3.12"])
def test_uv_takes_torch_from_the_cpu_wheel_and_everything_else_from_pypi(indexes, tmp_path, python):
    base, requested = indexes
    requested.clear()
    result = _uv_compile(tmp_path, base, python)
    assert result.returncode == 0, result.stderr
    pins = dict(re.match(r"([a-z0-9-]+)(?: @ |==)(.+)", line).groups() for line in result.stdout.splitlines() if line)
    assert pins == _expected(base, python)
    asked_cpu = {p for p in requested if p.startswith("/whl/cpu/") and "torch" not in p}
    assert not asked_cpu, f"uv asked the CPU index for more than torch: {asked_cpu}"


def test_uv_fails_loudly_on_a_python_without_a_cpu_wheel_line(indexes, tmp_path):
    base, _ = indexes
    result = _uv_compile(tmp_path, base, "3.13")
    assert result.returncode != 0 and "torch==2.13.0+cpu" in result.stderr, result.stdout + result.stderr


@pytest.mark.parametrize("python", ["3.11", "3.12"])
def test_pip_takes_torch_from_the_cpu_wheel_and_everything_else_from_pypi(indexes, tmp_path, python):
    base, _ = indexes
    interpreter = _python(python)
    if interpreter is None:
        pytest.skip(f"no Python {python} here to run pip for (pip evaluates markers against its own Python)")
    report = tmp_path / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", interpreter, "install", "--dry-run", "--ignore-installed",
         "--no-cache-dir", "--only-binary", ":all:", "--report", str(report), "--quiet",
         "--index-url", f"{base}/pypi/simple", "-r", str(_shaped_like_deploy(tmp_path, base))],
        capture_output=True, text=True, env=_env(), timeout=120)
    assert result.returncode == 0, result.stderr
    chosen = {item["metadata"]["name"]: item for item in json.loads(report.read_text())["install"]}
    assert chosen["torch"]["download_info"]["url"] == _expected(base, python)["torch"]
    assert chosen["torch"]["metadata"]["version"] == "2.13.0+cpu"
    for name, (_, new) in SHARED.items():
        assert chosen[name]["metadata"]["version"] == new
        assert chosen[name]["download_info"]["url"].startswith(f"{base}/files/")
