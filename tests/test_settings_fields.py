"""attention_core.limits: the one home of every setting's limits, shared with the feature modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attention_core import additive, image, limits, positional, pretrained, scaling, temperature


@pytest.mark.parametrize(("keys", "choices"), [
    (limits.SQRT_DISTRIBUTIONS, scaling.DISTRIBUTIONS),
    (limits.PE_ENCODINGS, positional.ENCODINGS),
    (limits.PE_SHUFFLES, positional.SHUFFLES),
    (limits.IMAGE_PATTERNS, image.PATTERNS),
    (limits.IMAGE_FEATURES, image.FEATURES),
], ids=["distributions", "encodings", "shuffles", "image patterns", "image features"])
def test_choice_keys_agree_with_the_feature_modules_dicts(keys, choices):
    # Same keys, same order (the pages offer the dict's keys in order; settings validate against limits').
    assert keys == tuple(choices)


def test_upload_is_not_a_built_in_image():
    assert limits.IMAGE_UPLOAD not in image.PATTERNS


def test_feature_modules_keep_their_names_for_the_limits():
    assert (scaling.MIN_SAMPLES, scaling.MAX_SAMPLES, scaling.MIN_KEYS, scaling.MAX_KEYS) == (100, 5000, 2, 32)
    assert (positional.MIN_POSITIONS, positional.MAX_POSITIONS, positional.MIN_WIDTH, positional.MAX_WIDTH) == (
        2, 128, 2, 128)
    assert (additive.MIN_HIDDEN, additive.MAX_HIDDEN) == (1, 16)
    assert image.MAX_SIDE == 16
    assert (pretrained.MAX_TOKENS, pretrained.MAX_PADDING) == (128, 8)
    assert temperature.TEMPERATURE_GRID is limits.TEMPERATURE_GRID
    assert (temperature.MIN_TEMPERATURE, temperature.MAX_TEMPERATURE) == (0.01, 100.0)
    assert temperature.nearest_temperature(0.4) == 0.5


def test_limits_is_a_leaf_module():
    # It imports nothing from the project, so anything (settings, the feature modules) can import it.
    tree = ast.parse(Path(limits.__file__).read_text())
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert imported <= {"__future__", "math"}
    assert not any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))
