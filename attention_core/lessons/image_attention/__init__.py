"""The *Self-attention over an image* page."""
