"""A trained model's attention: all-MiniLM-L6-v2 verified and loaded offline, its heads recomputed step by step
with its own weights, and findings measured on the user's text (``pretrained``); one head's sympy formulas and
step-through (``formulas``)."""
