"""BertTokenizer ids and offsets equal HF's fast BERT tokenizer on every string of real corpora.

Reference: HF transformers `BertTokenizerFast` (Rust `tokenizers`) on the all-MiniLM-L6-v2
vocabulary, and that checkpoint's own `tokenizer.json`. No special tokens added on either side.
"""

import functools
import pathlib

import pytest

from kerasbert.families.bert.bert_tokenizer import BertTokenizer

CORPORA = ["jane_austen", "uci_sentiment", "brown_pos", "spam_assassin"]


@functools.lru_cache(maxsize=None)
def hf_encodings(hf_tokenizer, texts):
    return hf_tokenizer(list(texts), add_special_tokens=False, return_offsets_mapping=True)


def differences(texts, ours, reference):
    return [(text, a, b) for text, a, b in zip(texts, ours, reference) if a != b]


@pytest.mark.parametrize("name", CORPORA)
def test_ids_equal_hf_on_every_text(name, corpus, tokenizer, hf_tokenizer):
    texts = corpus(name)
    ours = tokenizer(texts).to_list()
    reference = hf_encodings(hf_tokenizer, tuple(texts))["input_ids"]
    different = differences(texts, ours, reference)
    print(f"{name}: {len(texts)} strings compared, {len(texts) - len(different)} with equal ids")
    assert not different, f"{len(different)} strings differ, first: {different[0]}"


@pytest.mark.parametrize("name", CORPORA)
def test_offsets_equal_hf_on_every_text(name, corpus, tokenizer, hf_tokenizer):
    texts = corpus(name)
    _, starts, ends = tokenizer.tokenize_with_offsets(texts)
    ours = [list(zip(s, e)) for s, e in zip(starts.to_list(), ends.to_list())]
    reference = [
        list(map(tuple, offsets)) for offsets in hf_encodings(hf_tokenizer, tuple(texts))["offset_mapping"]
    ]
    different = differences(texts, ours, reference)
    print(f"{name}: offsets of {len(texts)} strings compared, {len(texts) - len(different)} equal")
    assert not different, f"{len(different)} strings differ, first: {different[0]}"


@pytest.mark.parametrize(
    "settings",
    [
        {"lowercase": False},  # cased: no lower-casing, no accent stripping
        {"lowercase": True, "strip_accents": False},
        {"lowercase": False, "strip_accents": True},
        {"lowercase": True, "tokenize_chinese_chars": False},
    ],
    ids=["cased", "lowercase_keep_accents", "cased_strip_accents", "no_chinese_split"],
)
def test_other_settings_equal_hf(settings, vocab_file, corpus, hf_tokenizer_factory):
    texts = corpus("uci_sentiment") + corpus("brown_pos")
    ours = BertTokenizer(vocab_file, **settings)
    hf_settings = {"do_lower_case": settings["lowercase"]}
    hf_settings.update(
        {k: v for k, v in settings.items() if k in ("strip_accents", "tokenize_chinese_chars")}
    )
    reference = hf_tokenizer_factory(**hf_settings)(texts, add_special_tokens=False)["input_ids"]
    different = differences(texts, ours(texts).to_list(), reference)
    print(f"{settings}: {len(texts)} strings compared, {len(texts) - len(different)} equal")
    assert not different, different[0]


def test_equals_the_checkpoints_own_tokenizer_json(minilm_path, corpus, tokenizer):
    tokenizers = pytest.importorskip("tokenizers", reason="the HF reference needs tokenizers")
    reference = tokenizers.Tokenizer.from_file(str(pathlib.Path(minilm_path) / "tokenizer.json"))
    reference.no_truncation()
    reference.no_padding()
    texts = corpus("uci_sentiment") + corpus("brown_pos")
    expected = [encoding.ids for encoding in reference.encode_batch(texts, add_special_tokens=False)]
    different = differences(texts, tokenizer(texts).to_list(), expected)
    print(f"tokenizer.json: {len(texts)} strings compared, {len(texts) - len(different)} equal")
    assert not different, different[0]
