"""A callback that acts at one batch of one epoch, mid-epoch (a crash or a kill in the resume tests)."""

import keras


class AtBatch(keras.callbacks.Callback):
    """Call `action()` after batch `batch` of epoch `epoch` (both counted from 0)."""

    def __init__(self, epoch, batch, action):
        super().__init__()
        self.epoch, self.batch, self.action, self.current_epoch = epoch, batch, action, 0

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if (self.current_epoch, batch) == (self.epoch, self.batch):
            self.action()
