"""Multiple choice on Jane Austen: which of four sentences comes next?

Run: `.venv/bin/python applications/multiple_choice_austen.py` (about 59 minutes on 2 CPU cores: 28 minutes
per epoch, 2 minutes of test; 2026-11-23, test accuracy 0.586).

SWAG-format examples built by `kerasbert.data.choice_examples.next_sentence_examples`: a sentence as
context; as endings its true next sentence and 3 random sentences of the same novel, the true one
at a random position. Train: 4,000 examples from the five training novels; test: 1,000 from
Persuasion (a novel never seen in training).

Settings: all_minilm_l6_v2_en, 2 epochs, batch 32 examples (128 sequences), sequences up to 128
tokens with dynamic padding, AdamW at 5e-5 with weight decay 0.01 (none on biases and LayerNorm),
10% warmup then linear decay, gradients clipped to norm 1: kerasbert's `fit` defaults.
`benchmarks/hf_multiple_choice_reference.py` trains HF transformers on the same examples.
"""

import hashlib

from recipe_tools import Phases, save_run  # first: it quiets TensorFlow's log

import keras

import kerasbert as kb

PRESET = "all_minilm_l6_v2_en"
TRAIN_EXAMPLES, TEST_EXAMPLES, SEED = 4000, 1000, 0
EPOCHS, BATCH_SIZE, LEARNING_RATE, SEQUENCE_LENGTH = 2, 32, 5e-5, 128


def fingerprint(*frames):
    """A short hash of the examples, printed to show both scripts train on the same data."""
    text = "".join(frame[["context", "endings", "label"]].to_json() for frame in frames)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def main():
    phases = Phases()
    splits = kb.data.load_dataset("jane_austen")
    train = kb.data.next_sentence_examples(splits["train"], TRAIN_EXAMPLES, seed=SEED)
    test = kb.data.next_sentence_examples(splits["test"], TEST_EXAMPLES, seed=SEED)
    print(f"examples: {len(train)} train (five novels), {len(test)} test (Persuasion), "
          f"fingerprint {fingerprint(train, test)}")

    keras.utils.set_random_seed(SEED)
    model = kb.BertMultipleChoice.from_preset(PRESET, sequence_length=SEQUENCE_LENGTH)
    model.fit(train, epochs=EPOCHS, batch_size=BATCH_SIZE, learning_rate=LEARNING_RATE, seed=SEED, verbose=2)
    phases.mark("training")
    results = model.evaluate(test, batch_size=BATCH_SIZE, verbose=0)
    phases.mark("test")

    print(f"kerasbert BertMultipleChoice, {PRESET}, {EPOCHS} epochs, batch {BATCH_SIZE}, lr {LEARNING_RATE}, "
          f"max length {SEQUENCE_LENGTH}")
    print(f"test accuracy {results['accuracy']:.4f}  loss {results['loss']:.4f}")
    print(phases)
    save_run(model, "multiple_choice_austen.keras")


if __name__ == "__main__":
    main()
