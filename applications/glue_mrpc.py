"""Paraphrase detection (text pairs): all_minilm_l6_v2_en on GLUE MRPC.

Protocol (issue 4): full train (3,668 pairs), 3 epochs, batch 32, maximum length 128, default
AdamW 5e-5; evaluate on dev (408). HF transformers reference: accuracy 0.809, F1 0.868.
The GLUE files are read from `../shared/data/glue/MRPC` (or `$KERASBERT_SHARED_DATA`).

Run: `.venv/bin/python applications/glue_mrpc.py`
"""

import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import kerasbert as kb  # noqa: E402

SHARED_DATA = Path(os.environ.get("KERASBERT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def main():
    start = time.perf_counter()
    train = kb.data.load_glue_tsv(SHARED_DATA / "glue/MRPC/train.tsv", "MRPC")
    dev = kb.data.load_glue_tsv(SHARED_DATA / "glue/MRPC/dev.tsv", "MRPC")
    columns = ["text", "text_pair", "label"]
    classifier = kb.BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2, sequence_length=128)
    classifier.fit(train[columns], epochs=3, batch_size=32, seed=0)
    results = classifier.evaluate(dev[columns])
    elapsed = time.perf_counter() - start
    print(f"\nMRPC (train {len(train)}, dev {len(dev)}), 3 epochs:")
    print(f"  accuracy {results['accuracy']:.3f}  F1 {results['f1']:.3f}"
          f"  (HF reference: accuracy 0.809, F1 0.868; must reach accuracy 0.80)")
    print(f"  wall time {elapsed:.0f} s")
    os.makedirs("runs", exist_ok=True)
    classifier.save("runs/glue_mrpc.keras")


if __name__ == "__main__":
    main()
