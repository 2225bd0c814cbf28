"""Sentence similarity regression: all_minilm_l6_v2_en on GLUE STS-B.

Protocol (issue 4): full train (5,749 pairs), 2 epochs, batch 32, maximum length 128, default
AdamW 5e-5, MSE on the 0-5 score; evaluate on dev (1,500). HF transformers reference:
Pearson 0.819, Spearman 0.835. Data from `../shared/data/glue/STS-B` (or `$KERASBERT_SHARED_DATA`).

Run: `.venv/bin/python applications/glue_stsb.py`
"""

import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import kerasbert as kb  # noqa: E402

SHARED_DATA = Path(os.environ.get("KERASBERT_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def main():
    start = time.perf_counter()
    train = kb.data.load_glue_tsv(SHARED_DATA / "glue/STS-B/train.tsv", "STS-B")
    dev = kb.data.load_glue_tsv(SHARED_DATA / "glue/STS-B/dev.tsv", "STS-B")
    columns = ["text", "text_pair", "label"]
    regressor = kb.BertClassifier.from_preset("all_minilm_l6_v2_en", problem_type="regression",
                                              sequence_length=128)
    regressor.fit(train[columns], epochs=2, batch_size=32, seed=0)
    results = regressor.evaluate(dev[columns])
    elapsed = time.perf_counter() - start
    print(f"\nSTS-B (train {len(train)}, dev {len(dev)}), 2 epochs:")
    print(f"  Pearson {results['pearson']:.3f}  Spearman {results['spearman']:.3f}  MSE {results['loss']:.3f}"
          f"  (HF reference: Pearson 0.819, Spearman 0.835; must reach Pearson 0.81)")
    print(f"  wall time {elapsed:.0f} s")
    os.makedirs("runs", exist_ok=True)
    regressor.save("runs/glue_stsb.keras")


if __name__ == "__main__":
    main()
