"""Reference for `applications/pretrain_austen.py`: HF transformers `BertForPreTraining` from scratch.

Run: `.venv/bin/python benchmarks/hf_pretraining_reference.py [--model-seed N]` (CPU torch). Same config (bert_mini:
4 layers, hidden 256, 4 heads, the uncased vocabulary), same data, masking and steps as the recipe:
the batches are kerasbert's own `BertPretrainer.pretraining_dataset` (the same examples, shuffle and
dynamic masks for the same seed), turned into torch tensors (`labels` -100 off the masked positions,
as HF's data collator), so only the model and its training differ. Training as HF `Trainer` does it:
AdamW peak 5e-4 (betas 0.9/0.999, eps 1e-8), weight decay 0.01 except biases and LayerNorm,
`get_linear_schedule_with_warmup` over 10% of the steps, gradients clipped to norm 1, 2 epochs of
batch 32. The training loss is `BertForPreTraining`'s own, computed with the vocabulary projection
at the masked positions only (`pretraining_loss_at_masked_positions`: equal loss and gradients,
`tests/training/test_pretraining_matches_hf.py`): the same steps without the unread logits.
Held-out numbers: Persuasion with static masks drawn with seed 0 (as the recipe's `evaluate`), MLM
accuracy over the masked positions and NSP accuracy.
"""

import argparse
import sys
import time
from pathlib import Path

import torch
from _hf_training import pretraining_loss_at_masked_positions, train_step, trainer_optimizer
from transformers import BertConfig, BertForPreTraining

import kerasbert as kb
from kerasbert.tasks.bert_pretrainer import hf_pretraining_batch
from kerasbert.presets.hf_format import hf_config_from_backbone

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "applications"))
from pretrain_austen import BATCH_SIZE, EPOCHS, LEARNING_RATE, SEED, austen_chapters  # noqa: E402

WEIGHT_DECAY, WARMUP_FRACTION, MAX_GRAD_NORM = 0.01, 0.1, 1.0


def torch_batch(batch):
    """A kerasbert pre-training batch -> `BertForPreTraining` keyword arguments (torch tensors)."""
    return {name: torch.from_numpy(value) for name, value in hf_pretraining_batch(*batch).items()}


def evaluate(model, dataset):
    """Corpus-level held-out MLM accuracy (masked positions only) and NSP accuracy."""
    model.eval()
    mlm_hits = mlm_count = nsp_hits = nsp_count = 0
    with torch.no_grad():
        for batch in dataset:
            batch = torch_batch(batch)
            output = model(**{k: v for k, v in batch.items() if k not in ("labels", "next_sentence_label")})
            masked = batch["labels"] != -100
            mlm_hits += (output.prediction_logits.argmax(-1)[masked] == batch["labels"][masked]).sum().item()
            mlm_count += masked.sum().item()
            nsp = batch["next_sentence_label"]
            nsp_hits += (output.seq_relationship_logits.argmax(-1) == nsp).sum().item()
            nsp_count += len(nsp)
    return mlm_hits / mlm_count, nsp_hits / nsp_count


def main(model_seed=SEED):
    start = time.perf_counter()
    torch.manual_seed(model_seed)
    train, held_out = austen_chapters()
    data = kb.BertPretrainer.from_preset("bert_mini_en_uncased", load_weights=False)  # data pipeline only
    train_batches = data.pretraining_dataset(train, BATCH_SIZE, SEED, shuffle=True)
    model = BertForPreTraining(BertConfig(**hf_config_from_backbone(data.backbone.get_config())))
    steps = EPOCHS * int(train_batches.cardinality())
    optimizer, scheduler = trainer_optimizer(model, LEARNING_RATE, WEIGHT_DECAY, steps, WARMUP_FRACTION)
    model.train()
    for epoch in range(EPOCHS):
        for step, batch in enumerate(train_batches):
            loss = train_step(model, torch_batch(batch), optimizer, scheduler, MAX_GRAD_NORM,
                              loss_fn=pretraining_loss_at_masked_positions)
            if step % 50 == 0:
                print(f"epoch {epoch + 1} step {step}: loss {loss:.3f}", flush=True)
    trained = time.perf_counter()
    mlm_accuracy, nsp_accuracy = evaluate(model, data.pretraining_dataset(held_out, BATCH_SIZE, 0,
                                                                         dynamic=False))
    print(f"\nHF BertForPreTraining (bert_mini config) from scratch, {steps} steps of {BATCH_SIZE}, "
          f"model seed {model_seed}")
    print(f"  held-out MLM accuracy {mlm_accuracy:.4f}  NSP accuracy {nsp_accuracy:.4f}")
    print(f"  wall time {time.perf_counter() - start:.0f} s (training {trained - start:.0f} s)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-seed", type=int, default=SEED, help="seed of the fresh weights and dropout")
    main(parser.parse_args().model_seed)
