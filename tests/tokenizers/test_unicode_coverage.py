"""Every assigned Unicode code point is normalised and split exactly as HF's Rust BERT tokenizer does it.

Reference: HF `tokenizers` `BertNormalizer` + `BertPreTokenizer` (the words WordPiece sees), and
HF transformers `BertTokenizerFast` for ids and offsets. Each code point sits inside a word
("x{c}Y") so that joining, splitting and case mapping all show.
"""

import pytest
import tensorflow as tf

from kerasbert.tokenizers.word_splitter import WordSplitter

# Every code point of planes 0-3 and 14 (all assigned characters live there); planes 4-13 are
# unassigned and 15-16 private use, uniform ranges of which every 251st code point is checked.
CODE_POINTS = [
    c
    for c in range(0x110000)
    if not 0xD800 <= c <= 0xDFFF and (c < 0x40000 or 0xE0000 <= c < 0xF0000 or c % 251 == 0)
]
PER_TEXT = 2000


def code_point_texts(word="x{c}Y", code_points=CODE_POINTS):
    """Each code point in `word`, 2,000 words to a text separated by spaces."""
    words = [word.format(c=chr(c)) for c in code_points]
    return [" ".join(words[i : i + PER_TEXT]) for i in range(0, len(words), PER_TEXT)]


def first_difference(ours, reference):
    for index, (a, b) in enumerate(zip(ours, reference)):
        if a != b:
            return index, a, b
    return len(reference), ours[len(reference) :], reference[len(ours) :]


@pytest.mark.parametrize(
    "lowercase, strip_accents, chinese, code_points",
    [
        (True, True, True, CODE_POINTS),
        (True, False, True, CODE_POINTS),
        (False, True, True, CODE_POINTS),
        (False, False, True, CODE_POINTS),
        (True, True, False, CODE_POINTS[: 0x40000 - 0x800]),  # planes 0-3: every CJK ideograph
    ],
    ids=["uncased", "lowercase_keep_accents", "cased_strip_accents", "cased", "no_chinese_split"],
)
def test_words_equal_hf(lowercase, strip_accents, chinese, code_points):
    tokenizers = pytest.importorskip("tokenizers", reason="the HF reference needs tokenizers")
    normalizer = tokenizers.normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=chinese, strip_accents=strip_accents, lowercase=lowercase
    )
    pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    texts = code_point_texts(code_points=code_points)
    words = WordSplitter(lowercase, strip_accents, chinese, special_tokens=[]).split(tf.constant(texts))
    ours = tf.RaggedTensor.from_row_splits(words.words, words.row_splits).to_list()
    for text, our_words in zip(texts, ours):
        reference = [word for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))]
        our_words = [word.decode("utf-8") for word in our_words]
        assert our_words == reference, (
            f"{first_difference(our_words, reference)}: if tokenizers was upgraded, regenerate the "
            "tables with `python tests/tokenizers/generate_unicode_tables.py`"
        )
    print(f"{len(code_points)} code points compared word by word")


@pytest.mark.parametrize(
    "word, code_points",
    [("x{c}Y", CODE_POINTS), ("{c}[MASK]{c}", CODE_POINTS[:0xF800])],  # the BMP beside a special token
    ids=["every_code_point", "beside_mask"],
)
def test_ids_and_offsets_equal_hf(word, code_points, tokenizer, hf_tokenizer):
    texts = code_point_texts(word, code_points)
    reference = hf_tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    for our_ids, our_starts, our_ends, hf_ids, hf_offsets in zip(
        ids.to_list(), starts.to_list(), ends.to_list(), reference["input_ids"], reference["offset_mapping"]
    ):
        assert our_ids == hf_ids, first_difference(our_ids, hf_ids)
        assert list(zip(our_starts, our_ends)) == [tuple(o) for o in hf_offsets]
