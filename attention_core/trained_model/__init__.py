"""A trained model's attention: all-MiniLM-L6-v2 verified and loaded offline, its heads recomputed step by step
with its own weights (``model``), and findings measured on the user's text (``head_findings``); one head's sympy
formulas and step-through (``formulas``)."""
