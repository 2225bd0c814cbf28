"""A quick bit-for-bit check that a change leaves fine-tuning as it was: 20 steps on SST-2, then predictions.

Fine-tunes all_minilm_l6_v2_en with seed 0 on the first 640 rows of the paired benchmark's SST-2 training split
(20 batches of 32, the defaults of `fit`) and prints the last training loss and an MD5 of the probabilities on
256 held-out rows. Two trees that print the same line train and predict bit-identically; a full paired run
(`quality_paired.py`) takes an hour, this two minutes. Used to bisect the SST-2 question of the house issue.

    PYTHONPATH=/path/to/tree .venv/bin/python benchmarks/fit_fingerprint.py [rows] [seed]
"""

import hashlib
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402
import numpy as np  # noqa: E402
from quality_paired import sst2_split  # noqa: E402

import kerasbert as kb  # noqa: E402


def main(rows=640, seed=0):
    train, test = sst2_split()
    keras.utils.set_random_seed(seed)
    classifier = kb.BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2)
    history = classifier.fit(train.head(rows), epochs=1, batch_size=32, seed=seed, verbose=0)
    probabilities = np.stack(classifier.predict(test.head(256), verbose=0)["probabilities"].to_numpy())
    print(json.dumps({"loss": float(history.history["loss"][-1]),
                      "probabilities_md5": hashlib.md5(np.round(probabilities, 5).tobytes()).hexdigest()[:10],
                      "kerasbert": os.path.dirname(kb.__file__)}))


if __name__ == "__main__":
    main(*[int(argument) for argument in sys.argv[1:3]])
