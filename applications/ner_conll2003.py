"""Named entities: fine-tune all-MiniLM-L6-v2 on CoNLL-2003 and score it with entity-level F1.

Run: `.venv/bin/python applications/ner_conll2003.py [CONLL2003_FOLDER]` (the folder holds `train.txt`
and `test.txt`; default `../shared/data/conll2003`, or `$KERASBERT_SHARED_DATA/conll2003`).

Protocol: the first 5,000 training sentences, 3 epochs, batch 32, at most 128 WordPiece tokens, the
defaults (AdamW 5e-5, weight decay 0.01, 10% warmup then linear decay); evaluation on the 3,453 test
sentences with seqeval's entity-level micro F1. HF `BertForTokenClassification` on the same
checkpoint, data and settings reaches 0.781. The model is saved to `runs/ner_conll2003.keras`.
"""

import sys
from pathlib import Path

from recipe_tools import SHARED_DATA, Phases, data_argument, save_run  # first: it quiets TensorFlow's log

import keras

import kerasbert as kb

TRAIN_SENTENCES = 5000
TARGET_F1 = 0.77


def main(folder):
    phases = Phases()
    keras.utils.set_random_seed(0)
    train = kb.data.load_conll(Path(folder) / "train.txt").head(TRAIN_SENTENCES)
    test = kb.data.load_conll(Path(folder) / "test.txt")
    ner = kb.BertTokenClassifier.from_preset("all_minilm_l6_v2_en", num_tags=9, sequence_length=128)
    ner.fit(train, epochs=3, batch_size=32, verbose=2)
    phases.mark("training")
    results = ner.evaluate(test, verbose=0)
    phases.mark("evaluation")

    print(f"\nCoNLL-2003 test ({len(test):,} sentences), trained on {len(train):,} sentences:")
    print(f"entity F1 {results['f1']:.4f} (precision {results['precision']:.4f}, "
          f"recall {results['recall']:.4f}); HF reference 0.781, target {TARGET_F1}")
    print("per-type F1: " + ", ".join(f"{kind} {f1:.4f}" for kind, f1 in results["per_type_f1"].items()))
    print(f"word accuracy {results['accuracy']:.4f}, loss {results['loss']:.4f}")
    print(phases)
    save_run(ner, "ner_conll2003.keras")
    sentence = "Peter Blackburn of the EU met German officials in Brussels on Monday."
    example = ner.predict([sentence], verbose=0)
    print("example:", [(e["type"], e["text"], e["start"], e["end"]) for e in example["entities"][0]])
    return results["f1"] >= TARGET_F1


if __name__ == "__main__":
    sys.exit(0 if main(data_argument(SHARED_DATA / "conll2003")) else 1)
