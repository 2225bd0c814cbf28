"""`columns=`: every task model reads its DataFrame columns by role, renamed in one argument, with errors that
name the role and the fix."""

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.tasks import BertClassifier, BertMultipleChoice, BertTokenClassifier
from kerasbert.tasks.columns import columns_from_legacy


def test_renamed_columns_are_read_and_saved(tiny_preset, uci_reviews, tmp_path):
    reviews = uci_reviews[0].rename(columns={"text": "review", "label": "stars"})
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64, columns={"text": "review",
                                                                                       "label": "stars"})
    assert classifier.columns == {"text": "review", "text_pair": "text_pair", "label": "stars"}
    classifier.fit(reviews, epochs=1, batch_size=8, verbose=0)
    assert classifier.labels == [0, 1]
    assert set(classifier.evaluate(reviews, verbose=0)) >= {"accuracy", "f1"}
    classifier.save(tmp_path / "renamed.keras")
    again = keras.saving.load_model(tmp_path / "renamed.keras")
    assert again.columns == classifier.columns
    texts = pd.DataFrame({"review": ["A wonderful film.", "Dull."]})
    np.testing.assert_allclose(np.stack(again.predict(texts, verbose=0)["probabilities"]).sum(-1), 1, atol=1e-6)
    with pytest.raises(ValueError, match=r"Column 'review' not found.*columns=\{'text': 'text'\}"):
        classifier.predict(pd.DataFrame({"text": ["A film."]}), verbose=0)
    other_names = pd.DataFrame({"text": ["A film."], "stars": [1]})  # what the message proposes is accepted
    assert len(classifier.predict(other_names, columns={"text": "text"}, verbose=0)) == 1
    assert classifier.evaluate(other_names, columns={"text": "text"}, verbose=0)["accuracy"] in (0, 1)
    assert classifier.columns["text"] == "review"  # for that call only


@pytest.mark.parametrize("task_class, columns, error, message", [
    (BertClassifier, {"txt": "review"}, ValueError,
     r"BertClassifier reads the column roles \['text', 'text_pair', 'label'\]; columns= names the unknown role "
     r"'txt'\. Name one of those roles, e.g\. columns=\{'text': 'review'\}"),
    (BertClassifier, {"text": 3}, TypeError, r"columns\['text'\] must be a column name \(a non-empty str\), got 3"),
    (BertClassifier, {"text": None}, TypeError, r"columns\['text'\] must be a column name"),
    (BertTokenClassifier, ["tokens"], TypeError, r"columns must be a dict of role -> column name"),
])
def test_bad_columns_are_named_before_any_model_is_built(tiny_preset, task_class, columns, error, message):
    with pytest.raises(error, match=message):
        task_class.from_preset(tiny_preset, sequence_length=64, columns=columns)


def test_a_multiple_choice_model_can_be_told_never_to_read_a_question(tiny_preset):
    model = BertMultipleChoice.from_preset(tiny_preset, sequence_length=64, num_choices=2,
                                           columns={"question": None})
    frame = pd.DataFrame({"context": ["The film"], "question": ["ignored"], "endings": [["moved us.", "bored us."]]})
    assert model.columns["question"] is None
    assert len(model.predict(frame, verbose=0)) == 1  # the question column is there, and never read


def test_configs_saved_with_one_key_per_column_become_columns():
    saved = {"num_classes": 2, "text_column": "review", "label_column": "stars", "dropout": 0.1}
    assert columns_from_legacy(saved, BertClassifier.default_columns) == {
        "num_classes": 2, "dropout": 0.1, "columns": {"text": "review", "label": "stars"}}
    assert columns_from_legacy({"num_classes": 2}, BertClassifier.default_columns) == {"num_classes": 2}


def test_the_arguments_of_an_earlier_kerasbert_name_todays(tiny_preset):
    with pytest.raises(TypeError, match=r"label_column, text_column: now pass columns=\{'text': 'review', "
                                        r"'label': 'stars'\}"):
        BertClassifier.from_preset(tiny_preset, text_column="review", label_column="stars")
    with pytest.raises(TypeError, match=r"doc_stride: now pass long_inputs=\{'doc_stride': 16\}"):
        BertTokenClassifier.from_preset(tiny_preset, doc_stride=16)
