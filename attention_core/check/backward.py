r"""Check items on the backward pass of attention: dV = Pᵀ dO and dS = P ⊙ (dP − rowsum(P ⊙ dP)) (Dao et al. 2022,
appendix B.2), the ÷ √d_k on the way back, and one step of gradient descent, W − η dW (Goodfellow et al. 2016,
sec. 4.3).

The numbers go through the backward page's own ``attention_backward`` and its exercises (``head_exercise``), so an
item is graded with the page's named mistakes: ``p_not_transposed`` (P dO: row i of P, not column i),
``softmax_diagonal_only`` (P(1 − P) dP: the Jacobian's diagonal alone), ``gradient_no_scale`` and ``update_sign``.
Shapes: n = 2 tokens; P (2, 2) of rows that add up to 1; dO (2, 2) or (2, 1); V (2, 1).
"""

from __future__ import annotations

import torch

from attention_core.backward.formulas import HeadView, head_exercise
from attention_core.backward.gradients import attention_backward
from attention_core.check.items import (
    PROCEDURAL,
    WRONG,
    Item,
    conceptual,
    generator,
    halves,
    pick,
    sum_of_products,
    worked,
)
from attention_core.errors import N_, Message
from attention_core.latex import number

CONCEPT = "backward"
SOURCE = "Dao et al. 2022, appendix B.2"
#: Rows of weights a student multiplies by hand (each adds up to 1).
ROWS = ((0.25, 0.75), (0.5, 0.5), (0.75, 0.25), (0.2, 0.8), (0.8, 0.2), (0.6, 0.4), (0.4, 0.6))


def _view(weights: torch.Tensor, d_output: torch.Tensor, value: torch.Tensor) -> HeadView:
    """One head's backward pass from its weights P, dO and V, by the backward page's ``attention_backward`` (Q and K
    do not enter dV, dP or dS: zeros)."""
    n, d_v = d_output.shape
    zeros = torch.zeros(n, 1)
    grads = attention_backward(zeros, zeros, value, weights, d_output, scale=1.0)
    return HeadView(zeros, zeros, value, weights, weights @ value, d_output, grads.d_value, grads.d_weights,
                    grads.row_dot, grads.d_scores, grads.d_query, grads.d_key, scale=1.0, mask=None)


def _weights(gen: torch.Generator) -> torch.Tensor:
    return torch.tensor([pick(gen, ROWS), pick(gen, ROWS)], dtype=torch.float32)


def d_value(seed: int) -> Item:
    """dV_{i,j} = Σ_l P_{l,i} dO_{l,j} (mistake: row i of P instead of its column, P dO)."""
    gen = generator(seed)
    while True:
        weights, d_output = _weights(gen), halves(gen, 2, 2, nonzero=True)
        row, col = (int(v) for v in torch.randint(2, (2,), generator=gen))
        view = _view(weights, d_output, halves(gen, 2, 2))
        answer = float(view.d_value[row, col])
        exercise = head_exercise(view, "d_value", row, col, answer)
        if exercise.mistakes:  # P dO differs from Pᵀ dO at this entry: the mistake can be named
            break
    i, j = row + 1, col + 1
    pairs = list(zip(weights[:, row].tolist(), d_output[:, col].tolist()))
    return Item(f"{CONCEPT}.d_value", CONCEPT, PROCEDURAL,
                Message(N_("The weights P of two queries over two keys and the gradient dO of the output are below "
                           "(O = P V). Give dV at row {i}, column {j}."), i=i, j=j), exercise,
                solution=worked(f"dV_{{{i},{j}}}", sum_of_products(pairs), number(answer)),
                explanation=Message(N_("dV = Pᵀ dO: value i was used by every query, weighted by the weight each "
                                       "query put on key i, so its gradient sums over the column i of P.")),
                source=SOURCE, drawn={"weights": weights.tolist(), "d_output": d_output.tolist(), "row": row,
                                      "col": col})


def d_scores(seed: int) -> Item:
    """dS_{i,j} = P_{i,j} (dP_{i,j} − Σ_k P_{i,k} dP_{i,k}) (mistake: the Jacobian's diagonal alone, P(1 − P) dP)."""
    gen = generator(seed)
    while True:
        weights = _weights(gen)
        d_output, value = halves(gen, 2, 1, nonzero=True), halves(gen, 2, 1, nonzero=True)
        row, col = (int(v) for v in torch.randint(2, (2,), generator=gen))
        view = _view(weights, d_output, value)
        answer = float(view.d_scores[row, col])
        exercise = head_exercise(view, "d_scores", row, col, answer)
        if exercise.mistakes and abs(answer) >= 0.01:
            break
    i, j = row + 1, col + 1
    p_row, dp_row = weights[row].tolist(), view.d_weights[row].tolist()
    solution = worked(f"dS_{{{i},{j}}}",
                      rf"{number(p_row[col])} \left({number(dp_row[col])} - ({sum_of_products(zip(p_row, dp_row))})"
                      r"\right)", number(answer))
    return Item(f"{CONCEPT}.d_scores", CONCEPT, PROCEDURAL,
                Message(N_("Row {i} of the weights P and of their gradient dP are below. Give the gradient of the "
                           "score, dS at row {i}, column {j}."), i=i, j=j), exercise,
                solution=solution,
                explanation=Message(N_("Every weight of a row depends on every score of that row (they share the "
                                       "softmax's sum), so dS_ij = P_ij (dP_ij − Σ_k P_ik dP_ik), not only "
                                       "P_ij (1 − P_ij) dP_ij.")),
                source=SOURCE, drawn={"weights": weights.tolist(), "d_output": d_output.tolist(),
                                      "value": value.tolist(), "row": row, "col": col})


def scale(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.scale", CONCEPT, seed,
        Message(N_("On the way forward the scores were divided by √d_k. On the way back, what happens to the "
                   "gradient that reaches Q and K?")),
        Message(N_("It is divided by √d_k too")),
        ((Message(N_("Nothing: the scale only matters on the way forward")), "gradient_no_scale"),
         (Message(N_("It is multiplied by √d_k")), WRONG)),
        Message(N_("S = Q Kᵀ / √d_k, so dS reaches Q and K through the same factor: dQ = dS K / √d_k, "
                   "dK = dSᵀ Q / √d_k.")),
        SOURCE)


def step(seed: int) -> Item:
    return conceptual(
        f"{CONCEPT}.step", CONCEPT, seed,
        Message(N_("A weight w has the gradient dL/dw = 0.5: the loss grows as w grows. One step of gradient descent "
                   "with η = 0.1 moves w …")),
        Message(N_("down, by 0.05")),
        ((Message(N_("up, by 0.05")), "update_sign"), (Message(N_("to 0.5, the gradient")), WRONG)),
        Message(N_("w − η dL/dw: a step against the gradient, down the loss. Here w − 0.1 · 0.5 = w − 0.05.")),
        "Goodfellow et al. 2016, sec. 4.3")


TEMPLATES = {"d_value": d_value, "d_scores": d_scores, "scale": scale, "step": step}
