"""Continued (domain) pre-training: all_minilm_l6_v2_en on five Jane Austen novels, then sentiment.

Protocol (issue 5): the all-MiniLM-L6-v2 weights (its masked-LM head is not in the checkpoint, so it
starts untrained, tied to the trained token embedding) pre-trained further with masked LM only (as
domain-adaptive pre-training usually is; one segment of up to 128 tokens, dynamic 15% masking,
80/10/10) on the chapters of the five training novels for 1 epoch, batch 32, the default AdamW 1e-4
(weight decay 0.01, 10% warmup, linear decay). Held-out MLM accuracy on *Persuasion* (masks drawn with
seed 0) before and after; then the UCI sentiment recipe (`sentiment_uci.py`, seed 0) on the original
and on the adapted weights.

Run: `.venv/bin/python applications/continue_pretraining_austen.py`; saves `runs/austen_minilm/`.
"""

from recipe_tools import Phases  # first: it quiets TensorFlow's log

import keras
from pretrain_austen import austen_chapters
from sentiment_uci import finetune_sentiment

import kerasbert as kb

PRESET, ADAPTED = "all_minilm_l6_v2_en", "runs/austen_minilm"


def main():
    phases = Phases()
    train, held_out = austen_chapters()
    keras.utils.set_random_seed(0)
    pretrainer = kb.BertPretrainer.from_preset(PRESET, next_sentence=None)
    before = pretrainer.evaluate(held_out, verbose=0)
    pretrainer.fit(train, epochs=1, batch_size=32, seed=0, verbose=2)
    after = pretrainer.evaluate(held_out, verbose=0)
    pretrainer.save_to_preset(ADAPTED)
    phases.mark("pre-training")
    accuracy = {preset: finetune_sentiment(preset)[1]["accuracy"] for preset in (PRESET, ADAPTED)}

    print(f"\nall-MiniLM-L6-v2, masked LM on {len(train)} chapters of five Austen novels, 1 epoch = "
          f"{int(pretrainer.optimizer.iterations)} steps of 32")
    print(f"  held-out (Persuasion) MLM accuracy: before {before['mlm_accuracy']:.4f} (loss "
          f"{before['mlm_loss']:.3f})  after {after['mlm_accuracy']:.4f} (loss {after['mlm_loss']:.3f})")
    print(f"  UCI sentiment accuracy (seed 0): original {accuracy[PRESET]:.3f}  after Austen pre-training "
          f"{accuracy[ADAPTED]:.3f}")
    print(f"  {phases}")


if __name__ == "__main__":
    main()
