"""The HF transformers side of the reference runs: the optimizer, schedule and step of HF `Trainer`.

AdamW (betas 0.9/0.999, eps 1e-8) with weight decay on every weight except biases and LayerNorm
weights, `get_linear_schedule_with_warmup`, gradients clipped to a global norm.

Example:
    >>> optimizer, scheduler = trainer_optimizer(model, 5e-5, 0.01, total_steps=63, warmup_fraction=0.1)
    >>> loss = train_step(model, batch, optimizer, scheduler, max_grad_norm=1.0)
"""

import contextlib
import math

import torch
from transformers import get_linear_schedule_with_warmup


def trainer_optimizer(model, learning_rate, weight_decay, total_steps, warmup_fraction):
    """HF `Trainer`'s AdamW and linear warmup/decay schedule."""
    no_decay = ("bias", "LayerNorm.weight")
    groups = [{"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)],
               "weight_decay": weight_decay},
              {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)],
               "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=learning_rate, betas=(0.9, 0.999), eps=1e-8)
    warmup_steps = math.ceil(warmup_fraction * total_steps)  # as Trainer's get_warmup_steps
    return optimizer, get_linear_schedule_with_warmup(optimizer, warmup_steps, total_steps)


def train_step(model, batch, optimizer, scheduler, max_grad_norm, autocast=None):
    """One optimisation step on a batch of model keyword arguments; returns the loss (float)."""
    with autocast or contextlib.nullcontext():
        loss = model(**batch).loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
    return loss.item()
