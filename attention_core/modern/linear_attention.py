r"""Linear attention and the delta rule: attention without the softmax, as a recurrence over a state of fixed size.

Softmax attention compares the new query with every key so far: its cost per token, and its KV cache, grow with the
context t. Replace e^{q · k} by a kernel φ(q) · φ(k) and the sum over the past factors: φ(q_t)ᵀ Σ_{j≤t} φ(k_j) v_jᵀ, so
one (d × d_v) state S_t = S_{t−1} + φ(k_t) v_tᵀ (and one d-vector z_t for the normaliser) carries everything the
next token needs. The delta rule writes into that state only what it does not already predict:
S_t = S_{t−1} + β_t k_t (v_t − S_{t−1}ᵀ k_t)ᵀ, and the gated delta rule first decays it by α_t.

* :func:`feature_map`: φ(x) = elu(x) + 1 (Katharopoulos et al. 2020, sec. 3.2: positive, so the weights are).
* :func:`linear_attention`: the parallel (causal) form, with the T × T weights φ(q_i)·φ(k_j) / Σ_{l≤i} φ(q_i)·φ(k_l).
* :func:`recurrent_linear_attention`: the same output as a recurrence over S_t and z_t (the paper's title: a causal
  Transformer with linear attention is an RNN): every S_t and z_t kept.
* :func:`gated_delta_rule`: the delta rule (DeltaNet; Schlag et al. 2021, Yang et al. 2024) and its gated form (Gated
  DeltaNet, Yang, Kautz & Hatamizadeh 2025; the linear-attention layers of Qwen3-Next and Kimi Linear), every state,
  prediction and error kept. α = 1 is the delta rule.
* :func:`loop_linear_attention`, :func:`loop_gated_delta_rule`: the same with Python floats, entry by entry: the naive
  reference the page and the tests compare with.
* :func:`memory_numbers`: the numbers a token's next step needs: the KV cache t (d_k + d_v) against the state.
* :func:`transformers_gated_delta_rule`: transformers' Qwen3-Next kernels (recurrent and chunked), called as that model
  calls them: the reference the page checks against; :func:`check_gates`: β in [0, 1], α in (0, 1], or InputError.

Conventions, those of transformers' ``torch_recurrent_gated_delta_rule`` (``models/qwen3_next``), so that its output
is ours: the state S is (d_k, d_v) and o_t = S_tᵀ q_t; with ``use_qk_l2norm_in_kernel`` (as Qwen3-Next calls it) q and
k are divided by sqrt(Σ x² + 1e-6) (:func:`l2_normalise`), then q by √d_k; the decay is applied before the prediction
(S ← α_t S, then Sᵀ k_t); its ``g`` is log α_t and its ``beta`` is β_t. The papers write S as (d_v, d_k) and
S_t = S_{t−1}(α_t(I − β_t k_t k_tᵀ)) + β_t v_t k_tᵀ: the transpose of the same state.

Shape legend: T tokens, d = d_k (width of q and k), d_v (width of v); S (d, d_v), z (d,). Float32 throughout.

Sources: Katharopoulos, Vyas, Pappas & Fleuret 2020, "Transformers are RNNs" (ICML), sec. 3.2 (eq. 7, φ) and
sec. 3.3 (causal masking: S_i = Σ_{j≤i} φ(K_j) V_jᵀ, Z_i = Σ_{j≤i} φ(K_j)); Schlag, Irie & Schmidhuber 2021 (the delta
rule in fast weights); Yang, Wang, Zhang, Shen & Kim 2024 (DeltaNet, parallelised over the sequence); Yang, Kautz &
Hatamizadeh 2025 (Gated DeltaNet, ICLR 2025).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

from attention_core.errors import N_, InputError

#: The ε transformers' ``l2norm`` (and the FLA library) adds inside the square root.
L2_EPS = 1e-6
#: One head of Qwen3-Next's linear-attention layers: d_k = d_v = 128 (its config's linear_key_head_dim and
#: linear_value_head_dim), and the contexts the memory stage compares at that size.
MODEL_HEAD_DIM = 128
MODEL_CONTEXTS = (1_000, 10_000, 100_000, 1_000_000)


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1, elementwise: x + 1 for x > 0, e^x for x ≤ 0; > 0 (Katharopoulos et al. 2020, eq. 7), but in
    float32 elu(x) + 1 = (e^x − 1) + 1 rounds to 0 below about x = −17, as in every implementation that writes it so."""
    return F.elu(x) + 1.0


def l2_normalise(x: torch.Tensor, eps: float = L2_EPS) -> torch.Tensor:
    """Each row divided by sqrt(Σ x² + eps), as transformers' ``l2norm`` (``x * rsqrt(sum(x * x) + eps)``)."""
    return x * torch.rsqrt((x * x).sum(dim=-1, keepdim=True) + eps)


# ---------------------------------------------------------------- linear attention: parallel and recurrent


@dataclass(frozen=True)
class LinearTrace:
    """Causal linear attention in its parallel form.

    Attributes:
        phi_query, phi_key: (T, d) φ(Q), φ(K). value: (T, d_v).
        kernel: (T, T) φ(q_i) · φ(k_j) for j ≤ i, 0 above the diagonal (the future is multiplied by 0, not −∞).
        normaliser: (T,) Σ_{l≤i} φ(q_i) · φ(k_l) = φ(q_i)ᵀ z_i, > 0.
        weights: (T, T) kernel / normaliser: each row sums to 1, like softmax's. output: (T, d_v) weights V.
    """

    phi_query: torch.Tensor
    phi_key: torch.Tensor
    value: torch.Tensor
    kernel: torch.Tensor
    normaliser: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor


def _check_normaliser(normaliser: torch.Tensor) -> None:
    """Raise :class:`InputError` (field ``x``) where φ(q_i)ᵀ z_i underflowed to 0 in float32 (q far below 0)."""
    zero = (normaliser <= 0).nonzero()
    if zero.numel():
        raise InputError(N_("For token {i} every φ(q) · φ(k) is 0 in float32 (elu(x) + 1 rounds to 0 below about −17), "
                            "so linear attention would divide 0 by 0: make the entries of X smaller."), field="x",
                         i=int(zero[0, 0]) + 1)


def linear_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> LinearTrace:
    """Causal linear attention, all tokens at once: O = (φ(Q) φ(K)ᵀ ⊙ M) V, each row divided by its sum.

    Args:
        query, key: (T, d). value: (T, d_v).

    Raises:
        InputError: a row's normaliser is 0 in float32 (a query far below 0; field ``x``).
    """
    phi_q, phi_k = feature_map(query), feature_map(key)  # (T, d) each, > 0
    t = query.shape[0]
    causal = torch.ones(t, t, dtype=torch.bool).tril()  # (T, T): key j ≤ query i
    kernel = (phi_q @ phi_k.T) * causal  # (T, T)
    normaliser = kernel.sum(dim=-1)  # (T,)
    _check_normaliser(normaliser)
    weights = kernel / normaliser[:, None]
    return LinearTrace(phi_q, phi_k, value, kernel, normaliser, weights, weights @ value)


@dataclass(frozen=True)
class RecurrentTrace:
    """Causal linear attention as a recurrence (an RNN over the state).

    Attributes:
        states: (T, d, d_v) S_t = S_{t−1} + φ(k_t) v_tᵀ after token t (S_{−1} = 0).
        sums: (T, d) z_t = z_{t−1} + φ(k_t).
        numerators: (T, d_v) S_tᵀ φ(q_t). denominators: (T,) z_tᵀ φ(q_t).
        output: (T, d_v) numerators / denominators.
    """

    states: torch.Tensor
    sums: torch.Tensor
    numerators: torch.Tensor
    denominators: torch.Tensor
    output: torch.Tensor


def recurrent_linear_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor) -> RecurrentTrace:
    """The same causal linear attention one token at a time, keeping only S (d × d_v) and z (d) between tokens.

    Args:
        query, key: (T, d). value: (T, d_v).

    Raises:
        InputError: a token's z_tᵀ φ(q_t) is 0 in float32 (field ``x``).
    """
    phi_q, phi_k = feature_map(query), feature_map(key)  # (T, d)
    state = torch.zeros(key.shape[-1], value.shape[-1])  # (d, d_v)
    z = torch.zeros(key.shape[-1])  # (d,)
    states, sums = [], []
    for t in range(query.shape[0]):  # one step per token: the work per token does not grow with t
        state = state + torch.outer(phi_k[t], value[t])  # (d, d_v)
        z = z + phi_k[t]
        states.append(state)
        sums.append(z)
    states_, sums_ = torch.stack(states), torch.stack(sums)  # (T, d, d_v), (T, d)
    numerators = torch.einsum("td,tdv->tv", phi_q, states_)  # (T, d_v): S_tᵀ φ(q_t)
    denominators = (phi_q * sums_).sum(dim=-1)  # (T,): z_tᵀ φ(q_t)
    _check_normaliser(denominators)
    return RecurrentTrace(states_, sums_, numerators, denominators, numerators / denominators[:, None])


# ---------------------------------------------------------------- the delta rule and the gated delta rule


@dataclass(frozen=True)
class DeltaTrace:
    """The (gated) delta rule, every step kept.

    Attributes:
        raw_key: (T, d) k before normalising. query: (T, d) q̂ = q / ‖q‖ / √d. key: (T, d) k̂ = k / ‖k‖.
        value: (T, d_v). beta: (T,) β_t in [0, 1]. alpha: (T,) α_t in (0, 1] (1: the ungated delta rule).
        previous: (T, d, d_v) S_{t−1} (zeros before the first token). decayed: (T, d, d_v) α_t S_{t−1}.
        predictions: (T, d_v) (α_t S_{t−1})ᵀ k̂_t, what the state recalls for k̂_t.
        errors: (T, d_v) v_t − prediction. updates: (T, d, d_v) β_t k̂_t errorᵀ.
        states: (T, d, d_v) S_t = α_t S_{t−1} + β_t k̂_t errorᵀ. output: (T, d_v) S_tᵀ q̂_t.
    """

    raw_key: torch.Tensor
    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    beta: torch.Tensor
    alpha: torch.Tensor
    previous: torch.Tensor
    decayed: torch.Tensor
    predictions: torch.Tensor
    errors: torch.Tensor
    updates: torch.Tensor
    states: torch.Tensor
    output: torch.Tensor


def gated_delta_rule(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, beta: torch.Tensor,
                     alpha: torch.Tensor) -> DeltaTrace:
    """The gated delta rule, one token at a time (Yang, Kautz & Hatamizadeh 2025; α = 1: DeltaNet's delta rule).

    Per token t: S ← α_t S; prediction = Sᵀ k̂_t; error = v_t − prediction; S ← S + β_t k̂_t errorᵀ; o_t = Sᵀ q̂_t.
    Queries and keys are L2-normalised and queries scaled by 1/√d first, as transformers'
    ``torch_recurrent_gated_delta_rule(..., use_qk_l2norm_in_kernel=True)`` does.

    Args:
        query, key: (T, d). value: (T, d_v). beta: (T,) in [0, 1]. alpha: (T,) in (0, 1].
    """
    q = l2_normalise(query) / math.sqrt(query.shape[-1])  # (T, d)
    k = l2_normalise(key)  # (T, d)
    state = torch.zeros(key.shape[-1], value.shape[-1])  # (d, d_v)
    kept: dict[str, list[torch.Tensor]] = {n: [] for n in ("previous", "decayed", "predictions", "errors", "updates",
                                                            "states", "output")}
    for t in range(query.shape[0]):
        decayed = alpha[t] * state  # (d, d_v)
        prediction = decayed.T @ k[t]  # (d_v,): what the state recalls for this key
        error = value[t] - prediction  # (d_v,)
        update = beta[t] * torch.outer(k[t], error)  # (d, d_v)
        for name, x in (("previous", state), ("decayed", decayed), ("predictions", prediction), ("errors", error),
                        ("updates", update)):
            kept[name].append(x)
        state = decayed + update
        kept["states"].append(state)
        kept["output"].append(state.T @ q[t])  # (d_v,)
    stacked = {name: torch.stack(xs) for name, xs in kept.items()}
    return DeltaTrace(raw_key=key, query=q, key=k, value=value, beta=beta, alpha=alpha, **stacked)


# ---------------------------------------------------------------- the naive references: Python floats, entry by entry


def loop_linear_attention(query: Sequence[Sequence[float]], key: Sequence[Sequence[float]],
                          value: Sequence[Sequence[float]]) -> list[list[float]]:
    """Causal linear attention with ``math.exp`` and Python floats, one output entry at a time (the naive reference)."""
    def phi(x: float) -> float:
        return x + 1.0 if x > 0 else math.exp(x)

    out = []
    for i, q in enumerate(query):
        scores = [math.fsum(phi(a) * phi(b) for a, b in zip(q, key[j])) for j in range(i + 1)]
        total = math.fsum(scores)
        out.append([math.fsum(s * value[j][c] for j, s in enumerate(scores)) / total for c in range(len(value[0]))])
    return out


def loop_gated_delta_rule(query: Sequence[Sequence[float]], key: Sequence[Sequence[float]],
                          value: Sequence[Sequence[float]], beta: Sequence[float],
                          alpha: Sequence[float]) -> tuple[list[list[float]], list[list[float]]]:
    """The gated delta rule with Python floats, entry by entry: (outputs (T, d_v), the last state (d, d_v))."""
    d, d_v = len(key[0]), len(value[0])

    def unit(x: Sequence[float]) -> list[float]:
        norm = math.sqrt(math.fsum(a * a for a in x) + L2_EPS)
        return [a / norm for a in x]

    s = [[0.0] * d_v for _ in range(d)]
    out = []
    for t in range(len(query)):
        q = [a / math.sqrt(d) for a in unit(query[t])]
        k = unit(key[t])
        s = [[alpha[t] * s[a][c] for c in range(d_v)] for a in range(d)]
        error = [value[t][c] - math.fsum(s[a][c] * k[a] for a in range(d)) for c in range(d_v)]
        s = [[s[a][c] + beta[t] * k[a] * error[c] for c in range(d_v)] for a in range(d)]
        out.append([math.fsum(s[a][c] * q[a] for a in range(d)) for c in range(d_v)])
    return out, s


# ---------------------------------------------------------------- memory: the KV cache against the state


def memory_numbers(contexts: Sequence[int], d_k: int, d_v: int) -> torch.Tensor:
    """(len(contexts), 3): the numbers kept per head after t tokens: the KV cache t (d_k + d_v) (softmax attention),
    linear attention's S and z, d_k d_v + d_k, and the delta rule's S, d_k d_v (float32; every such product is exact)."""
    t = torch.tensor([float(c) for c in contexts])
    return torch.stack([t * (d_k + d_v), torch.full_like(t, d_k * d_v + d_k), torch.full_like(t, d_k * d_v)], dim=1)


def _heads(x: torch.Tensor) -> torch.Tensor:
    """(T, d) -> (batch 1, T, heads 1, d): transformers' layout for the gated delta rule's kernels."""
    return x[None, :, None, :]


def transformers_gated_delta_rule(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, beta: torch.Tensor,
                                  alpha: torch.Tensor, chunked: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Outputs (T, d_v) and the last state (d, d_v) of transformers' Qwen3-Next kernel (``chunked``: the chunked one,
    with its default chunk of 64, as ``Qwen3NextGatedDeltaNet.forward`` calls it; it pads the sequence itself), called as
    that layer calls it: q, k, v (batch, seq, heads, dim), g = log α and β (batch, seq, heads),
    ``use_qk_l2norm_in_kernel=True``. Imported here, on first use."""
    from transformers.models.qwen3_next.modeling_qwen3_next import (
        torch_chunk_gated_delta_rule,
        torch_recurrent_gated_delta_rule,
    )

    kernel = torch_chunk_gated_delta_rule if chunked else torch_recurrent_gated_delta_rule
    with torch.no_grad():
        output, state = kernel(_heads(query), _heads(key), _heads(value), g=alpha.log()[None, :, None],
                               beta=beta[None, :, None], output_final_state=True, use_qk_l2norm_in_kernel=True)
    return output[0, :, 0], state[0, 0]


def check_gates(beta: float, alpha: float) -> None:
    """Raise :class:`InputError` for β outside [0, 1] or α outside (0, 1] (validation keeps them in; this guards
    direct calls)."""
    if not 0.0 <= beta <= 1.0:
        raise InputError(N_("β must be between 0 and 1; got {beta:g}."), field="linear_attention.beta", beta=beta)
    if not 0.0 < alpha <= 1.0:
        raise InputError(N_("The decay α must be above 0 and at most 1 (α = 0 would erase the state at every step); "
                            "got {alpha:g}."), field="linear_attention.alpha", alpha=alpha)
