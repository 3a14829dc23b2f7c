"""The *Temperature* page."""
