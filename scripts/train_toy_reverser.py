"""Train the toy encoder–decoder of the *Generating token by token* page to reverse words, and measure it.

    .venv/bin/python scripts/train_toy_reverser.py             # train (about 70 s on 2 cores), write the weights
    .venv/bin/python scripts/train_toy_reverser.py --evaluate  # only measure the committed weights

The model is :class:`attention_core.transformer.toy_model.ToyReverser`. Training is deterministic: fixed seeds
for the initial weights and for the data, two CPU threads, deterministic algorithms. Every batch draws 128
random words of 1 to 8 letters; the held-out words (1000 words of 5 to 8 letters, drawn first with their own
seed) are never trained on. Accuracy is exact match of greedy decoding (every letter and the END token).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attention_core.transformer.toy_model import (  # noqa: E402
    END,
    LETTERS,
    PAD,
    START,
    TOY_MAX_INPUT,
    TOY_MAX_OUTPUT,
    VOCAB,
    WEIGHTS_FILE,
    ToyReverser,
    load_toy_model,
)

BATCH, LEARNING_RATE = 128, 3e-3
HELD_OUT, HELD_OUT_LENGTHS = 1000, range(5, TOY_MAX_INPUT + 1)
FIRST_LETTER = VOCAB.index(LETTERS[0])


def held_out_words() -> set[tuple[int, ...]]:
    """The words never trained on: 1000 distinct words of 5..8 letters (token ids), from seed 12345."""
    g = torch.Generator().manual_seed(12345)
    words: set[tuple[int, ...]] = set()
    while len(words) < HELD_OUT:
        n = HELD_OUT_LENGTHS[int(torch.randint(len(HELD_OUT_LENGTHS), (1,), generator=g))]
        words.add(tuple((torch.randint(len(LETTERS), (n,), generator=g) + FIRST_LETTER).tolist()))
    return words


def tensors(words: list[tuple[int, ...]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Source (B, 8), decoder input (B, 9) = START + reversed word, labels (B, 9) = reversed word + END; PAD-padded."""
    source = torch.full((len(words), TOY_MAX_INPUT), PAD)
    target = torch.full((len(words), TOY_MAX_OUTPUT), PAD)
    labels = torch.full((len(words), TOY_MAX_OUTPUT), PAD)
    for i, word in enumerate(words):
        n, reverse = len(word), list(reversed(word))
        source[i, :n] = torch.tensor(word)
        target[i, 0], target[i, 1:n + 1] = START, torch.tensor(reverse)
        labels[i, :n], labels[i, n] = torch.tensor(reverse), END
    return source, target, labels


def training_batch(g: torch.Generator, held: set[tuple[int, ...]]) -> list[tuple[int, ...]]:
    words = []
    while len(words) < BATCH:
        n = int(torch.randint(1, TOY_MAX_INPUT + 1, (1,), generator=g))
        word = tuple((torch.randint(len(LETTERS), (n,), generator=g) + FIRST_LETTER).tolist())
        if word not in held:
            words.append(word)
    return words


@torch.no_grad()
def greedy(model: ToyReverser, words: list[tuple[int, ...]]) -> torch.Tensor:
    """Greedy decoding of every word at once: (B, TOY_MAX_OUTPUT) generated ids."""
    source, _, _ = tensors(words)
    memory = model.encode(source)
    out = torch.full((len(words), 1), START)
    for _ in range(TOY_MAX_OUTPUT):
        logits = model.decode(out, memory, source)[:, -1]
        out = torch.cat([out, logits.argmax(-1, keepdim=True)], dim=1)
    return out[:, 1:]


def accuracy(model: ToyReverser, words: list[tuple[int, ...]]) -> float:
    """Exact-match accuracy: every reversed letter and then END."""
    generated = greedy(model, words)
    right = sum(generated[i, :len(w) + 1].tolist() == [*reversed(w), END] for i, w in enumerate(words))
    return right / len(words)


def report(model: ToyReverser, held: set[tuple[int, ...]]) -> None:
    held_words = sorted(held)
    print(f"held-out words (5-8 letters, never trained on): {accuracy(model, held_words):.1%} of {len(held_words)}")
    for n in HELD_OUT_LENGTHS:
        some = [w for w in held_words if len(w) == n]
        print(f"  {n} letters: {accuracy(model, some):.1%} of {len(some)}")
    short = [()]
    for _ in range(4):  # every word of 1..4 letters (these lengths are all seen in training)
        short = [w + (c,) for w in short for c in range(FIRST_LETTER, FIRST_LETTER + len(LETTERS))]
        print(f"every word of {len(short[0])} letters: {accuracy(model, short):.1%} of {len(short)}")


def train(steps: int) -> ToyReverser:
    torch.manual_seed(0)  # the initial weights
    model = ToyReverser()
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=LEARNING_RATE, total_steps=steps)
    held, g, start = held_out_words(), torch.Generator().manual_seed(1), time.monotonic()
    for step in range(steps):
        source, target, labels = tensors(training_batch(g, held))
        logits = model(source, target)
        loss = F.cross_entropy(logits.reshape(-1, len(VOCAB)), labels.reshape(-1), ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 500 == 0 or step == steps - 1:
            print(f"step {step:5d}  loss {loss.item():.4f}  {time.monotonic() - start:5.1f} s", flush=True)
    return model.eval()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="training steps of 128 words (default 2000)")
    parser.add_argument("--out", type=Path, default=WEIGHTS_FILE, help="where to write the weights")
    parser.add_argument("--evaluate", action="store_true", help="only measure the weights in --out")
    parser.add_argument("--threads", type=int, default=2,
                        help="torch's threads (default 2, as the committed weights were trained; the same count gives "
                             "the same weights)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.use_deterministic_algorithms(True)
    if args.evaluate:
        model = load_toy_model(args.out)
    else:
        from safetensors.torch import save_file

        model = train(args.steps)
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(args.out))
        print(f"wrote {args.out} ({args.out.stat().st_size} bytes)")
    report(model, held_out_words())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
