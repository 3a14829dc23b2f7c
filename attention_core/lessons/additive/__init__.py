"""The *Additive attention* page."""
