"""The *multi-head latent attention* page."""
