"""The *sliding-window attention* page."""
