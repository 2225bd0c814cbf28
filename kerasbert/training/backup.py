"""Training that survives a kill: `fit(..., backup_dir=...)` saves the whole training state at the end of
every epoch and a new `fit` with the same folder continues after the last saved epoch.

The state is the model's weights and the optimizer's (moments, step count: `save_weights` holds both),
every random seed generator's state (dropout masks) and the data position (batches read, where a stream
continues), written as one folder `epoch-NNNN/` that appears only
when complete (see `kerasbert.atomic_files`); the older one is then deleted. With the data order a pure
function of the seed and the epoch (`Task.fit` replays the shuffles of the finished epochs), a run killed
mid-epoch and started again ends with the weights of a run never interrupted.

Unlike `keras.callbacks.BackupAndRestore`, the seed-generator states are kept (else dropout draws other masks
after a restart) and a kill between two files cannot pair new weights with an old epoch number.

Examples:
    >>> classifier.fit(train_df, epochs=3, backup_dir="run1_backup")   # killed in epoch 2? run it again
"""

import json
import re
import shutil
from pathlib import Path

import keras
import numpy as np

from kerasbert.atomic_files import atomic_path

STATE_FOLDER = re.compile(r"^epoch-(\d{4,})$")


def seed_generators(model):
    """Every `keras.random.SeedGenerator` of `model`'s layers, in a stable order."""
    generators = []
    for layer in model._flatten_layers():
        generators.extend(getattr(layer, "_seed_generators", []))
    return generators


class TrainingBackup(keras.callbacks.Callback):
    """Save the training state into `backup_dir` after each epoch; `restore(model)` loads the latest.

    The folder is deleted when `fit` completes (as Keras' `BackupAndRestore` does), so the same command
    run again after success trains anew.
    """

    def __init__(self, backup_dir, delete_when_done=True):
        super().__init__()
        self.backup_dir = Path(backup_dir)
        self.delete_when_done = delete_when_done
        if self.backup_dir.exists() and not self.backup_dir.is_dir():
            raise ValueError(f"backup_dir={str(backup_dir)!r} is a file; give a folder (it is created if missing).")

    def latest(self):
        """`(epochs done, folder)` of the newest complete state, or `(0, None)` when there is none."""
        if not self.backup_dir.is_dir():
            return 0, None
        saved = [(int(match.group(1)), path) for path in self.backup_dir.iterdir()
                 if path.is_dir() and (match := STATE_FOLDER.match(path.name))]
        return max(saved) if saved else (0, None)

    def batches_read(self):
        """The data position of the newest state: the batches trained on when it was saved (0 without one)."""
        _, folder = self.latest()
        if folder is None:
            return 0
        return json.loads((folder / "state.json").read_text(encoding="utf-8")).get("batches_read", 0)

    def restore(self, model):
        """Load the newest state into `model` (built, optimizer built); returns the epochs it had done."""
        epochs_done, folder = self.latest()
        if folder is None:
            return 0
        model.load_weights(str(folder / "model.weights.h5"))
        states = np.load(folder / "seed_generators.npz")
        generators = seed_generators(model)
        if len(states.files) != len(generators):
            raise ValueError(f"{folder} holds the state of another model ({len(states.files)} seed generators, this "
                             f"one has {len(generators)}). Use a new backup_dir for a new model.")
        for index, generator in enumerate(generators):
            generator.state.assign(states[f"generator_{index}"])
        return epochs_done

    def on_epoch_end(self, epoch, logs=None):
        self.backup_dir.mkdir(parents=True, exist_ok=True)
        with atomic_path(self.backup_dir / f"epoch-{epoch + 1:04d}") as folder:
            folder.mkdir()
            self.model.save_weights(str(folder / "model.weights.h5"))
            np.savez(folder / "seed_generators.npz", **{
                f"generator_{index}": keras.ops.convert_to_numpy(generator.state.value)
                for index, generator in enumerate(seed_generators(self.model))})
            (folder / "state.json").write_text(json.dumps({"epochs_done": epoch + 1,
                                                           "batches_read": (epoch + 1) * self.params["steps"]}),
                                               encoding="utf-8")
        for done, path in [(int(m.group(1)), p) for p in self.backup_dir.iterdir()
                           if (m := STATE_FOLDER.match(p.name))]:
            if done < epoch + 1:
                shutil.rmtree(path)

    def on_train_end(self, logs=None):
        if self.delete_when_done and self.backup_dir.is_dir():
            shutil.rmtree(self.backup_dir)
