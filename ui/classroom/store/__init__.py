"""The class store: a class's anonymous events in a real database, shared by every replica of the app.

A teacher starts a class (a random class code and a secret teacher key); students who open the class's link
record what they do as events (page opened, step reached, practice answer, training run, export), never a name,
an address or anything they typed. The teacher's page reads the class's aggregates back with SQL.

- :mod:`ui.classroom.store.schema`: the tables (SQLAlchemy Core metadata) and the schema's version.
- :mod:`ui.classroom.store.store`: :class:`~ui.classroom.store.store.Store`, every statement the app runs (parameterised).
- :mod:`ui.classroom.store.writer`: the bounded in-process queue and the thread that writes it in batches, so that a
  student's click never waits for the database.

Plain Python and SQLAlchemy: never imports streamlit (``ui/classroom/class_live.py`` is the app's side).
"""
