"""The *Self-attention* page."""
