"""Inputs longer than the window (issue 20, part 3): classification and tagging in overlapping windows, pooled
window logits, max-context tags, and truncation that is counted."""

import warnings

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from kerasbert.data.shipped import load_dataset
from kerasbert.data.text_windows import (
    cut_windows,
    max_context,
    window_spans,
    window_word_predictions,
    window_words,
)
from kerasbert.data.token_alignment import encode_words
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.tasks import BertClassifier, BertTokenClassifier, LongInputs
from kerasbert.tasks.bert_token_classifier import split_words
from kerasbert.tasks.window_pooling import first_windows, pool_windows, pooled_on_windows

NAMES = {"Anne", "Elliot", "Wentworth", "Walter", "Russell", "Mary", "Charles", "Musgrove", "Elizabeth", "Kellynch"}


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer.from_preset("all_minilm_l6_v2_en")


@pytest.fixture(scope="module")
def persuasion():
    """Persuasion's chapters (thousands of words each) and its long paragraphs."""
    rows = load_dataset("jane_austen", "test")
    rows = rows[~rows.is_heading]
    chapters = [" ".join(group.text) for chapter, group in rows.groupby("chapter") if chapter > 0]
    return chapters, [text for text in rows.text if len(text) > 900]


def long_texts(persuasion, count=8):
    """`count` real passages of 150-395 words: 4-11 windows each at sequence_length 64, doc_stride 16."""
    return [" ".join(text.split()[:150 + 35 * i]) for i, text in enumerate(persuasion[1][:count])]


def hf_max_context(n, room, doc_stride):
    """HF run_qa's windows and `_check_is_max_context`, written as loops: per window, per piece, whether it wins."""
    spans, start = [], 0
    while True:
        spans.append((start, min(room, n - start)))
        if start + spans[-1][1] >= n:
            break
        start += room - doc_stride
    wins = []
    for k, (start, length) in enumerate(spans):
        row = []
        for position in range(start, start + length):
            scores = [(min(position - s, s + l - 1 - position) + 0.01 * l, -i) for i, (s, l) in enumerate(spans)
                      if s <= position < s + l]
            row.append(-max(scores)[1] == k)
        wins.append(row)
    return spans, wins


# === Windows ===

def test_windows_cover_every_piece_of_a_chapter_and_overlap_by_doc_stride(tokenizer, persuasion):
    chapter = persuasion[0][0]
    pieces = tokenizer.tokenize(tf.constant([chapter]))
    total = int(pieces.row_lengths()[0])
    assert total > 3000  # a real long text
    windows, text, start, length = cut_windows(pieces, room=126, doc_stride=32)
    windows = windows.to_list()
    assert set(text.numpy().tolist()) == {0} and len(windows) == 1 + -(-(total - 126) // 94)
    assert all(len(window) <= 126 for window in windows)
    for previous, following in zip(windows, windows[1:]):
        assert previous[-32:] == following[:32]  # consecutive windows share exactly doc_stride pieces
    joined = windows[0] + [piece for window in windows[1:] for piece in window[32:]]
    assert joined == pieces[0].numpy().tolist()  # every piece, in order, nothing twice


def test_max_context_is_hfs_rule(tokenizer):
    # By hand: 7 pieces, windows of 4 sharing 2 start at 0, 2, 4. Piece 2: min(left, right) = min(2, 1) = 1 in
    # window 0, min(0, 3) = 0 in window 1 -> 0; piece 3: 0 / min(1, 2) = 1 -> 1; piece 4: min(2, 1) = 1 in
    # window 1, 0 in window 2 -> 1; piece 5: 0 in window 1, min(1, 1) = 1 in window 2 -> 2.
    text, start, length = window_spans([7], room=4, doc_stride=2)
    assert start.numpy().tolist() == [0, 2, 4] and length.numpy().tolist() == [4, 4, 3]
    assert max_context([7], text, start, length).to_list() == [
        [True, True, True, False], [False, True, True, False], [False, True, True]]
    for n, room, doc_stride in [(7, 4, 2), (50, 10, 3), (100, 30, 29), (31, 10, 0), (5, 10, 3), (700, 126, 32)]:
        spans, wins = hf_max_context(n, room, doc_stride)
        text, start, length = window_spans([n], room, doc_stride)
        assert list(zip(start.numpy().tolist(), length.numpy().tolist())) == spans
        assert max_context([n], text, start, length).to_list() == wins


def test_each_word_is_read_in_its_max_context_window(tokenizer):
    words = [["Anne", "walked", "to", "Kellynch", "with", "Lady", "Russell", "and", "her", "sister", "Mary"]]
    whole = encode_words(tokenizer, words, [list(range(11))], sequence_length=2**31 - 1, ignore_label=-1)
    # Pieces: anne walked to kelly ##nch with lady russell and her sister mary (12; word 3 has two).
    assert whole.word_ids[0, 1:-1].numpy().tolist() == [0, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 10]
    windows = window_words(whole, room=6, doc_stride=3, cls_token_id=101, sep_token_id=102, ignore_label=-1)
    pieces = whole.token_ids[0, 1:-1].numpy().tolist()
    assert windows.window_sentence.tolist() == [0, 0, 0]  # windows of 6 pieces sharing 3 start at 0, 3, 6
    assert windows.token_ids.to_list() == [[101, *pieces[start:start + 6], 102] for start in (0, 3, 6)]
    # By hand (min of the pieces left and right of a word's first piece in each window holding it):
    # "kelly" (piece 3): 2 in window 0, 0 in window 1 -> 0; "with" (5): 0 / 2 -> 1; "lady" (6): 2 / 0 -> 1;
    # "russell" (7): 1 in window 1, 1 in window 2, a tie -> the first, 1; "and" (8): 0 / 2 -> 2.
    chosen = windows.chosen_word_ids.to_list()
    found = {word: window for window, row in enumerate(chosen) for word in row if word >= 0}
    assert found == {0: 0, 1: 0, 2: 0, 3: 0, 4: 1, 5: 1, 6: 1, 7: 2, 8: 2, 9: 2, 10: 2}
    assert sum(word >= 0 for row in chosen for word in row) == 11  # every word exactly once
    assert windows.labels.to_list() == chosen  # labels (= word numbers here) only where the word is read
    assert windows.label_mask.to_list() == [[float(word >= 0) for word in row] for row in chosen]
    predictions = window_word_predictions(windows.chosen_word_ids.to_tensor(-1).numpy(), windows, [11], fill_value=-5)
    assert predictions[0].tolist() == list(range(11))


# === Classification ===

@pytest.fixture(scope="module")
def windowed(tiny_preset):
    return BertClassifier.from_preset(tiny_preset, sequence_length=64, long_inputs=LongInputs(doc_stride=16),
                                      labels=["a", "b"])


def same_weights_without_windows(classifier):
    plain = BertClassifier(classifier.backbone, classifier.preprocessor, labels=classifier.labels)  # shared backbone
    plain.logits_layer.set_weights(classifier.logits_layer.get_weights())
    return plain


def test_a_short_text_is_one_window_with_the_same_logits(windowed, uci_reviews):
    texts = uci_reviews[1]["text"].tolist()
    prepared = windowed.prepare(texts, with_labels=False)
    assert prepared.extras["window_text"].tolist() == list(range(len(texts)))  # each review fits one window
    expected = np.stack(same_weights_without_windows(windowed).predict(texts, verbose=0)["probabilities"])
    np.testing.assert_allclose(np.stack(windowed.predict(texts, verbose=0)["probabilities"]), expected, atol=1e-6)


@pytest.mark.parametrize("window_pooling", ["mean", "max"])
def test_predict_pools_the_window_logits(windowed, persuasion, window_pooling):
    texts = long_texts(persuasion, 3)
    windowed.long_inputs = LongInputs(16, window_pooling)
    try:
        prepared = windowed.prepare(texts, with_labels=False)
        window_text = prepared.extras["window_text"]
        assert np.bincount(window_text).min() >= 3
        inputs = {name: prepared.features[name].to_tensor().numpy() for name in ("token_ids", "segment_ids")}
        inputs["padding_mask"] = prepared.features["token_ids"].to_tensor(-1).numpy() >= 0
        window_logits = keras.ops.convert_to_numpy(windowed(inputs, training=False))  # one pass per window
        reduce = np.mean if window_pooling == "mean" else np.max
        by_hand = np.stack([reduce(window_logits[window_text == i], axis=0) for i in range(len(texts))])
        np.testing.assert_allclose(windowed.predict_outputs(texts, batch_size=4, verbose=0)[0], by_hand, atol=1e-5)
        probabilities = np.exp(by_hand) / np.exp(by_hand).sum(-1, keepdims=True)
        np.testing.assert_allclose(np.stack(windowed.predict(texts, verbose=0)["probabilities"]), probabilities,
                                   atol=1e-5)
    finally:
        windowed.long_inputs = LongInputs(16, "mean")


def test_the_training_pooling_equals_predicts(persuasion):
    logits = np.random.default_rng(0).normal(size=(6, 3)).astype("float32")
    window_text = np.array([0, 0, 1, 2, 2, 2], "int32")
    for pooling in ("mean", "max"):
        on_windows = keras.ops.convert_to_numpy(pooled_on_windows(logits, window_text, pooling))
        np.testing.assert_allclose(on_windows, pool_windows(logits, window_text, 3, pooling)[window_text], atol=1e-6)
    assert keras.ops.convert_to_numpy(first_windows(window_text)).tolist() == [1, 0, 1, 1, 0, 0]


def test_fit_trains_on_each_texts_pooled_logits(tiny_preset, persuasion):
    data = pd.DataFrame({"text": long_texts(persuasion, 6), "label": ["a", "b", "a", "b", "a", "b"]})
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64, long_inputs=LongInputs(16, "max"))
    history = classifier.fit(data, epochs=2, batch_size=6, learning_rate=1e-3, verbose=0)  # JAX: one shape
    assert set(history.history) == {"loss", "accuracy"} and np.isfinite(history.history["loss"]).all()
    results = classifier.evaluate(data, verbose=0)
    assert set(results) == {"loss", "accuracy", "macro_f1", "mcc", "f1"}
    # Keras' loss on the training batches (all six texts in one) is the pooled per-text loss `evaluate` computes.
    batches = classifier.batches(classifier.prepare(data, with_labels=True), with_labels=True, batch_size=6)
    x, y = next(iter(batches))
    assert x["window_text"].shape[0] > 6 and y.shape[0] == x["window_text"].shape[0]
    keras_results = keras.Model.evaluate(classifier, batches, verbose=0, return_dict=True)
    assert keras_results["loss"] == pytest.approx(results["loss"], abs=1e-5)
    assert keras_results["accuracy"] == pytest.approx(results["accuracy"])


def test_windows_in_fit_evaluate_predict_keras_file_and_export(tiny_preset, persuasion, tmp_path):
    texts = long_texts(persuasion)
    data = pd.DataFrame({"text": texts, "label": ["a", "b"] * 4})
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64, long_inputs=LongInputs(doc_stride=16))
    classifier.fit(data, epochs=1, batch_size=8, verbose=0)
    results = classifier.evaluate(data, verbose=0)
    assert 0 <= results["accuracy"] <= 1 and "truncated_rows" not in results
    predicted = classifier.predict(texts, verbose=0)
    assert len(predicted) == len(texts)
    expected = np.stack(predicted["probabilities"])

    classifier.save(tmp_path / "long.keras")
    loaded = keras.saving.load_model(tmp_path / "long.keras")
    assert loaded.long_inputs == LongInputs(doc_stride=16, window_pooling="mean")
    np.testing.assert_array_equal(np.stack(loaded.predict(texts, verbose=0)["probabilities"]), expected)

    classifier.export(tmp_path / "served")
    import tensorflow_text  # noqa: F401  (registers the WordPiece op)
    served = tf.saved_model.load(str(tmp_path / "served")).signatures["serve"](text=tf.constant(texts[::-1]))
    np.testing.assert_allclose(served["probabilities"].numpy(), expected[::-1], atol=1e-5)
    assert [label.decode() for label in served["label"].numpy()] == predicted["label"].tolist()[::-1]


def test_truncation_is_counted(tiny_preset, tokenizer, persuasion, uci_reviews):
    texts = long_texts(persuasion, 3) + uci_reviews[0]["text"].tolist()[:5]
    data = pd.DataFrame({"text": texts, "label": ["a", "b"] * 4})
    pieces = tokenizer.tokenize(tf.constant(texts)).row_lengths().numpy()
    cut = np.maximum(pieces - 62, 0)
    assert (cut > 0).sum() == 3
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        classifier.fit(data, epochs=1, batch_size=8, verbose=0)
        results = classifier.evaluate(data, verbose=0)
        classifier.predict(texts, verbose=0)  # predicting says nothing
    messages = [str(warning.message) for warning in caught if "were cut" in str(warning.message)]
    assert len(messages) == 2  # fit and evaluate
    assert messages[0].startswith("3 of 8 rows were longer than sequence_length=64 (62 pieces beside the special "
                                  f"tokens) and were cut: {cut[cut > 0].mean():.1f} pieces cut on average, "
                                  f"{cut.max()} at most.")
    assert "long_inputs=LongInputs(doc_stride=N)" in messages[0]
    assert all(warning.filename == __file__ for warning in caught if "were cut" in str(warning.message))
    assert results["truncated_rows"] == 3 and results["longest_cut_pieces"] == cut.max()
    assert results["mean_cut_pieces"] == pytest.approx(cut[cut > 0].mean())


def test_bad_window_settings_are_named_before_any_computation(tiny_preset, tmp_path):
    with pytest.raises(ValueError, match=r"doc_stride=62 leaves no room to slide: a window of sequence_length=64 "
                                         r"tokens holds 62 text pieces.*doc_stride < 62"):
        BertClassifier.from_preset(tiny_preset, sequence_length=64, long_inputs=LongInputs(doc_stride=62))
    with pytest.raises(ValueError, match=r"doc_stride=100 .*sequence_length=64"):
        BertTokenClassifier.from_preset(tiny_preset, sequence_length=64, long_inputs=LongInputs(doc_stride=100))
    with pytest.raises(ValueError, match=r"doc_stride must be an int of at least 0, got -1"):
        LongInputs(doc_stride=-1)
    with pytest.raises(TypeError, match=r"doc_stride must be an int of at least 0, got float 16.0"):
        LongInputs(doc_stride=16.0)
    with pytest.raises(ValueError, match=r"window_pooling must be 'mean' or 'max'.*'median'"):
        LongInputs(doc_stride=16, window_pooling="median")
    with pytest.raises(TypeError, match=r"long_inputs takes a LongInputs, got int 16: e.g. "
                                        r"long_inputs=LongInputs\(doc_stride=16\)"):
        BertClassifier.from_preset(tiny_preset, long_inputs=16)
    with pytest.raises(ValueError, match=r"A token classifier .* pools nothing"):
        BertTokenClassifier.from_preset(tiny_preset, long_inputs=LongInputs(16, "max"))
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64, long_inputs=LongInputs(doc_stride=16))
    pairs = pd.DataFrame({"text": ["a question"], "text_pair": ["an answer"], "label": ["yes"]})
    with pytest.raises(ValueError, match=r"does not window text pairs"):
        classifier.fit(pairs, verbose=0)
    with pytest.raises(ValueError, match=r"cache_features=True"):
        classifier.fit(pd.DataFrame({"text": ["a"], "label": ["x"]}), cache_features=True, verbose=0)


# === Token classification ===

def test_every_word_of_a_long_text_is_tagged_with_spans_in_the_text(tiny_preset, tokenizer, persuasion, tmp_path):
    texts = long_texts(persuasion, 4)
    words, starts = split_words(tokenizer, texts)
    tags = [["B-PER" if word in NAMES else "O" for word in row] for row in words]
    tagger = BertTokenClassifier.from_preset(tiny_preset, sequence_length=32, long_inputs=LongInputs(doc_stride=8))
    tagger.fit(pd.DataFrame({"tokens": words, "tags": tags}), epochs=1, batch_size=16, verbose=0)
    # Each word counts once in the loss: the weights sum to the number of words.
    prepared = tagger.prepare(pd.DataFrame({"tokens": words, "tags": tags}), with_labels=True)
    assert prepared.sample_weight.flat_values.numpy().sum() == sum(map(len, words))

    predicted = tagger.predict(texts, verbose=0)
    assert [len(row) for row in predicted["tags"]] == [len(row) for row in words]
    assert predicted["words"].tolist() == words
    # Logits that say B-PER exactly on the names: every name of the whole text comes back with its span.
    prepared = tagger.prepare(texts, with_labels=False)
    windows = prepared.extras["windows"]
    token_ids = windows.token_ids.to_tensor().numpy()
    name_ids = {tokenizer.token_to_id(name.lower()) for name in NAMES if name.lower() in tokenizer.get_vocabulary()}
    logits = np.zeros(token_ids.shape + (len(tagger.labels),), "float32")
    logits[..., tagger.labels.index("O")] = 1.0
    logits[np.isin(token_ids, list(name_ids)), tagger.labels.index("B-PER")] = 5.0
    decoded = tagger.decode(logits, prepared)
    for text, row_words, row_starts, entities in zip(texts, words, starts, decoded["entities"]):
        expected = [(start, start + len(word)) for word, start in zip(row_words, row_starts)
                    if word in NAMES and word.lower() in {tokenizer.id_to_token(i) for i in name_ids}]
        assert [(entity["start"], entity["end"]) for entity in entities] == expected and expected
        assert all(text[entity["start"]:entity["end"]] == entity["text"] in NAMES for entity in entities)
    # Names far past the first window (30 pieces, about 150 characters) are found at their place in the text.
    assert sum(entity["start"] > len(text) // 2 for text, entities in zip(texts, decoded["entities"])
               for entity in entities) >= 4

    tagger.export(tmp_path / "tagger")
    import tensorflow_text  # noqa: F401  (registers the WordPiece op)
    served = tf.saved_model.load(str(tmp_path / "tagger")).signatures["serve"](text=tf.constant(texts))
    for row, expected_tags in enumerate(predicted["tags"]):
        word_starts = served["word_starts"][row].numpy()
        assert [tag.decode() for tag in served["tags"][row].numpy()[word_starts]] == expected_tags
