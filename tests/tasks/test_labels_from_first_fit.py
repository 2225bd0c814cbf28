"""`BertClassifier.from_preset(preset).fit(df)` as the design card writes it: a task built without
labels learns them (names, number, problem type) on its first fit; also the token classifier's tags."""

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import kerasbert as kb

REVIEWS = pd.DataFrame({
    "text": ["a wonderful film", "dull and far too long", "loved every minute", "i want my money back",
             "the cast is superb", "a waste of an evening", "funny and warm", "boring plot, flat acting"],
    "label": ["pos", "neg", "pos", "neg", "pos", "neg", "pos", "neg"],
})
SENTENCES = pd.DataFrame({
    "tokens": [["Anna", "lives", "in", "Paris"], ["Bob", "met", "Carla"], ["Rome", "is", "old"]],
    "tags": [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "B-PER"], ["B-LOC", "O", "O"]],
})


@pytest.mark.all_backends  # the weights created after build are tracked on every backend
def test_classifier_learns_its_labels_then_saves_and_reloads(tiny_backbone, real_preprocessor, tmp_path):
    classifier = kb.BertClassifier(tiny_backbone, real_preprocessor)
    with pytest.raises(ValueError, match="does not know its labels yet: fit it"):
        classifier.predict(["too early"])
    given = REVIEWS.copy()
    classifier.fit(REVIEWS, epochs=1, batch_size=4, verbose=0)
    pd.testing.assert_frame_equal(REVIEWS, given)
    assert classifier.labels == ["neg", "pos"] and classifier.num_classes == 2
    assert classifier.problem_type == "binary" and classifier.logits_layer.kernel.shape == (32, 2)
    predicted = classifier.predict(REVIEWS["text"])
    assert set(predicted["label"]) <= {"neg", "pos"}

    classifier.save(tmp_path / "learned.keras")
    reloaded = keras.saving.load_model(tmp_path / "learned.keras")
    assert reloaded.labels == ["neg", "pos"]
    np.testing.assert_allclose(np.stack(reloaded.predict(REVIEWS["text"])["probabilities"]),
                               np.stack(predicted["probabilities"]), atol=1e-5)


def test_regression_and_token_tags_are_learned_too(tiny_backbone, real_preprocessor):
    scores = REVIEWS.assign(label=np.linspace(0.0, 5.0, len(REVIEWS)))
    regressor = kb.BertClassifier(tiny_backbone, real_preprocessor)
    regressor.fit(scores, epochs=1, batch_size=4, verbose=0)
    assert regressor.problem_type == "regression" and regressor.num_classes == 1

    tagger = kb.BertTokenClassifier(kb.BertBackbone(**tiny_backbone.get_config()), real_preprocessor)
    tagger.fit(SENTENCES, epochs=1, batch_size=3, verbose=0)
    assert tagger.labels == ["B-LOC", "B-PER", "O"] and tagger.logits_layer.kernel.shape == (32, 3)
    assert len(tagger.predict(SENTENCES["tokens"])) == 3


def test_a_classifier_built_with_num_classes_only_predicts_class_ids_until_fit_names_them(
        tiny_backbone, real_preprocessor, tmp_path):
    classifier = kb.BertClassifier(tiny_backbone, real_preprocessor, num_classes=2)
    before = classifier.predict(REVIEWS["text"])
    assert set(before["label"]) <= {0, 1} and classifier.output_labels == [0, 1]
    np.testing.assert_array_equal(before["label"], np.stack(before["probabilities"]).argmax(-1))
    classifier.export(tmp_path / "ids")
    exported = tf.saved_model.load(str(tmp_path / "ids"))  # kept: its functions need the object alive
    served = exported.serve(tf.constant(REVIEWS["text"].tolist()))
    assert [label.decode() for label in served["label"].numpy()] == [str(label) for label in before["label"]]

    classifier.fit(REVIEWS, epochs=1, batch_size=4, verbose=0)  # names may still be learned from the data
    assert classifier.labels == ["neg", "pos"] and classifier.output_labels == ["neg", "pos"]
    assert set(classifier.predict(REVIEWS["text"])["label"]) <= {"neg", "pos"}
