"""The load benchmark's package (``scripts/benchmark_load.py`` is its command line): one websocket client, one module
per scenario.

- ``client.py``: the simulated student (a websocket speaking Streamlit's protobufs) and the pages it opens;
- ``server.py``: ``streamlit run`` on a free loopback port, its memory and CPU from /proc, pid files;
- ``report.py``: percentiles and the reports every scenario prints;
- ``single.py``, ``classroom.py`` (``class``), ``browser.py``, ``training.py``, ``long.py``, ``class_live.py``
  (``class-live``): the scenarios.
"""
