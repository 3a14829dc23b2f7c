"""Watch attention learn: tiny attention-only Transformers trained on tasks whose pattern is known."""
