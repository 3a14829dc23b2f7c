"""The classroom in the app: a class live on one link (``class_live``), the teacher's page (``class_dashboard``,
``teacher``), practice mode (``practice``), the worksheets and exports (``worksheet``, ``export``). Its store is
``ui/classroom/store/`` (plain SQLAlchemy, no Streamlit). Above the shared framework (``ui/``), below the step-through.
"""
