"""BertPacker / BertPreprocessor outputs equal HF `tokenizer(a, b, truncation="longest_first", ...)`.

Reference: HF transformers `BertTokenizerFast` on the all-MiniLM-L6-v2 vocabulary.
"""

import itertools

import numpy as np
import pytest
import tensorflow as tf

from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.tokenizers.bert_packer import BertPacker, concat_rows, keep_first

OUTPUT_NAMES = {"token_ids": "input_ids", "segment_ids": "token_type_ids", "padding_mask": "attention_mask"}


def assert_equal_to_hf(ours, reference):
    for name, hf_name in OUTPUT_NAMES.items():
        np.testing.assert_array_equal(ours[name].numpy().astype(np.int64), reference[hf_name], err_msg=name)


def test_truncation_equals_hf_for_every_length_combination(tokenizer, hf_tokenizer):
    """All pairs of 0..11 tokens (one token a word) against every sequence_length 3..25."""
    lengths = list(itertools.product(range(12), range(12)))
    first = [" ".join(["alpha"] * a) for a, _ in lengths]
    second = [" ".join(["beta"] * b) for _, b in lengths]
    for sequence_length in range(3, 26):
        preprocessor = BertPreprocessor(tokenizer, sequence_length=sequence_length)
        reference = hf_tokenizer(
            first,
            second,
            truncation="longest_first",
            max_length=sequence_length,
            padding="max_length",
            return_tensors="np",
        )
        assert_equal_to_hf(preprocessor((first, second)), reference)
        single = hf_tokenizer(
            first, truncation=True, max_length=sequence_length, padding="max_length", return_tensors="np"
        )
        assert_equal_to_hf(preprocessor(first), single)


@pytest.mark.parametrize("sequence_length", [32, 64, 128])
def test_consecutive_sentence_pairs_equal_hf(sequence_length, tokenizer, hf_tokenizer, corpus):
    sentences = corpus("uci_sentiment")
    first, second = sentences[:-1], sentences[1:]
    preprocessor = BertPreprocessor(tokenizer, sequence_length=sequence_length)
    reference = hf_tokenizer(
        first,
        second,
        truncation="longest_first",
        max_length=sequence_length,
        padding="max_length",
        return_tensors="np",
    )
    assert_equal_to_hf(preprocessor((first, second)), reference)
    print(f"{len(first)} UCI sentence pairs compared at sequence_length {sequence_length}")


@pytest.mark.parametrize("sequence_length", [32, 64])
def test_long_paragraph_pairs_are_truncated_as_hf(sequence_length, tokenizer, hf_tokenizer, corpus):
    paragraphs = [text for text in corpus("jane_austen") if len(text) > 300][:1000]
    first, second = paragraphs[:-1], paragraphs[1:]
    preprocessor = BertPreprocessor(tokenizer, sequence_length=sequence_length)
    reference = hf_tokenizer(
        first,
        second,
        truncation="longest_first",
        max_length=sequence_length,
        padding="max_length",
        return_tensors="np",
    )
    assert_equal_to_hf(preprocessor((first, second)), reference)
    # and paragraphs paired with short sentences: only the long side is cut
    short = corpus("uci_sentiment")[: len(first)]
    reference = hf_tokenizer(
        short,
        first,
        truncation="longest_first",
        max_length=sequence_length,
        padding="max_length",
        return_tensors="np",
    )
    assert_equal_to_hf(preprocessor((short, first)), reference)
    print(f"{len(first)} Austen paragraph pairs compared at sequence_length {sequence_length}")


def test_dynamic_padding_pads_to_the_longest(tokenizer, hf_tokenizer, corpus):
    first, second = corpus("uci_sentiment")[:16], corpus("uci_sentiment")[16:32]
    outputs = BertPreprocessor(tokenizer, sequence_length=None)((first, second))
    assert_equal_to_hf(outputs, hf_tokenizer(first, second, padding="longest", return_tensors="np"))
    capped = BertPreprocessor(tokenizer, sequence_length=24, pad_to_sequence_length=False)(["a b c", "d e"])
    assert capped["token_ids"].shape == (2, 5)


def test_packer_takes_token_ids(tokenizer):
    packer = BertPacker(
        tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id, sequence_length=8
    )
    outputs = packer(([[7, 8, 9, 10]], [[11, 12, 13, 14]]))
    assert outputs["token_ids"].numpy().tolist() == [[101, 7, 8, 102, 11, 12, 13, 102]]
    assert outputs["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 1, 1, 1, 1]]
    assert outputs["padding_mask"].dtype == tf.bool
    one_row = packer(tf.constant([7, 8]))
    assert one_row["token_ids"].numpy().tolist() == [101, 7, 8, 102, 0, 0, 0, 0]
    assert one_row["padding_mask"].numpy().tolist() == [True] * 4 + [False] * 4


def test_single_string_gives_unbatched_outputs(tokenizer):
    outputs = BertPreprocessor(tokenizer, sequence_length=6)("hello world")
    assert outputs["token_ids"].numpy().tolist() == [101, 7592, 2088, 102, 0, 0]


def test_bad_packer_arguments_are_refused(tokenizer):
    with pytest.raises(ValueError, match="sequence_length"):
        BertPacker(101, 102, 0, sequence_length=2)
    packer = BertPacker(101, 102, 0, sequence_length=8)
    with pytest.raises(ValueError, match="one segment or a pair"):
        packer(([[1]], [[2]], [[3]]))
    with pytest.raises(TypeError, match="token ids"):
        packer("not ids")
    with pytest.raises(TypeError, match="BertTokenizer"):
        BertPreprocessor("vocab.txt")
    with pytest.raises(ValueError, match="tuple of two"):
        BertPreprocessor(tokenizer, sequence_length=8)((["a"], ["b"], ["c"]))


@pytest.mark.parametrize("rows", [0, 1, 7])
def test_row_concatenation_and_cuts_equal_tensorflows_ragged_ops(rows):
    """The packers' `concat_rows` and `keep_first` against ragged `tf.concat` and a boolean mask of positions, on
    rows of 0-5 ids (empty rows and an empty batch included), with int pieces as one-id columns."""
    rng = np.random.default_rng(rows)
    pieces = [tf.ragged.constant([list(rng.integers(1, 99, rng.integers(0, 6))) for _ in range(rows)],
                                 dtype=tf.int32, ragged_rank=1, row_splits_dtype=tf.int64) for _ in range(2)]
    column = lambda value: tf.RaggedTensor.from_tensor(tf.fill([rows, 1], value))
    expected = tf.concat([column(101), pieces[0], column(102), column(102), pieces[1], column(102)], axis=1)
    assert concat_rows([101, pieces[0], 102, 102, pieces[1], 102]).to_list() == expected.to_list()
    counts = tf.constant(rng.integers(-1, 7, rows))
    positions = tf.ragged.range(pieces[0].row_lengths())
    cut = tf.ragged.boolean_mask(pieces[0], positions < tf.expand_dims(counts, 1))
    assert keep_first(pieces[0], counts).to_list() == cut.to_list()
