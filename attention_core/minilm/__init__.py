"""all-MiniLM-L6-v2, the trained model of *Inside a trained model*: verified and loaded offline, its heads recomputed
step by step with its own weights (``model``), and findings measured on the user's text (``head_findings``). The page
itself: ``lessons/trained_model/``."""
