"""The *attention sinks* page."""
