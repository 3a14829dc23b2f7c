"""Importing one module of attention_core loads that module and what it imports, not every page (issue 40).

Each case runs in a fresh interpreter (``sys.modules`` of this one already holds everything) and counts the
attention_core modules it loaded.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

COUNT = "import {module}, sys; print(len([m for m in sys.modules if m.startswith('attention_core')]))"


def loaded_by(module: str) -> int:
    out = subprocess.run([sys.executable, "-c", COUNT.format(module=module)], check=True, capture_output=True,
                         text=True)
    return int(out.stdout)


@pytest.mark.parametrize(("module", "most"), [
    ("attention_core.errors", 2),  # the package and the leaf
    ("attention_core.fields", 5),  # and the text cut (attention_core.inputs.text, in its package)
    ("attention_core.inputs.stage", 10),
])
def test_a_floor_module_loads_a_handful_of_modules_not_every_page(module, most):
    assert loaded_by(module) <= most


def test_the_registry_still_loads_every_page():
    # the other side of the count above: the registry is the one module that imports every page
    assert loaded_by("attention_core.registry") > 40


def test_the_package_names_are_there_on_first_use():
    out = subprocess.run([sys.executable, "-c", "import attention_core as a; print(a.Settings().d_k, "
                          "a.build_walkthrough(a.Settings()).trace.output.shape[0] > 1, a.InputError.__name__)"],
                         check=True, capture_output=True, text=True)
    assert out.stdout.split() == ["3", "True", "InputError"]
    with pytest.raises(subprocess.CalledProcessError):
        subprocess.run([sys.executable, "-c", "import attention_core; attention_core.no_such_name"], check=True,
                       capture_output=True)
