"""The Transformer around attention: the encoder block (attention, residual, LayerNorm, feed-forward)."""
