"""Scaled dot-product self-attention (Vaswani et al. 2017, eq. 1), built up like the seed articles.

``functional`` computes it and returns a trace of every intermediate; ``formulas`` holds each step's sympy
formula beside it; ``modules`` the seed articles' classes (SelfAttention_v1/v2, CausalAttention,
MultiHeadAttention) with ``trace()``; ``walkthrough`` turns the settings into every number the pages show and
into the step-through of the self-attention page.
"""
