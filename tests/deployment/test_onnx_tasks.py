"""Task models exported to ONNX folders (issue 33, section 4), run by ONNX Runtime through `OnnxTask` and served.

Reference: the same Keras task on the same raw text (real UCI reviews, real sentences). Bars: float32 ONNX
probabilities and per-token scores within 1e-4 of Keras and the same labels; ONNX Runtime int8 on real
all-MiniLM-L6-v2 weights within 0.05 probability of float32 with the same labels. These run in `make test`'s
torch run (the trace runs in process there); tests/deployment/test_onnx_from_tensorflow.py exports from TensorFlow.
"""

import os

import click
import httpx
import keras
import numpy as np
import pytest

from kerasbert.cli.serve_command import served_model
from kerasbert.deployment.onnx_runtime import OnnxTask, load_onnx_task
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.serving import ServingLimits, create_app
from kerasbert.tasks import BertClassifier, BertTokenClassifier
from kerasbert.tasks.task_files import load_task

pytest.importorskip("onnxruntime", reason="pip install 'kerasbert[onnx]'")
onnx = pytest.importorskip("onnx", reason="pip install 'kerasbert[onnx]'")
pytestmark = pytest.mark.under_torch


@pytest.fixture(scope="module")
def classifier_and_folder(tiny_classifier_file, tmp_path_factory):
    classifier = keras.saving.load_model(tiny_classifier_file)
    folder = classifier.export(tmp_path_factory.mktemp("onnx") / "classifier_onnx", format="onnx")
    return classifier, folder


def probabilities(model, texts):
    return np.stack(model.predict(texts, verbose=0)["probabilities"])


def test_onnx_folder_predicts_and_evaluates_raw_text_as_the_keras_classifier(classifier_and_folder, uci_reviews):
    classifier, folder = classifier_and_folder
    assert sorted(os.listdir(folder)) == ["kerasbert.json", "model.onnx", "tokenizer"]
    onnx_classifier = load_task(folder)
    assert isinstance(onnx_classifier, OnnxTask) and onnx_classifier.quantization is None
    assert onnx_classifier.keras_task.native_reader is not None  # WordPiece: its texts are read in Rust
    texts = uci_reviews[1]["text"].tolist() + [""]  # an empty text predicts too
    expected, got = classifier.predict(texts, verbose=0), onnx_classifier.predict(texts, verbose=0)
    assert list(got.columns) == list(expected.columns) and got["label"].tolist() == expected["label"].tolist()
    difference = np.abs(np.stack(got["probabilities"]) - np.stack(expected["probabilities"])).max()
    print(f"ONNX Runtime vs Keras: max |probability difference| {difference:.2e}")
    assert difference <= 1e-4
    expected_scores, got_scores = classifier.evaluate(uci_reviews[1], verbose=0), onnx_classifier.evaluate(
        uci_reviews[1], verbose=0)
    assert got_scores.keys() == expected_scores.keys()
    assert all(abs(got_scores[key] - expected_scores[key]) <= 1e-4 for key in expected_scores)


def test_an_onnx_task_refuses_training_and_saving_with_the_way_out(classifier_and_folder):
    onnx_classifier = load_onnx_task(classifier_and_folder[1])
    for name in ("fit", "save", "quantize"):
        with pytest.raises(AttributeError, match=r"predicts and evaluates.*Load the model's \.keras file"):
            getattr(onnx_classifier, name)


def test_per_token_outputs_of_a_token_classifier_match_keras(tmp_path):
    keras.utils.set_random_seed(0)
    backbone = BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=32, intermediate_dim=64)
    preprocessor = BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=64,
                                                pad_to_sequence_length=False)
    tagger = BertTokenClassifier(backbone, preprocessor, labels=["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])
    onnx_tagger = load_onnx_task(tagger.export(tmp_path / "tagger_onnx", format="onnx"))
    texts = ["Peter Blackburn met Müller-Lüdenscheidt in São Paulo, Brazil.", "Hi.",
             "The EU's farm ministers meet in Brussels on Monday."]  # three lengths: batches padded apart
    expected, got = tagger.predict(texts, verbose=0), onnx_tagger.predict(texts, verbose=0)
    assert got["tags"].tolist() == expected["tags"].tolist()
    for got_entities, expected_entities in zip(got["entities"], expected["entities"]):
        assert [{**e, "score": 0} for e in got_entities] == [{**e, "score": 0} for e in expected_entities]
        np.testing.assert_allclose([e["score"] for e in got_entities], [e["score"] for e in expected_entities],
                                   atol=1e-4)
    expected_logits, got_logits = tagger.predict_outputs(texts)[0], onnx_tagger.keras_task.predict_outputs(texts)[0]
    assert got_logits.shape == expected_logits.shape  # per token, padded to the longest batch
    assert np.abs(got_logits - expected_logits).max() <= 1e-4


def test_int8_onnx_of_real_minilm_weights_keeps_the_float_predictions(uci_reviews, tmp_path):
    classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", sequence_length=64)
    classifier.fit(uci_reviews[0], epochs=1, batch_size=8, verbose=0)
    int8_folder = classifier.export(tmp_path / "int8_onnx", format="onnx", quantize="int8")
    size = os.path.getsize(int8_folder / "model.onnx") / (4 * classifier.count_params())  # of float32 weights
    operators = [node.op_type for node in onnx.load(str(int8_folder / "model.onnx")).graph.node]
    assert operators.count("QAttention") == 6 and "Attention" not in operators  # int8 QKV fused into attention
    texts = uci_reviews[1]["text"].tolist()
    expected, got = probabilities(classifier, texts), probabilities(load_onnx_task(int8_folder), texts)
    print(f"ONNX Runtime int8: {size:.1%} of the float32 file; max |probability difference| "
          f"{np.abs(expected - got).max():.4f}")
    assert size <= 0.30
    assert np.abs(expected - got).max() < 0.05
    np.testing.assert_array_equal(got.argmax(-1), expected.argmax(-1))


def test_serve_runtime_onnx_answers_as_the_keras_model(classifier_and_folder, uci_reviews, serve_in_thread):
    classifier, folder = classifier_and_folder
    texts = uci_reviews[1]["text"].tolist()[:5]
    expected = classifier.predict(texts, verbose=0)
    with served_model(str(folder), "onnx", None) as model:  # `kerasbert serve FOLDER --runtime onnx`
        with serve_in_thread(create_app(model, ServingLimits(max_batch=4, max_wait_ms=5))) as url:
            predictions = httpx.post(f"{url}/predict", json=texts, timeout=60).json()["predictions"]
            metadata = httpx.get(f"{url}/metadata").json()
            tei = httpx.post(f"{url}/predict", json={"inputs": texts[0]}, timeout=60).json()  # TEI's shape
            info = httpx.get(f"{url}/info").json()
    assert {item["label"]: item["score"] for item in tei} == pytest.approx(
        {str(label): p for label, p in zip(classifier.labels, expected["probabilities"][0])}, abs=1e-4)
    assert info["model_type"]["classifier"]["id2label"] == {"0": "0", "1": "1"}
    assert [row["label"] for row in predictions] == expected["label"].tolist()
    np.testing.assert_allclose([row["probabilities"] for row in predictions], np.stack(expected["probabilities"]),
                               atol=1e-4)
    assert metadata["runtime"] == "onnx" and metadata["task"] == "BertClassifier" and metadata["labels"] == [0, 1]


def test_serve_options_that_do_not_fit_the_model_are_named(classifier_and_folder, tiny_classifier_file):
    with pytest.raises(click.BadParameter, match="ONNX folder; it runs with --runtime onnx"):
        with served_model(str(classifier_and_folder[1]), "keras", None):
            pass
    with pytest.raises(click.BadParameter, match="--quantize int8 exports a .keras file with --runtime onnx"):
        with served_model(str(tiny_classifier_file), None, "int8"):
            pass
