"""LabelEncoder: problem type inference, round trips (names in, names out), config, weights."""

import csv
import json

import numpy as np
import pandas as pd
import pytest

from kerasbert.data.labels import LabelEncoder
from kerasbert.data.shipped import load_dataset


def round_trip(encoder, labels):
    """Encode, turn targets into the outputs a model would give, decode."""
    encoded = encoder.encode(labels)
    restored = LabelEncoder.from_config(json.loads(json.dumps(encoder.get_config())))
    if encoder.problem_type == "multilabel":
        return restored.decode(encoded)
    return restored.decode(np.eye(encoder.num_classes)[encoded])


def test_real_string_labels_round_trip():
    sources = load_dataset("uci_sentiment", "train")["source"]  # "amazon" / "yelp"
    encoder = LabelEncoder().fit(sources)
    assert encoder.problem_type == "binary"
    assert encoder.labels == ["amazon", "yelp"]
    assert round_trip(encoder, sources).tolist() == sources.tolist()


def test_real_int_labels_are_binary_with_balanced_weights():
    labels = load_dataset("uci_sentiment", "train")["label"]
    encoder = LabelEncoder().fit(labels)
    assert (encoder.problem_type, encoder.labels) == ("binary", [0, 1])
    assert encoder.encode(labels).dtype == np.int32
    assert encoder.class_weight("balanced") == {0: 1.0, 1: 1.0}


def test_user_order_is_kept_and_multiclass_inferred():
    labels = pd.Series(["neutral", "pos", "neg", "pos"])
    encoder = LabelEncoder(labels=["neg", "neutral", "pos"]).fit(labels)
    assert encoder.problem_type == "multiclass"
    assert encoder.encode(labels).tolist() == [1, 2, 0, 2]
    assert round_trip(encoder, labels).tolist() == labels.tolist()
    assert LabelEncoder().fit(labels).labels == ["neg", "neutral", "pos"]


def test_bool_and_whole_float_labels_are_classes():
    assert LabelEncoder().fit([True, False, True]).labels == [False, True]
    encoder = LabelEncoder().fit(pd.Series([0.0, 1.0, 1.0]))
    assert (encoder.problem_type, encoder.labels) == ("binary", [0, 1])
    assert encoder.decode(np.array([1, 0])).tolist() == [1, 0]


def test_fractional_floats_are_regression_and_override_works():
    sts_b = pd.read_csv("/work/shared/data/glue/STS-B/train.tsv", sep="\t", quoting=csv.QUOTE_NONE)
    scores = sts_b["score"]
    encoder = LabelEncoder().fit(scores)
    assert encoder.problem_type == "regression" and encoder.num_classes == 1
    np.testing.assert_allclose(encoder.decode(encoder.encode(scores)[:, None]), scores, rtol=1e-6)
    stars = LabelEncoder(problem_type="regression").fit([1.0, 5.0, 3.0])
    assert stars.encode([1.0, 5.0]).tolist() == [1.0, 5.0]


def test_multilabel_round_trip():
    labels = pd.Series([["sports", "politics"], ("music",), {"politics"}, []])
    encoder = LabelEncoder().fit(labels)
    assert (encoder.problem_type, encoder.labels) == ("multilabel", ["music", "politics", "sports"])
    np.testing.assert_array_equal(
        encoder.encode(labels), [[0, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 0]]
    )
    assert round_trip(encoder, labels) == [["politics", "sports"], ["music"], ["politics"], []]
    assert encoder.decode(np.array([[0.7, 0.2, 0.51]]), threshold=0.5) == [["music", "sports"]]


def test_decode_accepts_indices_scores_and_binary_probabilities():
    encoder = LabelEncoder(labels=["neg", "pos"], problem_type="binary")
    assert encoder.decode(np.array([1, 0])).tolist() == ["pos", "neg"]
    assert encoder.decode(np.array([[2.0, -1.0], [0.1, 0.3]])).tolist() == ["neg", "pos"]
    assert encoder.decode(np.array([0.2, 0.8])).tolist() == ["neg", "pos"]
    assert encoder.decode(np.array([[0.8]]), threshold=0.9).tolist() == ["neg"]
    with pytest.raises(ValueError, match=r"Cannot decode outputs of shape \(2, 3\)"):
        encoder.decode(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"Class indices must be in \[0, 2\)"):
        encoder.decode(np.array([2]))


def test_unseen_label_names_label_row_and_known_labels():
    encoder = LabelEncoder().fit(["neg", "pos"])
    with pytest.raises(ValueError) as error:
        encoder.encode(pd.Series(["pos", "neutral", "neutral"], index=[7, 8, 9]))
    message = str(error.value)
    assert "Label 'neutral' at row 8" in message
    assert "2 row(s)" in message and "['neg', 'pos']" in message
    with pytest.raises(ValueError, match="Label 'art' at row 1"):
        LabelEncoder().fit([["a"], ["b"]]).encode([["a"], ["b", "art"]])
    with pytest.raises(ValueError, match="Label 'c' at row 2"):
        LabelEncoder(labels=["a", "b"]).fit(["a", "b", "c"])


def test_config_is_plain_json_and_rebuilds_a_ready_encoder():
    encoder = LabelEncoder().fit(np.array([3, 1, 2, 1], dtype=np.int64))
    config = encoder.get_config()
    assert config == {"labels": [1, 2, 3], "problem_type": "multiclass"}
    assert all(type(label) is int for label in config["labels"])
    restored = LabelEncoder.from_config(json.loads(json.dumps(config)))
    assert restored.is_fitted
    assert restored.decode(restored.encode([3, 1])).tolist() == [3, 1]


def test_class_weight_is_n_samples_over_n_classes_times_count():
    encoder = LabelEncoder().fit(["a"] * 6 + ["b"] * 3 + ["c"])
    assert encoder.class_weight("balanced") == pytest.approx(
        {0: 10 / (3 * 6), 1: 10 / (3 * 3), 2: 10 / (3 * 1)}
    )
    with pytest.raises(ValueError, match="never occur"):
        LabelEncoder(labels=["a", "b", "z"]).fit(["a", "b"]).class_weight("balanced")
    with pytest.raises(ValueError, match="'multilabel'"):
        LabelEncoder().fit([["a"], ["b"]]).class_weight("balanced")
    with pytest.raises(ValueError, match="was not fitted"):
        LabelEncoder(["a", "b"], "binary").class_weight("balanced")
    with pytest.raises(ValueError, match="Unknown class weight strategy 'inverse'"):
        encoder.class_weight("inverse")


def test_configuration_errors():
    with pytest.raises(ValueError, match="only one class"):
        LabelEncoder().fit(["pos", "pos"])
    with pytest.raises(ValueError, match="'binary' needs exactly 2 classes, got 3"):
        LabelEncoder(problem_type="binary").fit(["a", "b", "c"])
    with pytest.raises(ValueError, match="'b' more than once"):
        LabelEncoder(labels=["a", "b", "b"])
    with pytest.raises(ValueError, match="leave labels=None"):
        LabelEncoder(labels=["a"], problem_type="regression")
    with pytest.raises(ValueError, match="call fit"):
        LabelEncoder(labels=["a", "b"]).encode(["a"])
    with pytest.raises(ValueError, match="every list is empty"):
        LabelEncoder().fit([[], []])
