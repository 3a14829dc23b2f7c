"""Watch attention learn: train a tiny attention-only Transformer on a task whose pattern is known, watch its heads
form snapshot by snapshot, and see one Adam update with its numbers (attention_core/training/)."""

import streamlit as st

from attention_core.errors import N_, InputError
from attention_core.lessons.training import page as watch
from attention_core.training import formation
from attention_core.training.model import MAX_TRAINING_STEPS
from attention_core.training.tasks import TASKS
from ui import page_body, state, widgets
from ui.i18n import _
from ui.page_parts import training

training.follow_open()  # a click on "Open this head on the Self-attention page" goes there


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Watch attention learn"))
    st.markdown(_(
        "Every other page shows weights that were drawn at random, typed in or trained elsewhere. Here the server "
        "trains a tiny Transformer (attention only: no MLP, no layer norm) on a task whose right attention pattern "
        "you can predict, and you watch that pattern form. The most famous case is **induction**: a two-layer "
        "model's loss drops suddenly when a previous-token head and an induction head appear "
        "*(Olsson et al. 2022, “In-context learning and induction heads”)*."
    ))


def page() -> None:
    widgets.show_messages()
    settings = state.settings()
    own = settings.training
    task = TASKS[own.task]

    titles = {key: _(t.title) for key, t in TASKS.items()}
    state.bind(st.radio, _("Task"), "training.task", options=list(TASKS), format_func=titles.get, horizontal=True,
               also=watch.task_defaults)
    st.info(_(task.pattern), icon=":material/lightbulb:")
    c1, c2, c3 = st.columns(3)
    with c1:
        state.bind(st.number_input, _("Seed"), "training.seed", step=1,
                   help=_("Draws the model's first weights and its batches: the same seed, the same run."))
    with c2:
        state.bind(st.number_input, _("Learning rate η (Adam)"), "training.learning_rate", step=0.001, format="%.4f",
                   help=state.range_help("training.learning_rate", N_("{low} to {high}. This task learns with {default}; too "
                                                                      "large and the loss blows up."),
                                         default=task.learning_rate))
    with c3:
        state.bind(st.number_input, _("Steps (updates)"), "training.steps", step=50,
                   help=_("1 to {high}; each update uses a batch of 64 sequences.", high=MAX_TRAINING_STEPS))

    key = watch.run_key(settings)
    run = training.runs().get(key)
    if run is None:
        busy = training.busy_with(key)
        st.button(_("Train"), type="primary", icon=":material/play_arrow:", disabled=busy is not None,
                  on_click=training.train, args=(key,), key="training_train")
        if busy is not None:
            st.info(_("Your run with seed {seed}, η = {eta} and {steps} steps is still training (step {step}). Start this "
                      "one when it has finished: one run at a time per student keeps the class's server fast. Nothing "
                      "is lost: go back to those settings to see it.", seed=busy.key.seed, eta=busy.key.learning_rate,
                      steps=busy.key.steps, step=busy.steps_done), icon=":material/hourglass_top:")
        else:
            st.caption(_("Training runs on the server, one run at a time; a run with the same settings as someone "
                         "else's is trained once and shared."))
        st.stop()
    if not run.finished.is_set():
        training.live(key)
        st.stop()
    training.finished(key, run)
    if run.state == "failed":
        st.error(_("This run could not train: {error}", error=run.error), icon=":material/error:")
        st.stop()

    trainer = run.trainer
    if run.state == "diverged":
        st.error(_("The loss blew up at step {step} (it became infinite, NaN or over 100 times its first value): the "
                   "learning rate η = {eta} is too large for this task, so the run stopped. Try {default}.",
                   step=trainer.step + 1, eta=key.learning_rate, default=task.learning_rate), icon=":material/warning:")

    fitted = watch.fit_to_run(own, trainer)  # the snapshot, layer and entry this run has, before their widgets
    if fitted:
        state.update(**fitted)
        own = state.settings().training
    index = watch.snapshot_at(trainer, own.snapshot)
    snapshot = trainer.snapshots[index]

    st.header(_("1. The loss and the accuracy"))
    final = trainer.snapshots[-1]
    m1, m2, m3 = st.columns(3)
    m1.metric(_("Loss at the start"), f"{trainer.losses[0]:.3f}" if trainer.losses else "–")
    m2.metric(_("Loss at the end"), f"{final.loss:.3f}")
    m3.metric(_("The pattern's share of the weight"), f"{final.score:.2f}",
              help=_("The head's weight on the pattern's cells, averaged over the rows the pattern describes (layer "
                     "{layer}; 1 = exactly the pattern).", layer=task.pattern_layer + 1))
    formed = training.run_formation(key)
    training.curves(trainer, marked=snapshot.step, key="training_curve", shares=formed.held_out)
    st.caption(_("Above: the cross-entropy of the next token at the scored positions, for every update's batch. Below: "
                 "the share of those positions predicted right (every update's batch), and the pattern's share of the "
                 "weight at every snapshot, on {n} sequences the model never trained on and on the one sequence of the "
                 "maps in section 2. The vertical lines are the snapshot shown there.", n=formation.HELD_OUT))
    training.formation_note(formed)
    training.download(key)

    st.header(_("2. The heads, snapshot by snapshot"))
    training.snapshots(key)  # the slider, Play, the maps and what they show: a fragment that plays the snapshots

    layer_names = [_("Layer {layer}", layer=i + 1) for i in range(task.num_layers)]
    state.bind(st.selectbox, _("Layer to open and to explain below"), "training.layer", options=list(range(task.num_layers)),
               format_func=layer_names.__getitem__)
    try:
        positions = watch.openable_positions(trainer)  # computed only when the button is clicked (training.open_head)
    except InputError as error:  # a model wider than the self-attention pages take: say so, nothing to open
        st.info(widgets.message_markdown(error.message), icon=":material/info:")
    else:
        st.button(_("Open this head on the Self-attention page"), icon=":material/open_in_new:", key="training_open",
                  on_click=training.open_head, args=(key,))
        st.caption(_("Puts the probe's {n} tokens, this layer's input X and its learned W_q, W_k, W_v ({d} × {d}) into "
                     "the example “Your own sentence” (replacing its sentence and your edits there). The Self-attention "
                     "page's scaled scores are this head's; that page has no mask, so its weights also spread over later "
                     "tokens. *The backward pass* page (its causal switch turned on too) masks them as the model does: "
                     "its P is the pattern above.", n=positions, d=trainer.model.head_dim))

    st.header(_("3. One update explained"))
    st.markdown(_("The update right after the snapshot (step {step}), for one weight of the layer chosen above.",
                  step=snapshot.step))
    w1, w2, w3 = st.columns(3)
    width = trainer.model.head_dim
    with w1:
        state.bind(st.selectbox, _("Weight"), "training.which", options=list(watch.WEIGHTS),
                   format_func=watch.WEIGHTS.get)
    with w2:
        state.bind(st.selectbox, _("Row"), "training.row", options=list(range(width)),
                   format_func=[str(i + 1) for i in range(width)].__getitem__)
    with w3:
        state.bind(st.selectbox, _("Column"), "training.col", options=list(range(width)),
                   format_func=[str(i + 1) for i in range(width)].__getitem__)
    training.update(training.explained(key, index, own.which, own.layer, own.row, own.col), trainer)


page_body.run(page, header=header)
