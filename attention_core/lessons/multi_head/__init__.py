"""The *Multi-head attention* page."""
