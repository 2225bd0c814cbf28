"""The HF transformers side of the reference runs: the optimizer, schedule and step of HF `Trainer`.

AdamW (betas 0.9/0.999, eps 1e-8) with weight decay on every weight except biases and LayerNorm
weights, `get_linear_schedule_with_warmup`, gradients clipped to a global norm.

Example:
    >>> optimizer, scheduler = trainer_optimizer(model, 5e-5, 0.01, total_steps=63, warmup_fraction=0.1)
    >>> loss = train_step(model, batch, optimizer, scheduler, max_grad_norm=1.0)
    >>> loss = train_step(model, batch, optimizer, scheduler, 1.0, loss_fn=pretraining_loss_at_masked_positions)
"""

import contextlib
import math

import torch
import torch.nn.functional as F
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


def pretraining_loss_at_masked_positions(model, batch):
    """`BertForPreTraining`'s loss, the same number as `model(**batch).loss` (MLM cross-entropy averaged
    over the positions whose label is not -100, plus the NSP cross-entropy), with the vocabulary
    projection computed only at those positions: the model's own forward projects every position, a
    [batch, length, vocabulary] tensor of logits that no loss reads (for bert_mini, 15.6 of the about
    22 forward MFLOP per token).
    """
    labels = batch["labels"]
    sequence_output, pooled_output = model.bert(
        input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
        attention_mask=batch["attention_mask"], return_dict=False)[:2]
    masked = labels != -100
    mlm_loss = F.cross_entropy(model.cls.predictions(sequence_output[masked]), labels[masked])
    nsp_loss = F.cross_entropy(model.cls.seq_relationship(pooled_output), batch["next_sentence_label"])
    return mlm_loss + nsp_loss


def model_loss(model, batch):
    """The loss the model's own forward computes from its keyword arguments, labels included."""
    return model(**batch).loss


def train_step(model, batch, optimizer, scheduler, max_grad_norm, autocast=None, loss_fn=model_loss):
    """One optimisation step on a batch of model keyword arguments; returns the loss (float)."""
    with autocast or contextlib.nullcontext():
        loss = loss_fn(model, batch)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad()
    return loss.item()
