"""ONNX export from a TensorFlow session (the trace runs in a torch subprocess) and the errors export and loading
give before any work. Reference: the same Keras classifier on real UCI reviews."""

import json
import shutil

import keras
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from kerasbert.cli import main
from kerasbert.deployment.onnx_runtime import load_onnx_task

pytest.importorskip("onnxruntime", reason="pip install 'kerasbert[onnx]'")


@pytest.fixture(scope="module")
def onnx_folder(tiny_classifier_file, tmp_path_factory):
    folder = tmp_path_factory.mktemp("from_tensorflow") / "classifier_onnx"
    result = CliRunner().invoke(main, ["export", str(tiny_classifier_file), str(folder), "--format", "onnx"])
    assert result.exit_code == 0, result.output
    return folder


def test_cli_export_from_tensorflow_then_predict_on_the_folder(onnx_folder, tiny_classifier_file, uci_reviews,
                                                               tmp_path):
    uci_reviews[1].to_csv(tmp_path / "test.csv", index=False)
    result = CliRunner().invoke(main, ["predict", str(onnx_folder), str(tmp_path / "test.csv"),
                                       "--output", str(tmp_path / "out.csv")])
    assert result.exit_code == 0, result.output
    expected = keras.saving.load_model(tiny_classifier_file).predict(uci_reviews[1], verbose=0)
    written = pd.read_csv(tmp_path / "out.csv")
    assert written["predicted_label"].tolist() == expected["label"].tolist()
    np.testing.assert_allclose(written["score"], expected["score"], atol=1e-4)


def test_export_arguments_that_cannot_work_are_named_first(tiny_classifier_file, tmp_path):
    classifier = keras.saving.load_model(tiny_classifier_file)
    with pytest.raises(ValueError, match="format='tflite'.*'saved_model'.*'onnx'"):
        classifier.export(tmp_path / "x", format="tflite")
    with pytest.raises(ValueError, match="quantize='int4'.*'int8'"):
        classifier.export(tmp_path / "x", format="onnx", quantize="int4")
    with pytest.raises(ValueError, match="quantize= applies to format='onnx'"):
        classifier.export(tmp_path / "x", quantize="int8")
    classifier.quantize("int8")
    with pytest.raises(ValueError, match="quantised by Keras.*Reload the float model.*quantize='int8'"):
        classifier.export(tmp_path / "x", format="onnx")
    assert not (tmp_path / "x").exists()


def test_a_damaged_folder_is_named_with_the_fix(onnx_folder, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(onnx_folder, broken)
    (broken / "kerasbert.json").write_text("{not json")
    with pytest.raises(ValueError, match="kerasbert.json is not valid JSON.*export the model again"):
        load_onnx_task(broken)
    (broken / "kerasbert.json").write_text(json.dumps({"format": 99, "task": {}}))
    with pytest.raises(ValueError, match="not a kerasbert ONNX config of format 1"):
        load_onnx_task(broken)
    (broken / "model.onnx").unlink()
    with pytest.raises(ValueError, match="has no model.onnx.*format='onnx'"):
        load_onnx_task(broken)
    with pytest.raises(FileNotFoundError, match="No ONNX folder"):
        load_onnx_task(tmp_path / "missing")
