"""The *Positional encoding* page."""
