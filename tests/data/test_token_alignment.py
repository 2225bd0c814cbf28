"""Word/WordPiece alignment for NER: parity with HF run_ner on real CoNLL-2003, inverse map, entities.

Reference: HF `BertTokenizerFast(words, is_split_into_words=True, truncation=True, max_length=...)`
and run_ner.py's `tokenize_and_align_labels` with `label_all_tokens=False`.
"""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kerasbert.data.conll import load_conll
from kerasbert.data.token_alignment import IGNORE_LABEL, encode_words, entity_char_spans, word_predictions
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.metrics.entities import entity_spans

SHARED_DATA = Path(os.environ.get("KERASBERT_SHARED_DATA")
                   or Path(__file__).resolve().parents[2].parent / "shared" / "data")


@pytest.fixture(scope="module")
def tokenizer(minilm_path):
    return BertTokenizer.from_preset(minilm_path)


@pytest.fixture(scope="module")
def hf_tokenizer(minilm_path):
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(minilm_path)


@pytest.fixture(scope="module")
def conll_train():
    path = SHARED_DATA / "conll2003" / "train.txt"
    if not path.is_file():
        pytest.skip(f"CoNLL-2003 not found at {path} (set KERASBERT_SHARED_DATA)")
    return load_conll(path)


def hf_run_ner_alignment(hf_tokenizer, words, tags, tag_vocabulary, sequence_length):
    """HF run_ner.py `tokenize_and_align_labels`, label_all_tokens=False (word_ids None -> -1)."""
    encoding = hf_tokenizer(words, is_split_into_words=True, truncation=True, max_length=sequence_length)
    label_to_id = {tag: index for index, tag in enumerate(tag_vocabulary)}
    all_word_ids, all_labels = [], []
    for row, row_tags in enumerate(tags):
        labels, previous = [], None
        for word_id in encoding.word_ids(row):
            if word_id is None or word_id == previous:
                labels.append(-100)
            else:
                labels.append(label_to_id[row_tags[word_id]])
            previous = word_id
        all_word_ids.append([-1 if word_id is None else word_id for word_id in encoding.word_ids(row)])
        all_labels.append(labels)
    return encoding["input_ids"], all_word_ids, all_labels


@pytest.mark.parametrize("sequence_length, sentences", [(128, 14041), (16, 2000)])
def test_matches_hf_run_ner_on_conll_train(tokenizer, hf_tokenizer, conll_train, sequence_length, sentences):
    data = conll_train.iloc[:sentences]
    vocabulary = sorted({tag for tags in data.tags for tag in tags})
    features = encode_words(tokenizer, data.tokens, data.tags, tag_vocabulary=vocabulary,
                            sequence_length=sequence_length)
    hf_ids, hf_word_ids, hf_labels = hf_run_ner_alignment(
        hf_tokenizer, data.tokens.tolist(), data.tags.tolist(), vocabulary, sequence_length)

    assert features.token_ids.to_list() == hf_ids
    assert features.word_ids.to_list() == hf_word_ids
    assert features.labels.to_list() == hf_labels
    assert features.segment_ids.flat_values.numpy().max() == 0
    mask = features.label_mask.flat_values.numpy()
    assert np.array_equal(mask == 1, features.labels.flat_values.numpy() != IGNORE_LABEL)
    words_without_token = sum(len(words) - len(set(ids) - {-1})
                              for words, ids in zip(data.tokens, hf_word_ids))
    assert features.truncated_words.sum() == words_without_token
    assert (features.truncated_words.sum() > 1000) == (sequence_length == 16)
    assert len(features.empty_words) == 0 and features.num_words.tolist() == data.tokens.map(len).tolist()


def test_words_that_tokenise_to_nothing(tokenizer, hf_tokenizer):
    words = [["Zürich", "\x00", "bank", "\u200b"], ["\x00"], ["ok"]]
    tags = [[1, 0, 2, 0], [3], [0]]
    features = encode_words(tokenizer, words, tags, sequence_length=16)
    hf_ids, hf_word_ids, _ = hf_run_ner_alignment(
        hf_tokenizer, words, [["O"] * len(row) for row in words], ["O"], 16)
    assert features.token_ids.to_list() == hf_ids and features.word_ids.to_list() == hf_word_ids
    assert features.empty_words.tolist() == [[0, 1], [0, 3], [1, 0]]
    assert features.word_ids.to_list()[1] == [-1, -1]
    # Each word's first piece carries its label; empty words fall back to fill_value.
    predictions = word_predictions(features.labels.to_tensor(-100), features.word_ids, features.num_words,
                                   fill_value=9)
    assert [row.tolist() for row in predictions] == [[1, 9, 2, 9], [9], [0]]


def test_truncated_words_are_counted_and_filled(tokenizer):
    words = [["one", "two", "three", "four", "five"], ["short"]]
    features = encode_words(tokenizer, words, sequence_length=5)
    assert features.word_ids.to_list() == [[-1, 0, 1, 2, -1], [-1, 0, -1]]
    assert features.truncated_words.tolist() == [2, 0]
    assert features.labels is None
    predictions = word_predictions([[0, 7, 8, 9, 0], [0, 5, 0]], features.word_ids, features.num_words,
                                   fill_value=-1)
    assert [row.tolist() for row in predictions] == [[7, 8, 9, -1, -1], [5]]


def test_word_predictions_from_padded_logits(tokenizer, conll_train):
    data = conll_train.iloc[:200]
    vocabulary = sorted({tag for tags in data.tags for tag in tags})
    features = encode_words(tokenizer, data.tokens, data.tags, tag_vocabulary=vocabulary, ignore_label=0)
    labels = features.labels.to_tensor(0, shape=[None, 192]).numpy()  # padded past the longest row
    logits = np.eye(len(vocabulary), dtype=np.float32)[labels] * 5.0
    words = word_predictions(logits, features.word_ids, features.num_words)
    assert [row.shape for row in words[:2]] == [(len(data.tokens.iloc[0]), len(vocabulary)),
                                                (len(data.tokens.iloc[1]), len(vocabulary))]
    decoded = [[vocabulary[i] for i in row.argmax(-1)] for row in words]
    assert decoded == data.tags.tolist()


def test_features_feed_the_batched_dataset(tokenizer, conll_train):
    from kerasbert.data.batching import make_batched_dataset

    data = conll_train.iloc[:10]
    vocabulary = sorted({tag for tags in data.tags for tag in tags})
    features = encode_words(tokenizer, data.tokens, data.tags, tag_vocabulary=vocabulary, ignore_label=0)
    x, y, weight = next(iter(make_batched_dataset(features.inputs, labels=features.labels,
                                                  sample_weight=features.label_mask, batch_size=4)))
    assert x["token_ids"].shape == y.shape == weight.shape
    assert float(weight.numpy().sum()) == sum(map(len, data.tokens.iloc[:4]))


def test_tag_errors_name_the_row_and_the_fix(tokenizer):
    words = pd.Series([["EU", "rejects"], ["German", "call"]], index=["a", "b"])
    with pytest.raises(ValueError, match=r"Row 'b' has 2 words but 1 tags; give exactly one tag per word"):
        encode_words(tokenizer, words, pd.Series([["B-ORG", "O"], ["B-MISC"]], index=["a", "b"]),
                     tag_vocabulary=["O", "B-ORG", "B-MISC"])
    with pytest.raises(ValueError, match=r"Row 'b' has the tag 'B-MISC', which is not in tag_vocabulary"):
        encode_words(tokenizer, words, [["B-ORG", "O"], ["B-MISC", "O"]], tag_vocabulary=["O", "B-ORG"])
    with pytest.raises(ValueError, match="pass tag_vocabulary"):
        encode_words(tokenizer, words, [["B-ORG", "O"], ["B-MISC", "O"]])
    with pytest.raises(ValueError, match="sequence_length must be an int of at least 3"):
        encode_words(tokenizer, words, sequence_length=2)
    with pytest.raises(TypeError, match="one list per sentence"):
        encode_words(tokenizer, "EU rejects German call")


@pytest.mark.parametrize("tags, expected", [
    (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 2), ("LOC", 3, 4)]),                   # IOB2 / BIO
    (["I-PER", "I-PER", "B-PER", "O", "I-LOC"], [("PER", 0, 2), ("PER", 2, 3), ("LOC", 4, 5)]),  # IOB1
    (["O", "I-ORG", "I-ORG", "I-PER", "B-PER", "I-LOC"],                                 # invalid: repaired
     [("ORG", 1, 3), ("PER", 3, 4), ("PER", 4, 5), ("LOC", 5, 6)]),
    (["B-MISC-X", "I-MISC-X"], [("MISC-X", 0, 2)]),
    ([], []),
])
def test_entity_spans_follow_seqeval(tags, expected):
    # Expected values are seqeval 1.2.2 `get_entities` (default mode) with end + 1.
    assert entity_spans(tags) == expected


def test_entity_spans_on_conll_train_match_published_counts(conll_train):
    kinds = [kind for tags in conll_train.tags for kind, _, _ in entity_spans(tags)]
    counts = pd.Series(kinds).value_counts()
    assert counts.to_dict() == {"LOC": 7140, "PER": 6600, "ORG": 6321, "MISC": 3438}  # the CoNLL-2003 paper


def test_entity_spans_rejects_unknown_tags():
    with pytest.raises(ValueError, match=r"Tag 'PER' at word 1 is not 'O', 'B-<type>' or 'I-<type>'"):
        entity_spans(["O", "PER"])


def test_entity_char_spans(conll_train):
    words = conll_train.tokens.iloc[0]
    text = " ".join(words)
    spans = entity_char_spans(words, entity_spans(conll_train.tags.iloc[0]))
    assert [(kind, text[start:end]) for kind, start, end in spans] == [
        ("ORG", "EU"), ("MISC", "German"), ("MISC", "British")]
    original = "EU  rejects\tGerman"
    assert entity_char_spans(["EU", "rejects", "German"], [("ORG", 0, 1), ("MISC", 2, 3)],
                             word_starts=[0, 4, 12]) == [("ORG", 0, 2), ("MISC", 12, 18)]
    assert original[12:18] == "German"
    with pytest.raises(ValueError, match="is not a word span of a 3-word sentence"):
        entity_char_spans(["EU", "rejects", "German"], [("ORG", 2, 4)])
