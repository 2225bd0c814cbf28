"""`load_tokenizer` gives the same tokenizer for the same preset, files and settings, and a new one otherwise."""

import os
import shutil

import keras

from kerasbert.families import BertPreprocessor, BertTokenizer, tokenizer_from_preset

TEXTS = ["The café opens at nine.", "Naïve questions deserve answers!"]


def copy_folder(minilm_path, folder):
    folder.mkdir()
    for name in ("config.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(minilm_path / name, folder / name)
    return folder


def test_the_same_preset_and_settings_give_the_same_tokenizer(minilm_path, tmp_path):
    folder = copy_folder(minilm_path, tmp_path / "preset")
    first = BertTokenizer.from_preset(str(folder))
    assert tokenizer_from_preset(str(folder)) is first
    assert BertPreprocessor.from_preset(str(folder), sequence_length=16).tokenizer is first
    assert BertTokenizer.from_preset(str(folder), lowercase=False) is not first
    assert BertTokenizer.from_preset(str(folder), special_tokens={"unk_token": "[UNK]"}) is not first
    saved_policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        assert BertTokenizer.from_preset(str(folder)) is not first  # its config names another dtype
    finally:
        keras.config.set_dtype_policy(saved_policy)


def test_a_rewritten_vocabulary_gives_a_new_tokenizer(minilm_path, tmp_path):
    folder = copy_folder(minilm_path, tmp_path / "preset")
    before = BertTokenizer.from_preset(str(folder))
    expected = before(TEXTS).to_list()
    vocabulary = (folder / "vocab.txt").read_text().splitlines()
    cafe = vocabulary.index("cafe")
    vocabulary[cafe], vocabulary[cafe + 1] = vocabulary[cafe + 1], vocabulary[cafe]  # swap two ids
    (folder / "vocab.txt").write_text("\n".join(vocabulary) + "\n")
    os.utime(folder / "vocab.txt", ns=(1, 1))  # even with an old timestamp: the size or time differs
    after = BertTokenizer.from_preset(str(folder))
    assert after is not before
    assert after(TEXTS).to_list()[0][1] == cafe + 1 and expected[0][1] == cafe
