"""The framework floor for scripts/benchmark_load.py: a trivial one-widget Streamlit app.

Whatever a page of Attention Explorer costs per click beyond what this app costs is ours;
this app's cost is Streamlit's own (the websocket, the script run, the deltas, the post-run
work). The load benchmark runs it on the same machine, in the same run, with the same
config (.streamlit/config.toml), and holds every page to a multiple of it.
"""

import streamlit as st

value = st.number_input("A number", value=1, step=1, key="floor_number")
st.write(f"Twice that is {2 * value}.")
