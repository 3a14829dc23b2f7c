"""The page "Watch attention learn": a learned head opened on the self-attention pages has the model's numbers,
the page trains and shows its run under AppTest (progress, curves, snapshots, the explained update checked against
torch), and bad input gets a message: η out of range, too many steps, a run that blows up, a second run from one
session while the first trains. Waits on each run's ``finished`` event (no sleeps)."""

from __future__ import annotations

import threading

import pytest
import torch
from conftest import APP, charts, errors, latex
from streamlit.testing.v1 import AppTest

from attention_core.errors import InputError
from attention_core.lessons.backward.page import BACKWARD
from attention_core.lessons.training import page as watch
from attention_core.self_attention.walkthrough import build_walkthrough
from attention_core.settings import Settings
from attention_core.training.model import start
from attention_core.training.runs import RunKey, RunQueue
from attention_core.training.tasks import TASKS
from ui.page_parts import training

TIMEOUT = 120  # seconds: a bound on a wait, not a synchronisation (the events are)


@pytest.fixture(scope="module")
def previous():
    trainer = start(TASKS["previous"], seed=0, learning_rate=0.03, steps=150)
    trainer.advance(150)
    return trainer


@pytest.mark.parametrize("index", [0, 2, -1])
def test_a_learned_head_opened_on_the_self_attention_pages_has_the_models_numbers(previous, index):
    snapshot = previous.snapshots[index]
    opened = watch.head_on_self_attention(previous, snapshot, layer=0)
    settings, messages = Settings().replace(**opened.changes)
    assert messages == [] and settings.d_model == settings.d_k == 16
    # the backward page masks as the model does: its P is the snapshot's pattern
    back = BACKWARD.walkthrough(settings, opened.edits)
    torch.testing.assert_close(back.trace.weights, snapshot.weights[0, 0], rtol=1e-5, atol=1e-5)
    # the self-attention page has no mask: its scaled scores are the model's, its last row sees everything anyway
    walk = build_walkthrough(settings, opened.edits)
    att = walk.trace.attention
    at = previous.at(snapshot)
    x = at.layer_inputs(previous.probe.tokens)[0][0]
    model_scores = (x @ at.model.w_query[0]) @ (x @ at.model.w_key[0]).T / 4.0  # √16
    torch.testing.assert_close(att.scaled_scores, model_scores.detach(), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(att.weights[-1], snapshot.weights[0, 0, -1], rtol=1e-5, atol=1e-5)


def test_the_wide_induction_model_cannot_be_opened_and_says_why():
    trainer = start(TASKS["induction"], seed=0, learning_rate=0.003, steps=5)
    trainer.advance(5)
    with pytest.raises(InputError) as raised:
        watch.head_on_self_attention(trainer, trainer.snapshots[-1], layer=1)
    assert "32 wide" in str(raised.value)


def test_the_explained_update_at_a_snapshot_matches_autograd_and_the_optimizer(previous):
    for index in (1, -1):
        explained = watch.explain_at(previous, previous.snapshots[index], "w_value", 0, 4, 9)
        assert explained.sum_matches and explained.step_matches
        assert explained.beyond == (index == -1)
        assert explained.update.step == previous.snapshots[index].step + 1


def test_the_curve_keeps_every_step_of_a_short_run_and_averages_a_long_one(previous):
    steps, losses, accuracies = watch.curve(previous)
    assert steps == [float(s) for s in range(1, 151)] and losses == previous.losses
    steps, losses, _ = watch.curve(previous, points=10)
    assert len(steps) == 10 and steps[-1] == 150.0
    assert losses[0] == pytest.approx(sum(previous.losses[:15]) / 15)


def _train_on_page(at: AppTest, key: RunKey) -> None:
    (button,) = [b for b in at.button if b.label == "Train"]
    button.click().run()
    run = training.runs().get(key)
    assert run is not None and run.finished.wait(TIMEOUT)
    at.run()
    assert not at.exception, at.exception


def _with_run(at: AppTest, key: RunKey) -> None:
    """The page with the run ``key`` finished: trained by its Train button, unless the server already has it."""
    if training.runs().get(key) is None:
        _train_on_page(at, key)
    else:
        at.run()


def _open(**params: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(params)
    at.run()
    at.switch_page("app_pages/training.py").run()
    assert not at.exception, at.exception
    return at


def test_the_page_trains_and_shows_the_pattern_form_and_an_explained_update():
    at = _open(**{"training.task": "previous", "training.learning_rate": "0.03", "training.steps": "150"})
    key = RunKey("previous", 0, 0.03, 150)
    _train_on_page(at, key)
    assert [h.value for h in at.header] == ["1. The loss and the accuracy", "2. The heads, snapshot by snapshot",
                                            "3. One update explained"]
    trainer = training.runs().get(key).trainer
    assert [m.value for m in at.metric] == [f"{trainer.losses[0]:.3f}", f"{trainer.snapshots[-1].loss:.3f}",
                                            f"{trainer.snapshots[-1].score:.2f}"]
    assert float(at.metric[2].value) >= 0.9
    formulas = latex(at)
    assert "\\hat m" in formulas and "\\left(W^{(1)}_{q}\\right)_{1,1}" in formulas
    checks = " ".join(s.value for s in at.success) + " ".join(c.value for c in at.caption)
    assert "torch.optim.Adam.step()" in checks and "torch.autograd.grad(loss, W)" in checks
    # the first snapshot: no pattern yet
    at.select_slider(key="setting_training.snapshot").set_value(0).run()
    shown = " ".join(m.value for m in at.markdown)
    assert f"the pattern's share of the weight **{trainer.snapshots[0].score:.2f}**" in shown
    assert trainer.snapshots[0].score < 0.5
    # another weight's update
    at.selectbox(key="setting_training.which").set_value("w_key").run()
    assert "\\left(W^{(1)}_{k}\\right)_{1,1}" in latex(at) and not at.exception


def test_a_learned_head_opens_on_the_self_attention_page():
    at = _open(**{"training.task": "first", "training.learning_rate": "0.03", "training.steps": "100"})
    _train_on_page(at, RunKey("first", 0, 0.03, 100))
    (button,) = [b for b in at.button if b.key == "training_open"]
    button.click().run()
    assert not at.exception, at.exception
    settings = at.session_state["settings"]
    assert settings.preset == "custom" and settings.d_model == settings.d_k == 16
    assert len(settings.sentence.split()) == 8
    assert [t.value for t in at.title] == ["Scaled dot-product self-attention, step by step"]
    assert not errors(at)


def test_a_learning_rate_that_blows_up_the_loss_stops_the_run_with_a_message():
    at = _open(**{"training.task": "previous", "training.learning_rate": "1", "training.steps": "200"})
    _train_on_page(at, RunKey("previous", 0, 1.0, 200))
    assert "The loss blew up at step" in errors(at)
    assert at.header  # the curve up to there is still shown


@pytest.mark.parametrize("params, message", [
    ({"training.learning_rate": "0"}, "η must be between 1e-05 and 1; got 0, using 1e-05."),
    ({"training.learning_rate": "-3"}, "η must be between 1e-05 and 1; got -3, using 1e-05."),
    ({"training.learning_rate": "nan"}, "could not be read; ignored."),
    ({"training.steps": "99999"}, "The number of steps must be between 1 and 5000; got 99999, using 5000."),
    ({"training.task": "sorting"}, "Unknown task “sorting”"),
])
def test_bad_settings_get_a_message_and_the_page_still_works(params, message):
    at = _open(**params)
    shown = " ".join(w.value for w in at.warning) + " ".join(w.value for w in at.error)
    assert message in shown, shown
    # the page still works: the Train button, or (when this server already trained those settings) the run's results
    assert not at.exception and ([b for b in at.button if b.label == "Train"] or len(at.header) == 3)


class _HeldQueue(RunQueue):
    """A queue whose worker waits for ``release`` before training: a run stays unfinished while the test looks."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def _train(self, run):
        self.release.wait(TIMEOUT)
        super()._train(run)


def test_a_second_run_from_one_session_waits_for_the_first_with_a_message(monkeypatch):
    queue = _HeldQueue()
    monkeypatch.setattr(training, "runs", lambda: queue)
    at = _open(**{"training.task": "previous", "training.learning_rate": "0.03", "training.steps": "40"})
    (button,) = [b for b in at.button if b.label == "Train"]
    button.click().run()
    first = queue.get(RunKey("previous", 0, 0.03, 40))
    assert first is not None and first.state == "queued"
    assert _progress_texts(at) == ["Starting your run…"]  # nobody ahead: the worker is about to take it
    at.number_input(key="setting_training.seed").set_value(1).run()
    (button,) = [b for b in at.button if b.label == "Train"]
    assert button.disabled
    info = " ".join(i.value for i in at.info)
    assert "Your run with seed 0" in info and "is still training" in info
    queue.release.set()
    assert first.finished.wait(TIMEOUT) and first.state == "done"
    at.run()
    (button,) = [b for b in at.button if b.label == "Train"]
    assert not button.disabled  # the first has finished: this one may start


def _head_maps(at: AppTest) -> list[tuple[dict, object]]:
    """The heads' maps of section 2 (spec, data), layer by layer."""
    return [(spec, data) for spec, data in charts(at) if "query (position, token)" in spec.get("description", "")]


@pytest.mark.parametrize("palette, scheme", [("classic", "blues"), ("cvd", "viridis")])
def test_the_head_maps_are_readable_on_the_apps_one_scale_of_weights_with_the_pattern_framed(palette, scheme):
    """The maps were 288 px wide in all (their plot ~210 px) with 10 px labels, on a scale of their own. Now: cells
    of at least 22 px, labels of at least 11 px, the weights from 0 to 1 on the one scale every heatmap gives numbers
    ≥ 0 (white to blue, or viridis), and the pattern to learn framed on its layer's map instead of a third map."""
    at = _open(**{"training.task": "induction", "training.learning_rate": "0.003", "training.steps": "50",
                  "palette": palette})
    key = RunKey("induction", 0, 0.003, 50)
    _with_run(at, key)
    maps = _head_maps(at)
    assert len(maps) == 2, [spec.get("description") for spec, _ in charts(at)]  # layer 1, layer 2: no third map
    trainer = training.runs().get(key).trainer
    expected = {(int(r), int(c)) for r, c in torch.nonzero(trainer.probe.expected[0])}
    for layer, (spec, data) in enumerate(maps):
        assert len(data) == 16 * 16
        colour = spec["layer"][0]["encoding"]["color"]["scale"]
        assert colour["scheme"] == scheme and colour["domain"] == [0.0, 1.0], colour
        assert colour["reverse"] is False  # white at 0, as the step pages' weights
        assert spec["width"]["step"] >= 22 and spec["height"]["step"] >= 22
        for axis in ("x", "y"):
            assert spec["layer"][0]["encoding"][axis]["axis"]["labelFontSize"] >= 11
        framed = {(int(i), int(j)) for i, j, f in zip(data["i"], data["j"], data["framed"], strict=True) if f}
        assert framed == (expected if layer == trainer.task.pattern_layer else set())


def _shown(at: AppTest) -> str:
    return " ".join(m.value for m in at.markdown)


def test_the_page_says_what_the_frames_mark_and_why_layer_2_shows_more():
    """The pattern to learn marked 2 cells while layer 2 showed more, with no word why. Now the page names the framed
    rows and where they look, the rows that repeat a token outside them (the rule at work where nothing scores it)
    and layer 1's previous-token head, with the snapshot's numbers; a one-layer task says what its frames are."""
    from attention_core.training import formation

    at = _open(**{"training.task": "induction", "training.learning_rate": "0.003", "training.steps": "50"})
    key = RunKey("induction", 0, 0.003, 50)
    _with_run(at, key)
    trainer = training.runs().get(key).trainer
    last = trainer.snapshots[-1]
    shown = _shown(at)
    assert "**Framed: the pattern to learn.**" in shown and "rows 4 A, 5 D here" in shown
    assert "just after its own earlier copy (2 D, 3 O)" in shown
    share = formation.mean_weight(last.weights[1, 0], formation.probe_rows(trainer).repeats)
    assert ("**Why layer 2 shows more.** Rows 6 O, 16 N repeat an earlier token too" in shown
            and f"they put **{share:.2f}** of their weight just after their earlier copy (4 A, 8 H)" in shown
            and f"the framed rows put **{last.score:.2f}** on their cells" in shown), shown
    assert f"layer 1 puts **{formation.previous_token_share(last.weights[0, 0]):.2f}** of its weight there" in shown
    at.select_slider(key="setting_training.snapshot").set_value(0).run()  # the numbers follow the snapshot
    first = trainer.snapshots[0]
    assert f"the framed rows put **{first.score:.2f}** on their cells" in _shown(at)

    at = _open(**{"training.task": "previous", "training.learning_rate": "0.03", "training.steps": "150"})
    key = RunKey("previous", 0, 0.03, 150)
    _with_run(at, key)
    shown = _shown(at)
    labels = watch.probe_token_labels(training.runs().get(key).trainer)  # "1 B", "2 A", ...: every row but the first
    assert f"The task scores rows {', '.join(labels[1:])} of this sequence" in shown, shown
    assert "Row 1 has only itself to look at" in shown and "Why layer 2" not in shown


def test_the_page_says_when_the_head_formed_against_the_loss_with_the_runs_numbers():
    """The maps' share was 0.99 at step 200 while the loss was still 0.96: "the loss drops when the head forms" was
    blurred. The page now says, from the run, where the loss on 256 held-out sequences got halfway down and where
    the pattern's share and the accuracy on them passed 0.5, what that says in this run, and that the one sequence
    of the maps ran ahead; the share chart draws those shares, and the line of each snapshot gives both."""
    from attention_core.training import formation

    at = _open()  # the default run: induction, seed 0, η = 0.003, 600 steps
    key = RunKey("induction", 0, 0.003, 600)
    _with_run(at, key)
    trainer = training.runs().get(key).trainer
    formed = formation.formation(trainer)
    shown = _shown(at)
    loss, share, accuracy = formed.loss, formed.share, formed.accuracy
    assert "**When did the head form?** Measured at every snapshot on 256 sequences" in shown
    assert (f"their loss got halfway down (from {formed.loss_first:.2f} to {formed.loss_last:.2g} nats: to "
            f"{formed.loss_level:.2f}) between step {loss.before} and step {loss.after};") in shown, shown
    assert f"the pattern's share of the weight passed 0.5 between step {share.before} and step {share.after};" in shown
    assert f"the accuracy passed 0.5 between step {accuracy.before} and step {accuracy.after}." in shown
    # The head forms as the loss falls: within two snapshots of each other. Which snapshot each passes at depends on
    # the machine's float arithmetic (the same in a gap of 0 on one machine, 25 steps apart on another), so the
    # sentence is the one for this run's gap.
    gap = formed.gap
    assert gap is not None and abs(gap) <= 2 * formed.every, gap
    if gap == 0:
        said = (f"In this run the loss fell as the head formed: the pattern's share passed 0.5 in the same "
                f"{formed.every} steps as the loss passed halfway.")
    else:
        said = (f"In this run the pattern's share passed 0.5 about {abs(gap)} steps "
                f"{'before' if gap < 0 else 'after'} the loss got halfway down.")
    assert said in shown, shown
    probe = formed.probe_share
    assert f"there it passed 0.5 between step {probe.before} and step {probe.after}" in shown
    # the chart of the shares: the held-out share at every snapshot, beside the accuracy and the maps' share
    (data,) = [d for spec, d in charts(at) if "accuracy, share" in spec.get("description", "")]
    held = data[data["series"] == "the pattern's share, 256 new sequences"]
    assert list(held["x"]) == [float(s) for s in formed.held_out.steps]
    assert list(held["y"]) == pytest.approx(formed.held_out.shares)
    assert set(data["series"]) == {"accuracy", "the pattern's share, 256 new sequences",
                                   "the pattern's share, the maps' sequence"}
    # the snapshot's line gives both shares: at step 200 the maps' sequence is nearly all pattern, the model is not
    at.select_slider(key="setting_training.snapshot").set_value(200).run()
    index = [s.step for s in trainer.snapshots].index(200)
    assert (f"At step 200: loss {trainer.snapshots[index].loss:.3f}, the pattern's share of the weight "
            f"**{trainer.snapshots[index].score:.2f}** on the sequence below "
            f"({formed.held_out.shares[index]:.2f} on 256 new sequences).") in _shown(at)


def test_a_finished_run_reads_in_chinese_with_nothing_left_untranslated():
    """The i18n tests open this page without a run; the finished run's texts (the maps, the frames, when the head
    formed) are checked here."""
    at = _open(language="zh")
    key = RunKey("induction", 0, 0.003, 600)
    if training.runs().get(key) is None:
        at.button(key="training_train").click().run()
        assert training.runs().get(key).finished.wait(TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    assert len(at.header) == 3 and "头是什么时候形成的" in _shown(at)
    missing = at.session_state["i18n_missing"] if "i18n_missing" in at.session_state else set()
    assert not missing, sorted(missing)


def _progress_texts(at: AppTest) -> list[str]:
    return [p.proto.text for p in at.get("progress")]


@pytest.mark.parametrize("ahead, language, expected", [
    (0, "en", "Starting your run…"),
    (1, "en", "Waiting for the server: 1 run is ahead of yours."),
    (2, "en", "Waiting for the server: 2 runs are ahead of yours."),
    (0, "zh", "正在开始你的训练…"),
    (2, "zh", "正在等待服务器：你前面还有 2 个训练。"),
])
def test_a_queued_run_says_its_place_as_a_sentence(monkeypatch, ahead, language, expected):
    """Not "0 run(s) ahead of yours": with nobody ahead the run is starting; one run, or several, in both languages."""
    queue = _HeldQueue()
    monkeypatch.setattr(training, "runs", lambda: queue)
    try:
        for seed in range(ahead):  # other students' runs, asked for first
            queue.submit(RunKey("previous", 100 + seed, 0.03, 20))
        at = _open(**{"training.task": "previous", "training.learning_rate": "0.03", "training.steps": "20",
                      "language": language})
        at.button(key="training_train").click().run()
        assert not at.exception, at.exception
        (text,) = _progress_texts(at)
        assert text.startswith(expected), text
        assert "(s)" not in text and "0 run" not in text
    finally:
        queue.release.set()
        for key in [RunKey("previous", 100 + seed, 0.03, 20) for seed in range(ahead)] + [RunKey("previous", 0, 0.03, 20)]:
            run = queue.get(key)
            assert run is None or run.finished.wait(TIMEOUT)  # no worker left training when the tests end


def test_the_exported_script_trains_again_and_checks_the_final_loss_and_pattern(previous, tmp_path):
    import subprocess
    import sys

    from attention_core.training.script import training_script

    path = tmp_path / "run.py"
    path.write_text(training_script(previous), encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert f"(app: {previous.snapshots[-1].loss:.4f})" in done.stdout and "OK: the same run" in done.stdout
    # a tampered app number makes it fail
    tampered = path.read_text(encoding="utf-8").replace(f"APP_FINAL_LOSS, APP_PATTERN_SHARE, APP_DIVERGED = "
                                                        f"{previous.snapshots[-1].loss!r}",
                                                        "APP_FINAL_LOSS, APP_PATTERN_SHARE, APP_DIVERGED = 1.5")
    path.write_text(tampered, encoding="utf-8")
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode != 0 and "the final loss differs" in done.stderr


def test_after_a_page_switch_the_runs_widgets_show_what_the_page_computes_with():
    at = _open(**{"training.task": "previous", "training.learning_rate": "0.03", "training.steps": "150"})
    key = RunKey("previous", 0, 0.03, 150)
    _with_run(at, key)
    at.select_slider(key="setting_training.snapshot").set_value(25).run()
    at.selectbox(key="setting_training.row").set_value(3).run()
    at.switch_page("app_pages/self_attention.py").run()
    at.switch_page("app_pages/training.py").run()
    assert not at.exception, at.exception
    assert at.select_slider(key="setting_training.snapshot").value == 25
    assert at.selectbox(key="setting_training.row").value == 3
    assert any(m.value.startswith("At step 25:") for m in at.markdown)
    assert "\\left(W^{(1)}_{q}\\right)_{4,1}" in latex(at)


def test_settings_are_fitted_to_the_run_and_left_alone_once_they_fit(previous):
    from attention_core.lessons.training.page import TrainingSettings

    wide = TrainingSettings(task="previous", snapshot=5000, layer=1, row=40, col=3)
    fitted = watch.fit_to_run(wide, previous)
    assert fitted == {"training.snapshot": 150, "training.layer": 0, "training.row": 15, "training.col": 3}
    assert watch.fit_to_run(TrainingSettings(task="previous", snapshot=50, layer=0, row=15, col=3), previous) == {}
    assert watch.fit_to_run(TrainingSettings(task="previous", snapshot=60, layer=0), previous) == {
        "training.snapshot": 50, "training.layer": 0, "training.row": 0, "training.col": 0}
    assert watch.openable_positions(previous) == 8


def test_the_player_goes_one_snapshot_on_at_a_time_and_stops_at_the_last(previous):
    assert [s.step for s in previous.snapshots] == [0, 25, 50, 75, 100, 125, 150]
    assert watch.next_snapshot(previous, 0) == 25
    assert watch.next_snapshot(previous, 149) == 150  # the settings' step is shown at its snapshot (125)
    assert watch.next_snapshot(previous, 150) is None and watch.next_snapshot(previous, 5000) is None


def test_play_starts_from_the_first_snapshot_at_the_end_and_pause_gives_the_slider_back():
    """Play and Pause under AppTest (which does not run a fragment's timer: the browser test watches the snapshots go
    by). While playing, a progress bar stands for the slider. The player's state in the session is the run's key and
    a flag."""
    import pickle

    at = _open(**{"training.task": "previous", "training.learning_rate": "0.03", "training.steps": "150"})
    key = RunKey("previous", 0, 0.03, 150)
    _with_run(at, key)
    play = at.button(key="training_play")
    assert play.label == "Play" and not play.disabled and at.session_state["settings"].training.snapshot == 150
    play.click().run()  # at the last snapshot: from the first
    assert not at.exception, at.exception
    assert at.button(key="training_play").label == "Pause" and at.session_state["settings"].training.snapshot == 0
    assert _progress_texts(at) == ["Playing: step 0 of 150"] and not at.select_slider
    assert any(m.value.startswith("At step 0:") for m in at.markdown)
    player = {k: at.session_state[k] for k in ("training_playing", "training_player_timer")}
    assert player == {"training_playing": key, "training_player_timer": True}
    assert len(pickle.dumps(player)) < 300  # what a playing session keeps
    at.button(key="training_play").click().run()  # Pause: the slider again, where the player was
    assert at.button(key="training_play").label == "Play" and "training_playing" not in at.session_state
    assert at.select_slider(key="setting_training.snapshot").value == 0 and not _progress_texts(at)
    at.select_slider(key="setting_training.snapshot").set_value(75).run()
    at.button(key="training_play").click().run()  # from the middle: on from there
    assert at.button(key="training_play").label == "Pause" and _progress_texts(at) == ["Playing: step 75 of 150"]
    at.button(key="training_play").click().run()
    assert at.button(key="training_play").label == "Play" and at.session_state["settings"].training.snapshot == 75
    assert "The update right after the snapshot (step 75)" in _shown(at)

    locked = _open(**{"training.task": "previous", "training.learning_rate": "0.03", "training.steps": "150",
                      "locked": "training.snapshot"})
    locked.run()
    assert locked.button(key="training_play").disabled  # a teacher's link fixed the snapshot: nothing to play
