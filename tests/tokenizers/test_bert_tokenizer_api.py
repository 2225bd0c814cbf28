"""BertTokenizer's vocabulary accessors, input shapes, detokenize (vs HF decode) and bad input."""

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from kerasbert.families.bert.bert_tokenizer import BertTokenizer


def test_vocabulary_accessors(tokenizer, vocab_file):
    tokens = vocab_file.read_text(encoding="utf-8").split("\n")[:-1]
    assert tokenizer.vocabulary_size() == len(tokens) == 30522
    assert tokenizer.get_vocabulary() == tokens
    assert tokenizer.token_to_id("[MASK]") == tokenizer.mask_token_id == 103
    assert tokenizer.id_to_token(2088) == "world"
    special_ids = [
        tokenizer.pad_token_id,
        tokenizer.unk_token_id,
        tokenizer.cls_token_id,
        tokenizer.sep_token_id,
    ]
    assert special_ids == [0, 100, 101, 102]
    with pytest.raises(ValueError, match="not in the vocabulary"):
        tokenizer.token_to_id("no-such-token")
    with pytest.raises(ValueError, match="out of the vocabulary"):
        tokenizer.id_to_token(30522)


def test_vocabulary_as_list_or_folder_gives_the_same_tokenizer(vocab_file, tokenizer):
    tokens = tokenizer.get_vocabulary()
    texts = ["Same vocabulary, same ids."]
    assert BertTokenizer(tokens)(texts).to_list() == tokenizer(texts).to_list()
    assert (
        BertTokenizer.from_vocabulary_file(vocab_file.parent)(texts).to_list() == tokenizer(texts).to_list()
    )


def test_from_preset_reads_the_checkpoint_folder(minilm_path, tokenizer):
    preset_tokenizer = BertTokenizer.from_preset(minilm_path)
    assert preset_tokenizer.lowercase and preset_tokenizer.vocabulary_size() == 30522
    assert preset_tokenizer(["Hello World"]).to_list() == tokenizer(["Hello World"]).to_list()


def test_input_shapes(tokenizer):
    assert tokenizer("hello world").numpy().tolist() == [7592, 2088]  # a scalar gives one row
    assert tokenizer(["hello", "hello world"]).to_list() == [[7592], [7592, 2088]]
    assert tokenizer(np.array([["hello"], ["world"]])).to_list() == [[[7592]], [[2088]]]
    assert tokenizer(tf.ragged.constant([["hello", "world"], ["hi"]])).to_list() == [
        [[7592], [2088]],
        [[7632]],
    ]
    assert tokenizer([]).to_list() == []
    assert tokenizer(pd.Series(["hello", "world"])).to_list() == [[7592], [2088]]
    assert tokenizer(["hello"]).dtype == tf.int32


def test_detokenize_equals_hf_decode(tokenizer, hf_tokenizer, corpus):
    texts = corpus("uci_sentiment")[:500] + ["Hello , world ! don't stop . [MASK] x?"]
    ids = hf_tokenizer(texts)["input_ids"]  # with [CLS] and [SEP]
    ours = [text.decode("utf-8") for text in tokenizer.detokenize(ids).numpy()]
    assert ours == [hf_tokenizer.decode(row) for row in ids]
    assert tokenizer.detokenize([7592, 1010, 2088]).numpy().decode() == "hello, world"


def test_detokenize_rejects_ids_outside_the_vocabulary(tokenizer):
    with pytest.raises(ValueError, match=r"Ids must be in \[0, 30522\)"):
        tokenizer.detokenize([[1, 30522]])


def test_missing_vocabulary_file_names_path_and_fix(tmp_path):
    missing = tmp_path / "nowhere" / "vocab.txt"
    with pytest.raises(FileNotFoundError, match="vocab.txt") as error:
        BertTokenizer(missing)
    assert str(missing) in str(error.value)


def test_vocabulary_without_a_special_token_names_it(tokenizer):
    tokens = [token for token in tokenizer.get_vocabulary() if token != "[MASK]"]
    with pytest.raises(ValueError, match=r"mask_token='\[MASK\]'"):
        BertTokenizer(tokens)
    with pytest.raises(ValueError, match=r"unk_token='<unk>'"):
        BertTokenizer(tokenizer.get_vocabulary(), special_tokens={"unk_token": "<unk>"})


def test_vocabulary_with_a_repeated_token_is_refused():
    with pytest.raises(ValueError, match="'hello' twice"):
        BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "hello"])


@pytest.mark.parametrize("bad_input", [[1, 2, 3], tf.constant([1.5]), np.arange(3), None, ["text", 3]])
def test_non_string_input_is_a_type_error(tokenizer, bad_input):
    with pytest.raises(TypeError, match="BertTokenizer takes text"):
        tokenizer(bad_input)


def test_bad_settings_are_refused(tokenizer):
    with pytest.raises(ValueError, match="max_chars_per_word"):
        BertTokenizer(tokenizer.get_vocabulary(), max_chars_per_word=0)
    with pytest.raises(TypeError, match="vocabulary"):
        BertTokenizer({"[PAD]": 0})


@pytest.mark.parametrize("name", ["unk_token", "cls_token", "sep_token", "pad_token", "mask_token"])
def test_special_tokens_are_checked_on_entry(tokenizer, name):
    with pytest.raises(TypeError, match=f"{name} must be a token of the vocabulary, a string such as '\\["):
        BertTokenizer(tokenizer.get_vocabulary(), special_tokens={name: None})
    with pytest.raises(ValueError, match=f"{name} must be a token of the vocabulary.*got ' '"):
        BertTokenizer(tokenizer.get_vocabulary(), special_tokens={name: " "})


def test_settings_saved_with_one_key_per_special_token_load(tokenizer):
    settings = {"lowercase": True, "unk_token": "[UNK]", "mask_token": "[MASK]"}
    assert BertTokenizer.upgrade_settings(settings) == {"lowercase": True, "special_tokens": {
        "unk_token": "[UNK]", "mask_token": "[MASK]"}}
    restored = BertTokenizer.from_config({**tokenizer.get_config(), **settings, "special_tokens": None})
    assert restored.special_tokens() == tokenizer.special_tokens()
    with pytest.raises(ValueError, match=r"special_tokens has \['bos_token'\]; it names \['unk_token'"):
        BertTokenizer(tokenizer.get_vocabulary(), special_tokens={"bos_token": "<s>"})
