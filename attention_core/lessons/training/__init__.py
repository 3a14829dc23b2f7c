"""The *Watch attention learn* page."""
