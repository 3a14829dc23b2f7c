"""The widgets of "Watch attention learn": the server's one queue of training runs, a run's live progress, its
curves, its heads at a snapshot, one explained update and opening a learned head on the self-attention page.

Training happens on the queue's worker thread (``attention_core.training.runs``); nothing here trains. A session
remembers only the keys of the runs it asked for (a few small tuples).
"""

from __future__ import annotations

from typing import Optional

import pandas as pd
import streamlit as st

from attention_core.lessons.training import formulas
from attention_core.lessons.training import page as watch
from attention_core.registry import BY_KEY
from attention_core.training import formation
from attention_core.training.model import Trainer
from attention_core.training.runs import Run, RunKey, RunQueue
from attention_core.training.script import LOSS_TOLERANCE, SCORE_TOLERANCE, training_script
from ui import charts, runtime, state, widgets
from ui.classroom import class_live
from ui.i18n import _

#: Seconds between two redraws of a run's progress while it trains (per watching session).
LIVE_EVERY = 1.0
_MINE = "training_runs"  # this session's requested run keys, oldest first


@st.cache_resource(show_spinner=False)
def runs() -> RunQueue:
    """The server's one queue of training runs, shared by every session."""
    return RunQueue()


def busy_with(key: RunKey) -> Optional[Run]:
    """This session's unfinished run with other settings than ``key``, if it has one (one at a time)."""
    for mine in reversed(st.session_state.get(_MINE, [])):
        run = runs().get(mine)
        if mine != key and run is not None and not run.finished.is_set():
            return run
    return None


def train(key: RunKey) -> None:
    """Ask the queue for ``key``'s run (shared with anyone who asked for the same) and remember it."""
    runs().submit(key)
    mine = [k for k in st.session_state.get(_MINE, []) if k != key]
    st.session_state[_MINE] = (mine + [key])[-8:]
    class_live.record("training_start", "training", entry=key.task)


_REPORTED = "training_reported"  # the runs this session asked for whose end a class was told of


def finished(key: RunKey, run: Run) -> None:
    """A run this session asked for is seen finished: in a class, its end is recorded once (with its state)."""
    reported = st.session_state.setdefault(_REPORTED, set())
    if key in st.session_state.get(_MINE, []) and key not in reported:
        reported.add(key)
        class_live.record("training_end", "training", entry=key.task, outcome=run.state)


def status(run: Run) -> None:
    """Where a run is: its place in the queue, or a progress bar of its steps."""
    if run.state == "queued":
        st.progress(0.0, text=queue_place(runs().position(run)))
    else:
        st.progress(run.progress, text=_("Training: step {step} of {steps}.", step=run.steps_done,
                                         steps=run.key.steps))


def queue_place(ahead: int) -> str:
    """What a queued run's progress bar says, with ``ahead`` runs before it: nothing to wait for (the worker is about
    to take it), one run, or several."""
    if ahead == 0:
        return _("Starting your run…")
    if ahead == 1:
        return _("Waiting for the server: 1 run is ahead of yours. Runs are trained one at a time, so the class's "
                 "clicks stay fast.")
    return _("Waiting for the server: {ahead} runs are ahead of yours. Runs are trained one at a time, so the "
             "class's clicks stay fast.", ahead=ahead)


def live(key: RunKey) -> None:
    """A run that has not finished: its progress, curves and heads, redrawn every :data:`LIVE_EVERY` seconds until it
    stops; then the whole page again."""
    _live(key)


@st.fragment(run_every=LIVE_EVERY)
def _live(key: RunKey) -> None:
    with runtime.one_run_at_a_time():  # a fragment rerun does not run app.py, which takes the turn otherwise
        run = runs().get(key)
        if run is None or run.finished.is_set():
            st.rerun(scope="app")
        status(run)
        trainer = run.trainer
        if trainer is not None and trainer.losses:
            curves(trainer, marked=None, key="training_live_curve")
            if trainer.snapshots:
                heads(trainer, len(trainer.snapshots) - 1, key="training_live", framed=True)


def curves(trainer: Trainer, marked: Optional[int], key: str,
           shares: Optional[formation.HeldOut] = None) -> None:
    """Two charts on one step axis, the snapshot's step marked: the loss per update; the accuracy per update and the
    pattern's share at every snapshot, on the probe and (``shares``) on held-out sequences. Long runs are averaged
    over blocks of updates (:func:`watch.curve`)."""
    steps, losses, accuracies = watch.curve(trainer)
    snapshots = [float(s.step) for s in trainer.snapshots]
    loss = [{"x": list(steps), "y": losses, "series": _("loss (nats)"), "order": 0, "dashed": False}]
    share = [{"x": list(steps), "y": accuracies, "series": _("accuracy"), "order": 0, "dashed": False}]
    if shares is not None:
        share.append({"x": [float(s) for s in shares.steps], "y": shares.shares, "order": 1,
                      "series": _("the pattern's share, {n} new sequences", n=formation.HELD_OUT), "dashed": False})
    share.append({"x": snapshots, "y": [s.score for s in trainer.snapshots], "order": 2,
                  "series": _("the pattern's share, the maps' sequence"), "dashed": False})
    # heights with their legends (one line each, above the plot): plots of about 190 px each
    for lines, suffix, title, y_range, height in ((loss, "", _("loss (nats)"), None, 260),
                                                  (share, "_shares", _("accuracy, share"), (0.0, 1.0), 330)):
        if marked is not None:  # the chart's x nearest the snapshot, on every line of the chart
            nearest = min((x for line in lines for x in line["x"]), key=lambda s: abs(s - marked))
            lines = [{**line, "marked": [x == nearest for x in line["x"]]} for line in lines]
        charts.lines(lines, key=key + suffix, x_title=_("step (updates)"), y_title=title, x_log=False,
                     marked=marked is not None, height=height, points=False, x_format="d", y_range=y_range)


@st.cache_data(show_spinner=False, max_entries=64)
def run_formation(key: RunKey) -> formation.Formation:
    """When ``key``'s finished run formed its pattern (every snapshot on held-out sequences, ~0.1 s once per run and
    server; shared by every session)."""
    return formation.formation(runs().get(key).trainer)


def _when(passing: Optional[formation.Passing]) -> str:
    if passing is None:
        return _("not in this run")
    if passing.before is None:
        return _("already at step {step}", step=passing.after)
    return _("between step {before} and step {after}", before=passing.before, after=passing.after)


def formation_note(formed: formation.Formation) -> None:
    """Section 1's account of when the head formed against the loss: where the held-out loss got halfway down and
    where the held-out share and accuracy passed 0.5, what that says in this run, and how the one probe
    sequence's share differs."""
    lines = [
        _("**When did the head form?** Measured at every snapshot on {n} sequences the model never trained on:",
          n=formation.HELD_OUT),
        "- " + (_("their loss got halfway down (from {first} to {last} nats: to {level}) {when};",
                  first=f"{formed.loss_first:.2f}", last=f"{formed.loss_last:.2g}", level=f"{formed.loss_level:.2f}",
                  when=_when(formed.loss)) if formed.loss is not None else _("their loss did not fall;")),
        "- " + _("the pattern's share of the weight passed 0.5 {when};", when=_when(formed.share)),
        "- " + _("the accuracy passed 0.5 {when}.", when=_when(formed.accuracy)),
    ]
    st.markdown("\n".join(lines))
    gap = formed.gap
    if gap == 0:
        said = _("In this run the loss fell as the head formed: the pattern's share passed 0.5 in the same {every} "
                 "steps as the loss passed halfway.", every=formed.every)
    elif gap is not None and gap < 0:
        said = _("In this run the pattern's share passed 0.5 about {n} steps before the loss got halfway down.",
                 n=-gap)
    elif gap is not None:
        said = _("In this run the pattern's share passed 0.5 about {n} steps after the loss got halfway down.", n=gap)
    else:
        said = ""
    if formed.probe_share != formed.share:
        said += (" " if said else "") + _(
            "The share next to the maps below is measured on one sequence only, and there it passed 0.5 {when}: a "
            "few rows of one sequence can run ahead of the model as a whole (or behind it), so that share can be "
            "near 1 while the loss is still high. The share over {n} sequences, in brackets below, is the one that "
            "goes with the loss.", when=_when(formed.probe_share), n=formation.HELD_OUT)
    if said:
        st.markdown(said)


def heads(trainer: Trainer, index: int, key: str, framed: bool = False) -> None:
    """Every head's weights on the probe sequence at snapshot ``index``: two layers side by side (stacked on a
    phone), one layer alone; with ``framed``, the task's pattern framed on its layer's map (the pattern to learn)."""
    snapshot = trainer.snapshots[index]
    labels = watch.probe_token_labels(trainer)
    task = trainer.task
    cells = formation.probe_rows(trainer).framed if framed else []
    columns = st.columns(task.num_layers, gap="medium") if task.num_layers > 1 else [st.container()]
    for layer in range(task.num_layers):
        with columns[layer]:
            st.markdown(_("**Layer {layer}**", layer=layer + 1))
            charts.weights_map(snapshot.weights[layer, 0].numpy(), key=f"{key}_{layer}", labels=labels,
                               row_title=_("query (position, token)"), col_title=_("key (position, token)"),
                               framed=cells if layer == task.pattern_layer else ())


# ---------------------------------------------------------------- section 2: the snapshots, and their player

#: Seconds between two snapshots while a session plays them: one short fragment run each (the maps of one snapshot),
#: never a loop or a wait inside a script run, so the server's other sessions keep their turns.
PLAY_EVERY = 0.8
_PLAYING = "training_playing"  # the run key this session's player is playing (absent: not playing)
_TIMER = "training_player_timer"  # whether the last whole-page run started the player's timer
_WHOLE = "training_whole_run"  # set by a whole-page run, taken by the fragment run inside it


def playing(key: RunKey) -> bool:
    """Whether this session is playing ``key``'s snapshots."""
    return st.session_state.get(_PLAYING) == key


def snapshots(key: RunKey) -> None:
    """Section 2 of a finished run: the snapshot slider with Play / Pause, the snapshot's numbers, the heads' maps
    and what they show, as a fragment. Play reruns that fragment alone every :data:`PLAY_EVERY` seconds, one
    snapshot further each time (a progress bar stands for the slider meanwhile); at the last snapshot it stops, and
    the whole page follows (the curves' line, the explained update). A click in the player (Play, Pause, the slider)
    reruns the whole page."""
    on = playing(key)
    st.session_state[_TIMER] = on
    st.session_state[_WHOLE] = True
    # the timer starts and stops with a whole-page run (Streamlit clears a fragment's timer on a whole-page run)
    st.fragment(_snapshots, run_every=PLAY_EVERY if on else None)(key)


def _snapshots(key: RunKey) -> None:
    with runtime.one_run_at_a_time():  # a fragment rerun does not run app.py, which takes the turn otherwise
        whole = st.session_state.pop(_WHOLE, False)
        run = runs().get(key)
        on = playing(key)
        if not whole and not (on and st.session_state.get(_TIMER) and run is not None):
            st.rerun(scope="app")  # Play, Pause or the slider: the whole page follows (and starts or stops the timer)
        trainer = run.trainer
        if on and not whole:  # the timer: one snapshot further; the last one stops the player
            following = watch.next_snapshot(trainer, state.settings().training.snapshot)
            if following is not None:
                state.update(**{"training.snapshot": following})
            if following is None or watch.next_snapshot(trainer, following) is None:
                st.session_state.pop(_PLAYING, None)
                st.rerun(scope="app")
        _snapshot_section(key, trainer, on)
        state.write_link()  # the snapshot is in the link


def _toggle_play(key: RunKey) -> None:
    """(Play / Pause's callback.) Pause; or play, from the first snapshot when the last is shown."""
    if st.session_state.pop(_PLAYING, None) == key:
        return
    trainer = runs().get(key).trainer
    if watch.next_snapshot(trainer, state.settings().training.snapshot) is None:
        state.update(**{"training.snapshot": trainer.snapshots[0].step})
    st.session_state[_PLAYING] = key


def _snapshot_section(key: RunKey, trainer: Trainer, on: bool) -> None:
    index = watch.snapshot_at(trainer, state.settings().training.snapshot)
    snapshot = trainer.snapshots[index]
    formed = run_formation(key)
    slider, button = st.columns([5, 1], vertical_alignment="bottom")
    with slider:
        if on:  # no slider while playing: a tick sent with a slider's older value would read as a drag
            st.progress(index / (len(trainer.snapshots) - 1),
                        text=_("Playing: step {step} of {last}", step=snapshot.step, last=trainer.snapshots[-1].step))
        else:
            state.bind(st.select_slider, _("Snapshot at step"), "training.snapshot",
                       options=[s.step for s in trainer.snapshots])
    with button:
        fixed = "training.snapshot" in state.locked()
        st.button(_("Pause") if on else _("Play"), icon=":material/pause:" if on else ":material/play_arrow:",
                  key="training_play", on_click=_toggle_play, args=(key,), width="stretch",
                  disabled=fixed or len(trainer.snapshots) < 2,
                  help=_("Fixed by your teacher's link.") if fixed else _(
                      "Shows the snapshots in order, one every {seconds} s, and stops at the last.",
                      seconds=PLAY_EVERY))
    st.markdown(_("At step {step}: loss {loss}, the pattern's share of the weight **{score}** on the sequence below "
                  "({held} on {n} new sequences).", step=snapshot.step, loss=f"{snapshot.loss:.3f}",
                  score=f"{snapshot.score:.2f}", held=f"{formed.held_out.shares[index]:.2f}", n=formation.HELD_OUT))
    heads(trainer, index, key="training_heads", framed=True)
    st.caption(_("One sequence the model never trained on (the same for every snapshot): row = the position "
                 "attending, column = the position attended to; the colour is the weight, from 0 to all of the row's "
                 "weight, 1 (each row sums to 1; point at a cell for its number). Framed: the pattern to learn. "
                 "Press Play, or drag the slider, to watch the pattern form."))
    pattern_note(trainer, index)


def pattern_note(trainer: Trainer, index: int) -> None:
    """Under the maps: what the framed cells are, and why a head shows more than them (the induction task: the rule
    at work on rows nobody scores; layer 1's previous-token head), with the numbers of snapshot ``index``."""
    snapshot = trainer.snapshots[index]
    rows = formation.probe_rows(trainer)
    labels = watch.probe_token_labels(trainer)

    def named(positions) -> str:
        return ", ".join(labels[p] for p in positions)

    if trainer.task.key == "induction":
        st.markdown(_("**Framed: the pattern to learn.** The task scores only the second copy of the repeated segment, "
                      "but its last token: rows {rows} here. The first copy gives their next token away, so each should "
                      "look at the token just after its own earlier copy ({targets}). The loss counts only these rows, "
                      "so only their cells are framed.", rows=named(rows.rows),
                      targets=named(col for _row, col in rows.framed)))
        head = snapshot.weights[trainer.task.pattern_layer, 0]
        if rows.repeats:
            st.markdown(_("**Why layer 2 shows more.** Rows {rows} repeat an earlier token too, outside the scored "
                          "rows (what follows them is random, so nothing scores them). A head that learned "
                          "the rule “look just after where my token was before” applies it there as well: at this "
                          "snapshot they put **{share}** of their weight just after their earlier copy ({targets}); the "
                          "framed rows put **{framed}** on their cells. On the remaining rows nothing is scored, and "
                          "their weight goes wherever training left it.",
                          rows=named(r for r, _col in rows.repeats), targets=named(c for _r, c in rows.repeats),
                          share=f"{formation.mean_weight(head, rows.repeats):.2f}", framed=f"{snapshot.score:.2f}"))
        st.markdown(_("**Layer 1** has no frames: the task scores only layer 2's head. But an induction head is built on "
                      "a previous-token head in the layer before it (each token looking at the one just before, the "
                      "diagonal below the main one): here layer 1 puts **{share}** of its weight there.",
                      share=f"{formation.previous_token_share(snapshot.weights[0, 0]):.2f}"))
        return
    note = _("**Framed: the pattern to learn.** The task scores rows {rows} of this sequence: its rule makes their next "
             "token predictable, and the frame marks the position each should look at to predict it. The loss counts "
             "only the scored rows, so only they are framed.", rows=named(rows.rows))
    if rows.others == [0]:
        note += " " + _("Row 1 has only itself to look at (the causal mask hides the later tokens): nothing to score.")
    elif rows.others:
        note += " " + _("Rows {rows} are not scored: nothing tells the head where they should look, and their weight "
                        "goes wherever training left it.", rows=named(rows.others))
    st.markdown(note)


_GO = "training_open_head"  # set by the button's callback: the page then switches to the self-attention page


def open_head(key: RunKey) -> None:
    """(A button's callback.) Put the learned head of the settings' layer at the settings' snapshot of ``key``'s run
    into the self-attention pages' inputs (the snapshot as the player left it); :func:`follow_open` then goes
    there."""
    trainer = runs().get(key).trainer
    own = state.settings().training
    opened = watch.head_on_self_attention(trainer, trainer.snapshots[watch.snapshot_at(trainer, own.snapshot)],
                                          own.layer)
    state.update(**opened.changes)
    for name, cells in opened.edits.items():
        state.reset_matrix(name)
        state.set_cells(name, cells)
    st.session_state[_GO] = True


def follow_open() -> None:
    """After :func:`open_head`: switch to the self-attention page (a callback may not switch pages itself)."""
    if st.session_state.pop(_GO, False):
        st.switch_page(f"app_pages/{BY_KEY['self_attention'].file}")


@st.cache_data(show_spinner=False, max_entries=256)
def explained(key: RunKey, index: int, which: str, layer: int, row: int, col: int) -> watch.UpdateAtSnapshot:
    """The explained update after snapshot ``index`` of ``key``'s finished run (shared by every session)."""
    trainer = runs().get(key).trainer
    return watch.explain_at(trainer, trainer.snapshots[index], which, layer, row, col)


def update(explained_update: watch.UpdateAtSnapshot, trainer: Trainer) -> None:
    """One update of one weight with its numbers: the batch, the loss, the gradient as a sum, Adam's rule."""
    u = explained_update.update
    task = trainer.task
    st.markdown(_("**The batch** of update {t}: {b} sequences (the first 4 below); the loss on their scored "
                  "positions is **{loss}** nats.", t=u.step, b=u.tokens.shape[0], loss=f"{u.loss:.4f}"))
    first = [[task.token_label(int(t)) for t in row] for row in u.tokens[:4].tolist()]
    st.dataframe(pd.DataFrame(first, index=[_("sequence {b}", b=b + 1) for b in range(len(first))],
                              columns=[str(t + 1) for t in range(u.tokens.shape[1])]), key="training_batch")
    terms = u.contributions.numel()
    st.markdown(_("**The gradient**, by the backward pass (dW_q = Xᵀ dQ, dW_k = Xᵀ dK, dW_v = Xᵀ dV, as on *The "
                  "backward pass*, here summed over the batch's sequences b and positions t): X is the layer's input, "
                  "Q = X W_q (K = X W_k, V = X W_v)."))
    st.latex(formulas.gradient_latex(u))
    largest = explained_update.largest_terms()
    table = pd.DataFrame({_("sequence"): [b + 1 for b, _t, _v in largest],
                          _("position"): [t + 1 for _b, t, _v in largest],
                          _("term"): [f"{v:+.3g}" for _b, _t, v in largest]})
    st.caption(_("The largest of the {n} terms (most are near 0: a weight matters where its input is large and the "
                 "loss is sensitive):", n=terms))
    st.dataframe(table, hide_index=True, key="training_terms")
    widgets.check_line(explained_update.sum_difference, explained_update.sum_matches, "torch.autograd.grad(loss, W)")
    st.markdown(_("**Adam's rule** (Kingma & Ba 2015, Algorithm 1; β₁ = {b1}, β₂ = {b2}, ε = {eps}): m and v are "
                  "running averages of g and g², kept per weight.", b1=u.beta1, b2=u.beta2, eps=u.eps))
    for line in formulas.adam_latex(u):
        st.latex(line)
    widgets.check_line(explained_update.step_difference, explained_update.step_matches, "torch.optim.Adam.step()")
    if explained_update.beyond:
        st.caption(_("The run stopped at this snapshot: this is the update it would make next."))


@st.cache_data(show_spinner=False, max_entries=64)
def _script(key: RunKey) -> str:
    return training_script(runs().get(key).trainer)


def download(key: RunKey) -> None:
    """The finished run as a Python script that trains it again and checks the final loss and pattern."""
    st.download_button(_("Download this run as a Python script"), _script(key), file_name=f"training_{key.task}.py",
                       on_click=class_live.record, args=("export", "training", "", "script"),
                       mime="text/x-python", icon=":material/download:", key="training_script",
                       help=_("Needs only torch. It trains the same run again and checks the final loss (± {loss} "
                              "nats) and the pattern's share of the weight (± {score}): another computer may round "
                              "a little differently.", loss=LOSS_TOLERANCE, score=SCORE_TOLERANCE))
