"""The *Attention dropout* page."""
