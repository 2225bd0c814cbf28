"""Main job: fine-tune all_minilm_l6_v2_en for sentiment on the UCI Sentiment Labelled Sentences.

Protocol (issue 4): train on amazon + yelp (2,000 sentences), 1 epoch, batch 32, maximum
length 128, the default AdamW 5e-5 (weight decay 0.01, 10% warmup, linear decay); test on imdb
(1,000). HF transformers reference: accuracy 0.891.

Run: `make main` (or `.venv/bin/python applications/sentiment_uci.py`).
"""

import time

from recipe_tools import Phases, save_run  # before kerasbert: it quiets TensorFlow's log

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
    seconds = time.perf_counter() - phases.start
    path = save_run(classifier, "sentiment_uci.keras")
    examples = ["What a lovely film.", "The battery died after an hour."]
    predicted = classifier.predict(examples)
    print("\nSentiment of short reviews (UCI Sentiment Labelled Sentences)")
    print("  data    2,000 Amazon and Yelp reviews to train on, 1,000 IMDb reviews to test on")
    print(f"  model   all-MiniLM-L6-v2 ({classifier.count_params() / 1e6:.1f}M parameters), 1 epoch, batch 32")
    print(f"  time    {seconds:.0f} s to fine-tune and test")
    print(f"  result  accuracy {results['accuracy']:.3f}, F1 {results['f1']:.3f}"
          f"  (HF transformers, same data and settings: accuracy 0.891)")
    print(f"  saved   runs/{path.name}: try  .venv/bin/kerasbert predict runs/{path.name} uci_sentiment:test")
    print("          (or `source .venv/bin/activate` once, then `kerasbert predict ...`, `kerasbert serve ...`)")
    for text, label, score in zip(examples, predicted["label"], predicted["score"]):
        print(f"  {text!r} -> {label} ({score:.2f})")


if __name__ == "__main__":
    main()
