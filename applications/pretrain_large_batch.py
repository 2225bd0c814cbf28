"""Large-batch pre-training: AdamW at batch 32 against LAMB at batch 1024 (32 batches of 32 accumulated), for the
same number of examples, on a streamed corpus.

Protocol (issue 35): `bert_mini_en_uncased` from fresh weights (seed 0), masked LM only, 128 tokens; the corpus is
the chapters of the five training novels of the shipped `jane_austen` set, prepared into shards
(`kb.data.prepare_pretraining`) and streamed; held out: *Persuasion*, evaluated (`evaluate`, masks of seed 0)
after every `--examples-per-point` examples. AdamW: batch 32, peak 5e-4 (the rate of
applications/pretrain_austen.py), 10% warmup, linear decay. LAMB: batch 1024 = 32 x 32 accumulated, peak
`--lamb-rate` (default 3e-3: AdamW's rate scaled by the square root of the batch ratio, sqrt(32) x 5e-4 = 2.8e-3,
the square-root rule of the LAMB paper), 10% warmup, linear decay. Both see `--examples` examples.

Output: the held-out MLM accuracy after each point for both runs, their wall times, and a plot
`runs/pretrain_large_batch.png` (accuracy against examples seen).

Run: `.venv/bin/python -u applications/pretrain_large_batch.py [--examples 65536] [--examples-per-point 16384]`
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

from recipe_tools import ROOT  # first: it quiets TensorFlow's log

import keras

import kerasbert as kb

BATCH, ACCUMULATION, LENGTH, SEED = 32, 32, 128, 0
RUNS = ROOT / "runs"


def prepared_corpus(folder):
    """Austen's five training novels as shards, and the held-out chapters of Persuasion."""
    splits = kb.data.load_dataset("jane_austen")
    train, held_out = [splits[name].groupby(["book", "chapter"], sort=False)["text"].agg("\n".join).tolist()
                       for name in ("train", "test")]
    for index, chapter in enumerate(train):
        (folder / f"chapter{index:04d}.txt").write_text(chapter, encoding="utf-8")
    tokenizer = kb.families.BertTokenizer.from_preset("bert_mini_en_uncased")
    kb.data.prepare_pretraining(folder, folder / "shards", tokenizer, pattern="*.txt")
    return folder / "shards", held_out


def run(shards, held_out, optimizer, learning_rate, accumulation, examples, examples_per_point):
    """Pre-train from fresh weights; the held-out MLM accuracy after each point and the training seconds."""
    keras.utils.set_random_seed(SEED)
    pretrainer = kb.BertPretrainer.from_preset("bert_mini_en_uncased", load_weights=False, next_sentence=None,
                                               max_sequence_length=LENGTH)
    steps_per_point = examples_per_point // BATCH
    curve, seconds = [], 0.0

    class Evaluate(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            accuracy = pretrainer.evaluate(held_out, verbose=0)["mlm_accuracy"]
            curve.append(((epoch + 1) * examples_per_point, accuracy))
            print(f"  {optimizer}: {curve[-1][0]:,} examples, held-out MLM accuracy {accuracy:.4f}", flush=True)

    started = time.perf_counter()
    pretrainer.fit(shards, batch_size=BATCH, epochs=examples // examples_per_point, steps_per_epoch=steps_per_point,
                   learning_rate=learning_rate, optimizer=optimizer, gradient_accumulation_steps=accumulation,
                   seed=SEED, verbose=0, callbacks=[Evaluate()])
    seconds = time.perf_counter() - started
    return {"curve": curve, "seconds": seconds, "updates": int(pretrainer.optimizer.iterations)}


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    for label, result in results.items():
        seen, accuracy = zip(*result["curve"])
        axes.plot(seen, accuracy, marker="o", label=f"{label} ({result['seconds'] / 60:.0f} min)")
    axes.set_xlabel("examples seen")
    axes.set_ylabel("held-out MLM accuracy (Persuasion)")
    axes.set_title("bert_mini from scratch, streamed Austen")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=65536)
    parser.add_argument("--examples-per-point", type=int, default=16384)
    parser.add_argument("--adamw-rate", type=float, default=5e-4)
    parser.add_argument("--lamb-rate", type=float, default=3e-3)
    args = parser.parse_args()
    if args.examples_per_point % (BATCH * ACCUMULATION) or args.examples % args.examples_per_point:
        parser.error(f"--examples-per-point must be a multiple of {BATCH * ACCUMULATION}, and divide --examples.")
    with tempfile.TemporaryDirectory() as folder:
        shards, held_out = prepared_corpus(Path(folder))
        results = {
            f"AdamW, batch {BATCH}, peak {args.adamw_rate:g}": run(shards, held_out, "adamw", args.adamw_rate, None,
                                                                  args.examples, args.examples_per_point),
            f"LAMB, batch {BATCH * ACCUMULATION}, peak {args.lamb_rate:g}": run(
                shards, held_out, "lamb", args.lamb_rate, ACCUMULATION, args.examples, args.examples_per_point),
        }
    RUNS.mkdir(exist_ok=True)
    plot(results, RUNS / "pretrain_large_batch.png")
    (RUNS / "pretrain_large_batch.json").write_text(json.dumps(results, indent=1))
    for label, result in results.items():
        print(f"{label}: {result['updates']} updates, {result['seconds']:.0f} s, held-out MLM accuracy "
              + ", ".join(f"{accuracy:.4f}" for _, accuracy in result["curve"]))
    print(f"plot: {RUNS / 'pretrain_large_batch.png'}")


if __name__ == "__main__":
    main()
