"""The tokenizer and preprocessor survive Keras serialisation, `.keras` files, tf.data and SavedModel."""

import json
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.bert_preprocessor import BertPreprocessor

TEXTS = ["The café [MASK] opens at 9.", "Ångström naïve 中文 ﬁne", ""]


def test_config_keeps_every_setting_and_leaves_the_vocabulary_to_the_asset(vocab_file, tmp_path):
    tokenizer = BertTokenizer(vocab_file, lowercase=False, strip_accents=True, max_chars_per_word=50)
    config = keras.saving.serialize_keras_object(tokenizer)
    assert "vocabulary" not in config["config"] and len(json.dumps(config)) < 1000
    restored = keras.saving.deserialize_keras_object(config)
    assert isinstance(restored, BertTokenizer) and not restored.has_vocabulary
    assert restored.get_config() == tokenizer.get_config()
    with pytest.raises(ValueError, match="has no vocabulary.*set_vocabulary"):
        restored(TEXTS)
    tokenizer.save_assets(tmp_path)
    restored.load_assets(tmp_path)
    assert restored(TEXTS).to_list() == tokenizer(TEXTS).to_list()
    with pytest.raises(ValueError, match="already has a vocabulary"):
        restored.set_vocabulary(vocab_file)


def test_preprocessor_round_trip(tokenizer, tmp_path):
    preprocessor = BertPreprocessor(tokenizer, sequence_length=16, pad_to_sequence_length=False)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(preprocessor))
    assert restored.sequence_length == 16 and not restored.pad_to_sequence_length
    tokenizer.save_assets(tmp_path)
    restored.tokenizer.load_assets(tmp_path)  # what loading a `.keras` file does
    assert not restored.packer.pad_to_sequence_length
    for name, value in preprocessor(TEXTS).items():
        np.testing.assert_array_equal(restored(TEXTS)[name], value)


def test_keras_file_reloads_in_safe_mode_in_a_fresh_process(tokenizer, tmp_path, fresh_python):
    texts = keras.Input(shape=(), dtype="string")
    model = keras.Model(texts, BertPreprocessor(tokenizer, sequence_length=12)(texts))
    path = tmp_path / "preprocessor.keras"
    model.save(path)
    expected = model(tf.constant(TEXTS))["token_ids"].numpy().tolist()
    output = fresh_python(textwrap.dedent(f"""
        import keras, tensorflow as tf
        import kerasbert.families.bert_preprocessor  # registers the kerasbert classes
        model = keras.saving.load_model({str(path)!r}, safe_mode=True)
        print(model(tf.constant({TEXTS!r}))["token_ids"].numpy().tolist())
    """), imports=("tensorflow", "tensorflow_text")).stdout  # the other reload tests' server: keras still unimported
    assert output.strip().splitlines()[-1] == str(expected)


def test_saved_model_serves_raw_strings_with_only_tensorflow_text(tokenizer, tmp_path, fresh_python):
    preprocessor = BertPreprocessor(tokenizer, sequence_length=12)

    class Serving(tf.Module):
        def __init__(self):
            super().__init__()
            self.preprocessor = preprocessor

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
        def __call__(self, texts):
            return preprocessor(texts)

    tf.saved_model.save(Serving(), str(tmp_path / "served"))
    expected = preprocessor(TEXTS)["token_ids"].numpy().tolist()
    output = fresh_python(textwrap.dedent(f"""
        import sys
        import tensorflow as tf, tensorflow_text  # tensorflow_text registers the WordPiece ops
        served = tf.saved_model.load({str(tmp_path / "served")!r})
        print(any(name.startswith("kerasbert") for name in sys.modules))
        print(served(tf.constant({TEXTS!r}))["token_ids"].numpy().tolist())
    """), imports=("tensorflow", "tensorflow_text")).stdout
    imported_kerasbert, token_ids = output.strip().splitlines()[-2:]
    assert imported_kerasbert == "False"
    assert token_ids == str(expected)


def test_tokenizer_and_preprocessor_run_in_tf_data(tokenizer):
    dataset = tf.data.Dataset.from_tensor_slices(TEXTS * 4).batch(5)
    ids = [row for batch in dataset.map(tokenizer) for row in batch.to_list()]
    assert ids == tokenizer(TEXTS * 4).to_list()
    preprocessor = BertPreprocessor(tokenizer, sequence_length=10)
    pairs = (
        tf.data.Dataset.from_tensor_slices((TEXTS, TEXTS[::-1]))
        .batch(3)
        .map(lambda a, b: preprocessor((a, b)))
    )
    batch = next(iter(pairs))
    np.testing.assert_array_equal(batch["token_ids"], preprocessor((TEXTS, TEXTS[::-1]))["token_ids"])
