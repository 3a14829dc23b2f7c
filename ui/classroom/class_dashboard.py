"""The page *Your class*: where the class is and which mistakes it makes, live, for the teacher's link only.

Every number comes from :meth:`ui.classroom.store.store.Store.dashboard` (one GROUP BY each, in the database); this module
only names them: page and step titles from the registry, mistakes by ``attention_core.practice.MISTAKES``, in the
teacher's language. Nothing a student typed is ever shown (there is none in the store).

The live part is a fragment that runs again every :data:`REFRESH_S` seconds: the teacher's own clicks elsewhere on
the page (the CSV, End the class) are never disturbed by it.
"""

from __future__ import annotations

import datetime
import io
import time
from typing import Optional

import pandas as pd
import streamlit as st

from attention_core import practice, registry
from attention_core.check import BEFORE
from ui import charts, widgets
from ui.classroom import check, class_live
from ui.classroom.store.store import CONNECTED_S, CORRECT, WRONG, CheckResults, Dashboard, StoreError
from ui.i18n import _

#: The live part's refresh (seconds): with the writer's 0.5 s (ui.classroom.store.writer.INTERVAL_S) and a run's drawing,
#: a student's answer is on the teacher's page within 3 s.
REFRESH_S = 2.0


def page_title(key: str) -> str:
    page = registry.BY_KEY.get(key)
    return _(page.title) if page else widgets.md_escape(key)


def stage_title(page_key: str, stage: str) -> str:
    page = registry.BY_KEY.get(page_key)
    if not stage:
        return ""
    return _(page.stages[stage]) if page and stage in page.stages else widgets.md_escape(stage)


def place(page_key: str, stage: str) -> str:
    """"Page · step" in the teacher's language."""
    step = stage_title(page_key, stage)
    return f"{page_title(page_key)} · {step}" if step else page_title(page_key)


def mistake_name(outcome: str) -> str:
    if outcome == WRONG:
        return _("a wrong answer without a named mistake")
    return _(practice.MISTAKES[outcome]) if outcome in practice.MISTAKES else widgets.md_escape(outcome)


def _clock(at: float) -> str:
    return datetime.datetime.fromtimestamp(at).strftime("%H:%M:%S")


def show() -> None:
    """The page (``app_pages/your_class.py``)."""
    seat = class_live.member()
    st.title(_("Your class"))
    if seat is None or not seat.teacher:
        st.info(_("This page opens with a teacher's link only. To start a class, use **A class, live** in the "
                  "sidebar."), icon=":material/lock:")
        return
    store, _writer, why = class_live.live()
    if store is None:
        st.error(_("The class store cannot be used ({why}).", why=why), icon=":material/database_off:")
        return
    st.markdown(_("Class **{code}**. Students join with this link:", code=seat.code))
    st.code(class_live.students_link(seat.code), language=None, wrap_lines=True)
    if store.dialect == "sqlite":
        st.caption(_("This class is kept in a SQLite file on this server. On Streamlit Community Cloud that file goes "
                     "when the app sleeps: give the app a PostgreSQL URL in its secrets for real use (the classroom guide, "
                     "*A class, live*)."))
    _live(seat.code)
    check.teacher_controls(seat.code)
    _after_the_lesson(seat)


@st.fragment(run_every=REFRESH_S)
def _live(code: str) -> None:
    store, writer, _why = class_live.live()
    seat = class_live.member()
    if store is None or seat is None:
        return
    class_live.at_step("your_class", "")
    status = writer.status()
    try:
        dash: Optional[Dashboard] = store.dashboard(code)
        info = store.info(code)
    except StoreError as error:
        dash, info = None, None
        since = status.unreachable_since or st.session_state.setdefault("class_unreachable_since", time.time())
        st.error(_("The class store is unreachable since {time} ({why}). Students keep working and see nothing "
                   "wrong; their events wait here and reach the store when it answers.",
                   time=_clock(since), why=str(error)), icon=":material/database_off:")
    else:
        st.session_state.pop("class_unreachable_since", None)
        if status.unreachable_since is not None:
            st.warning(_("This server cannot write to the class store since {time} ({why}): {n} events wait.",
                         time=_clock(status.unreachable_since), why=status.reason, n=status.waiting),
                       icon=":material/database_off:")
    if info is None and dash is not None:
        st.warning(_("This class was deleted."), icon=":material/delete:")
        return
    if info is not None and info.ended:
        st.info(_("This class ended at {time}. Its numbers stay here until you delete it (or the retention period "
                  "ends).", time=_clock(info.ended_at)), icon=":material/door_front:")
    if dash is None:
        return
    _numbers(dash, info.dropped if info else 0, info.rate_limited if info else 0, status.dropped)
    _mistakes(dash)  # what to explain next: first, the whole width
    left, right = st.columns(2)
    with left:
        _where(dash)
    with right:
        _over_time(dash, info.ended_at if info is not None and info.ended else dash.at)
    _practice(dash)
    check.gain_view(code)
    st.caption(_("Refreshed at {time}, every {s} s.", time=_clock(dash.at), s=f"{REFRESH_S:g}"))


def _numbers(dash: Dashboard, dropped: int, limited: int, dropped_here: int) -> None:
    answers = sum(row[2] for row in dash.practice)
    first = sum(row[3] for row in dash.practice)
    first_correct = sum(row[4] for row in dash.practice)
    a, b, c, d = st.columns(4)
    a.metric(_("Students here now"), dash.connected, help=_("Seen in the last {s} seconds.", s=int(CONNECTED_S)))
    b.metric(_("Students so far"), dash.students)
    c.metric(_("Answers"), answers)
    d.metric(_("Right at the first try"), f"{first_correct / first:.0%}" if first else "–",
             help=_("Of the entries answered for the first time, how many were right."))
    if dash.teachers > 1:
        st.caption(_("{n} teacher windows are open on this class.", n=dash.teachers))
    if dropped or limited or dropped_here:
        st.caption(_("Not recorded: {dropped} events lost while the store was unreachable for too long, {limited} cut "
                     "off by the rate limit (a script sending too fast).", dropped=max(dropped, dropped_here),
                     limited=limited))


def _bars(rows: dict[str, list], value: str, key: str) -> None:
    """A table whose last column ``value`` is drawn as bars (one scale: the largest count fills its cell)."""
    table = pd.DataFrame(rows)
    top = int(table[value].max()) if len(table) else 1
    st.dataframe(table, hide_index=True, width="stretch", key=key,
                 column_config={value: st.column_config.ProgressColumn(value, min_value=0, max_value=max(top, 1),
                                                                       format="%d", width="small")})


def _mistakes(dash: Dashboard) -> None:
    st.subheader(_("Mistakes to explain next"))
    if not dash.mistakes:
        st.caption(_("No wrong answers yet."))
        return
    answers = {(page, stage): n for page, stage, n, _first, _right in dash.practice}
    for page, stage, outcome, n in dash.mistakes[:3]:
        st.markdown(_("**{mistake}**: {n} of {total} answers at {step} ({page}).", mistake=mistake_name(outcome),
                      n=n, total=answers.get((page, stage), n), step=stage_title(page, stage) or page_title(page),
                      page=page_title(page)))
    rest = dash.mistakes[:20]  # the bars first: on a phone they stay in view, the words scroll
    _bars({_("answers"): [n for *_rest, n in rest], _("mistake"): [mistake_name(o) for _p, _s, o, _n in rest],
           _("page · step"): [place(p, s) for p, s, _o, _n in rest]}, _("answers"), "class_mistakes")


def _where(dash: Dashboard) -> None:
    st.subheader(_("Where the class is now"))
    if not dash.here:
        st.caption(_("No student here in the last minute. Students join with the link above."))
    else:
        _bars({_("students"): [n for *_rest, n in dash.here], _("step"): [stage_title(p, s) for p, s, _n in dash.here],
               _("page"): [page_title(p) for p, _s, _n in dash.here]}, _("students"), "class_here")
    if dash.reached:
        opened = [_("{page} by {n}", page=page_title(p), n=n) for p, n in dash.reached]
        st.caption(_("Opened so far: {pages}.", pages="; ".join(opened)))


def _practice(dash: Dashboard) -> None:
    st.subheader(_("Practice, step by step"))
    if not dash.practice:
        st.caption(_("No answers yet: students answer with **Practice mode** on a step page."))
        return
    reveals = {(p, s): n for p, s, n in dash.reveals}
    table = pd.DataFrame({
        _("step"): [stage_title(p, s) for p, s, *_rest in dash.practice],
        _("answers"): [a for _p, _s, a, _f, _c in dash.practice],
        _("right at the first try"): [f"{c}/{f} ({c / f:.0%})" if f else "–" for _p, _s, _a, f, c in dash.practice],
        _("solutions shown"): [reveals.get((p, s), 0) for p, s, *_rest in dash.practice],
        _("page"): [page_title(p) for p, *_rest in dash.practice],
    })
    st.dataframe(table, hide_index=True, width="stretch")


def _over_time(dash: Dashboard, until: float) -> None:
    """Answers per minute up to ``until`` (epoch seconds: the dashboard's time, or the class's end), where the time
    axis ends."""
    st.subheader(_("Answers over time"))
    if not dash.over_time:
        st.caption(_("No answers yet: students answer with **Practice mode** on a step page."))
        return
    verdicts = (_("right"), _("wrong"))
    charts.answers_over_time([m for m, _v, _n in dash.over_time],
                             [verdicts[0] if v == CORRECT else verdicts[1] for _m, v, _n in dash.over_time],
                             [n for *_rest, n in dash.over_time], key="class_over_time", x_title=_("time"),
                             y_title=_("answers per minute"), series_title=_("answer"), domain=verdicts,
                             until=int(until // 60) if until else None)


def csv_text(dash: Dashboard, results: Optional[CheckResults] = None) -> str:
    """The class's aggregate as CSV: one row per measure (no seat, no name), in the teacher's language; with
    ``results``, the check's per concept (``check.csv_rows``)."""
    rows = [(p, page_title(p), "", "", _("students who opened it"), n) for p, n in dash.reached]
    for p, s, answers, first, right in dash.practice:
        rows += [(p, page_title(p), s, stage_title(p, s), _("answers"), answers),
                 (p, page_title(p), s, stage_title(p, s), _("first tries"), first),
                 (p, page_title(p), s, stage_title(p, s), _("right at the first try"), right)]
    rows += [(p, page_title(p), s, stage_title(p, s), mistake_name(o), n) for p, s, o, n in dash.mistakes]
    rows += [(p, page_title(p), s, stage_title(p, s), _("solutions shown"), n) for p, s, n in dash.reveals]
    if results is not None:
        rows += check.csv_rows(results)
    buffer = io.StringIO()
    pd.DataFrame(rows, columns=["page_key", "page", "step_key", "step", "measure", "count"]).to_csv(buffer,
                                                                                                      index=False)
    return buffer.getvalue()


def _csv(code: str) -> str:
    store, _writer, _why = class_live.live()
    try:
        return csv_text(store.dashboard(code), store.check_results(code))
    except StoreError as error:
        return f"error\n{error}\n"


def _after_the_lesson(seat: class_live.Member) -> None:
    st.divider()
    st.subheader(_("After the lesson"))
    st.download_button(_("The class's numbers (CSV)"), key="class_csv", icon=":material/table:", mime="text/csv",
                       file_name=f"class-{seat.code}.csv", on_click="ignore", data=lambda: _csv(seat.code),
                       help=_("Per page and step: answers, right at the first try, each mistake, solutions shown; the check before "
                              "and after per concept. "
                              "No names, no seats."))
    end, remove = st.columns(2)
    with end.popover(_("End the class"), icon=":material/door_front:"):
        st.markdown(_("Students see that the class has ended and nothing more is recorded. The numbers stay here."))
        sent = check.last_sent(seat.code)
        if sent is not None and sent[0] == BEFORE:
            st.caption(_("You sent the check before the lesson: send the check after (**Check now**) and let your "
                         "students hand it in first, or the class's gain stays empty."))
        st.button(_("End the class now"), key="class_end", on_click=class_live.end_class, type="primary")
    with remove.popover(_("Delete the class"), icon=":material/delete:"):
        st.markdown(_("Deletes the class and everything it recorded, at once. This cannot be undone."))
        st.button(_("Delete it now"), key="class_delete", on_click=class_live.delete_class, type="primary")
    st.caption(_("Classes are deleted {days:g} days after they start (the host's setting).",
                 days=class_live.retention_days()))
