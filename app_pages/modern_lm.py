"""Inside a modern language model: SmolLM2-135M-Instruct on your prompt: its tokens, its next token, every head,
and one grouped-query, rotary head step by step with the model's own weights.

The model (30 layers × 9 query heads sharing 3 key/value heads) is loaded on the first visit to this page, once per
server (``ui.page_parts.modern_lm_data``); the other pages never import transformers.
"""

import functools

import streamlit as st

from attention_core.errors import N_, InputError
from attention_core.lessons.modern_lm.page import MODERN_LM, header_latex, modern_lm_step_through
from attention_core.lessons.temperature.page import TEMPERATURE_GRID
from attention_core.smollm2 import checkpoint, measure
from attention_core.smollm2.model import (
    LICENSE,
    MODEL_ID,
    MODERN_LM_HEADS,
    MODERN_LM_LAYERS,
    MODERN_LM_MAX_CHARS,
    MODERN_LM_MAX_NEW_TOKENS,
    MODERN_LM_MAX_TOKENS,
)
from ui import heatmaps, page_body, runtime, state, stepper, stepthrough, widgets
from ui.classroom import practice
from ui.i18n import _
from ui.page_parts import model_view, modern_lm_data, trained_model_data

EXPLAIN = {
    "inputs": N_("The hidden states entering this layer: one 576-wide row per token. Layer 1 gets the token "
                 "embeddings (no position is added: RoPE brings positions in below); every later layer gets the "
                 "previous layer's output."),
    "rmsnorm": N_("**RMSNorm** scales each row to a root mean square of 1, then multiplies column j by a learned g_j. "
                  "Unlike LayerNorm it subtracts no mean and adds no bias."),
    "query": N_("This query head's **queries**: X̂ times its 64 columns of W_q (no bias in this model)."),
    "key": N_("**Keys** from the key/value head this query head shares with two others (grouped-query attention): "
              "9 query heads, 3 key/value heads, so every key is used by 3 heads."),
    "value": N_("**Values** from the same shared key/value head."),
    "rope_query": N_("**RoPE** rotates each pair of columns (c, c + 32) of the query of token i by the angle "
                     "(i − 1)·θ_c: position enters as a rotation, not as an added vector."),
    "rope_key": N_("The keys are rotated the same way, so q′ · k′ depends on how far apart the two tokens are."),
    "scaled_scores": N_("Entry (i, j) is the rotated query i · the rotated key j, divided by √64 = 8."),
    "masked_scores": N_("The **causal mask**: a token may look only at itself and the tokens before it; the keys "
                        "after it get −∞."),
    "weights": N_("Softmax along each row. These are the numbers the model's own attention returns: compare below."),
    "output": N_("Row i is token i's context vector from this head (64 wide): the values mixed by the weights."),
    "projected": N_("This head's share of the layer's output: its 64 columns times its 64 rows of W_O (576 wide). "
                    "The 9 heads' shares add up to the layer's attention output: checked below."),
}


def header() -> None:
    """What the page shows above its settings, the same on every click (``page_body.run``)."""
    st.title(_("Inside a modern language model"))
    st.markdown(_(
        "A real decoder of today's design reads your prompt: **SmolLM2-135M-Instruct** (Hugging Face, 2024), built "
        "like Llama: 30 layers of **9 query heads sharing 3 key/value heads** (grouped-query attention), **rotary "
        "positions** (RoPE), RMSNorm and a causal mask. Below: the tokens it reads, the token it would write next, every "
        "one of its 270 heads on your prompt, then any head's math step by step **with the model's own weights**, "
        "checked against the model's own code."
    ))


def page() -> None:
    widgets.show_messages()
    settings = state.settings()
    own = settings.modern_lm

    if modern_lm_data.turned_off():
        st.info(_("This page is turned off on this server (the environment variable {name} is set to “off”): the model "
                  "needs about 600 MB of memory. The other pages work as usual.", name=modern_lm_data.SWITCH),
                icon=":material/power_off:")
        st.stop()

    text_col, template_col = st.columns([3, 1])
    with text_col:
        state.bind(st.text_area, _("Your prompt (any language, emoji too)"), "modern_lm.prompt",
                   height=80,
                   help=_("Split into byte-level BPE tokens; at most {max} tokens and {chars} characters are read (a "
                          "longer prompt is cut, with a message). Press Ctrl+Enter to apply.",
                          max=MODERN_LM_MAX_TOKENS, chars=f"{MODERN_LM_MAX_CHARS:,}"))
    with template_col:
        state.bind(st.toggle, _("Chat template"), "modern_lm.chat_template",
                   help=_("Wrap the prompt as the model was trained to chat: a system turn, your text as the user's "
                          "turn, then the start of the assistant's turn."))

    try:
        # Loading the model and running it mostly wait on torch and the disk: other students' runs go meanwhile.
        with st.spinner(_("Loading SmolLM2-135M-Instruct and checking its files (once per server: a few seconds, about 15 s "
                          "the first time on a machine, which converts the model file)…")), \
                runtime.step_aside():
            modern_lm_data.decoder()
        with st.spinner(_("Running the model on your prompt…")), runtime.step_aside():
            run = modern_lm_data.prompt_run(own.prompt, own.chat_template)
    except InputError as error:
        widgets.show_error(error)
        st.stop()

    prompt = run.prompt
    labels = measure.shown_token_labels(prompt.tokens)
    if prompt.cut:
        st.warning(_("Your prompt has {n} tokens; this page feeds the model at most {max} (chat template included), so "
                     "it was cut after its first {kept}.", n=prompt.text_tokens, max=MODERN_LM_MAX_TOKENS,
                     kept=prompt.kept_tokens), icon=":material/content_cut:")

    st.subheader(_("{n} tokens", n=len(prompt.tokens)))
    st.markdown(" ".join(f"{i + 1}\u00a0{widgets.code_span(t)}" for i, t in enumerate(prompt.tokens)))
    st.caption(_("Byte-level BPE (49,152 tokens): any text, in any script, becomes tokens, so nothing is unknown; a "
                 "word's leading space belongs to its token. Shown in the heatmaps and tables as ␣, a line break as ↵."))

    # ---------------------------------------------------------------- the next token
    st.subheader(_("The next token"))
    tau_col, _space = st.columns([2, 3])
    with tau_col:
        state.bind(st.select_slider, _("Temperature τ (shared with the Temperature page)"), "temperature.tau",
                   options=list(TEMPERATURE_GRID), format_func=lambda t: f"{t:g}",
                   help=_("p = softmax(z / τ): below 1 the most likely token takes more, above 1 the choice flattens."))
    model = modern_lm_data.decoder()
    top = measure.next_tokens(model, run.logits, settings.temperature.tau)
    heatmaps.text_table(
        [[measure.shown_token(t), f"{float(p):.3f}", f"{float(z):.2f}"]
         for t, p, z in zip(top.tokens, top.probabilities, top.logits)],
        [str(n + 1) for n in range(len(top.tokens))], [_("token"), _("probability"), _("logit z")], key="lm_top", always=True)
    st.caption(_("The {k} most likely of 49,152 tokens at τ = {tau:g}; all the others together: {rest}.",
                 k=len(top.tokens), tau=top.temperature, rest=f"{top.rest:.3f}"))

    st.markdown(_("**Generate, one token at a time.** The model reads the prompt once; then each new token is fed "
                  "alone, its query attending the keys and values of every earlier token, kept in the **KV cache**."))
    b1, b2, _space = st.columns([4, 3, 3])  # "Generate the next token" is the longer label
    b1.button(_("Generate the next token"), key="lm_generate", icon=":material/add:", width="stretch",
              disabled=own.generated >= MODERN_LM_MAX_NEW_TOKENS,
              on_click=state.update, kwargs={"modern_lm.generated": min(own.generated + 1, MODERN_LM_MAX_NEW_TOKENS)})
    b2.button(_("Start over"), key="lm_generate_reset", icon=":material/restart_alt:", width="stretch",
              disabled=own.generated == 0, on_click=state.update, kwargs={"modern_lm.generated": 0})
    if own.generated:
        with st.spinner(_("Generating…")), runtime.step_aside():
            steps_generated = modern_lm_data.generation(own.prompt, own.chat_template, own.generated)
        no_gqa = model.num_heads
        heatmaps.text_table(
            [[measure.shown_token(s.token), f"{s.probability:.3f}", str(s.cache_tokens),
              f"{s.cache_bytes / 1024:,.0f}", f"{measure.decoder_kv_cache_bytes(model, s.cache_tokens, no_gqa) / 1024:,.0f}"]
             for s in steps_generated],
            [str(n + 1) for n in range(len(steps_generated))],
            [_("token"), _("probability"), _("tokens in the cache"), _("KV cache (KiB)"), _("without GQA (KiB)")],
            key="lm_generated", always=True)
        st.markdown(_("The prompt and its continuation: {continued}",
                      continued=widgets.code_span("".join(prompt.tokens) + "".join(s.token for s in steps_generated))))
    st.caption(_("Greedy decoding (the most likely token each time). The cache holds a key and a value for every layer, "
                 "key/value head and token: 2 × {layers} × {kv} × {d} numbers × 4 bytes = {per} KiB per token in float32; "
                 "with a key/value head per query head ({h}, no GQA) it would be 3 times larger.",
                 layers=model.num_layers, kv=model.num_kv_heads, d=model.head_dim,
                 per=f"{measure.decoder_kv_cache_bytes(model, 1) / 1024:g}", h=model.num_heads))

    # Every head, the open head and its step-through: a click on one of these (another head, step or entry) reruns
    # this part alone, not the prompt's tokens and the next token above it (ui.page_body.part).
    page_body.part("modern_lm_heads", functools.partial(heads, model, run, labels), fields=HEAD_FIELDS)


#: The settings a click on the open head's map or step-through changes: its step and its explained entry.
STEP_FIELDS = ("modern_lm.stage", "modern_lm.entry_row", "modern_lm.entry_col", practice.FIELD)
#: The settings a click in the heads' part changes: the open head, and what the open head's part changes.
HEAD_FIELDS = ("modern_lm.layer", "modern_lm.head", *STEP_FIELDS)


def heads(model, run, labels: list[str]) -> None:
    """Every head of every layer, what they do, and the open head step by step (the model and the prompt's run as
    of the body's last run: a click in this part changes neither)."""
    own = state.settings().modern_lm
    prompt = run.prompt
    # ---------------------------------------------------------------- every head
    st.subheader(_("Every head of every layer"))
    st.caption(_("Each picture is one head's weights: row = the token attending (query), column = the token attended "
                 "to (key); dark = more weight. The heads are grouped by the key/value head they share. Click a "
                 "picture to open that head."))
    if len(prompt.tokens) > measure.PICTURE:
        st.caption(_("Your prompt is longer than {n} tokens: each picture averages blocks of tokens.", n=measure.PICTURE))


    def open_head(layer: int, head: int) -> None:
        state.update(**{"modern_lm.layer": layer, "modern_lm.head": head})


    grid = modern_lm_data.pictures(own.prompt, own.chat_template, state.settings().palette)
    l0, l1 = model_view.layer_block(model.num_layers, own.layer, key="lm_grid_layers")
    group_columns = st.columns(model.num_kv_heads)
    for group, column in enumerate(group_columns):
        with column:
            st.markdown(_("**Key/value head {g}**: query heads {first}–{last}", g=group + 1,
                          first=group * 3 + 1, last=group * 3 + 3))
            model_view.head_grid(model_view.pictures_of(grid, (l0, l1), group + 1), (own.layer, own.head),
                                 key=f"lm_grid_{group}", on_pick=open_head,
                                 focus=run.focus[l0:l1, group * 3:group * 3 + 3])

    # ---------------------------------------------------------------- findings
    st.subheader(_("What the heads do on your prompt"))
    st.caption(_("Measured now, on your prompt: for each pattern, the average weight a token puts there, in every "
                 "head. A head spreading its weight evenly over the tokens it may see would score {baseline}.",
                 baseline=f"{run.baselines['first']:.2f}"))
    st.markdown(_("**The attention sink**: over all 270 heads, the tokens after the first put **{share}** of their "
                  "weight on the first token, whatever it is (evenly spread: {baseline}). Models park attention there "
                  "when a head has nothing to look for (Xiao et al. 2023).",
                  share=f"{run.sink:.0%}", baseline=f"{run.baselines['first']:.0%}"))
    columns = st.columns(3)
    for index, finding in enumerate(measure.findings(run)):
        title, meaning = measure.PATTERNS[finding.key]
        with columns[index % 3].container(border=True):
            st.markdown(_("**{title}**: {meaning}.", title=_(title), meaning=_(meaning)))
            for rank, (f_layer, f_head, score) in enumerate(finding.top):
                st.button(_("Layer {layer}, head {head}: {score}", layer=f_layer + 1, head=f_head + 1,
                            score=f"{score:.2f}"), key=f"lm_find_{finding.key}_{rank}",
                          on_click=open_head, args=(f_layer, f_head), width="stretch",
                          type="primary" if (f_layer, f_head) == (own.layer, own.head) else "secondary")

    titles = {key: _(title) for key, (title, _meaning) in measure.PATTERNS.items()}
    shown = st.selectbox(_("Every head's score for"), options=list(titles), format_func=titles.get, key="lm_pattern")
    head_labels = [_("head {head} (kv {g})", head=h + 1, g=model.kv_head(h) + 1) for h in range(MODERN_LM_HEADS)]
    heatmaps.heatmap(run.patterns[shown].numpy().astype(float), [_("layer {layer}", layer=i + 1)
                                                                for i in range(MODERN_LM_LAYERS)],
                    head_labels, key=f"lm_scores_{shown}", selected=(own.layer, own.head), clickable=True,
                    on_cell=open_head, legend=False)
    st.caption(_("Click a cell to open that head."))

    # ---------------------------------------------------------------- the open head
    layer, head = own.layer, own.head
    c1, c2, _space = st.columns([1, 1, 3])
    with c1:
        state.bind(st.selectbox, _("Layer"), "modern_lm.layer", options=list(range(MODERN_LM_LAYERS)),
                   format_func=[_("Layer {layer}", layer=i + 1) for i in range(MODERN_LM_LAYERS)].__getitem__)
    with c2:
        state.bind(st.selectbox, _("Head"), "modern_lm.head", options=list(range(MODERN_LM_HEADS)),
                   format_func=[_("Head {head}", head=i + 1) for i in range(MODERN_LM_HEADS)].__getitem__)

    with st.spinner(_("Recomputing the head…")), runtime.step_aside():
        step = modern_lm_data.head(own.prompt, own.chat_template, layer, head)
    # The open head's map and step-through: another step or entry reruns them alone (their own part).
    page_body.part("modern_lm_open_head", functools.partial(the_open_head, step, labels), fields=STEP_FIELDS)


def the_open_head(step, labels: list[str]) -> None:
    """The open head's weights as a map, its checks against the model's own code, and its math step by step (the
    head as of the heads' part's last run: a click here changes neither the head nor the prompt)."""
    own = state.settings().modern_lm
    layer, head, stage = own.layer, own.head, own.stage
    steps = modern_lm_step_through(step, stage)

    st.subheader(_("Layer {layer}, head {head} (key/value head {g})", layer=layer + 1, head=head + 1,
                   g=step.kv_head + 1))
    st.caption(_("Click a cell to explain its weight step by step below."))


    def explain_weight(row: int, col: int) -> None:
        state.update(**{"modern_lm.stage": "weights", "modern_lm.entry_row": row, "modern_lm.entry_col": col})


    model_view.attention_map(trained_model_data.as_numpy(step.weights), labels, key=f"lm_map_{layer}_{head}",
                             selected=(own.entry_row, own.entry_col) if stage == "weights" else None,
                             on_cell=explain_weight, around=model_view.map_focus(steps, labels, own.entry_row, own.entry_col))
    stepthrough.checks(steps.checks)
    st.caption(_("Ours: recomputed below from the layer's input and the model's weights. The model's: transformers' "
                 "LlamaAttention (eager) run on the same layer input, returning its attention probabilities and output."))

    # ---------------------------------------------------------------- one head, step by step
    st.subheader(_("Layer {layer}, head {head}, step by step", layer=layer + 1, head=head + 1))
    st.latex(header_latex())


    stepper.live(MODERN_LM, step, EXPLAIN, windowed=True, with_checks=False)
    # the steps RoPE and the rotated queries and keys come from, taught on small numbers
    st.page_link("app_pages/rope.py", label=_("RoPE step by step on small numbers"), icon=":material/rotate_right:")

    st.caption(_("Model: {model} ({license}), a Q4_1 GGUF file from the PyPI package {package} {version}, dequantized, "
                 "its weight matrices stored in bfloat16 and computed with in float32; its files passed their SHA-256 "
                 "checks. Run by transformers' LlamaForCausalLM, offline.",
                 model=MODEL_ID, license=LICENSE, package=checkpoint.PACKAGE,
                 version=checkpoint.VERSION))


page_body.run(page, header=header)
