"""The pages, one folder each (``lessons/<key>/``), named by the page's key: its declaration, settings, builder and
steps (``page.py``), its walk-through record (``walk.py``), its export recipe (``recipe.py``) and its formulas
(``formulas.py``). No lesson imports another; what several share lives below them (the concept folders).
"""
