"""The experiments: why divide by √d_k (``scaling``: sampled Var(q·k), softmax saturation, the derivation),
softmax temperature (``temperature``), positional encodings and equivariance (``positional``), additive
scoring (``additive``, Bahdanau et al. 2015) and self-attention over an image's pixels (``image``)."""
