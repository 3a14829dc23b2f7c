r"""One update of a training run explained with its numbers: the batch, the loss, one weight's gradient, and Adam's
rule written out for that weight.

Adam (Kingma & Ba 2015, Algorithm 1; ``torch.optim.Adam`` with weight_decay 0, amsgrad off), at step t (from 1):

.. math::
    m_t = \beta_1 m_{t-1} + (1 - \beta_1) g_t,\quad v_t = \beta_2 v_{t-1} + (1 - \beta_2) g_t^2,\quad
    \hat m_t = \frac{m_t}{1 - \beta_1^t},\quad \hat v_t = \frac{v_t}{1 - \beta_2^t},\quad
    w_t = w_{t-1} - \eta \frac{\hat m_t}{\sqrt{\hat v_t} + \epsilon}

The gradient of one entry, by the backward pass's dW = Xᵀ dQ (the backward page's "dW_q" stage, summed over the
batch): with P = X W the projection (B, T, D) and X the layer's input (B, T, D),

.. math::
    \frac{\partial L}{\partial W_{r,c}} = \sum_{b,t} X_{b,t,r}\,\frac{\partial L}{\partial P_{b,t,c}}

Everything is a python float but ``tokens`` and ``contributions``; the weight's matrix is one of W_q, W_k, W_v
(D, D) of a layer. Shape legend: B the batch, T positions, D = d_model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attention_core.training.model import Trainer, deterministic


@dataclass(frozen=True)
class ExplainedUpdate:
    """The next update of one weight, with its numbers.

    Attributes:
        step: t, the update's number (from 1). tokens: (B, T) the batch it is computed on. loss: the batch's loss.
        which, layer, row, col: the weight (its matrix, layer, entry from 0).
        gradient: g_t = ∂loss/∂w (``torch.autograd``). weight_before, weight_after: w_{t−1}, w_t.
        learning_rate, beta1, beta2, eps: the optimizer's. m_before, v_before: m_{t−1}, v_{t−1} (0 at t = 1).
        m, v, m_hat, v_hat: m_t, v_t and their bias-corrected values.
        contributions: (B, T) float32, X_{b,t,r} · ∂L/∂P_{b,t,c}: the terms whose sum is the gradient.
    """

    step: int
    tokens: torch.Tensor
    loss: float
    which: str
    layer: int
    row: int
    col: int
    gradient: float
    weight_before: float
    weight_after: float
    learning_rate: float
    beta1: float
    beta2: float
    eps: float
    m_before: float
    v_before: float
    m: float
    v: float
    m_hat: float
    v_hat: float
    contributions: torch.Tensor

    @property
    def moved(self) -> float:
        """w_t − w_{t−1}: how far the update moved the weight."""
        return self.weight_after - self.weight_before


def explain_update(trainer: Trainer, which: str, layer: int, row: int, col: int) -> ExplainedUpdate:
    """The update ``trainer.advance(1)`` would make to ``which``[layer][row, col], computed on the same batch
    (drawn from a copy of the run's generator, so the run itself is untouched) with Adam's rule written out.

    Raises:
        KeyError: ``which`` not one of "w_query", "w_key", "w_value". IndexError: no such layer or entry.
    """
    param = {"w_query": trainer.model.w_query, "w_key": trainer.model.w_key,
             "w_value": trainer.model.w_value}[which][layer]
    if not (0 <= row < param.shape[0] and 0 <= col < param.shape[1]):
        raise IndexError(f"entry ({row}, {col}) is outside {tuple(param.shape)}")
    generator = torch.Generator()
    generator.set_state(trainer.generator.get_state())
    batch = trainer.task.batch(generator, trainer.batch_size)
    with deterministic():
        trace: list[dict[str, torch.Tensor]] = []
        loss, _accuracy, _weights = trainer.loss_of(batch, trace)
        grad, d_projection = torch.autograd.grad(loss, [param, trace[layer][which]])
    contributions = (trace[layer]["x"][:, :, row] * d_projection[:, :, col]).detach()  # (B, T)
    group = trainer.optimizer.param_groups[0]
    beta1, beta2 = group["betas"]
    eps, rate = group["eps"], group["lr"]
    state = trainer.optimizer.state.get(param, {})
    t = int(state["step"]) + 1 if "step" in state else 1
    m_before = float(state["exp_avg"][row, col]) if "exp_avg" in state else 0.0
    v_before = float(state["exp_avg_sq"][row, col]) if "exp_avg_sq" in state else 0.0
    g = float(grad[row, col])
    m = beta1 * m_before + (1 - beta1) * g
    v = beta2 * v_before + (1 - beta2) * g * g
    m_hat, v_hat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    w = float(param.detach()[row, col])
    return ExplainedUpdate(
        step=t, tokens=batch.tokens, loss=float(loss.detach()), which=which, layer=layer, row=row, col=col, gradient=g,
        weight_before=w, weight_after=w - rate * m_hat / (math.sqrt(v_hat) + eps), learning_rate=rate,
        beta1=beta1, beta2=beta2, eps=eps, m_before=m_before, v_before=v_before, m=m, v=v, m_hat=m_hat,
        v_hat=v_hat, contributions=contributions)
