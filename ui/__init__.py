"""Shared Streamlit widgets and session state for the pages (no math here)."""
