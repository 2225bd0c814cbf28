"""What users hand to `fit`/`predict`: one string, empty text, no rows, bad counts, repeated columns."""

import keras
import numpy as np
import pandas as pd
import pytest

import kerasbert as kb

REVIEWS = pd.DataFrame({"text": ["A wonderful, moving film.", "Dull plot; the battery died.", "Great phone.",
                                 "Awful service."], "label": ["pos", "neg", "pos", "neg"]})


@pytest.fixture
def classifier(tiny_backbone, real_preprocessor):
    return kb.BertClassifier(tiny_backbone, real_preprocessor, labels=["neg", "pos"])


def test_one_string_is_one_row_and_empty_text_is_predicted(classifier, tmp_path):
    one = classifier.predict("A wonderful, moving film.")
    assert len(one) == 1
    np.testing.assert_array_equal(one["probabilities"][0],
                                  classifier.predict(["A wonderful, moving film."])["probabilities"][0])
    texts = ["", "Great phone.", "   "]
    expected = np.stack(classifier.predict(texts)["probabilities"])
    assert expected.shape == (3, 2)

    classifier.save(tmp_path / "clf.keras")
    reloaded = keras.saving.load_model(tmp_path / "clf.keras")
    np.testing.assert_allclose(np.stack(reloaded.predict(texts)["probabilities"]), expected, atol=1e-6)
    # (the SavedModel on an empty text: test_bert_classifier.py::test_exported_savedmodel_serves_raw_strings)


def test_no_rows_give_an_empty_result(classifier, tiny_backbone, real_preprocessor):
    empty = classifier.predict([])
    assert len(empty) == 0 and list(empty.columns) == ["label", "score", "probabilities", "truncated"]
    tagger = kb.BertTokenClassifier(kb.BertBackbone.from_config(tiny_backbone.get_config()), real_preprocessor,
                                    labels=["O", "B-PER"])
    assert len(tagger.predict([])) == 0
    tags = tagger.predict(["", "Ada wrote it."])
    assert tags["words"].tolist() == [[], ["Ada", "wrote", "it", "."]]
    with pytest.raises(ValueError, match="has no rows"):
        classifier.evaluate(REVIEWS.head(0))
    with pytest.raises(ValueError, match="no rows"):
        tagger.evaluate(pd.DataFrame({"tokens": [], "tags": []}))


def test_every_task_model_predicts_an_empty_text_or_names_the_column(tiny_backbone, real_preprocessor):
    def backbone():
        return kb.BertBackbone.from_config(tiny_backbone.get_config())

    tagger = kb.BertTokenClassifier(backbone(), real_preprocessor, labels=["O", "B-PER"])
    assert tagger.predict([""])[["words", "tags", "entities"]].values.tolist() == [[[], [], []]]
    assert tagger.predict(["   "])["words"].tolist() == [[]]
    assert len(kb.BertTextEncoder(backbone(), real_preprocessor).predict([""])["embedding"][0]) == 32
    refused = [
        (kb.BertMaskedLM(backbone(), real_preprocessor), [""], "'text'"),
        (kb.BertQuestionAnswerer(backbone(), real_preprocessor, max_question_length=16, doc_stride=16),
         pd.DataFrame({"question": [""], "context": ["Ada wrote it."]}), "'question'"),
        (kb.BertMultipleChoice(backbone(), real_preprocessor, num_choices=2),
         pd.DataFrame({"context": [""], "endings": [["yes", "no"]]}), "'context'"),
        (kb.BertSeq2Seq(backbone(), real_preprocessor, max_source_length=30, max_target_length=20), [""], "'source'"),
    ]
    for model, data, column in refused:
        with pytest.raises(ValueError, match=f"(?s)Column {column} .* empty or only whitespace"):
            model.predict(data)


@pytest.mark.parametrize("arguments, error, message", [
    ({"batch_size": 0}, ValueError, "batch_size must be an int of at least 1, got 0"),
    ({"batch_size": True}, TypeError, "batch_size must be an int of at least 1, got bool True"),
    ({"batch_size": "8"}, TypeError, "got str '8'"),
    ({"epochs": 0}, ValueError, "epochs must be an int of at least 1, got 0"),
    ({"epochs": 1.5}, TypeError, "epochs must be an int"),
])
def test_counts_are_checked_before_any_work(classifier, arguments, error, message):
    with pytest.raises(error, match=message):
        classifier.fit(REVIEWS, **arguments)
    assert not classifier.compiled  # nothing ran


def test_missing_data_and_repeated_columns_are_named(classifier):
    for method in (classifier.fit, classifier.predict, classifier.evaluate):
        with pytest.raises(TypeError, match="No data was given"):
            method(None)
    repeated = pd.concat([REVIEWS, REVIEWS[["text"]]], axis=1)
    before = repeated.copy()
    with pytest.raises(ValueError, match="more than one column named 'text'"):
        classifier.fit(repeated)
    pd.testing.assert_frame_equal(repeated, before)
    with pytest.raises(ValueError, match="not usable text"):
        classifier.fit(REVIEWS.assign(text=["", "Dull.", "Great.", "Awful."]))


def test_sequence_length_beyond_the_position_table_is_refused(tiny_backbone, real_preprocessor, minilm_path):
    with pytest.raises(ValueError, match=r"sequence_length=1024 is longer than the backbone's position table "
                                         r"\(max_sequence_length=512\)"):
        kb.BertClassifier.from_preset(str(minilm_path), num_classes=2, sequence_length=1024)
    with pytest.raises(TypeError, match="sequence_length must be an int"):
        kb.BertClassifier.from_preset(str(minilm_path), num_classes=2, sequence_length="128")
    long_preprocessor = kb.BertPreprocessor(real_preprocessor.tokenizer, sequence_length=256)
    with pytest.raises(ValueError, match=r"sequence_length=256 .* \(max_sequence_length=128\)"):
        kb.BertClassifier(tiny_backbone, long_preprocessor, num_classes=2)
    assert kb.BertQuestionAnswerer.from_preset(str(minilm_path), load_weights=False).sequence_length == 384
    assert kb.BertClassifier.from_preset(str(minilm_path), num_classes=2, load_weights=False).sequence_length == 512


@pytest.mark.parametrize("value, error", [(True, TypeError), ("2", TypeError), (0, ValueError), (2.0, TypeError)])
def test_output_counts_are_positive_ints(tiny_backbone, real_preprocessor, value, error):
    with pytest.raises(error, match="num_classes must be an int of at least 1"):
        kb.BertClassifier(tiny_backbone, real_preprocessor, num_classes=value)
    with pytest.raises(error, match="num_tags must be an int of at least 1"):
        kb.BertTokenClassifier(tiny_backbone, real_preprocessor, num_tags=value)


def test_validation_data_with_other_columns_is_named_before_training(classifier):
    weights = [w.copy() for w in classifier.get_weights()]
    with pytest.raises(ValueError, match="In validation_data: Column 'label' not found"):
        classifier.fit(REVIEWS, validation_data=REVIEWS.rename(columns={"label": "stars"}), batch_size=2)
    assert all(np.array_equal(a, b) for a, b in zip(weights, classifier.get_weights()))  # nothing trained
