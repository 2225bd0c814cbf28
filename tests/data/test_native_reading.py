"""`NativeReader` (HF `tokenizers`, Rust) reads texts and pairs into the ids TensorFlow reading gives.

Reference: kerasbert's own `BertPreprocessor` (TensorFlow ops; equal to HF `BertTokenizerFast`, tests/tokenizers)
on the same all-MiniLM-L6-v2 vocabulary: `token_ids`, `segment_ids` and the pieces before truncation equal on
every fourth real UCI review and Brown sentence (2,000), single and paired, cut at 8, 16, 128 tokens or not at all.
"""

import numpy as np
import pandas as pd
import pytest

from kerasbert.data.native_reading import NativeReader
from kerasbert.data.output_rows import ragged_from_padded
from kerasbert.data.shipped import load_dataset
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.bert_preprocessor import BertPreprocessor

pytest.importorskip("tokenizers", reason="pip install 'kerasbert[onnx]'")

# What real corpora rarely hold: accents, CJK, controls, zero-width, emoji, ligatures, special tokens written in
# the text, a word past max_chars_per_word, empty and blank texts.
ODD_TEXTS = ["", " ", "Café [MASK] opens.", "北京欢迎你 hello", "a\x00b\tc\u200bd", "x" * 150 + " y",
             "naïve résumé Ångström", "[CLS] [SEP][PAD]", "🙂 emoji!!", "ﬁ ligature", "İstanbul", "\u0301 mark"]


@pytest.fixture(scope="module")
def texts():
    frames = [*load_dataset("uci_sentiment").values(), *load_dataset("brown_pos").values()]
    return pd.concat(frames)["text"].tolist()[::4] + ODD_TEXTS


@pytest.fixture(scope="module")
def vocabulary(minilm_path):
    return BertTokenizer(f"{minilm_path}/vocab.txt").get_vocabulary()


@pytest.fixture(scope="module")
def tokenizer(vocabulary):
    return BertTokenizer(vocabulary)


def read_both(tokenizer, sequence_length, texts, pairs):
    preprocessor = BertPreprocessor(tokenizer, sequence_length=sequence_length, pad_to_sequence_length=False)
    parts = [texts, texts[::-1]] if pairs else [texts]
    reader = NativeReader.of(preprocessor)
    native = reader(*parts)
    for name, rows in reader.read_rows(*parts)["features"].items():  # the numpy rows inference batches take
        np.testing.assert_array_equal(rows.lengths, native["features"][name].row_lengths().numpy())
        np.testing.assert_array_equal(rows.flat, native["features"][name].flat_values.numpy())
    expected = ragged_from_padded(preprocessor(tuple(parts) if pairs else parts[0]))
    pieces = sum(tokenizer(part).row_lengths().numpy() for part in parts)
    return native, expected, pieces


@pytest.mark.parametrize("sequence_length", [8, 16, 128, None])
@pytest.mark.parametrize("pairs", [False, True], ids=["single", "pairs"])
def test_native_reading_equals_tensorflow_reading(tokenizer, texts, sequence_length, pairs):
    native, expected, pieces = read_both(tokenizer, sequence_length, texts, pairs)
    for name in ("token_ids", "segment_ids"):
        different = [row for row, (got, want) in enumerate(zip(native["features"][name].to_list(),
                                                                 expected[name].to_list())) if got != want]
        assert not different, f"{name}: {len(different)} rows differ, first {texts[different[0]]!r}"
    np.testing.assert_array_equal(native["pieces"], pieces)


@pytest.mark.parametrize("settings", [{"lowercase": False}, {"lowercase": True, "strip_accents": False},
                                      {"tokenize_chinese_chars": False}, {"split_special_tokens": True},
                                      {"max_chars_per_word": 5}],
                         ids=["cased", "keep_accents", "no_chinese_split", "split_special", "short_words"])
def test_native_reading_follows_every_tokenizer_setting(vocabulary, texts, settings):
    native, expected, _ = read_both(BertTokenizer(vocabulary, **settings), 64, texts[:500] + ODD_TEXTS, True)
    assert native["features"]["token_ids"].to_list() == expected["token_ids"].to_list()


def test_native_reading_follows_the_packer_it_reads_for(vocabulary):
    preprocessor = BertPreprocessor(BertTokenizer(vocabulary), sequence_length=6)
    reader = NativeReader.of(preprocessor)
    assert reader(["one two three four five six"])["features"]["token_ids"].to_list()[0] == [101, 2028, 2048, 2093,
                                                                                             2176, 102]
    preprocessor.packer.sequence_length = 4
    assert reader(["one two three"])["features"]["token_ids"].to_list() == [[101, 2028, 2048, 102]]


def test_a_packer_other_than_bert_reads_in_tensorflow(vocabulary):
    from kerasbert.families.roberta.roberta_packer import RobertaPacker

    class RobertaPackedWordPiece(BertTokenizer):
        packer_class = RobertaPacker  # <s> A </s></s> B </s>: not what the Rust template packs

    assert NativeReader.of(BertPreprocessor(RobertaPackedWordPiece(vocabulary))) is None
