r"""Positional encoding, and why self-attention needs it: permutation equivariance.

Self-attention treats its input as a set: shuffle the rows of X and the output
rows are shuffled the same way, each row unchanged (SA(P X) = P SA(X) for any
permutation matrix P), so nothing in the output knows where a token stood.
Adding a position-dependent vector to each row breaks this: SA(P X + PE) is in
general not P SA(X + PE).

Shape legend: T tokens (positions), D = d_model, d_k query/key width, P positions shown.

Sources: Vaswani et al. 2017, "Attention Is All You Need", §3.5 (the sinusoidal
encoding PE(pos, 2i) = sin(pos / 10000^{2i/d_model}), PE(pos, 2i+1) = cos(...),
added to the embeddings; learned positional embeddings as the alternative that
"produced nearly identical results"); seed 003 (003_734755b2d0b981d3.txt) §1.5:
self-attention without positional information has no notion of order; the
position vector can be hand-designed or learned.

The encodings themselves (the sinusoidal table, its loop reference, a learned table as it starts) are the
floor's :mod:`attention_core.positions`, which the toy reverser and the RoPE page use too.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import sympy as sp
import torch

from attention_core.errors import N_, InputError
from attention_core.fields import Choice, IntRange, label
from attention_core.page import Page
from attention_core.positions import BASE, learned_encoding, sinusoidal_encoding, sinusoidal_encoding_loop
from attention_core.self_attention.functional import SelfAttentionTrace, self_attention

#: Positional encoding: the pattern heatmap's size, positions × d_model.
MIN_PE_POSITIONS, MAX_PE_POSITIONS = 2, 128

MIN_PE_WIDTH, MAX_PE_WIDTH = 2, 128

#: Positional encoding: the encodings and the shuffles offered (keys of ``positional.ENCODINGS``
#: and ``positional.SHUFFLES``).
PE_ENCODINGS: tuple[str, ...] = ("sinusoidal", "learned")

PE_SHUFFLES: tuple[str, ...] = ("reverse", "rotate", "random")

#: The encodings offered: key -> label (keys declared in ``PE_ENCODINGS``).
ENCODINGS: dict[str, str] = {
    "sinusoidal": N_("sinusoidal (Vaswani et al. §3.5)"),
    "learned": N_("learned (a seeded random table, as before training)"),
}
#: The shuffles offered: key -> label (keys declared in ``PE_SHUFFLES``).
SHUFFLES: dict[str, str] = {
    "reverse": N_("reverse the sentence"),
    "rotate": N_("move the first token to the end"),
    "random": N_("random shuffle (seeded)"),
}
#: SA(P X) = P SA(X) holds when no entry differs by more than this (float32 rounding is ~1e-7).
EQUIVARIANCE_TOLERANCE = 1e-5
#: With an encoding, the order matters when some entry of SA(P X + PE) − P SA(X + PE) exceeds this.
ORDER_TOLERANCE = 1e-3
#: The table agrees with :func:`sinusoidal_encoding_loop` when no entry differs by more than this.
LOOP_TOLERANCE = 1e-6
#: The entry written out with its numbers: PE(3, 4), or the last row / column of a smaller table.
EXAMPLE_ENTRY = (3, 4)


def encoding(kind: str, positions: int, d_model: int, seed: int) -> torch.Tensor:
    """The encoding of ``kind`` (a key of :data:`ENCODINGS`), (positions, d_model), float32.

    Raises:
        InputError: unknown kind, or sizes below 1.
    """
    if kind == "sinusoidal":
        return sinusoidal_encoding(positions, d_model)
    if kind == "learned":
        return learned_encoding(positions, d_model, torch.Generator().manual_seed(seed))
    raise InputError(N_("Unknown positional encoding “{kind}”; pick one of {choices}."), field="positional_encoding.kind",
                     kind=kind, choices=", ".join(ENCODINGS))


def permutation(kind: str, length: int, seed: int = 0) -> tuple[int, ...]:
    """A shuffle of ``length`` tokens: position p of the shuffled sentence holds token perm[p].

    "reverse" and "rotate" are fixed; "random" is ``torch.randperm`` from a generator seeded
    ``seed``, and when that draws the identity (likely for 2 tokens) the reversal is used, so
    the shuffle always moves something when length >= 2.

    Raises:
        InputError: unknown kind, or length below 1.
    """
    if length < 1:
        raise InputError(N_("There is nothing to shuffle: the sentence has no tokens."), field="sentence")
    if kind == "reverse":
        return tuple(range(length - 1, -1, -1))
    if kind == "rotate":
        return tuple(range(1, length)) + (0,)
    if kind == "random":
        perm = tuple(torch.randperm(length, generator=torch.Generator().manual_seed(seed)).tolist())
        return perm if perm != tuple(range(length)) else tuple(range(length - 1, -1, -1))
    raise InputError(N_("Unknown shuffle “{kind}”; pick one of {choices}."), field="positional_encoding.shuffle",
                     kind=kind, choices=", ".join(SHUFFLES))


@dataclass(frozen=True)
class EquivarianceTrace:
    """Self-attention on a sentence and on its shuffle, with and without a positional encoding.

    ``perm[p]`` is the original position of the token at shuffled position p, so the
    shuffled input is ``x[perm]`` and "shuffling the output rows the same way" is ``out[perm]``.

    Attributes:
        perm: the shuffle, length T.
        x: X, (T, D). x_shuffled: X[perm], (T, D).
        pe: the encoding added, (T, D): row p is added to whatever token is at position p.
        plain, plain_shuffled: SA(X) and SA(X[perm]) (no encoding).
        encoded, encoded_shuffled: SA(X + PE) and SA(X[perm] + PE).
        plain_diff: max |SA(X[perm]) − SA(X)[perm]|: ~1e-7, rounding only.
        encoded_diff: max |SA(X[perm] + PE) − SA(X + PE)[perm]|: clearly not 0.
    """

    perm: tuple[int, ...]
    x: torch.Tensor
    x_shuffled: torch.Tensor
    pe: torch.Tensor
    plain: SelfAttentionTrace
    plain_shuffled: SelfAttentionTrace
    encoded: SelfAttentionTrace
    encoded_shuffled: SelfAttentionTrace
    plain_diff: float
    encoded_diff: float

    @property
    def plain_matches(self) -> bool:
        """Whether SA(P X) = P SA(X) up to float rounding: plain_diff < :data:`EQUIVARIANCE_TOLERANCE`."""
        return self.plain_diff < EQUIVARIANCE_TOLERANCE

    @property
    def order_matters(self) -> bool:
        """Whether the encoding made the outputs depend on the order: encoded_diff > :data:`ORDER_TOLERANCE`."""
        return self.encoded_diff > ORDER_TOLERANCE

    @property
    def encoded_x(self) -> torch.Tensor:
        """X + PE, (T, D): the input of SA(X + PE)."""
        return self.x + self.pe

    @property
    def shuffled_positions(self) -> tuple[int, ...]:
        """The positions of the shuffled sentence, 1-based: 1, 2, ..., T."""
        return tuple(range(1, len(self.perm) + 1))

    def shuffle(self, items) -> tuple:
        """``items`` (one per token, length T) in the shuffled order: position p gets items[perm[p]].

        Raises:
            IndexError: fewer than T items.
        """
        return tuple(items[original] for original in self.perm)

    @property
    def plain_unshuffled(self) -> torch.Tensor:
        """SA(X[perm]) with its rows put back in the original order, (T, d_v)."""
        return self.plain_shuffled.output[list(inverse_permutation(self.perm))]

    @property
    def encoded_unshuffled(self) -> torch.Tensor:
        """SA(X[perm] + PE) with its rows put back in the original order, (T, d_v)."""
        return self.encoded_shuffled.output[list(inverse_permutation(self.perm))]


def inverse_permutation(perm: tuple[int, ...]) -> tuple[int, ...]:
    """inv with inv[perm[p]] = p: where each original token went."""
    inv = [0] * len(perm)
    for p, original in enumerate(perm):
        inv[original] = p
    return tuple(inv)


def equivariance(
    x: torch.Tensor, w_query: torch.Tensor, w_key: torch.Tensor, w_value: torch.Tensor,
    pe: torch.Tensor, perm: tuple[int, ...],
) -> EquivarianceTrace:
    """Run self-attention on X and X[perm], each with and without ``pe`` added.

    Args:
        x: X, (T, D). w_query, w_key: (D, d_k). w_value: (D, d_v).
        pe: the positional encoding, (T, D) (at least T rows; the first T are used).
        perm: a permutation of range(T).

    Returns:
        The :class:`EquivarianceTrace`.

    Raises:
        InputError: perm is not a permutation of range(T), or pe does not fit X
            (or the weights do not fit X, as :func:`functional.self_attention`).
    """
    t, d = x.shape
    if sorted(perm) != list(range(t)):
        raise InputError(N_("The shuffle must list each of the {t} positions exactly once."), field="positional_encoding.shuffle", t=t)
    if pe.shape[0] < t or pe.shape[1] != d:
        raise InputError(N_("The positional encoding is {shape} but X is {t} × {d}."), field="positional_encoding.kind",
                         shape=tuple(pe.shape), t=t, d=d)
    pe = pe[:t].to(x.dtype)  # (T, D)
    index = list(perm)
    x_shuffled = x[index]  # (T, D): row p = token perm[p]
    plain = self_attention(x, w_query, w_key, w_value)
    plain_shuffled = self_attention(x_shuffled, w_query, w_key, w_value)
    encoded = self_attention(x + pe, w_query, w_key, w_value)
    encoded_shuffled = self_attention(x_shuffled + pe, w_query, w_key, w_value)
    return EquivarianceTrace(
        perm=tuple(perm), x=x, x_shuffled=x_shuffled, pe=pe,
        plain=plain, plain_shuffled=plain_shuffled, encoded=encoded, encoded_shuffled=encoded_shuffled,
        plain_diff=float((plain_shuffled.output - plain.output[index]).abs().max()),
        encoded_diff=float((encoded_shuffled.output - encoded.output[index]).abs().max()),
    )


def order_experiment(x: torch.Tensor, w_query: torch.Tensor, w_key: torch.Tensor, w_value: torch.Tensor,
                     encoding_kind: str, shuffle_kind: str, seed: int) -> EquivarianceTrace:
    """The page's experiment in one call: the shuffle (:func:`permutation`), the encoding (:func:`encoding`)
    and self-attention on both orders with and without it (:func:`equivariance`).

    Args:
        x: X, (T, D). w_query, w_key: (D, d_k). w_value: (D, d_v).
        encoding_kind: a key of :data:`ENCODINGS`. shuffle_kind: a key of :data:`SHUFFLES`.
        seed: seeds the random shuffle and the learned encoding.

    Returns:
        The :class:`EquivarianceTrace`.

    Raises:
        InputError: an unknown kind, no tokens, or weights that do not fit X.
    """
    t, d = x.shape
    perm = permutation(shuffle_kind, t, seed)
    return equivariance(x, w_query, w_key, w_value, encoding(encoding_kind, t, d, seed), perm)


@dataclass(frozen=True)
class SinusoidalPattern:
    """The sinusoidal table for the page's picture, checked against the entry-by-entry loop.

    Attributes:
        table: PE, (P, D) float32 (:func:`sinusoidal_encoding`); P positions, D = d_model.
        loop_max_abs_diff: max |table − :func:`sinusoidal_encoding_loop`| (float; the loop is float64).
        loop_matches: loop_max_abs_diff < :data:`LOOP_TOLERANCE`.
        example_position, example_column: the entry written out with its numbers, 0-based:
            :data:`EXAMPLE_ENTRY`, moved inside P × D.

    Source: Vaswani et al. 2017 §3.5.
    """

    table: torch.Tensor
    loop_max_abs_diff: float
    loop_matches: bool
    example_position: int
    example_column: int


def sinusoidal_pattern(positions: int, d_model: int) -> SinusoidalPattern:
    """The sinusoidal table (positions × d_model), its check against the loop and the entry to write out.

    Raises:
        InputError: positions or d_model below 1.
    """
    table = sinusoidal_encoding(positions, d_model)
    loop = torch.tensor(sinusoidal_encoding_loop(positions, d_model), dtype=torch.float64)
    diff = float((table.double() - loop).abs().max())
    row, column = EXAMPLE_ENTRY
    return SinusoidalPattern(table=table, loop_max_abs_diff=diff, loop_matches=diff < LOOP_TOLERANCE,
                             example_position=min(row, positions - 1), example_column=min(column, d_model - 1))


# ---------------------------------------------------------------- formulas, with sympy

_pos = sp.Symbol("pos", integer=True, nonnegative=True)
_i = sp.Symbol("i", integer=True, nonnegative=True)
_d = sp.Symbol(r"d_{\mathrm{model}}", integer=True, positive=True)
_PE = sp.Function(r"\mathrm{PE}")


def _angle(pos, i, d):
    """pos / 10000^{2i/d}, kept unevaluated so that it prints as written."""
    power = sp.Pow(sp.Integer(int(BASE)), sp.Mul(2, i, sp.Pow(d, -1), evaluate=False), evaluate=False)
    return sp.Mul(pos, sp.Pow(power, -1, evaluate=False), evaluate=False)


@lru_cache(maxsize=None)
def sinusoidal_latex() -> tuple[str, str]:
    """The two rows of the sinusoidal encoding's definition, as LaTeX (Vaswani et al. §3.5)."""
    even = sp.Eq(_PE(_pos, 2 * _i), sp.sin(_angle(_pos, _i, _d)), evaluate=False)
    odd = sp.Eq(_PE(_pos, 2 * _i + 1), sp.cos(_angle(_pos, _i, _d)), evaluate=False)
    return sp.latex(even), sp.latex(odd)


def sinusoidal_entry_latex(pos: int, column: int, d_model: int) -> tuple[str, float]:
    """One entry PE(pos, column) with its numbers substituted, evaluated by sympy.

    Returns:
        (LaTeX, the value as a float); the page compares the value with the torch table.

    Raises:
        InputError: pos or column out of range (pos < 0, column outside 0..d_model − 1).
    """
    if pos < 0 or not 0 <= column < d_model:
        raise InputError(N_("PE({pos}, {column}) is outside the table ({d_model} columns)."), field="positional_encoding.positions",
                         pos=pos, column=column, d_model=d_model)
    i = column // 2
    func = sp.sin if column % 2 == 0 else sp.cos
    exact_angle = sp.Integer(pos) / sp.Integer(int(BASE)) ** sp.Rational(2 * i, d_model)
    value = float(func(exact_angle).evalf(15))
    exponent = sp.Symbol(r"\frac{%d}{%d}" % (2 * i, d_model))  # 2i / d_model as written, not reduced
    written = sp.Mul(sp.Integer(pos), sp.Pow(sp.Pow(sp.Integer(int(BASE)), exponent, evaluate=False), -1,
                                             evaluate=False), evaluate=False)
    parts = [
        sp.latex(_PE(sp.Integer(pos), sp.Integer(column))),
        sp.latex(func(written, evaluate=False)),
        sp.latex(func(sp.UnevaluatedExpr(sp.Float(float(exact_angle), 4)), evaluate=False)),
        sp.latex(sp.Float(value, 4)),
    ]
    return " = ".join(parts), value


@lru_cache(maxsize=None)
def equivariance_steps() -> tuple[str, ...]:
    r"""Why SA(P X) = P SA(X), one line per stage, as LaTeX built from non-commutative sympy symbols.

    P is a permutation matrix (Pᵀ P = I); the row softmax commutes with permuting rows
    and columns: softmax(P S Pᵀ) = P softmax(S) Pᵀ.
    """
    nc = {name: sp.Symbol(name, commutative=False) for name in ("P", "X", "W_q", "W_k", "W_v", "Q", "K", "V", "S")}
    P, X, Q, K, V, S = (nc[n] for n in ("P", "X", "Q", "K", "V", "S"))
    Pt, Kt = sp.Symbol(r"P^{\top}", commutative=False), sp.Symbol(r"K^{\top}", commutative=False)
    softmax, sa = sp.Function(r"\operatorname{softmax}"), sp.Function(r"\operatorname{SA}")
    d_k = sp.Symbol("d_k", positive=True)
    pe = sp.Symbol(r"\mathrm{PE}", commutative=False)
    lines = [
        sp.Eq(sp.Mul(sp.Mul(P, X), nc["W_q"]), sp.Mul(P, Q), evaluate=False),
        sp.Eq(sp.Mul(sp.Mul(P, Q), sp.Mul(K, Pt, evaluate=False).subs(K, Kt), evaluate=False), sp.Mul(P, S, Pt), evaluate=False),
        sp.Eq(softmax(sp.Mul(P, S, Pt) / sp.sqrt(d_k)), sp.Mul(P, softmax(S / sp.sqrt(d_k)), Pt), evaluate=False),
        sp.Eq(sp.Mul(P, softmax(S / sp.sqrt(d_k)), Pt, P, V, evaluate=False), sp.Mul(P, softmax(S / sp.sqrt(d_k)), V), evaluate=False),
        sp.Eq(sa(sp.Mul(P, X)), sp.Mul(P, sa(X)), evaluate=False),
        sp.Ne(sa(sp.Add(sp.Mul(P, X), pe, evaluate=False)), sp.Mul(P, sa(sp.Add(X, pe, evaluate=False)))),
    ]
    return tuple(sp.latex(line, order="none") for line in lines)


# ---------------------------------------------------------------- the page

@dataclass(frozen=True)
class PositionalEncodingSettings:
    """The positional encoding page's own settings (``settings.positional_encoding``).

    Attributes:
        kind: the positional encoding added (one of PE_ENCODINGS).
        shuffle: how the tokens are shuffled (one of PE_SHUFFLES).
        positions, width: the size of the encoding's pattern heatmap (MIN_PE_POSITIONS..MAX_PE_POSITIONS × MIN_PE_WIDTH..MAX_PE_WIDTH).
    """

    kind: str = "sinusoidal"
    shuffle: str = "reverse"
    positions: int = 48
    width: int = 64


POSITIONAL_ENCODING = Page(
    key="positional_encoding", title=N_("Positional encoding"), icon=":material/format_list_numbered:",
    section="experiments", summary=N_("Positional encoding: why attention needs to know the order"),
    settings=PositionalEncodingSettings,
    fields=(
        Choice("kind", PE_ENCODINGS, N_("Unknown positional encoding “{raw}”; using “{value}”.")),
        Choice("shuffle", PE_SHUFFLES, N_("Unknown shuffle “{raw}”; using “{value}”.")),
        IntRange("positions", MIN_PE_POSITIONS, MAX_PE_POSITIONS, label(N_("The number of positions"))),
        IntRange("width", MIN_PE_WIDTH, MAX_PE_WIDTH, label(N_("d_model of the pattern"))),
    ),
    legacy={"pe_kind": "kind", "pe_shuffle": "shuffle", "pe_positions": "positions", "pe_width": "width"},
)
