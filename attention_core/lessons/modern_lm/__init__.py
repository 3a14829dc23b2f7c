"""The *Inside a modern language model* page."""
