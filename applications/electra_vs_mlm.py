"""ELECTRA vs masked-LM pre-training at the same size and steps, then UCI sentiment fine-tuning from each.

ELECTRA's claim (Clark et al., 2020): replaced-token detection, which learns from every token rather than the
15% that are masked, gives better downstream accuracy for the same pre-training compute. Here, on a small
scale, both models have bert_mini's size (4 layers, hidden 256, 4 heads, FFN 1024, the uncased WordPiece
vocabulary) and start from fresh weights with model seed 0:
- MLM: `BertPretrainer(next_sentence=None)`, masked LM only (15% of the WordPieces, 80/10/10).
- ELECTRA: `ElectraPretrainer` on an `ElectraBackbone` of the same size (embeddings 256 wide, as bert_mini's),
  a generator of 1/4 the width (hidden 64, 1 head, FFN 256, 4 layers) sharing its embeddings, 15% masked
  (85% [MASK], 15% kept), discriminator loss weight 50.
Both pre-train on the same examples (one segment of up to 128 tokens) from the chapters of the five training
Austen novels of the shipped `jane_austen` set, 1 epoch at batch 32, AdamW peak 5e-4 (weight decay 0.01, 10%
warmup, linear decay), dynamic masking with seed 0. Then each fine-tunes on UCI sentiment (train amazon + yelp,
2,000 sentences; test imdb, 1,000) as `sentiment_uci.py` does, except 3 epochs at 1e-4 (the 1-epoch 5e-5 of
MiniLM's protocol barely moves a model pre-trained this little), over fine-tuning seeds 0, 1 and 2.

Run: `.venv/bin/python applications/electra_vs_mlm.py` (about 25 minutes on 2 CPU cores); saves the presets
`runs/austen_mini_mlm/` and `runs/austen_mini_electra/`.
"""

import time

from recipe_tools import ROOT, Phases  # first: it quiets TensorFlow's log

import keras
import numpy as np
from pretrain_austen import austen_chapters
from sentiment_uci import LABELS

import kerasbert as kb

PRESET, BATCH_SIZE, LEARNING_RATE, SEQUENCE_LENGTH, MASKED = "bert_mini_en_uncased", 32, 5e-4, 128, 20
FINE_TUNING_SEEDS, FINE_TUNING_EPOCHS, FINE_TUNING_LEARNING_RATE = (0, 1, 2), 3, 1e-4


class StepTimer(keras.callbacks.Callback):
    """Seconds per training step: the median over the steps after the first (which traces the step)."""

    def on_train_begin(self, logs=None):
        self.seconds = []

    def on_train_batch_begin(self, batch, logs=None):
        self.start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self.seconds.append(time.perf_counter() - self.start)

    def median(self):
        return float(np.median(self.seconds[1:]))


def encoder_flops(num_layers, hidden, intermediate, tokens):
    """Forward FLOPs (2 per multiply-add) of `num_layers` encoder blocks on one sequence of `tokens` tokens."""
    per_token = 2 * (4 * hidden * hidden + 2 * hidden * intermediate) + 4 * tokens * hidden  # linear + attention
    return num_layers * tokens * per_token


def masked_lm_head_flops(hidden, width, vocabulary, positions):
    return positions * 2 * (hidden * width + width * vocabulary)


def training_flops_per_step(pretrainer):
    """Estimated FLOPs of one training step (3 x forward) on full batches of `SEQUENCE_LENGTH` tokens with
    `MASKED` masked positions each."""
    backbone, tokens = pretrainer.backbone, SEQUENCE_LENGTH
    vocabulary, width = backbone.vocabulary_size, backbone.embedding_dim or backbone.hidden_dim
    forward = encoder_flops(backbone.num_layers, backbone.hidden_dim, backbone.intermediate_dim, tokens)
    if isinstance(pretrainer, kb.ElectraPretrainer):
        generator = pretrainer.generator_config
        forward += tokens * 2 * (backbone.hidden_dim ** 2 + backbone.hidden_dim)  # discriminator head
        forward += encoder_flops(generator["num_layers"], generator["hidden_dim"], generator["intermediate_dim"],
                                 tokens)
        if generator["hidden_dim"] != width:
            forward += tokens * 2 * width * generator["hidden_dim"]  # generator embedding projection
        forward += masked_lm_head_flops(generator["hidden_dim"], width, vocabulary, MASKED)
    else:
        forward += masked_lm_head_flops(backbone.hidden_dim, width, vocabulary, MASKED)
    return 3 * forward * BATCH_SIZE


def pretrain(pretrainer, train, name):
    """Pre-train `pretrainer` on `train`; returns (steps, seconds, median seconds a step, preset folder)."""
    timer = StepTimer()
    start = time.perf_counter()
    pretrainer.fit(train, epochs=1, batch_size=BATCH_SIZE, learning_rate=LEARNING_RATE, seed=0, verbose=2,
                   callbacks=[timer])
    seconds = time.perf_counter() - start
    folder = pretrainer.save_to_preset(ROOT / "runs" / name)
    return int(pretrainer.optimizer.iterations), seconds, timer.median(), folder


def sentiment_accuracy(preset, seed):
    """UCI test accuracy after fine-tuning `preset` (see the module docstring) with `seed`."""
    splits = kb.data.load_dataset("uci_sentiment")
    train, test = (splits[name][["text", "label"]].assign(label=lambda d: d["label"].map(LABELS))
                   for name in ("train", "test"))
    keras.utils.set_random_seed(seed)
    classifier = kb.BertClassifier.from_preset(str(preset), labels=list(LABELS.values()),
                                               sequence_length=SEQUENCE_LENGTH)
    classifier.fit(train, epochs=FINE_TUNING_EPOCHS, batch_size=BATCH_SIZE, learning_rate=FINE_TUNING_LEARNING_RATE,
                   seed=seed, verbose=0)
    return classifier.evaluate(test, verbose=0)["accuracy"]


def main():
    phases = Phases()
    train, held_out = austen_chapters()
    tokenizer = kb.BertTokenizer.from_preset(PRESET)
    keras.utils.set_random_seed(0)
    mlm = kb.BertPretrainer.from_preset(PRESET, load_weights=False, next_sentence=None)
    keras.utils.set_random_seed(0)
    electra = kb.ElectraPretrainer(kb.ElectraBackbone(**kb.presets.config(PRESET)),
                                   kb.BertPreprocessor(tokenizer, sequence_length=SEQUENCE_LENGTH))
    runs = {}
    for method, pretrainer, name in (("MLM", mlm, "austen_mini_mlm"), ("ELECTRA", electra, "austen_mini_electra")):
        runs[method] = pretrain(pretrainer, train, name)
        phases.mark(f"{method} pre-training")
    held_mlm, held_electra = mlm.evaluate(held_out, verbose=0), electra.evaluate(held_out, verbose=0)
    phases.mark("held-out evaluation")
    accuracy = {method: [sentiment_accuracy(runs[method][3], seed) for seed in FINE_TUNING_SEEDS] for method in runs}
    phases.mark("fine-tuning")

    print(f"\nELECTRA vs MLM, bert_mini size from scratch, {len(train)} chapters of five Austen novels, 1 epoch of "
          f"batch {BATCH_SIZE}; UCI sentiment fine-tuning ({FINE_TUNING_EPOCHS} epochs, {FINE_TUNING_LEARNING_RATE:g}) "
          f"over seeds {', '.join(map(str, FINE_TUNING_SEEDS))}")
    print(f"| method | pre-training steps | pre-training time | time per step | est. training FLOPs per step | "
          f"UCI test accuracy (seeds {'/'.join(map(str, FINE_TUNING_SEEDS))}) | mean |")
    print("|---|---|---|---|---|---|---|")
    for method, pretrainer in (("MLM", mlm), ("ELECTRA", electra)):
        steps, seconds, per_step, _ = runs[method]
        scores = accuracy[method]
        print(f"| {method} | {steps} | {seconds:.0f} s | {per_step:.2f} s | "
              f"{training_flops_per_step(pretrainer) / 1e9:.0f} GFLOPs | {' / '.join(f'{a:.3f}' for a in scores)} | "
              f"{np.mean(scores):.3f} |")
    print(f"held-out Persuasion: MLM accuracy {held_mlm['mlm_accuracy']:.4f} (MLM model); ELECTRA generator MLM "
          f"accuracy {held_electra['mlm_accuracy']:.4f}, discriminator accuracy {held_electra['rtd_accuracy']:.4f} "
          f"on {held_electra['replaced_fraction']:.1%} replaced tokens")
    gain = np.mean(accuracy["ELECTRA"]) - np.mean(accuracy["MLM"])
    spread = max(np.ptp(accuracy["ELECTRA"]), np.ptp(accuracy["MLM"]))
    cost = (f"ELECTRA's steps took {runs['ELECTRA'][2] / runs['MLM'][2]:.2f}x the time of MLM's (estimated FLOPs "
            f"{training_flops_per_step(electra) / training_flops_per_step(mlm):.2f}x)")
    if gain > spread:
        verdict = (f"held here: at the same steps ELECTRA's mean UCI accuracy is {gain * 100:+.1f} points above MLM's, "
                   f"more than the {spread * 100:.1f}-point spread over fine-tuning seeds; {cost}")
    elif gain < -spread:
        verdict = (f"did not hold here: MLM's mean UCI accuracy is {-gain * 100:.1f} points above ELECTRA's, more "
                   f"than the {spread * 100:.1f}-point spread over fine-tuning seeds; {cost}")
    else:
        verdict = (f"did not hold here: the difference in mean UCI accuracy ({gain * 100:+.1f} points for ELECTRA) "
                   f"is within the {spread * 100:.1f}-point spread over fine-tuning seeds; {cost}")
    print(f"ELECTRA's claim (better downstream accuracy per unit of pre-training compute) {verdict}.")
    print(f"  {phases}")


if __name__ == "__main__":
    main()
