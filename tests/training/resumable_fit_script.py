"""A fine-tune run as a separate process for test_resume.py: `python resumable_fit_script.py PRESET BACKUP OUT
[KILL_AT]`. With KILL_AT=epoch:batch it kills itself with SIGKILL at that batch, mid-epoch."""

import os
import signal
import sys
from pathlib import Path

import keras
import numpy as np

from kerasbert.data.shipped import load_dataset
from kerasbert.tasks import BertClassifier

sys.path.insert(0, str(Path(__file__).parent))
from at_batch import AtBatch  # noqa: E402


def kill():
    os.kill(os.getpid(), signal.SIGKILL)


preset, backup_dir, output = sys.argv[1:4]
callbacks = [AtBatch(*map(int, sys.argv[4].split(":")), kill)] if len(sys.argv) > 4 else []
keras.utils.set_random_seed(0)
train = load_dataset("uci_sentiment", "train").iloc[:40]
classifier = BertClassifier.from_preset(preset, labels=[0, 1], sequence_length=32)
classifier.fit(train, epochs=3, batch_size=8, backup_dir=backup_dir, callbacks=callbacks, verbose=0)
np.savez(output, *[keras.ops.convert_to_numpy(v) for v in classifier.weights],
         iterations=keras.ops.convert_to_numpy(classifier.optimizer.iterations))
