"""The *linear attention and the delta rule* page."""
