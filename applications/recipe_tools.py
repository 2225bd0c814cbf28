"""What every recipe does alike: a quiet TensorFlow log, where the shared benchmark data is, timing the
phases of a run, and saving its model under `runs/`. Import it first: it imports kerasbert, which silences
TensorFlow's start-up lines before anything else loads TensorFlow.

Example:
>>> from recipe_tools import Phases, save_run
>>> phases = Phases()
>>> model.fit(train); phases.mark("training"); results = model.evaluate(test); phases.mark("evaluation")
>>> print(phases)  # wall time 95 s (training 80 s, evaluation 15 s)
>>> save_run(model, "sentiment_uci.keras")  # runs/sentiment_uci.keras
"""

import json
import os
import sys
import time
from pathlib import Path

import kerasbert  # noqa: F401  (first: it imports TensorFlow without its C++ start-up lines)

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("KERASBERT_SHARED_DATA") or ROOT.parent / "shared" / "data")


def data_argument(default):
    """The data path given as the recipe's first command-line argument, else `default`."""
    return Path(sys.argv[1]) if len(sys.argv) > 1 else Path(default)


class Phases:
    """Wall-clock time of a run and of its named phases (each `mark` ends one)."""

    def __init__(self):
        self.start = self.last = time.perf_counter()
        self.phases = []

    def mark(self, name):
        now = time.perf_counter()
        self.phases.append((name, now - self.last))
        self.last = now

    def __str__(self):
        total = time.perf_counter() - self.start
        parts = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in self.phases)
        return f"wall time {total:.0f} s" + (f" ({parts})" if parts else "")


def save_run(model, name):
    """Save `model` as `runs/<name>`: a `.keras` file, or a preset folder (`save_to_preset`) for other names."""
    path = ROOT / "runs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if name.endswith(".keras"):
        model.save(path)
    else:
        model.save_to_preset(path)
    print(f"saved {path.relative_to(ROOT)}")
    return path


def log_result(row, name):
    """Print `row` as one JSON line and append it to `runs/<name>.jsonl` (results of every run kept)."""
    print(json.dumps(row), flush=True)
    (ROOT / "runs").mkdir(exist_ok=True)
    with open(ROOT / "runs" / f"{name}.jsonl", "a") as log:
        log.write(json.dumps(row) + "\n")
