"""Your class: the teacher's live view of a class (ui/classroom/class_dashboard.py); only with the teacher's link."""

from ui import class_dashboard, page_body


def page() -> None:
    class_dashboard.show()


page_body.run(page)
