"""Atomic saves (a failure mid-write leaves the previous file whole under the final name) and named errors
for truncated or corrupt model files; Keras callbacks pass through a task model's fit."""

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.atomic_files import atomic_path
from kerasbert.presets.checkpoint import CheckpointError
from kerasbert.presets.loading import load_checkpoint
from kerasbert.tasks import BertClassifier, load_task


def test_a_failed_write_leaves_the_old_file_and_no_partial_one(tmp_path):
    target = tmp_path / "model.keras"
    target.write_bytes(b"the complete old file")
    with pytest.raises(RuntimeError, match="killed"):
        with atomic_path(target) as temporary:
            temporary.write_bytes(b"half of the new")
            raise RuntimeError("killed mid-save")
    assert target.read_bytes() == b"the complete old file" and [p.name for p in tmp_path.iterdir()] == ["model.keras"]


def test_save_and_export_replace_whole_files(tiny_classifier_file, tmp_path):
    model = load_task(tiny_classifier_file)
    path = tmp_path / "copy.keras"
    model.save(path)
    model.save(path)  # replaces the file in one rename
    assert [p.name for p in tmp_path.iterdir()] == ["copy.keras"]
    with pytest.raises(FileExistsError, match="pass overwrite=True"):
        model.save(path, overwrite=False)
    np.testing.assert_allclose(np.stack(load_task(path).predict(["fine"])["probabilities"]),
                               np.stack(model.predict(["fine"])["probabilities"]), atol=1e-6)


def test_truncated_files_are_named(tiny_classifier_file, tiny_preset, tmp_path):
    truncated = tmp_path / "truncated.keras"
    truncated.write_bytes(tiny_classifier_file.read_bytes()[:-2000])
    with pytest.raises(ValueError, match=r"truncated or corrupt.*Save the model again"):
        load_task(truncated)
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_task(tmp_path / "missing.keras")

    from kerasbert.families.preset_conversion import convert_preset

    hf = convert_preset(tiny_preset, tmp_path / "hf", format="hf")
    weights = hf / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_checkpoint(hf)


def test_keras_callbacks_pass_through_fit(tiny_preset, uci_reviews, tmp_path):
    train, test = uci_reviews
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64)
    stopping = keras.callbacks.EarlyStopping(monitor="val_loss", patience=1, restore_best_weights=True,
                                             start_from_epoch=0)
    history = classifier.fit(train, validation_data=test, epochs=4, batch_size=8, verbose=0, callbacks=[
        keras.callbacks.CSVLogger(str(tmp_path / "log.csv")), stopping,
        keras.callbacks.TensorBoard(str(tmp_path / "tensorboard"))])
    log = pd.read_csv(tmp_path / "log.csv")
    assert log["epoch"].tolist() == list(range(len(history.history["loss"])))
    assert log["val_loss"].tolist() == pytest.approx(history.history["val_loss"])
    assert any((tmp_path / "tensorboard").rglob("events.out.tfevents.*"))
    best = min(history.history["val_loss"])
    assert classifier.evaluate(test, verbose=0)["loss"] == pytest.approx(best, abs=1e-4)  # the best weights back
