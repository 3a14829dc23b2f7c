"""Multi-head attention (Vaswani et al. 2017, sec. 3.2.2) and cross-attention (seed 003): the split into heads,
attention per head, the concatenation and W_O (``heads``), their sympy formulas (``formulas``), and the pages'
walk-through and step-through (``walkthrough``)."""
