"""The *Tokens* page."""
