"""The matrices a user can edit cell by cell, and how their edits are kept.

The edits are overrides on the seeded matrices: matrix name -> {(row, col): value}. They live beside the settings
(kept per preset by ``ui.state``, so switching presets loses nothing) and go into a shared link
(``classroom.share``). A leaf module.
"""

from __future__ import annotations

from typing import Mapping, Optional

#: The matrices a user can edit, by name -> label.
EDITABLE = {"x": "X", "w_query": "W_q", "w_key": "W_k", "w_value": "W_v", "target": "T", "multi_head_target": "T"}

#: User edits: matrix name -> {(row, col): value}; None or NaN = an emptied cell (0-based row and column).
Edits = Mapping[str, Mapping[tuple[int, int], Optional[float]]]
