"""Pre-train a small BERT from scratch on five Jane Austen novels; evaluate on the sixth.

Protocol (issue 5): `bert_mini_en_uncased` (4 layers, hidden 256, the uncased WordPiece vocabulary)
with fresh weights; documents are the chapters of the five training novels of the shipped
`jane_austen` set (held out: the chapters of *Persuasion*). BERT examples (`[CLS] A [SEP] B [SEP]`,
50% true next segment, up to 128 tokens, 10% short), dynamic masking (15% of the WordPieces, 80/10/10),
batch 32, AdamW peak 5e-4 (weight decay 0.01, 10% warmup, linear decay), 2 epochs. Held-out
numbers come from `evaluate` on Persuasion with masks drawn with seed 0. The HF transformers
`BertForPreTraining` reference runs the same examples, masks and steps:
`benchmarks/hf_pretraining_reference.py`.

Run: `.venv/bin/python applications/pretrain_austen.py [--model-seed N]`; saves the preset
`runs/austen_bert_mini/`. `--model-seed` (default 0) seeds the fresh weights and the dropout only: the
examples, masks and batches stay those of seed 0, so runs differ only where a seed of the model matters.
"""

import argparse

from recipe_tools import Phases, save_run  # first: it quiets TensorFlow's log

import keras

import kerasbert as kb

EPOCHS, BATCH_SIZE, LEARNING_RATE, SEED = 2, 32, 5e-4, 0


def austen_chapters():
    """(training chapters, held-out chapters): one document string per chapter, paragraphs on lines."""
    splits = kb.data.load_dataset("jane_austen")
    return [splits[name].groupby(["book", "chapter"], sort=False)["text"].agg("\n".join).tolist()
            for name in ("train", "test")]


def main(model_seed=SEED):
    phases = Phases()
    train, held_out = austen_chapters()
    keras.utils.set_random_seed(model_seed)
    pretrainer = kb.BertPretrainer.from_preset("bert_mini_en_uncased", load_weights=False)
    pretrainer.fit(train, epochs=EPOCHS, batch_size=BATCH_SIZE, learning_rate=LEARNING_RATE, seed=SEED,
                   verbose=2)
    phases.mark("training")
    results = pretrainer.evaluate(held_out, verbose=0)
    steps = int(pretrainer.optimizer.iterations)
    print(f"\nbert_mini from scratch on {len(train)} chapters of five Austen novels, {EPOCHS} epochs = "
          f"{steps} steps of {BATCH_SIZE}, model seed {model_seed}; held out: {len(held_out)} chapters of Persuasion")
    print(f"  held-out MLM accuracy {results['mlm_accuracy']:.4f}  MLM loss {results['mlm_loss']:.3f}  "
          f"NSP accuracy {results['nsp_accuracy']:.4f}")
    print(f"  {phases}")
    save_run(pretrainer, "austen_bert_mini")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-seed", type=int, default=SEED, help="seed of the fresh weights and dropout")
    main(parser.parse_args().model_seed)
