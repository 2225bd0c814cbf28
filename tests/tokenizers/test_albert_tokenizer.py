"""AlbertTokenizer ids and offsets equal HF's ALBERT tokenizer on real text and edge cases; BertPacker
with ALBERT's special ids equals HF's pair encoding; the layer saves to `.keras` and SavedModel.

Reference: HF transformers 5 `AlbertTokenizerFast` (Rust `tokenizers`) loaded from the same
`spiece.model`, a unigram model trained here with ALBERT's settings (`albert_assets.py`); for
`legacy_added_tokens`, the same class loading that model with a transformers-4 `tokenizer.json`.
"""

import json
import pathlib
import sys
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasbert.data.shipped import load_dataset
from kerasbert.families.albert.albert_tokenizer import AlbertTokenizer
from kerasbert.families.albert.sentencepiece_files import unigram_only_proto
from kerasbert.tokenizers.bert_packer import BertPacker

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # the sibling modules below (no package here)
from albert_assets import hf_albert_tokenizer, hf_albert_tokenizer_transformers4, train_spiece  # noqa: E402
from test_bert_tokenizer_edge_cases import EDGE_CASES as BERT_EDGE_CASES  # noqa: E402

ALBERT_EDGE_CASES = [
    "",
    " ",
    "   ",
    "  leading spaces",
    "trailing spaces  ",
    "multiple   spaces   inside",
    "tab\tnewline\ncarriage\r\nreturn",
    "🥰😀 emoji 👍🏽 👨‍👩‍👧",
    "Café Über naïve Ærø",
    "UPPER CASE Mixed Case",
    "中文字符 日本語 한국어",
    "مرحبا بالعالم",
    "e\u0301 a\u0308 n\u0303 combining marks",
    "a [MASK] b [MASK]",
    "[MASK]",
    "[mask] [ MASK ] x[MASK]y",
    "12,345.67 1,000 3.14 10, 9,",
    "!!! ??? ... --- ()() ;;",
    '"quoted" ``latex quotes\'\' `single` \'\'\'',
    "a``b''c `` '' ``` ''''",
    "£5 €10 – en dash — em dash",
    "(parenthesised) - hyphen.",
    "▁already ▁▁ a▁b",
    "Ǆ ǅ ǆ ﬁ ß ẞ ½ ²",
    "\u00a8 \u00b4 \u02dc spacing accents",
    "ｆｕｌｌｗｉｄｔｈ　ｓｐａｃｅ",
    "\u2028line\u2029paragraph",
    "<pad> <unk> [CLS] [SEP] in text",
    "<UNK> ж<UNK> <UNK><UNK> <unk>ж",
    "＜pad＞ ［SEP］ ［cls］",
    "lost - it ( a ) . b",
    "x  [MASK] \t[MASK][MASK]",
]
EDGE_CASES = BERT_EDGE_CASES + ALBERT_EDGE_CASES


@pytest.fixture(scope="module")
def spiece_folder(tmp_path_factory):
    return train_spiece(tmp_path_factory.mktemp("albert"))


@pytest.fixture(scope="module")
def albert(spiece_folder):
    return AlbertTokenizer(spiece_folder)


@pytest.fixture(scope="module")
def hf_albert(spiece_folder):
    return hf_albert_tokenizer(spiece_folder)


def differences(tokenizer, reference, texts):
    """Texts whose ids or offsets differ, with both; and the number of tokens compared."""
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    expected = reference(texts, add_special_tokens=False, return_offsets_mapping=True)
    ours = [list(zip(*row)) for row in zip(ids.to_list(), starts.to_list(), ends.to_list())]
    theirs = [
        [(i, *offset) for i, offset in zip(row_ids, row_offsets)]
        for row_ids, row_offsets in zip(expected["input_ids"], expected["offset_mapping"])
    ]
    different = [(text, a, b) for text, a, b in zip(texts, ours, theirs) if a != b]
    return different, sum(map(len, theirs))


@pytest.mark.parametrize(
    "name, split", [("jane_austen", "test"), ("uci_sentiment", "test")], ids=["austen", "uci"]
)
def test_ids_and_offsets_equal_hf_on_real_texts(name, split, albert, hf_albert):
    texts = load_dataset(name, split)["text"].tolist()
    different, tokens = differences(albert, hf_albert, texts)
    print(f"{name}/{split}: {len(texts)} texts, {tokens} tokens compared, {len(different)} texts differ")
    assert not different, different[0]


@pytest.mark.parametrize(
    "settings",
    [{}, {"do_lower_case": False}, {"keep_accents": True}, {"do_lower_case": False, "keep_accents": True}],
    ids=["albert", "cased", "keep_accents", "cased_keep_accents"],
)
def test_edge_cases_equal_hf(settings, spiece_folder, albert, hf_albert):
    tokenizer = AlbertTokenizer(spiece_folder, **settings) if settings else albert
    reference = hf_albert_tokenizer(spiece_folder, **settings) if settings else hf_albert
    texts = EDGE_CASES + load_dataset("uci_sentiment", "test")["text"].tolist()[:200]
    if settings.get("keep_accents"):
        # Known difference: HF's character map composes a letter and the combining marks after it
        # (`e` + U+0301 -> `é`) in grapheme clusters under 6 bytes; here characters map one by one.
        texts = [text for text in texts if not any(unicodedata.category(c).startswith("M") for c in text)]
    different, tokens = differences(tokenizer, reference, texts)
    print(f"{settings}: {len(texts)} texts, {tokens} tokens compared, {len(different)} texts differ")
    assert not different, different[0]


def test_legacy_added_tokens_equal_hf_with_a_transformers4_tokenizer_json(spiece_folder):
    tokenizer = AlbertTokenizer(spiece_folder, legacy_added_tokens=True)
    reference = hf_albert_tokenizer_transformers4(spiece_folder)
    texts = [text for name in ("jane_austen", "uci_sentiment") for text in load_dataset(name, "test")["text"]]
    different, tokens = differences(tokenizer, reference, texts + EDGE_CASES)
    print(f"legacy: {len(texts + EDGE_CASES)} texts, {tokens} tokens compared, {len(different)} differ")
    assert not different, different[0]
    ids, starts, _ = tokenizer.tokenize_with_offsets(["lost - it", "a  [MASK]"])
    assert [tokenizer.id_to_token(i) for i in ids[0].numpy()] == ["▁lost", "▁", "-", "▁it"]
    assert starts.to_list()[1] == [0, 1]  # [MASK] takes the spaces on its left


def test_legacy_digit_comma_scores_equal_hf_albert_converter(spiece_folder):
    from sentencepiece import sentencepiece_model_pb2
    from transformers.convert_slow_tokenizer import AlbertConverter

    model = sentencepiece_model_pb2.ModelProto.FromString((spiece_folder / "spiece.model").read_bytes())
    for piece in ["▁1,", "0,", "a,", ","]:
        model.pieces.add(piece=piece, score=-5.0)
    ours = unigram_only_proto(model, penalise_digit_commas=True)
    ours = sentencepiece_model_pb2.ModelProto.FromString(ours)
    expected = [score for _, score in AlbertConverter.vocab(None, model)]  # reads only the proto
    assert [piece.score for piece in ours.pieces[: len(model.pieces)]] == expected
    assert expected[-4:] == [-105.0, -105.0, -5.0, -5.0]


def test_special_pieces_written_in_text_keep_their_ids(albert):
    ids = albert(["fill [MASK] here", "[mask]", "a (b) c.", "<unk>"]).to_list()
    assert ids[0][1] == albert.mask_token_id == 4
    assert albert.mask_token_id not in ids[1]
    assert ids[2][1:4] == [albert.token_to_id(piece) for piece in ["(", "▁b", ")"]]  # user-defined pieces
    assert ids[3] == [albert.unk_token_id]


@pytest.mark.parametrize("sequence_length", [5, 8, 16, 32, 128])
def test_bert_packer_with_albert_ids_equals_hf_pairs_and_singles(sequence_length, albert, hf_albert):
    texts = load_dataset("uci_sentiment", "test")["text"].tolist()[:300] + ["", "[MASK]"]
    first, second = texts[:-1], texts[1:]
    packer = BertPacker(
        cls_token_id=albert.cls_token_id,
        sep_token_id=albert.sep_token_id,
        pad_token_id=albert.pad_token_id,
        sequence_length=sequence_length,
    )
    options = dict(
        truncation=True,
        max_length=sequence_length,
        padding="max_length",
        return_token_type_ids=True,
        return_tensors="np",
    )
    for ours, reference in [
        (packer((albert(first), albert(second))), hf_albert(first, second, **options)),
        (packer(albert(first)), hf_albert(first, **options)),
    ]:
        np.testing.assert_array_equal(ours["token_ids"], reference["input_ids"])
        np.testing.assert_array_equal(ours["segment_ids"], reference["token_type_ids"])
        np.testing.assert_array_equal(ours["padding_mask"], reference["attention_mask"].astype(bool))


def test_vocabulary_and_special_ids(albert, hf_albert):
    assert albert.vocabulary_size() == len(hf_albert) == 3000
    assert albert.get_vocabulary() == hf_albert.convert_ids_to_tokens(list(range(3000)))
    special_ids = [albert.pad_token_id, albert.unk_token_id, albert.cls_token_id, albert.sep_token_id]
    assert special_ids + [albert.mask_token_id] == [0, 1, 2, 3, 4]
    assert albert.id_to_token(albert.token_to_id("▁the")) == "▁the"
    with pytest.raises(ValueError, match="not in the vocabulary"):
        albert.token_to_id("no-such-piece")
    with pytest.raises(ValueError, match="out of the vocabulary"):
        albert.id_to_token(3000)


def test_detokenize_equals_hf_decode(albert, hf_albert):
    texts = load_dataset("uci_sentiment", "test")["text"].tolist()[:300] + ALBERT_EDGE_CASES
    ids = hf_albert(texts)["input_ids"]  # with [CLS] and [SEP]
    expected = [hf_albert.decode(row) for row in ids]
    assert [text.decode() for text in albert.detokenize(ids).numpy()] == expected
    assert albert.detokenize(ids[0]).numpy().decode() == expected[0]


def test_input_shapes_and_tf_data(albert):
    hello = albert("hello").numpy().tolist()  # a scalar gives one row
    assert albert(["hello", "hello hello"]).to_list() == [hello, hello * 2]
    assert albert(np.array([["hello"], ["hello"]])).to_list() == [[hello], [hello]]
    assert albert(tf.ragged.constant([["hello", "hello"], ["hello"]])).to_list() == [[hello, hello], [hello]]
    assert albert([]).to_list() == []
    assert albert(["hello"]).dtype == tf.int32
    batches = tf.data.Dataset.from_tensor_slices(EDGE_CASES).batch(7).map(albert.tokenize_with_offsets)
    in_tf_data = [sum((output.to_list() for output in outputs), []) for outputs in zip(*batches)]
    assert in_tf_data == [output.to_list() for output in albert.tokenize_with_offsets(EDGE_CASES)]


def test_config_is_small_and_the_model_an_asset(albert, spiece_folder, tmp_path):
    config = keras.saving.serialize_keras_object(AlbertTokenizer(spiece_folder, keep_accents=True))
    assert len(json.dumps(config)) < 1000
    restored = keras.saving.deserialize_keras_object(config)
    assert restored.keep_accents and not restored.has_vocabulary
    with pytest.raises(ValueError, match="has no SentencePiece model.*set_proto"):
        restored(["text"])
    albert.save_assets(tmp_path)
    assert (tmp_path / "spiece.model").read_bytes() == (spiece_folder / "spiece.model").read_bytes()
    restored = AlbertTokenizer()
    restored.load_assets(tmp_path)
    assert restored(EDGE_CASES).to_list() == albert(EDGE_CASES).to_list()
    with pytest.raises(ValueError, match="already has a SentencePiece model"):
        restored.set_proto(spiece_folder)


def test_keras_file_and_saved_model_take_raw_strings(albert, tmp_path):
    texts = ["The café [MASK] opens at 9.", "  Ångström\t(naïve)  ", ""]
    expected = albert(texts).to_list()
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, albert(inputs))
    model.save(tmp_path / "tokenizer.keras")
    assert keras.saving.load_model(tmp_path / "tokenizer.keras")(tf.constant(texts)).to_list() == expected

    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = albert

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, texts):
            return albert(texts)

    tf.saved_model.save(Serving(), str(tmp_path / "served"))
    served = tf.saved_model.load(str(tmp_path / "served"))  # graphs only: no kerasbert code runs
    assert served(tf.constant(texts)).to_list() == expected


def test_a_file_that_is_not_a_sentencepiece_model_is_refused(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\nhello\n", encoding="utf-8")
    noise = tmp_path / "noise.model"
    noise.write_bytes(np.random.default_rng(0).bytes(256))
    for path in (vocab, noise):
        with pytest.raises(ValueError, match=f"{path.name} is not a SentencePiece"):
            AlbertTokenizer(path)
    with pytest.raises(ValueError, match="No SentencePiece model at .*spiece.model"):
        AlbertTokenizer(tmp_path)  # a folder without spiece.model
