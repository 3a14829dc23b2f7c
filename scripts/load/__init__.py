"""The benchmarks' package (``scripts/benchmark_load.py`` is their one command line): one websocket client, one module
per scenario.

- ``client.py``: the simulated student (a websocket speaking Streamlit's protobufs) and the pages it opens;
- ``server.py``: ``streamlit run`` on a free loopback port, its memory and CPU from /proc, pid files;
- ``report.py``: percentiles and the reports every scenario prints;
- ``single.py``, ``classroom.py`` (``class``), ``browser.py``, ``training.py``, ``long.py``, ``class_live.py``
  (``class-live``), ``class_steps.py`` (``class-steps``), ``profile.py``: the scenarios on the server;
- ``against.py``: ``--against REF``, another commit measured beside this checkout in the same run;
- ``model.py`` (``model``), ``modern_lm.py`` (``modern-lm``), ``stepper.py`` (``stepper``), ``dashboard.py``
  (``class-store``): one process each, without a server.
"""
