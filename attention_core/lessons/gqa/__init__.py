"""The *grouped-query attention* page."""
