"""The HF `Trainer` reference optimisation shared by the parity tests of this folder: the one the HF
reference scripts use (`benchmarks/_hf_training.py`)."""

import sys
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="session")
def hf_training():
    """The module `benchmarks/_hf_training.py` (skipped without torch and transformers)."""
    pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
    pytest.importorskip("transformers", reason="the HF reference needs transformers")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import _hf_training

    return _hf_training


@pytest.fixture(scope="session")
def hf_trainer_epochs(hf_training):
    """`run(model, batches, epochs, learning_rate)` -> the mean loss of each epoch, training `model` in
    place as HF `Trainer` does: torch AdamW (betas 0.9/0.999, eps 1e-8), weight decay 0.01 except
    biases and LayerNorm weights, ceil(10%) linear warmup then linear decay, `clip_grad_norm_(1.0)`.
    `batches` are the model's keyword arguments, labels included."""
    def run(model, batches, epochs, learning_rate):
        total_steps = epochs * len(batches)
        optimizer, scheduler = hf_training.trainer_optimizer(model, learning_rate, 0.01, total_steps, 0.1)
        model.train()
        return [float(np.mean([hf_training.train_step(model, batch, optimizer, scheduler, 1.0)
                               for batch in batches]))
                for _ in range(epochs)]

    return run
