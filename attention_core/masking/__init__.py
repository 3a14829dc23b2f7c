"""Masking and dropout on the attention weights: the causal and padding masks (``masks``), the pages' formulas
(``formulas``: causal attention, dropout, and the stages of the multi-head pages), and the causal and dropout
pages' walk-through and step-through (``walkthrough``)."""
