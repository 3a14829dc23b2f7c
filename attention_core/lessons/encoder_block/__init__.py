"""The *The encoder block* page."""
