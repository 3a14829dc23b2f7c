"""The *ALiBi* page."""
