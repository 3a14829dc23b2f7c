"""The *gated attention* page."""
