"""The *The backward pass through multi-head attention* page."""
