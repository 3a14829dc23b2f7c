r"""Attention masks: causal, key padding, and their combination.

Shape legend: ``...`` any batch dims, b batch, m queries, n keys, T tokens.

Convention (the one of ``torch.nn.functional.scaled_dot_product_attention``
and of :func:`functional.scaled_dot_product_attention`): a mask is a bool
tensor broadcastable to the scores (..., m, n) and ``True`` means "query i
may attend to key j". Blocked scores become -inf before the softmax, so their
weights are exactly 0:

.. math::
    \operatorname{CausalAttention}(Q, K, V)
      = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V,
    \qquad M_{ij} = \begin{cases} 0 & j \le i \\ -\infty & j > i \end{cases}

Careful, two other conventions exist:

* the seed classes' buffer ``torch.triu(ones, diagonal=1)`` marks the
  *blocked* (future) entries with 1, so ``~buffer.bool()`` is our mask;
* ``torch.nn.MultiheadAttention``'s bool ``attn_mask`` and ``key_padding_mask``
  also mean True = NOT allowed.

Sources: Vaswani et al. 2017, "Attention Is All You Need", sec. 3.2.3
(masking illegal connections to -inf in the decoder); seed 001
(001_9275b51964da46b3.txt) for the formula with M and ``CausalAttention``'s
``masked_fill_``; seed 004 (004_56c592a3d25bc184.txt) for the causal mask and
dropout (after rasbt/LLMs-from-scratch ch03, which also shows the alternative
route of :func:`mask_after_softmax`).

Seed 004 writes the additive mask as ``torch.triu(torch.ones(n, n), diagonal=1)
* float('-inf')``; that gives NaN (0 · -inf) on and below the diagonal.
:func:`additive_mask` builds it with ``masked_fill`` instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence, Union

import torch

from attention_core.errors import N_, InputError


def _check_count(value, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(N_("{name} must be a whole number, got {value}."), field=name, name=name, value=repr(value))
    if value < minimum:
        raise InputError(N_("{name} must be at least {minimum}, got {value}."), field=name, name=name,
                         minimum=minimum, value=value)
    return value


def causal_mask(n: int, m: Optional[int] = None) -> torch.Tensor:
    """The causal (look-ahead) mask: query i may attend to keys j <= i.

    Equals ``torch.ones(m, n, dtype=torch.bool).tril()``, the mask that
    ``scaled_dot_product_attention(..., is_causal=True)`` uses. With m != n
    it is aligned at the top left (query 0 sees key 0 only), like torch's
    ``is_causal``.

    Args:
        n: the number of keys (tokens that can be looked at), at least 1.
        m: the number of queries; defaults to n (self-attention).

    Returns:
        bool (m, n), True on and below the diagonal (True = may attend).

    Raises:
        InputError: if n or m is not a whole number >= 1.
    """
    n = _check_count(n, "n")
    m = n if m is None else _check_count(m, "m")
    return torch.ones(m, n, dtype=torch.bool).tril()


def key_padding_mask(
    lengths_or_pad: Union[Sequence[int], torch.Tensor], n: Optional[int] = None
) -> torch.Tensor:
    """Block the padding keys of each sequence in a batch.

    Sentences of different lengths are padded to the same n tokens; no query
    should attend to the padding.

    Args:
        lengths_or_pad: either the real lengths, b whole numbers in [0, n]
            (a list or a 1-d integer tensor), or a bool tensor (b, n) of pad
            flags where True = this key is padding (torch's
            ``key_padding_mask`` convention).
        n: the padded length; with lengths it defaults to ``max(lengths)``,
            with pad flags it must be None or equal their width.

    Returns:
        bool (b, 1, n), True = may attend (a real token). It broadcasts over
        the queries of (b, m, n) scores; combine it with a causal mask with
        :func:`combine_masks`. (:func:`multi_head.multi_head_attention` adds the
        head dim itself.)

    Raises:
        InputError: for no sequences, lengths that are not whole numbers in
            [0, n], or pad flags that are not a 2-d bool tensor of width n.
    """
    if isinstance(lengths_or_pad, torch.Tensor) and lengths_or_pad.dtype == torch.bool:
        pad = lengths_or_pad
        if pad.dim() != 2 or pad.shape[0] == 0 or pad.shape[1] == 0:
            raise InputError(
                N_("Pad flags must be a (batch, n) table with at least one entry; got shape {shape}."),
                field="padding", shape=tuple(pad.shape),
            )
        if n is not None and n != pad.shape[1]:
            raise InputError(
                N_("The pad flags cover {keys} keys but n = {n}."), field="padding", keys=pad.shape[1], n=n
            )
        return (~pad).unsqueeze(-2)  # (b, n) -> (b, 1, n)

    if isinstance(lengths_or_pad, torch.Tensor):
        if lengths_or_pad.dim() != 1 or lengths_or_pad.dtype.is_floating_point or lengths_or_pad.is_complex():
            raise InputError(
                N_("Lengths must be a list of whole numbers (one per sequence)."), field="lengths"
            )
        lengths = [int(v) for v in lengths_or_pad.tolist()]
    else:
        try:
            lengths = list(lengths_or_pad)
        except TypeError:
            raise InputError(
                N_("Give the lengths as a list of whole numbers, or the pad flags as a bool tensor."),
                field="lengths",
            ) from None
        for length in lengths:
            if isinstance(length, bool) or not isinstance(length, int):
                raise InputError(
                    N_("Each length must be a whole number, got {length}."), field="lengths", length=repr(length)
                )
    if not lengths:
        raise InputError(N_("Give at least one sequence length."), field="lengths")
    if n is None:
        n = max(lengths)
    n = _check_count(n, "n")
    for length in lengths:
        if not 0 <= length <= n:
            raise InputError(
                N_("A sequence length must be between 0 and n = {n}, got {length}."), field="lengths", n=n,
                length=length
            )
    positions = torch.arange(n)  # (n,)
    allowed = positions < torch.tensor(lengths).unsqueeze(-1)  # (b, 1) vs (n,) -> (b, n)
    return allowed.unsqueeze(-2)  # (b, n) -> (b, 1, n)


def combine_masks(*masks: Optional[torch.Tensor]) -> Optional[torch.Tensor]:
    """Allow an entry only where every mask allows it (logical and, broadcast).

    ``combine_masks(causal_mask(T), key_padding_mask(lengths, T))`` is the
    decoder mask of a padded batch, (b, T, T).

    Args:
        masks: bool masks (True = may attend), broadcastable to each other;
            ``None`` entries (no mask) are skipped.

    Returns:
        The bool mask of the broadcast shape, or None if no mask was given.

    Raises:
        InputError: if a mask is not boolean or the shapes do not broadcast.
    """
    given = [mask for mask in masks if mask is not None]
    for mask in given:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise InputError(N_("Masks must be bool tensors (True = may attend)."), field="attn_mask")
    if not given:
        return None
    try:
        shape = torch.broadcast_shapes(*(mask.shape for mask in given))
    except RuntimeError:
        shapes = ", ".join(str(tuple(mask.shape)) for mask in given)
        raise InputError(N_("These masks do not fit together: shapes {shapes}."), field="attn_mask",
                         shapes=shapes) from None
    combined = torch.ones(shape, dtype=torch.bool)
    for mask in given:
        combined = combined & mask
    return combined


def additive_mask(mask: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The additive form M of a bool mask: 0 where allowed, -inf where blocked.

    ``softmax(A + M)`` equals ``softmax(A.masked_fill(~mask, -inf))`` (seed 001's
    S' = S + M). Built with ``masked_fill``, because seed 004's
    ``triu(ones) * float('-inf')`` turns the allowed entries into 0 · -inf = NaN.

    Args:
        mask: bool (..., m, n), True = may attend.
        dtype: the floating dtype of M.

    Returns:
        M, (..., m, n), of ``dtype``.

    Raises:
        InputError: if mask is not boolean.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise InputError(N_("The mask must be a bool tensor (True = may attend)."), field="attn_mask")
    return torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, float("-inf"))


@dataclass(frozen=True)
class MaskAfterSoftmaxTrace:
    """The "softmax first, then zero the blocked weights and renormalise" route.

    Attributes:
        scaled_scores: the input A = Q Kᵀ / √d_k, (..., m, n).
        attn_mask: bool (..., m, n), True = may attend (broadcast to the scores).
        unmasked_weights: softmax(A) over all n keys, (..., m, n).
        zeroed_weights: unmasked_weights with blocked entries set to 0.
        row_sums: zeroed_weights summed over the keys, (..., m, 1).
        weights: zeroed_weights / row_sums, (..., m, n); rows sum to 1, except
            rows in ``blocked_rows`` or ``underflow_rows``, which are all 0.
        blocked_rows: bool (..., m), True where the mask blocks every key.
        underflow_rows: bool (..., m), True where some key is allowed but all
            its softmax weights rounded to 0 (so the renormalisation is 0/0):
            the numerical weakness of this route that the -inf route avoids.
    """

    scaled_scores: torch.Tensor
    attn_mask: torch.Tensor
    unmasked_weights: torch.Tensor
    zeroed_weights: torch.Tensor
    row_sums: torch.Tensor
    weights: torch.Tensor
    blocked_rows: torch.Tensor
    underflow_rows: torch.Tensor


def mask_after_softmax(scaled_scores: torch.Tensor, attn_mask: torch.Tensor) -> MaskAfterSoftmaxTrace:
    r"""Mask after the softmax: zero the blocked weights, divide by the row sums.

    The first route rasbt/LLMs-from-scratch ch03 shows before the -inf trick
    (``attn_weights * mask_simple`` then ``/ row_sums``). It gives the same
    weights as masking the scores with -inf before the softmax, because the
    softmax's denominator cancels:

    .. math::
        \frac{e^{a_{ij}} / \sum_{l} e^{a_{il}}}{\sum_{l \text{ allowed}} e^{a_{il}} / \sum_{l} e^{a_{il}}}
        = \frac{e^{a_{ij}}}{\sum_{l \text{ allowed}} e^{a_{il}}}

    The future keys still take part in the first softmax, which is wasted work
    and can underflow (see ``underflow_rows``); hence the -inf route in practice.

    Args:
        scaled_scores: A, (..., m, n), floating point.
        attn_mask: bool, broadcastable to (..., m, n), True = may attend
            (e.g. :func:`causal_mask`).

    Returns:
        The :class:`MaskAfterSoftmaxTrace`.

    Raises:
        InputError: if the mask is not boolean or does not fit the scores.
    """
    if not isinstance(attn_mask, torch.Tensor) or attn_mask.dtype != torch.bool:
        raise InputError(N_("attn_mask must be a bool tensor (True = may attend)."), field="attn_mask")
    try:
        attn_mask = attn_mask.expand_as(scaled_scores)
    except RuntimeError:
        raise InputError(
            N_("A mask of shape {mask_shape} does not fit scores of shape {scores_shape}."),
            field="attn_mask", mask_shape=tuple(attn_mask.shape), scores_shape=tuple(scaled_scores.shape),
        ) from None
    unmasked_weights = torch.softmax(scaled_scores, dim=-1)  # over all n keys
    zeroed_weights = unmasked_weights.masked_fill(~attn_mask, 0.0)
    row_sums = zeroed_weights.sum(dim=-1, keepdim=True)  # (..., m, 1)
    blocked_rows = ~attn_mask.any(dim=-1)  # (..., m)
    underflow_rows = (row_sums.squeeze(-1) == 0) & ~blocked_rows
    empty = (row_sums == 0)  # (..., m, 1): 0/0 rows, shown as 0 and flagged
    weights = (zeroed_weights / row_sums.masked_fill(empty, 1.0)).masked_fill(empty, 0.0)
    return MaskAfterSoftmaxTrace(
        scaled_scores=scaled_scores, attn_mask=attn_mask, unmasked_weights=unmasked_weights,
        zeroed_weights=zeroed_weights, row_sums=row_sums, weights=weights,
        blocked_rows=blocked_rows, underflow_rows=underflow_rows,
    )
