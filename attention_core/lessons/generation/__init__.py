"""The *Generating token by token* page."""
