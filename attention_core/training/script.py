r"""A finished training run as a standalone Python script that trains it again and checks the result.

The script holds the tasks' and the model's own source (:mod:`attention_core.training.tasks` and
:mod:`attention_core.training.model`, read with ``inspect``, so it trains exactly as the server did), stand-ins for
what they import from the app (the learning rates' and the steps' limits as literals), the run's settings as
literals, and the app's final numbers. It trains with the same seeds and thread count, then checks:

- the final loss within :data:`LOSS_TOLERANCE` (absolute, nats) of the app's;
- the pattern's share of the weight (the task's score of its pattern layer's head) within :data:`SCORE_TOLERANCE`.

On the machine that served the page the numbers are equal; another CPU (or torch build) may round the sums of a
matmul differently, and hundreds of updates carry the difference on, hence the tolerances. Needs only torch.
"""

from __future__ import annotations

import inspect
import re

from attention_core.training import model, tasks
from attention_core.training.model import (
    MAX_TRAINING_LEARNING_RATE,
    MAX_TRAINING_STEPS,
    MIN_TRAINING_LEARNING_RATE,
    Trainer,
)

#: How far the script's final loss may be from the app's (nats), and its pattern score (a share in [0, 1]).
LOSS_TOLERANCE = 0.05
SCORE_TOLERANCE = 0.05

_PROJECT_IMPORT = re.compile(r"^from attention_core\..*$|^from __future__ import annotations$", re.MULTILINE)

_STANDS_IN = '''
def N_(text):  # the app marks messages for translation; here they are plain English
    return text


class InputError(ValueError):
    def __init__(self, message, *, field="", **params):
        super().__init__(message.format(**params))
        self.field = field


def causal_mask(n, m=None):  # query i may attend to keys j <= i
    return torch.ones(m or n, n, dtype=torch.bool).tril()


''' + f"""# the learning rates and the most updates a run accepts (attention_core/training/model.py)
MIN_TRAINING_LEARNING_RATE, MAX_TRAINING_LEARNING_RATE = {MIN_TRAINING_LEARNING_RATE!r}, {MAX_TRAINING_LEARNING_RATE!r}
MAX_TRAINING_STEPS = {MAX_TRAINING_STEPS!r}
"""


def _module(module) -> str:
    return _PROJECT_IMPORT.sub("", inspect.getsource(module))


def training_script(trainer: Trainer) -> str:
    """The script of ``trainer``'s finished run (see the module's docstring). Its text is Python; the run's settings
    enter it only as ``repr`` literals."""
    final = trainer.snapshots[-1]
    return f'''"""Watch attention learn, exported: train the task {trainer.task.key!r} again and check the app's result.

Run it as a Python script (it needs torch). Seed {trainer.seed}, learning rate {trainer.learning_rate!r},
{trainer.steps} updates of Adam on batches of {trainer.batch_size}. Tolerances: final loss ± {LOSS_TOLERANCE} nats,
pattern share ± {SCORE_TOLERANCE} (another CPU may round a matmul's sums differently).
"""
from __future__ import annotations

# ---------------------------------------------------------------- what the app used
{_STANDS_IN}
# ---------------------------------------------------------------- the tasks (attention_core/training/tasks.py)
{_module(tasks)}
# ---------------------------------------------------------------- the model and its training (attention_core/training/model.py)
{_module(model)}
# ---------------------------------------------------------------- train again and check
TASK, SEED, LEARNING_RATE, STEPS = {trainer.task.key!r}, {trainer.seed!r}, {trainer.learning_rate!r}, {trainer.steps!r}
APP_FINAL_LOSS, APP_PATTERN_SHARE, APP_DIVERGED = {final.loss!r}, {final.score!r}, {trainer.diverged!r}

if __name__ == "__main__":
    run = start(TASKS[TASK], SEED, LEARNING_RATE, STEPS)
    while not run.done:
        run.advance(100)
    last = run.snapshots[-1]
    print(f"final loss: {{last.loss:.4f}} (app: {{APP_FINAL_LOSS:.4f}}); "
          f"pattern share: {{last.score:.3f}} (app: {{APP_PATTERN_SHARE:.3f}})")
    assert run.diverged == APP_DIVERGED, "the run diverged here but not in the app, or the other way round"
    assert abs(last.loss - APP_FINAL_LOSS) <= {LOSS_TOLERANCE!r}, "the final loss differs from the app's"
    assert abs(last.score - APP_PATTERN_SHARE) <= {SCORE_TOLERANCE!r}, "the pattern differs from the app's"
    print("OK: the same run as in the app.")
'''
