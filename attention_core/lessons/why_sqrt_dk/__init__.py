"""The *Why divide by √d_k?* page."""
