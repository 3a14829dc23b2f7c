"""What only one page (or one page and its sibling) draws: beside the page, not in the framework every page shares.
Training (*Watch attention learn*), the trained model's view and data, the modern language model's and the sinks
page's data, the backward pages' learning step.
"""
