"""Main job: fine-tune all_minilm_l6_v2_en for sentiment on the UCI Sentiment Labelled Sentences.

Protocol (issue 4): train on amazon + yelp (2,000 sentences), 1 epoch, batch 32, maximum
length 128, the default AdamW 5e-5 (weight decay 0.01, 10% warmup, linear decay); test on imdb
(1,000). HF transformers reference: accuracy 0.891.

Run: `make main` (or `.venv/bin/python applications/sentiment_uci.py`).
"""

from recipe_tools import Phases, save_run  # first: it quiets TensorFlow's log

import kerasbert as kb

LABELS = {0: "negative", 1: "positive"}


def finetune_sentiment(preset="all_minilm_l6_v2_en", seed=0):
    """The UCI protocol on `preset`: returns the trained classifier and its test metrics."""
    splits = kb.data.load_dataset("uci_sentiment")
    train, test = (splits[name][["text", "label"]].assign(label=lambda d: d["label"].map(LABELS))
                   for name in ("train", "test"))
    classifier = kb.BertClassifier.from_preset(preset, labels=list(LABELS.values()), sequence_length=128)
    classifier.fit(train, epochs=1, batch_size=32, seed=seed)
    return classifier, classifier.evaluate(test)


def main():
    phases = Phases()
    classifier, results = finetune_sentiment()

    print("\nUCI sentiment (train amazon+yelp 2,000, test imdb 1,000), 1 epoch:")
    print(f"  accuracy {results['accuracy']:.3f}  F1 {results['f1']:.3f}  MCC {results['mcc']:.3f}"
          f"  (HF transformers reference: accuracy 0.891; must reach 0.88)")
    print(f"  {phases}")
    save_run(classifier, "sentiment_uci.keras")
    print(classifier.predict(["What a lovely film.", "The battery died after an hour."]))


if __name__ == "__main__":
    main()
