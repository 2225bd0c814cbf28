"""kerasbert.plots: each plot writes a PNG that decodes, and `write_report` writes metrics.json equal to
`evaluate`'s dict and a model card naming the data, labels, hyperparameters, metrics and versions."""

import json

import keras
import matplotlib.image
import pytest

from kerasbert import plots


def decodes(path):
    image = matplotlib.image.imread(path)
    return image.ndim == 3 and image.shape[0] > 50 and image.shape[1] > 50


def test_report_of_a_fitted_classifier(tiny_preset, uci_reviews, tmp_path):
    from kerasbert.tasks import BertClassifier

    train, test = uci_reviews
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64)
    history = classifier.fit(train, validation_data=test, epochs=2, batch_size=8, verbose=0)
    metrics = plots.write_report(classifier, tmp_path / "report", test, history=history, data_name="UCI test",
                                 training={"data": "UCI train", "rows": len(train)},
                                 hyperparameters={"epochs": 2, "batch_size": 8})
    written = json.loads((tmp_path / "report" / "metrics.json").read_text())
    assert written == pytest.approx(classifier.evaluate(test, verbose=0)) and written == pytest.approx(metrics)
    for name in ("training_curves.png", "confusion_matrix.png"):
        assert decodes(tmp_path / "report" / name)
    card = (tmp_path / "report" / "README.md").read_text()
    for expected in ("# BertClassifier", "UCI train (24 rows)", "UCI test (16 rows)", "labels (2): 0, 1",
                     "- epochs: 2", f"| accuracy | {metrics['accuracy']:.4f} |", f"- keras: {keras.__version__}"):
        assert expected in card

    counts = plots.confusion_matrix(["neg", "pos"], [0, 1, 1, 1], [0, 1, 0, 1], tmp_path / "confusion.png")
    assert counts.tolist() == [[1, 0], [1, 2]] and decodes(tmp_path / "confusion.png")
    assert decodes(plots.attention_map(classifier, "a lovely film", tmp_path / "attention.png", layer=0, head=1))
    with pytest.raises(ValueError, match="head=5: each layer has 2 heads"):
        plots.attention_map(classifier, "a lovely film", tmp_path / "attention.png", head=5)


def test_entity_scores_and_an_empty_history_is_named(tmp_path):
    per_type = {"LOC": {"precision": 0.9, "recall": 0.8, "f1": 0.847}, "PER": {"precision": 1.0, "recall": 0.5,
                                                                               "f1": 0.667}}
    assert decodes(plots.entity_scores(per_type, tmp_path / "entities.png"))
    with pytest.raises(ValueError, match="The history is empty"):
        plots.training_curves({}, tmp_path / "curves.png")
