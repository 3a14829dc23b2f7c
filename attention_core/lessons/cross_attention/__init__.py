"""The *Cross-attention* page."""
