"""The *The causal mask* page."""
