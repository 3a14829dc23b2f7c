"""The *differential attention* page."""
