"""RobertaTokenizer ids and offsets, and RobertaPacker outputs, equal HF's on real text.

Reference: HF transformers `RobertaTokenizerFast` (Rust `tokenizers`) on a byte-level BPE trained here
on the shipped Jane Austen novels (`roberta_assets.py`), with `<mask>` taking the whitespace before
it as in RoBERTa's own `tokenizer.json`. No special tokens added on either side unless packed.
"""

import importlib.util
import itertools
import json
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasbert.data.shipped import load_dataset
from kerasbert.families.roberta.byte_level_bpe import DIGIT, LETTER, WS, bytes_to_unicode
from kerasbert.families.roberta.roberta_packer import RobertaPacker
from kerasbert.families.roberta.roberta_tokenizer import RobertaTokenizer


def load_helper(name):
    """A module beside this file (the tests are no package, and pytest imports them by path)."""
    spec = importlib.util.spec_from_file_location(name, pathlib.Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


assets = load_helper("roberta_assets")
roberta_folder = assets.roberta_folder  # the session fixture

EDGE_CASES = load_helper("test_bert_tokenizer_edge_cases").EDGE_CASES + [
    "",
    " ",
    "   ",
    "  leading and trailing  ",
    "multiple   spaces    here",
    "tab\there\tand\nnew\nlines\r\n",
    " \n b",
    "a \n\n\nb",
    "end with newline\n\n",
    "😀 x 🥰🥰 👍🏽",
    "Ångström café naïve e\u0301 o\u0308\u0304",
    "日本語のテキスト 中文字符",
    "العربية نص قصير",
    "Hello <mask> world",
    "Hello  \t<mask>.",
    "<mask>",
    " <mask>",
    "x<mask>y",
    "<mask><mask>",
    "a\u3000<mask>b\xa0\u2028<mask>",
    "<s>Hello</s></s>world</s>",
    "<pad><unk> <s> </s>",
    "<MASK> <mask <mask",
    "pneumonoultramicroscopicsilicovolcanoconiosis" * 8,
    "x" * 500,
    "1234567890 3.14159 -42 1,000,000",
    "!!!??? ... --- ***",
    "don't I'll we've they're she's it'd I'm DON'T",
    "''s 's 'S ' s",
    "nul\x00here \x00 <s>\x00",
    "\u180e<mask>\u200b<mask>",
    "\u1c89\ua7cb\U000105c0 Unicode 16 letters \U00010d40\U0001e5f1",
]


def corpus(name):
    if name == "edge_cases":
        return EDGE_CASES
    split = {"jane_austen": "test", "uci_sentiment": "test"}[name]
    return load_dataset(name, split)["text"].tolist()


@pytest.fixture(scope="module")
def roberta(roberta_folder):
    return RobertaTokenizer(roberta_folder)


@pytest.fixture(scope="module")
def hf_roberta(roberta_folder):
    return assets.make_hf_roberta(roberta_folder)


def assert_equal_to_hf(tokenizer, reference, texts, label):
    """Ids and offsets of every text equal HF's; prints what was compared."""
    ids, starts, ends = tokenizer.tokenize_with_offsets(texts)
    expected = reference(texts, add_special_tokens=False, return_offsets_mapping=True)
    ours = zip(ids.to_list(), starts.to_list(), ends.to_list())
    different = [
        (text, our_ids, hf_ids, list(zip(s, e)), [tuple(o) for o in hf_offsets])
        for text, (our_ids, s, e), hf_ids, hf_offsets in zip(
            texts, ours, expected["input_ids"], expected["offset_mapping"]
        )
        if our_ids != hf_ids or list(zip(s, e)) != [tuple(o) for o in hf_offsets]
    ]
    tokens = sum(map(len, expected["input_ids"]))
    print(f"{label}: {len(texts)} texts, {tokens} tokens (ids and offsets) compared, {len(different)} differ")
    assert not different, f"{len(different)} texts differ, first: {different[0]}"


@pytest.mark.parametrize("name", ["jane_austen", "uci_sentiment", "edge_cases"])
def test_ids_and_offsets_equal_hf(name, roberta, hf_roberta):
    assert_equal_to_hf(roberta, hf_roberta, corpus(name), name)


@pytest.mark.parametrize(
    "settings",
    [
        {"add_prefix_space": True},
        {"mask_token_lstrip": False},
        {"add_prefix_space": True, "mask_token_lstrip": False},
    ],
)
def test_other_settings_equal_hf(settings, roberta_folder):
    reference = assets.make_hf_roberta(roberta_folder, **settings)
    texts = EDGE_CASES + corpus("uci_sentiment")[:200]
    assert_equal_to_hf(RobertaTokenizer(roberta_folder, **settings), reference, texts, str(settings))


def test_character_classes_equal_hf_on_every_code_point():
    """GPT-2's regex splits on \\p{L}, \\p{N} and \\s: ours (RE2) must class each code point as HF's
    (Oniguruma, newer Unicode) does."""
    tokenizers = pytest.importorskip("tokenizers")
    code_points = [c for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]
    text = "".join(map(chr, code_points))
    characters = tf.constant(list(text))
    for hf_class, our_class in [(r"\p{L}", LETTER), (r"\p{N}", DIGIT), (r"\s", WS)]:
        kept = np.zeros(len(code_points), bool)
        split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(hf_class), behavior="removed")
        for _, (start, end) in split.pre_tokenize_str(text):
            kept[start:end] = True
        ours = tf.strings.regex_full_match(characters, f"[{our_class}]").numpy()
        different = [hex(c) for c, hf, our in zip(code_points, ~kept, ours) if hf != our]
        assert not different, f"{hf_class}: {len(different)} code points differ, first {different[:10]}"


def test_code_points_in_context_equal_hf(roberta, hf_roberta):
    """Every 13th code point, among letters, digits, contractions, spaces and a `<mask>`."""
    code_points = [chr(c) for c in range(1, 0x110000, 13) if not 0xD800 <= c <= 0xDFFF]
    texts = [
        "".join(f" {c}x{c}{c}1'{c}s\t{c} <mask>" for c in code_points[i : i + 200])
        for i in range(0, len(code_points), 200)
    ]
    assert_equal_to_hf(roberta, hf_roberta, texts, "code points")


def test_merges_that_use_later_tokens_are_applied_one_at_a_time(roberta_folder, tmp_path):
    """`ab a` comes before `a b`: HF merges `abab` one place at a time into `aba b`, never `ab ab`."""
    vocabulary = json.loads((roberta_folder / "vocab.json").read_text(encoding="utf-8"))
    vocabulary = {t: i for i, t in enumerate(t for t in vocabulary if len(t) == 1 or t.startswith("<"))}
    vocabulary.update({"ab": len(vocabulary), "aba": len(vocabulary) + 1})
    (tmp_path / "vocab.json").write_text(json.dumps(vocabulary), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\nab a\na b\n", encoding="utf-8")
    reference = assets.make_hf_roberta(tmp_path)
    ours = RobertaTokenizer(tmp_path)
    assert not ours._merge_all_places
    texts = ["abab", "ababab aba", "xabababy"]
    assert ours(texts).to_list() == reference(texts, add_special_tokens=False)["input_ids"]
    assert ours.id_to_token(ours("abab").numpy()[0]) == "aba"


def test_detokenize_gives_the_text_back(roberta, hf_roberta):
    texts = corpus("jane_austen") + corpus("uci_sentiment")
    assert [text.decode() for text in roberta.detokenize(roberta(texts)).numpy()] == texts
    ids = roberta(EDGE_CASES).to_list()
    decoded = roberta.detokenize(tf.ragged.constant(ids)).numpy()
    assert [text.decode() for text in decoded] == [
        hf_roberta.decode(row, clean_up_tokenization_spaces=False) for row in ids
    ]
    byte_characters = bytes_to_unicode()
    cut = [roberta.token_to_id(byte_characters[b]) for b in "a😀".encode()[:-1]]  # 3 of the emoji's 4 bytes
    assert roberta.detokenize(cut).numpy().decode() == hf_roberta.decode(cut)


def test_vocabulary_accessors(roberta, hf_roberta, roberta_folder):
    assert roberta.vocabulary_size() == len(hf_roberta) == assets.VOCABULARY_SIZE
    for name in ["cls", "sep", "pad", "unk", "mask"]:
        assert getattr(roberta, f"{name}_token_id") == getattr(hf_roberta, f"{name}_token_id")
    assert roberta.token_to_id("Ġthe") == hf_roberta.convert_tokens_to_ids("Ġthe")
    assert roberta.id_to_token(1000) == hf_roberta.convert_ids_to_tokens(1000)
    vocabulary = json.loads((roberta_folder / "vocab.json").read_text(encoding="utf-8"))
    merges = roberta.get_merges()
    same = RobertaTokenizer(vocabulary, merges)
    paths = RobertaTokenizer(roberta_folder / "vocab.json", roberta_folder / "merges.txt")
    for other in (same, paths):
        assert other(EDGE_CASES).to_list() == roberta(EDGE_CASES).to_list()
    with pytest.raises(ValueError, match="not in the vocabulary"):
        roberta.token_to_id("not a token")


def test_input_shapes(roberta):
    assert roberta("a cat").numpy().tolist() == roberta(["a cat"]).to_list()[0]
    nested = roberta([["a cat", "dog"], ["", "<mask>"]])
    assert nested.shape.rank == 3 and nested.to_list()[1] == [[], [roberta.mask_token_id]]
    assert roberta([]).to_list() == []
    with pytest.raises(TypeError, match="takes text"):
        roberta([1, 2])


def test_missing_merges_names_the_file_and_the_folder_layout(roberta_folder, tmp_path):
    (tmp_path / "vocab.json").write_text((roberta_folder / "vocab.json").read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match=r"has no merges\.txt.*holds vocab\.json.*and merges\.txt"):
        RobertaTokenizer(tmp_path)
    with pytest.raises(ValueError, match="needs the merges"):
        RobertaTokenizer(tmp_path / "vocab.json")


def test_vocabulary_without_byte_characters_is_refused():
    with pytest.raises(ValueError, match=r"lacks .*byte 0x00"):
        RobertaTokenizer({t: i for i, t in enumerate(["<s>", "<pad>", "</s>", "<unk>", "<mask>", "a"])}, [])


@pytest.mark.parametrize("sequence_length", range(4, 26, 3))
def test_packer_truncates_as_hf_for_every_length_combination(sequence_length, roberta, hf_roberta):
    lengths = list(itertools.product(range(12), range(12)))
    first = [" ".join(["alpha"] * a) for a, _ in lengths]
    second = [" ".join(["beta"] * b) for _, b in lengths]
    packer = RobertaPacker(
        roberta.cls_token_id, roberta.sep_token_id, roberta.pad_token_id, sequence_length=sequence_length
    )
    settings = {"max_length": sequence_length, "padding": "max_length", "return_tensors": "np"}
    for ours, reference in [
        (packer((roberta(first), roberta(second))), hf_roberta(first, second, truncation=True, **settings)),
        (packer(roberta(first)), hf_roberta(first, truncation=True, **settings)),
    ]:
        np.testing.assert_array_equal(ours["token_ids"], reference["input_ids"])
        np.testing.assert_array_equal(ours["padding_mask"], reference["attention_mask"].astype(bool))
        assert not ours["segment_ids"].numpy().any()


@pytest.mark.parametrize("sequence_length", [32, 128])
def test_packer_on_review_pairs_equals_hf(sequence_length, roberta, hf_roberta):
    reviews = corpus("uci_sentiment")
    first, second = reviews[:-1], reviews[1:]
    ids = roberta.cls_token_id, roberta.sep_token_id, roberta.pad_token_id
    packer = RobertaPacker(*ids, sequence_length, pad_to_sequence_length=False)
    ours = packer((roberta(first), roberta(second)))
    reference = hf_roberta(
        first, second, truncation=True, max_length=sequence_length, padding=True, return_tensors="np"
    )
    np.testing.assert_array_equal(ours["token_ids"], reference["input_ids"])
    np.testing.assert_array_equal(ours["padding_mask"], reference["attention_mask"].astype(bool))


def test_packer_refuses_a_pair_that_cannot_fit(roberta):
    packer = RobertaPacker(0, 2, 1, sequence_length=3)
    with pytest.raises(ValueError, match="at least 4"):
        packer((roberta(["a"]), roberta(["b"])))


def test_keras_file_round_trip_takes_raw_strings(roberta, tmp_path):
    config = keras.saving.serialize_keras_object(roberta)
    assert len(json.dumps(config)) < 1000  # the vocabulary and merges are assets, not config
    texts = keras.Input(shape=(), dtype="string")
    packer = RobertaPacker(roberta.cls_token_id, roberta.sep_token_id, roberta.pad_token_id, 24)
    model = keras.Model(texts, packer(roberta(texts)))
    model.save(tmp_path / "roberta.keras")
    restored = keras.saving.load_model(tmp_path / "roberta.keras", safe_mode=True)
    batch = tf.constant(EDGE_CASES)
    for name, value in model(batch).items():
        np.testing.assert_array_equal(restored(batch)[name], value, err_msg=name)


def test_saved_model_and_tf_data_take_raw_strings(roberta, tmp_path, fresh_python):
    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.tokenizer = roberta

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, texts):
            return roberta(texts).to_tensor(-1)

    tf.saved_model.save(Serving(), str(tmp_path / "served"))
    code = f"""
import sys
import tensorflow as tf, tensorflow_text  # tensorflow_text registers the regex_split ops
served = tf.saved_model.load({str(tmp_path / "served")!r})
print(any(name.startswith("kerasbert") for name in sys.modules))
print(served(tf.constant({EDGE_CASES!r})).numpy().tolist())
"""
    result = fresh_python(code, imports=("tensorflow", "tensorflow_text"))
    imported_kerasbert, ids = result.stdout.strip().splitlines()[-2:]
    assert imported_kerasbert == "False"
    assert ids == str(roberta(EDGE_CASES).to_tensor(-1).numpy().tolist())
    dataset = tf.data.Dataset.from_tensor_slices(EDGE_CASES).batch(7).map(roberta)
    assert [row for batch in dataset for row in batch.to_list()] == roberta(EDGE_CASES).to_list()


def test_special_tokens_are_checked_on_entry(roberta_folder):
    with pytest.raises(TypeError, match="unk_token must be a token of the vocabulary, a string such as '<unk>'"):
        RobertaTokenizer(roberta_folder, special_tokens={"unk_token": None})
