"""DeepSeek sparse attention: the page, its walk-through, formulas, entries and recipe."""
