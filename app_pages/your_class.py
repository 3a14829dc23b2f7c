"""Your class: the teacher's live view of a class (ui/classroom/class_dashboard.py); only with the teacher's link."""

from ui import page_body
from ui.classroom import class_dashboard


def page() -> None:
    class_dashboard.show()


page_body.run(page)
