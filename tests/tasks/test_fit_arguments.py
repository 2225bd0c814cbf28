"""`fit`'s keyword arguments are checked before any computation, and the friendly forms work:
`validation_split` on a DataFrame, `class_weight` by label name."""

import numpy as np
import pytest

from kerasbert.tasks import BertClassifier


@pytest.fixture(scope="module")
def classifier(tiny_preset):
    return BertClassifier.from_preset(tiny_preset, sequence_length=64, labels=["negative", "positive"], dropout=0.0)


@pytest.mark.parametrize("arguments, error, message", [
    ({"learning_rate": -1e-3}, ValueError, "learning_rate must be a positive number"),
    ({"learning_rate": "fast"}, TypeError, "learning_rate must be a positive number"),
    ({"seed": "x"}, TypeError, "seed must be an int >= 0, got str 'x'"),
    ({"callbacks": "early"}, TypeError, "callbacks must be a list of keras.callbacks.Callback"),
    ({"callbacks": [print]}, TypeError, "callbacks must be keras.callbacks.Callback objects"),
    ({"validation_split": 2}, ValueError, "validation_split must be a fraction in (0, 1), got 2"),
    ({"class_weight": {"neutral": 2.0}}, ValueError, "class_weight has the key 'neutral', which is not a label"),
    ({"class_weight": {"positive": -1}}, ValueError, "class_weight['positive'] must be a number in [0, inf), got -1"),
    ({"class_weight": {"positive": "2"}}, TypeError, "class_weight['positive'] must be a number in [0, inf), got str"),
])
def test_bad_fit_arguments_are_named_and_nothing_trains(classifier, uci_reviews, arguments, error, message):
    before = [np.array(weight) for weight in classifier.get_weights()]
    train = uci_reviews[0].assign(label=lambda df: df["label"].map({0: "negative", 1: "positive"}))
    copy = train.copy()
    with pytest.raises(error, match=None) as raised:
        classifier.fit(train, epochs=1, batch_size=8, verbose=0, **arguments)
    assert message in str(raised.value)
    assert all(np.array_equal(a, b) for a, b in zip(before, classifier.get_weights()))
    assert train.equals(copy)


@pytest.mark.parametrize("data", [5, 2.5, b"bytes", True])
def test_predict_of_a_number_or_bytes_is_a_type_error(classifier, data):
    with pytest.raises(TypeError, match="Cannot read .* as data: pass a DataFrame"):
        classifier.predict(data)


def test_dropout_outside_zero_one_is_named(tiny_preset):
    with pytest.raises(ValueError, match=r"dropout must be a number in \[0, 1\), got 1.5"):
        BertClassifier.from_preset(tiny_preset, num_classes=2, dropout=1.5)


def test_validation_split_holds_out_the_last_rows_and_class_weight_takes_label_names(classifier, uci_reviews):
    train = uci_reviews[0].assign(label=lambda df: df["label"].map({0: "negative", 1: "positive"}))
    history = classifier.fit(train, epochs=1, batch_size=8, verbose=0, validation_split=0.25,
                             class_weight={"negative": 1.0, "positive": 3.0})
    assert "val_loss" in history.history
    held_out = classifier.evaluate(train.iloc[18:], batch_size=8, verbose=0)  # the last 25% of 24 rows
    assert held_out["loss"] == pytest.approx(history.history["val_loss"][-1], rel=1e-5)
    assert classifier.class_weight_by_index({"positive": 3.0, 0: 1.0}) == {1: 3.0, 0: 1.0}
