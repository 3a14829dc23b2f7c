r"""From settings to every number of the *Generating token by token* page, in the one step-through protocol.

:func:`build_generation_walkthrough` reads the word, runs the trained toy encoder–decoder one token per step
(:func:`generation.generate`, with and without the KV cache) and checks it against PyTorch's Transformer
layers; :func:`generation_step_through` puts one stage of the chosen step and decoder block in a
:class:`~attention_core.stepthrough.StepThrough`. :func:`generation_formula` writes each stage's general
formula with sympy; :func:`explain_generation` one entry with its numbers in.

Shape legend: S source letters, t the step shown (the decoder reads t tokens), D = d_model = 16, h = 2 heads
of head_dim 8, V = 11 vocabulary tokens. Float32.

Sources: seed 003 (``003_734755b2d0b981d3.txt``) §2 (START → … → END, masked self-attention, cross-attention
to the encoder); Vaswani et al. 2017, sec. 3.2.3 (the three uses of attention), 3.4 (E · √d_model), 3.5 (PE),
eq. 1 (softmax(Q Kᵀ / √d_k) V); Hinton et al. 2015 (the softmax temperature τ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple, Optional

import sympy as sp
import torch

from attention_core import practice
from attention_core.entry_formulas import masked_weight_entry_latex
from attention_core.errors import N_, Message
from attention_core.fields import FloatRange, IntRange, Text, label
from attention_core.inputs.tokens import dim_labels, token_labels
from attention_core.latex import Translate, aligned, factor, latex_text, number, terms_lines
from attention_core.lessons.generation.recipe import generation_recipe
from attention_core.lessons.generation.walk import GenerationWalkthrough
from attention_core.multi_head.heads import MultiHeadTrace
from attention_core.page import Page
from attention_core.shared_settings import SharedSettings
from attention_core.stepthrough import (
    HEAD_FIELD,
    OTHER_ROUTE,
    Check,
    Panel,
    Stage,
    StepThrough,
    compare,
    explained_value,
)
from attention_core.transformer.decoder import decoder_block, torch_decoder_layer
from attention_core.transformer.generation import (
    FLOAT32_BYTES,
    MAX_TOY_TEMPERATURE,
    MIN_TOY_TEMPERATURE,
    REAL_MODELS,
    generate,
    kv_cache_bytes,
    multiply_adds,
    reference_logits,
    toy_weights,
)
from attention_core.transformer.toy_model import (
    D_MODEL,
    NUM_HEADS,
    NUM_LAYERS,
    TOY_LAYERS,
    TOY_MAX_OUTPUT,
    VOCAB,
    parse_source,
)

#: The most characters of the word to reverse (a longer one is cut, with a message; the model reads at most
#: TOY_MAX_INPUT letters and says so about the rest).
MAX_SOURCE_CHARS = 40

def lowest_sampling_temperature(tau: float) -> float:
    """0 (greedy) stays 0; a τ in (0, MIN_TOY_TEMPERATURE) becomes MIN_TOY_TEMPERATURE; any other τ is kept."""
    return tau if tau == 0 or tau >= MIN_TOY_TEMPERATURE else MIN_TOY_TEMPERATURE

#: The context length the page sizes real models' KV caches at.
REAL_CONTEXT = 4096


def build_generation_walkthrough(settings: SharedSettings, generation: GenerationSettings) -> GenerationWalkthrough:
    """The toy model on the settings' word, every step, checked against PyTorch.

    Args:
        settings: validated shared settings: seed.
        generation: the page's own settings (``settings.generation``): the word (source), τ (temperature), the step
            and block shown.

    Raises:
        InputError: the word is empty, too long or has letters the model does not know (field ``generation.source``);
            τ outside its range.
    """
    source = parse_source(generation.source)
    run = generate(source, generation.temperature, settings.seed)
    step = min(generation.step, len(run.steps) - 1)
    layer = min(generation.layer, NUM_LAYERS - 1)
    checks = _checks(source, generation.temperature, settings.seed, step, layer)
    return GenerationWalkthrough(settings=settings, generation=run, step=step, layer=layer, checks=checks)


@lru_cache(maxsize=256)
def _checks(source: tuple[int, ...], temperature: float, seed: int, step: int, layer: int) -> tuple[Check, ...]:
    generation = generate(source, temperature, seed)
    shown = generation.steps[step]
    block = shown.blocks[layer]
    causal = torch.ones(len(shown.inputs), len(shown.inputs), dtype=torch.bool).triu(1)  # True = blocked
    with torch.no_grad():
        torch_block = torch_decoder_layer(toy_weights().decoder[layer], NUM_HEADS)(
            block.y[None], generation.memory[None], tgt_mask=causal)[0]
    return (
        compare(shown.logits, reference_logits(generation.source, shown.inputs),
                "ToyReverser(source, START + tokens so far)[-1]  # torch.nn.TransformerEncoderLayer / DecoderLayer",
                note=Message(N_("step {step}'s next-token logits, the whole trained model (4 blocks deep, torch's "
                                "fused kernels: tolerance 1e-4)"), step=step + 1), tolerance=1e-4),
        compare(block.output, torch_block,
                f"torch.nn.TransformerDecoderLayer({D_MODEL}, nhead={NUM_HEADS}, dim_feedforward=64, dropout=0.0, "
                "batch_first=True)(Y, M, tgt_mask=causal)",
                note=Message(N_("decoder block {block} at step {step}, same weights"), block=layer + 1,
                             step=step + 1)),
        compare(torch.cat([c.output for c in shown.cached]), torch.stack([b.output[-1] for b in shown.blocks]),
                "decoder_block(new row, cache=KV cache)  vs  decoder_block(all rows)",
                note=Message(N_("with the KV cache against recomputing everything: the new row of every block")),
                against=OTHER_ROUTE),
    )


# ---------------------------------------------------------------- panels

_SOURCE = Message(N_("source letter"))
_DECODER = Message(N_("decoder input"))
_DIM = Message(N_("dimension"))
_VOCAB = Message(N_("vocabulary token"))
_DIMS = tuple(dim_labels("d", D_MODEL))


def _cache_rows(walk: GenerationWalkthrough) -> tuple[str, ...]:
    labels = token_labels(walk.input_tokens)
    return tuple(labels[:-1]) + (labels[-1] + " ←",)


#: The stages that show one attention's weights per head.
_ATTENTION = ("encoder_attention", "self_attention", "cross_attention")


def _attention(walk: GenerationWalkthrough, stage: str) -> MultiHeadTrace:
    """The attention a stage of :data:`_ATTENTION` shows, in the chosen block at the shown step."""
    if stage == "encoder_attention":
        return walk.generation.encoder[walk.layer].attention
    block = walk.current.blocks[walk.layer]
    return block.self_attention if stage == "self_attention" else block.cross_attention


def generation_panels(walk: GenerationWalkthrough, stage: str) -> tuple[Panel, ...]:
    """The heatmaps of ``stage`` at the shown step and block; exactly one is explained.

    Raises:
        KeyError: an unknown stage.
    """
    g, s = walk.generation, walk.current
    src, dec = tuple(token_labels(walk.source_tokens)), tuple(token_labels(walk.input_tokens))
    cached = s.cached[walk.layer]
    if stage == "source":
        return (Panel("X = E[source] · √D + PE", g.x, src, _DIMS, row_title=_SOURCE, col_title=_DIM),
                Panel(Message(N_("M: the encoder's output after {n} blocks"), n=NUM_LAYERS), g.memory, src,
                      _DIMS, row_title=_SOURCE, col_title=_DIM, explained=False))
    if stage == "decoder_input":
        return (Panel("Y = E[START, y₁, …] · √D + PE", s.y, dec, _DIMS, row_title=_DECODER,
                      col_title=_DIM),)
    if stage in _ATTENTION:
        trace = _attention(walk, stage)
        rows, row_title = (src, _SOURCE) if stage == "encoder_attention" else (dec, _DECODER)
        cols, col_title = (dec, _DECODER) if stage == "self_attention" else (src, _SOURCE)
        return tuple(Panel(Message(N_("Head {head}: weights"), head=h + 1), trace.heads[h].weights, rows, cols,
                           row_title=row_title, col_title=col_title, head=h, explained=True)
                     for h in range(NUM_HEADS))
    if stage == "kv_cache":
        rows = _cache_rows(walk)
        return (Panel(Message(N_("K cache of block {block} (← the row computed at this step)"), block=walk.layer + 1),
                      cached.self_attention.key, rows, _DIMS, row_title=_DECODER, col_title=_DIM),
                Panel(Message(N_("V cache of block {block}"), block=walk.layer + 1), cached.self_attention.value,
                      rows, _DIMS, row_title=_DECODER, col_title=_DIM, explained=False))
    if stage == "logits":
        return (Panel(Message(N_("Logits of step {step}"), step=s.number), s.logits[None], (dec[-1],), VOCAB,
                      row_title=_DECODER, col_title=_VOCAB),)
    if stage == "probabilities":
        return (Panel(Message(N_("Probabilities of step {step}"), step=s.number), s.probabilities[None], (dec[-1],),
                      VOCAB, row_title=_DECODER, col_title=_VOCAB),)
    raise KeyError(stage)


# ---------------------------------------------------------------- formulas (sympy)

_i, _j, _l, _u, _v = sp.symbols("i j l u v", integer=True, positive=True)
_t, _S, _D, _V = (sp.Symbol(n, integer=True, positive=True) for n in ("t", "S", "D", "V"))


@lru_cache(maxsize=None)
def generation_formula(stage: str, sampled: bool) -> tuple[str, ...]:
    """The general formula of ``stage`` as LaTeX lines built with sympy; ``sampled``: τ > 0 (else greedy).

    Raises:
        KeyError: an unknown stage.
    """
    x, e, pe, y = (sp.IndexedBase(n) for n in ("x", "E", "PE", "y"))
    alpha, a = sp.IndexedBase(r"\alpha"), sp.IndexedBase("a'")
    q, k, w, b = (sp.IndexedBase(n) for n in ("q", "k", "W", "b"))
    z, h, p = sp.IndexedBase("z"), sp.IndexedBase("h"), sp.IndexedBase("p")
    s_i = sp.Symbol("s_i")
    d_head, tau = sp.Symbol(r"d_{\mathrm{head}}", positive=True), sp.Symbol(r"\tau", positive=True)
    if stage in ("source", "decoder_input"):
        return (sp.latex(sp.Eq(x[_i, _j], sp.sqrt(_D) * e[s_i, _j] + pe[_i, _j], evaluate=False)),
                r"\sqrt{D} = \sqrt{16} = 4")
    if stage in _ATTENTION:
        upper = _i if stage == "self_attention" else _S
        score = sp.Eq(a[_i, _j], sp.Sum(q[_i, _l] * k[_j, _l], (_l, 1, d_head)) / sp.sqrt(d_head), evaluate=False)
        weight = sp.Eq(alpha[_i, _j], sp.exp(a[_i, _j]) / sp.Sum(sp.exp(a[_i, _l]), (_l, 1, upper)), evaluate=False)
        source = {"encoder_attention": r"Q = X W^{Q},\ K = X W^{K},\ V = X W^{V}",
                  "self_attention": r"Q = H W^{Q},\ K = H W^{K},\ V = H W^{V}",
                  "cross_attention": r"Q = H W^{Q},\ K = M W^{K},\ V = M W^{V}"}[stage]
        return (sp.latex(score), sp.latex(weight), source)
    if stage == "kv_cache":
        return (r"K_t = \begin{bmatrix} K_{t-1} \\ y_t W^{K} + b^{K} \end{bmatrix}, \quad "
                r"V_t = \begin{bmatrix} V_{t-1} \\ y_t W^{V} + b^{V} \end{bmatrix}",
                sp.latex(sp.Eq(k[_t, _j], sp.Sum(y[_t, _l] * w[_l, _j], (_l, 1, _D)) + b[_j], evaluate=False)))
    if stage == "logits":
        return (sp.latex(sp.Eq(z[_v], sp.Sum(h[_t, _l] * w[_l, _v], (_l, 1, _D)) + b[_v], evaluate=False)),)
    if stage == "probabilities":
        prob = sp.Eq(p[_v], sp.exp(z[_v] / tau) / sp.Sum(sp.exp(z[_u] / tau), (_u, 1, _V)), evaluate=False)
        choice = (r"y_t \sim p \quad (\text{a draw})" if sampled
                  else r"y_t = \operatorname{argmax}_v\, p_v \quad (\tau = 1 \text{ shown; greedy})")
        return (sp.latex(prob), choice)
    raise KeyError(stage)


# ---------------------------------------------------------------- one entry, with its numbers in

def _products(left: list[float], right: list[float]) -> list[str]:
    return [f"{factor(a)} \\cdot {factor(b)}" for a, b in zip(left, right)]


def _embedding_entry(row: int, col: int, token: int, value: float, position_value: float) -> str:
    i, j = row + 1, col + 1
    e = float(toy_weights().embedding[token, col])
    return aligned(f"x_{{{i},{j}}}", [f"\\sqrt{{{D_MODEL}}} \\cdot E_{{\\mathrm{{{VOCAB[token]}}},{j}}} + PE_{{{i},{j}}}",
                                      f"{math.sqrt(D_MODEL):g} \\cdot {factor(e)} + {factor(position_value)}",
                                      number(value)])


def explain_generation(walk: GenerationWalkthrough, stage: str, row: int, col: int, head: int = 0,
                       tr: Translate = Message) -> str:
    """One entry (row, col) of ``stage``'s explained panel (of ``head`` for attention), numbers in, as LaTeX.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    panels = generation_panels(walk, stage)
    value = explained_value(panels, row, col, head)
    s, w = walk.current, toy_weights()
    if stage == "source":
        return _embedding_entry(row, col, walk.generation.source[row], value, float(w.positional[row, col]))
    if stage == "decoder_input":
        return _embedding_entry(row, col, s.inputs[row], value, float(w.positional[row, col]))
    if stage in _ATTENTION:
        att = _attention(walk, stage).heads[head]
        scores = att.masked_scores if att.masked_scores is not None else att.scaled_scores
        return masked_weight_entry_latex(row, col, scores[row].tolist(), value, head, tr)
    if stage == "kv_cache":
        cached = s.cached[walk.layer]
        if row < len(s.inputs) - 1:  # an earlier token's row
            return (f"k_{{{row + 1},{col + 1}}} = {number(value)} \\quad "
                    + r"\text{" + latex_text(tr(N_("read from the cache: computed at step {step}"), step=row + 1)) + "}")
        weights = w.decoder[walk.layer].self_attention
        terms = _products(cached.y[0].tolist(), weights.w_key[:, col].tolist())
        return aligned(f"k_{{{row + 1},{col + 1}}}", [terms_lines(terms + [factor(float(weights.b_key[col]))]),
                                                      number(value)])
    if stage == "logits":
        terms = _products(s.blocks[-1].output[-1].tolist(), w.w_vocab[:, col].tolist())
        return aligned(f"z_{{\\mathrm{{{VOCAB[col]}}}}}", [terms_lines(terms + [factor(float(w.b_vocab[col]))]),
                                                           number(value)])
    if stage == "probabilities":
        tau = walk.generation.temperature or 1.0
        scaled = (s.logits / tau).tolist()
        top = max(scaled)
        exps = [math.exp(v - top) for v in scaled]
        terms = [f"e^{{{number(v - top)}}}" for v in scaled]
        name = VOCAB[col]
        return ("\\begin{aligned} \\textstyle\\sum_u e^{z_u/\\tau - m} &= " + terms_lines(terms) + " \\\\ &= "
                + number(sum(exps)) + " \\\\[6pt] p_{\\mathrm{" + name + "}} &= \\frac{e^{z_{\\mathrm{" + name
                + "}}/\\tau - m}}{\\sum_u e^{z_u/\\tau - m}} = \\frac{" + number(exps[col]) + "}{"
                + number(sum(exps)) + "} = " + number(value) + " \\end{aligned}"
                + f"\\qquad \\tau = {tau:g},\\ m = \\max_u z_u/\\tau = {number(top)}")
    raise KeyError(stage)


def generation_exercise(walk: GenerationWalkthrough, stage: str, row: int, col: int,
                        head: int = 0) -> Optional[practice.Exercise]:
    """Entry (row, col) of ``stage`` (of ``head`` for attention) as an exercise (practice mode): an attention weight,
    the new token's cached key, a logit, a probability; None for the embeddings and the keys read from the cache.

    Raises:
        KeyError: unknown stage. IndexError: (row, col) outside the explained panel.
    """
    value = explained_value(generation_panels(walk, stage), row, col, head)
    s, w = walk.current, toy_weights()
    i, j, r = row + 1, col + 1, head + 1
    if stage in _ATTENTION:
        att = _attention(walk, stage).heads[head]
        masked = att.masked_scores if att.masked_scores is not None else att.scaled_scores
        blocked = bool(torch.isinf(masked).any())
        return practice.softmax_exercise(
            f"\\alpha^{{({r})}}_{{{i},{j}}}", f"\\frac{{e^{{a^{{({r})}}_{{{i},{j}}}}}}}{{\\sum_l e^{{a^{{({r})}}_{{{i},l}}}}}}",
            f"a^{{({r})}}_{{{i}}}", masked.tolist(), row, col, value,
            unmasked=att.scaled_scores.tolist() if blocked else None)
    if stage == "kv_cache":
        if row < len(s.inputs) - 1:
            return None  # read from the cache
        cached, weights = s.cached[walk.layer], w.decoder[walk.layer].self_attention
        return practice.dot_exercise(f"k_{{{i},{j}}}", f"\\sum_l y_{{{i},l}}\\, W^k_{{l,{j}}} + b^k_{{{j}}}",
                                     (f"y_{{{i}}}", cached.y[0].tolist()), (f"W^k_{{:,{j}}}", weights.w_key[:, col].tolist()),
                                     value, extra=(f"b^k_{{{j}}} = {number(float(weights.b_key[col]))}",))
    if stage not in ("logits", "probabilities"):
        return None  # the embeddings: looked up and added, shown on the page
    name = f"\\mathrm{{{VOCAB[col]}}}"
    if stage == "logits":
        return practice.dot_exercise(f"z_{{{name}}}", f"\\sum_l h_{{t,l}}\\, W_{{l,{name}}} + b_{{{name}}}",
                                     ("h_t", s.blocks[-1].output[-1].tolist()), (f"W_{{:,{name}}}", w.w_vocab[:, col].tolist()),
                                     value, extra=(f"b_{{{name}}} = {number(float(w.b_vocab[col]))}",))
    if stage == "probabilities":
        tau = walk.generation.temperature or 1.0
        return practice.softmax_exercise(f"p_{{{name}}}", f"\\frac{{e^{{z_{{{name}}}/\\tau}}}}{{\\sum_u e^{{z_u/\\tau}}}}",
                                         f"z/\\tau\\ (\\tau = {tau:g})", (s.logits[None] / tau).tolist(), 0, col, value,
                                         by_column=False, predict=False)


# ---------------------------------------------------------------- the KV cache's cost

def cost_rows(walk: GenerationWalkthrough) -> tuple[tuple[int, int, int, int], ...]:
    """Per step t taken: (t, multiply-adds without the cache, with it, bytes of the toy model's K and V cache).

    The cache holds t rows per block after step t: NUM_LAYERS × 2 × h × head_dim × 4 bytes × t.
    """
    n, head_dim = len(walk.generation.source), D_MODEL // NUM_HEADS
    return tuple((t, multiply_adds(t, n, cached=False), multiply_adds(t, n, cached=True),
                  kv_cache_bytes(NUM_LAYERS, NUM_HEADS, head_dim, t, FLOAT32_BYTES))
                 for t in range(1, len(walk.generation.steps) + 1))


class CacheSize(NamedTuple):
    """A real model's KV cache: its key/value heads, bytes per token, and bytes at ``tokens`` tokens."""

    model: str
    kv_heads: int
    bytes_per_token: int
    bytes_total: int

    @property
    def gib_total(self) -> float:
        return self.bytes_total / 2**30


def real_cache_rows(tokens: int = REAL_CONTEXT) -> tuple[CacheSize, ...]:
    """The KV cache of each of :data:`generation.REAL_MODELS` (16-bit numbers), per token and at ``tokens``."""
    return tuple(CacheSize(name, kv_heads, kv_cache_bytes(layers, kv_heads, head_dim, 1, size),
                           kv_cache_bytes(layers, kv_heads, head_dim, tokens, size))
                 for name, layers, kv_heads, head_dim, size in REAL_MODELS)


def generation_step_through(walk: GenerationWalkthrough, stage: str) -> StepThrough:
    """The page's ``stage`` at the shown step and block, in the one step-through protocol.

    Raises:
        KeyError: a stage that is not one of the page's.
    """
    if stage not in GENERATION_PAGE.stages:
        raise KeyError(stage)
    s = walk.current
    remark = None
    if stage == "kv_cache":
        remark = Message(N_("With the cache, block {block} computed 1 row instead of {rows}; max |cached − "
                            "recomputed| = {diff:.1e}."), block=walk.layer + 1, rows=s.number, diff=s.cache_diff)
    elif stage == "probabilities":
        remark = Message(N_("Chosen: {token} (probability {p:.3f})."), token=VOCAB[s.chosen],
                         p=float(s.probabilities[s.chosen]))
    return StepThrough(
        page=GENERATION_PAGE,
        stage=Stage(
            key=stage, panels=generation_panels(walk, stage),
            formula=lambda tr: generation_formula(stage, walk.generation.temperature > 0),
            entry=lambda row, col, head, tr: explain_generation(walk, stage, row, col, head, tr),
            exercise=lambda row, col, head: generation_exercise(walk, stage, row, col, head),
            code=(generate, decoder_block), remark=remark,
        ),
        checks=walk.checks, num_heads=NUM_HEADS if stage in _ATTENTION else 0,
        head_field=HEAD_FIELD,
    )


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class GenerationSettings:
    """The generation page's own settings (``settings.generation``): the toy encoder-decoder that reverses a word.

    Attributes:
        source: the word as typed, never altered (``toy_model.parse_source`` reads it; its errors name this field).
        temperature: τ of the next-token softmax: 0 = greedy, or MIN_TOY_TEMPERATURE..MAX_TOY_TEMPERATURE (a τ in
            between is moved up to MIN_TOY_TEMPERATURE, with a message). The draws at τ > 0 come from ``seed``.
        step: the generation step the step-through shows (0-based; the page keeps it below the steps taken).
        layer: the decoder block whose attention is shown (0-based, below TOY_LAYERS).
    """

    source: str = "beach"
    temperature: float = 0.0
    step: int = 2
    layer: int = TOY_LAYERS - 1


GENERATION_PAGE = Page(
    key="generation", title=N_("Generating token by token"), icon=":material/keyboard_double_arrow_right:",
    section="transformer", summary=N_("Generating token by token: a trained decoder, its cross-attention and its KV cache"),
    stages={
        "source": N_("The encoder reads the word: X, then its output M"),
        "encoder_attention": N_("The encoder's self-attention over the word"),
        "decoder_input": N_("The decoder's input: START and the tokens so far"),
        "self_attention": N_("Masked self-attention over the tokens so far"),
        "cross_attention": N_("Cross-attention over the encoder's outputs"),
        "kv_cache": N_("KV cache: only the new token's key and value are computed"),
        "logits": N_("Next-token logits: the last row × W_vocab + b"),
        "probabilities": N_("Softmax: a probability for every token, then the choice"),
    },
    build=build_generation_walkthrough, step_through=generation_step_through, default_stage="cross_attention",
    default_stage_why=N_("Cross-attention, the decoder reading the encoder's output, is the step to watch; the encoder and the decoder's input come before."), recipe=generation_recipe,
    settings=GenerationSettings,
    fields=(
        Text("source", N_("The word to reverse must be text; restored the example word."), max_chars=MAX_SOURCE_CHARS,
             what=label(N_("The word to reverse"))),
        FloatRange("temperature", 0.0, MAX_TOY_TEMPERATURE, "tau",
                   malformed=N_("τ must be a number; got “{raw}”, using {value:g}."),
                   out_of_range=N_("τ must be between {low:g} and {high:g}; got {tau:g}, using {clamped:g}."),
                   snap=lowest_sampling_temperature,
                   off_grid=N_("τ = {tau:g} is too close to 0 to sample in float32 (logits ÷ τ overflows near 0); using "
                                   "{snapped:g}, the smallest τ that samples. τ = 0 means greedy.")),
        IntRange("step", 0, TOY_MAX_OUTPUT - 1, label(N_("The generation step")), one_based=True),
        IntRange("layer", 0, TOY_LAYERS - 1, label(N_("The block")), one_based=True),
    ),
    legacy={"toy_source": "source", "toy_temperature": "temperature", "toy_step": "step", "toy_layer": "layer", "generation_stage": "stage"},
)
