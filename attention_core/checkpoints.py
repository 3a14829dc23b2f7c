"""What checking a trained model's files takes, whichever the model: a file's SHA-256.

Both trained models are checked against pinned hashes before use: all-MiniLM-L6-v2's upstream files
(:mod:`attention_core.minilm.model`) and SmolLM2's GGUF file and its verified cache of converted
weights (:mod:`attention_core.smollm2.checkpoint`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: Bytes read at a time when hashing (a model file is read whole only in pieces of this size).
CHUNK_BYTES = 1 << 20


def sha256_of(path: Path, chunk_size: int = CHUNK_BYTES) -> str:
    """The SHA-256 hex digest of a file, read in chunks (MiniLM's weights are 87 MiB, SmolLM2's GGUF file 94 MiB,
    its cached weights 269 MB).

    Args:
        path: the file.
        chunk_size: bytes read at a time.

    Returns:
        The digest as 64 lowercase hex digits.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk_size):
            digest.update(block)
    return digest.hexdigest()
