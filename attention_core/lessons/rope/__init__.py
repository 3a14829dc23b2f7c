"""The *RoPE* page."""
