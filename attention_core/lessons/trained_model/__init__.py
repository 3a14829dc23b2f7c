"""The *Inside a trained model* page."""
