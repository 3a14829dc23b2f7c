r"""A tiny attention-only Transformer that returns every head's weights, and its training, one step at a time.

Model (Elhage et al. 2021's attention-only transformer; Vaswani et al. 2017, eq. 1 and sec. 3.2.2 per layer):

.. math::
    x^{(0)} = E[\text{token}] + P[\text{position}],\quad
    x^{(l+1)} = x^{(l)} + \operatorname{Concat}_r\!\left(\operatorname{softmax}\!\left(
        \frac{Q_r K_r^\top}{\sqrt{head\_dim}} + M\right) V_r\right) W_O,\quad
    \text{logits} = x^{(L)} W_U

with Q = x W_q, K = x W_k, V = x W_v per layer, M the causal mask. No MLP, no layer norm. Trained with Adam
(Kingma & Ba 2015, Algorithm 1, ``torch.optim.Adam``) on the cross-entropy of the scored positions.

Shape legend: B batch, T positions, V vocabulary, D = d_model, L layers, h = num_heads, head_dim = D // h.
Float32; deterministic for a seed on one machine (fixed seeds, ``torch.use_deterministic_algorithms``, one thread
count); another CPU may round differently.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Optional

import torch
from torch import nn

from attention_core.errors import N_, InputError
from attention_core.masks import causal_mask
from attention_core.training.tasks import Batch, Task

#: The learning rates a training run accepts (Adam's η, *Watch attention learn*), and the most updates it takes.
MIN_TRAINING_LEARNING_RATE, MAX_TRAINING_LEARNING_RATE = 1e-5, 1.0

MAX_TRAINING_STEPS = 5000

#: A run stops (diverged) when its loss is not finite or above this many times its first loss.
DIVERGED_FACTOR = 100.0


class AttentionOnly(nn.Module):
    """L layers of causal multi-head self-attention with residuals, between an embedding and an unembedding.

    Args:
        vocab: V. context: T. d_model: D. num_layers: L. num_heads: h (divides D). generator: draws every
            weight (embeddings N(0, 1), W N(0, 1/D), the unembedding U(−1/√D, 1/√D)).

    ``forward(tokens)`` with tokens (B, T) int64 returns (logits (B, T, V), weights (B, L, h, T, T)). With a list
    as ``trace``, each layer appends a dict of its input "x" (B, T, D) and its projections "w_query", "w_key",
    "w_value" (B, T, D): x W_q, x W_k, x W_v before the heads are split (still in the autograd graph).
    """

    def __init__(self, vocab: int, context: int, d_model: int, num_layers: int, num_heads: int,
                 generator: torch.Generator):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, d_model // num_heads

        def draw(*shape: int, scale: float = 1.0) -> nn.Parameter:  # N(0, scale²), from the run's own generator
            return nn.Parameter(torch.randn(*shape, generator=generator) * scale)
        self.embed = nn.Embedding(vocab, d_model, _weight=draw(vocab, d_model))  # N(0, 1), as nn.Embedding's
        self.position = nn.Embedding(context, d_model, _weight=draw(context, d_model))
        scale = 1 / math.sqrt(d_model)
        self.w_query = nn.ParameterList(draw(d_model, d_model, scale=scale) for _ in range(num_layers))
        self.w_key = nn.ParameterList(draw(d_model, d_model, scale=scale) for _ in range(num_layers))
        self.w_value = nn.ParameterList(draw(d_model, d_model, scale=scale) for _ in range(num_layers))
        self.w_out = nn.ParameterList(draw(d_model, d_model, scale=scale) for _ in range(num_layers))
        self.unembed = nn.Linear(d_model, vocab, bias=False, device="meta")  # nn.Linear's U(−1/√D, 1/√D):
        self.unembed.weight = nn.Parameter(torch.rand(vocab, d_model, generator=generator) * 2 * scale - scale)
        self.register_buffer("mask", causal_mask(context), persistent=False)

    def forward(self, tokens: torch.Tensor, trace: Optional[list[dict[str, torch.Tensor]]] = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        b, t = tokens.shape
        x = self.embed(tokens) + self.position(torch.arange(t))  # (B, T, D)
        all_weights = []
        for w_q, w_k, w_v, w_o in zip(self.w_query, self.w_key, self.w_value, self.w_out):
            def split(m: torch.Tensor) -> torch.Tensor:  # (B, T, D) -> (B, h, T, head_dim)
                return m.reshape(b, t, self.num_heads, self.head_dim).transpose(1, 2)
            projected = {"w_query": x @ w_q, "w_key": x @ w_k, "w_value": x @ w_v}
            if trace is not None:
                trace.append({"x": x, **projected})
            q, k, v = split(projected["w_query"]), split(projected["w_key"]), split(projected["w_value"])
            scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, h, T, T)
            scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
            weights = torch.softmax(scores, dim=-1)
            heads = (weights @ v).transpose(1, 2).reshape(b, t, -1)  # (B, T, D)
            x = x + heads @ w_o
            all_weights.append(weights)
        return self.unembed(x), torch.stack(all_weights, dim=1)  # (B, T, V), (B, L, h, T, T)


@dataclass
class Snapshot:
    """The model at one step: the loss and accuracy on that step's batch, every head's weights on the probe.

    Attributes:
        step: how many updates were made before it. loss: cross-entropy (nats) on the scored positions.
        accuracy: share of scored positions predicted right. weights: (L, h, T, T) on the probe sequence.
        score: the task's pattern score of the pattern layer's first head (1.0 = exactly the pattern).
        checkpoint: everything needed to go on from this step exactly (:meth:`Trainer.at`): the model's and Adam's
            state and the batch generator's state before this step's batch.
    """

    step: int
    loss: float
    accuracy: float
    weights: torch.Tensor
    score: float
    checkpoint: "Checkpoint" = field(repr=False)


@dataclass(frozen=True)
class Checkpoint:
    """A run's state before the update of one step (copies: later updates do not change it).

    Attributes: model: the model's ``state_dict``; optimizer: Adam's ``state_dict``; generator: the batch
    generator's state (a uint8 tensor).
    """

    model: dict[str, torch.Tensor]
    optimizer: dict[str, Any]
    generator: torch.Tensor


def snapshot_interval(steps: int) -> int:
    """Updates between two snapshots of a run of ``steps`` updates: every 25, or fewer snapshots (at most 40, a
    multiple of 25 apart) for long runs, so that a run's checkpoints stay small (a few MB)."""
    return max(25, math.ceil(steps / 40 / 25) * 25)


@dataclass
class Trainer:
    """A training run that advances in slices (so a server can give the turn back between them).

    Build with :func:`start`; call :meth:`advance` until :attr:`done`. Attributes: task, seed, learning_rate,
    steps (the total), batch_size, model, optimizer, generator (the batches'), probe (a batch of one) the sequence whose
    weights are snapshotted, step (updates made), losses, accuracies (one per update), snapshots.
    """

    task: Task
    seed: int
    learning_rate: float
    steps: int
    batch_size: int
    model: AttentionOnly
    optimizer: torch.optim.Adam
    generator: torch.Generator
    probe: Batch
    snapshot_every: int
    step: int = 0
    losses: list[float] = field(default_factory=list)
    accuracies: list[float] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    diverged: bool = False

    @property
    def done(self) -> bool:
        return self.diverged or self.step >= self.steps

    def loss_of(self, batch: Batch, trace: Optional[list[dict[str, torch.Tensor]]] = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(loss, accuracy, weights) of the model on ``batch``: cross-entropy over the scored positions (``trace``:
        as :meth:`AttentionOnly.forward`'s)."""
        logits, weights = self.model(batch.tokens, trace)
        picked = logits[batch.scored]  # (N, V): the scored positions of every sequence
        wanted = batch.targets[batch.scored]
        loss = nn.functional.cross_entropy(picked, wanted)
        accuracy = (picked.argmax(-1) == wanted).float().mean()
        return loss, accuracy, weights

    def _snapshot(self, loss: float, accuracy: float, generator: torch.Tensor) -> None:
        with torch.no_grad():
            _logits, weights = self.model(self.probe.tokens)
        w = weights[0]
        score = self.task.score(w[self.task.pattern_layer, 0], self.probe.expected[0])
        checkpoint = Checkpoint({k: v.detach().clone() for k, v in self.model.state_dict().items()},
                                copy.deepcopy(self.optimizer.state_dict()), generator)
        self.snapshots.append(Snapshot(self.step, loss, accuracy, w, score, checkpoint))

    def at(self, snapshot: Snapshot) -> "Trainer":
        """A new run that stands where this one stood at ``snapshot`` (its model, Adam's state, its next batch):
        advancing it makes the same updates as this run did from there. It keeps the losses up to that step and
        no snapshots; this run is not touched."""
        model = copy.deepcopy(self.model)  # the same architecture; its weights are the snapshot's just below
        model.load_state_dict(snapshot.checkpoint.model)
        optimizer = torch.optim.Adam(model.parameters(), lr=self.learning_rate)
        optimizer.load_state_dict(copy.deepcopy(snapshot.checkpoint.optimizer))
        generator = torch.Generator()
        generator.set_state(snapshot.checkpoint.generator)
        return Trainer(task=self.task, seed=self.seed, learning_rate=self.learning_rate, steps=self.steps,
                       batch_size=self.batch_size, model=model, optimizer=optimizer, generator=generator,
                       probe=self.probe, snapshot_every=self.snapshot_every, step=snapshot.step,
                       losses=self.losses[:snapshot.step], accuracies=self.accuracies[:snapshot.step])

    def layer_inputs(self, tokens: torch.Tensor) -> list[torch.Tensor]:
        """Each layer's input x^(l) (B, T, D) on ``tokens`` (B, T): the embeddings, then each residual stream."""
        trace: list[dict[str, torch.Tensor]] = []
        with torch.no_grad(), deterministic():
            self.model(tokens, trace)
        return [layer["x"] for layer in trace]

    def advance(self, count: int) -> None:
        """Up to ``count`` more updates (fewer at the end, none once done). Stops (``diverged``) when the loss is
        not finite."""
        with deterministic():
            for _ in range(min(count, self.steps - self.step)):
                if self.diverged:
                    return
                generator = self.generator.get_state() if self.step % self.snapshot_every == 0 else None
                batch = self.task.batch(self.generator, self.batch_size)
                loss, accuracy, _weights = self.loss_of(batch)
                if not torch.isfinite(loss) or (self.losses and float(loss.detach()) > DIVERGED_FACTOR * self.losses[0]):
                    self.diverged = True
                    return
                if generator is not None:
                    self._snapshot(float(loss.detach()), float(accuracy), generator)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.step += 1
                self.losses.append(float(loss.detach()))
                self.accuracies.append(float(accuracy))
            if self.step >= self.steps and (not self.snapshots or self.snapshots[-1].step != self.step):
                batch = self.task.batch(torch.Generator().manual_seed(self.seed + 2), self.batch_size)
                with torch.no_grad():
                    loss, accuracy, _ = self.loss_of(batch)
                self._snapshot(float(loss), float(accuracy), self.generator.get_state())


#: torch's intra-op threads while a run trains: the sums of a matmul are split by thread, so another count rounds
#: differently (the same run at 1 and at 2 threads differs in the 5th digit of its loss after 200 steps). One, as the
#: server's (``ui.runtime.TORCH_THREADS``), and the exported script sets it too.
TRAINING_THREADS = 1


class deterministic:
    """Inside: ``torch.use_deterministic_algorithms(True, warn_only=True)`` and :data:`TRAINING_THREADS` threads;
    the previous settings restored after.

    warn_only: the flag is process-wide, and a run may train on a worker thread while the server's script runs use
    torch: an op without a deterministic kernel then warns instead of raising in someone else's page. The ops a run
    uses (matmul, softmax, embedding, cross-entropy and their gradients) are deterministic on the CPU. The thread
    count is process-wide too: another page's matrices meanwhile use one thread (they are tiny).
    """

    def __enter__(self):
        self.before = (torch.are_deterministic_algorithms_enabled(),
                       torch.is_deterministic_algorithms_warn_only_enabled(), torch.get_num_threads())
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.set_num_threads(TRAINING_THREADS)

    def __exit__(self, *exc):
        torch.use_deterministic_algorithms(self.before[0], warn_only=self.before[1])
        torch.set_num_threads(self.before[2])


def start(task: Task, seed: int, learning_rate: float, steps: int, d_model: Optional[int] = None,
          batch_size: int = 64, snapshot_every: Optional[int] = None) -> Trainer:
    """A fresh run of ``task``'s model (``d_model`` wide, the task's own by default), snapshotted every
    ``snapshot_every`` updates (:func:`snapshot_interval` by default) and after the last: the model's weights drawn from ``torch.Generator().manual_seed(seed)``, the batches from
    ``torch.Generator().manual_seed(seed + 1)`` (local generators: the global one is never touched, so runs on a
    worker thread cannot disturb the server's other draws).

    Raises:
        InputError: η not a number in [MIN_TRAINING_LEARNING_RATE, MAX_TRAINING_LEARNING_RATE] (field "training.learning_rate"), steps not a
            whole number in 1..MAX_TRAINING_STEPS ("training.steps").
    """
    if isinstance(learning_rate, bool) or not isinstance(learning_rate, (int, float)) or not (
            math.isfinite(learning_rate) and MIN_TRAINING_LEARNING_RATE <= learning_rate <= MAX_TRAINING_LEARNING_RATE):
        raise InputError(N_("The learning rate must be a number from {low} to {high}; got {value}."),
                         field="training.learning_rate", low=MIN_TRAINING_LEARNING_RATE, high=MAX_TRAINING_LEARNING_RATE,
                         value=repr(learning_rate))
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_TRAINING_STEPS:
        raise InputError(N_("The number of steps must be a whole number from 1 to {high}; got {value}."),
                         field="training.steps", high=MAX_TRAINING_STEPS, value=repr(steps))
    model = AttentionOnly(task.vocab, task.context, d_model or task.d_model, task.num_layers, task.num_heads,
                          torch.Generator().manual_seed(seed))
    probe = task.batch(torch.Generator().manual_seed(seed + 3), 1)
    return Trainer(task=task, seed=seed, learning_rate=learning_rate, steps=steps, batch_size=batch_size, model=model,
                   optimizer=torch.optim.Adam(model.parameters(), lr=learning_rate),
                   generator=torch.Generator().manual_seed(seed + 1), probe=probe,
                   snapshot_every=snapshot_every or snapshot_interval(steps))
