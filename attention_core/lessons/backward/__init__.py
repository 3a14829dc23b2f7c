"""The *The backward pass* page."""
