"""The *Attention without weights* page."""
