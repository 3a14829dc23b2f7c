"""The floor's position encodings (attention_core.positions): the sinusoidal table against its entry-by-entry loop,
and its known facts. The positional-encoding page's use of them is tested in tests/experiments/."""

from __future__ import annotations

import pytest
import torch

from attention_core.positions import sinusoidal_encoding, sinusoidal_encoding_loop


@pytest.mark.parametrize(("positions", "width"), [(1, 1), (7, 4), (50, 16), (9, 5), (128, 128)])
def test_sinusoidal_encoding_equals_the_direct_formula(positions, width):
    table = sinusoidal_encoding(positions, width)
    reference = torch.tensor(sinusoidal_encoding_loop(positions, width), dtype=torch.float64)
    assert table.shape == (positions, width) and table.dtype == torch.float32
    assert torch.allclose(table.double(), reference, atol=1e-6)


def test_sinusoidal_encoding_facts():
    pe = sinusoidal_encoding(20, 8)
    assert torch.equal(pe[0], torch.tensor([0.0, 1.0] * 4))  # sin 0, cos 0
    assert float(pe.abs().max()) <= 1.0
    # Column pair (0, 1) turns by 1 radian per position: sin² + cos² = 1.
    assert torch.allclose(pe[:, 0] ** 2 + pe[:, 1] ** 2, torch.ones(20), atol=1e-6)
