"""A fine-tune run as a separate process for test_resume.py: `python resumable_fit_script.py PRESET BACKUP OUT
[KILL_AT]`. With KILL_AT=epoch:batch it kills itself with SIGKILL at that batch, mid-epoch."""

import os
import signal
import sys

import keras
import numpy as np

from kerasbert.data.shipped import load_dataset
from kerasbert.tasks import BertClassifier


class KillAt(keras.callbacks.Callback):
    def __init__(self, epoch, batch):
        super().__init__()
        self.epoch, self.batch, self.current_epoch = epoch, batch, 0

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.current_epoch, batch) == (self.epoch, self.batch):
            os.kill(os.getpid(), signal.SIGKILL)


preset, backup_dir, output = sys.argv[1:4]
callbacks = [KillAt(*map(int, sys.argv[4].split(":")))] if len(sys.argv) > 4 else []
keras.utils.set_random_seed(0)
train = load_dataset("uci_sentiment", "train").iloc[:40]
classifier = BertClassifier.from_preset(preset, labels=[0, 1], sequence_length=32)
classifier.fit(train, epochs=3, batch_size=8, backup_dir=backup_dir, callbacks=callbacks, verbose=0)
np.savez(output, *[keras.ops.convert_to_numpy(v) for v in classifier.weights],
         iterations=keras.ops.convert_to_numpy(classifier.optimizer.iterations))
