"""The HF `Trainer` reference optimisation shared by the parity tests of this folder."""

import math

import numpy as np
import pytest


@pytest.fixture(scope="session")
def hf_trainer_epochs():
    """`run(model, batches, epochs, learning_rate)` -> the mean loss of each epoch, training `model` in
    place as HF `Trainer` does: torch AdamW (betas 0.9/0.999, eps 1e-8), weight decay 0.01 except
    biases and LayerNorm weights, ceil(10%) linear warmup then linear decay, `clip_grad_norm_(1.0)`.
    `batches` are the model's keyword arguments, labels included."""
    torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

    def run(model, batches, epochs, learning_rate):
        no_decay = ("bias", "LayerNorm.weight")
        groups = [
            {"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)], "weight_decay": 0.01},
            {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
        ]
        optimizer = torch.optim.AdamW(groups, lr=learning_rate, betas=(0.9, 0.999), eps=1e-8)
        steps = epochs * len(batches)
        scheduler = transformers.get_linear_schedule_with_warmup(optimizer, math.ceil(0.1 * steps), steps)
        model.train()
        epoch_losses = []
        for _ in range(epochs):
            losses = []
            for batch in batches:
                loss = model(**batch).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                losses.append(loss.item())
            epoch_losses.append(float(np.mean(losses)))
        return epoch_losses

    return run
