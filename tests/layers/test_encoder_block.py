import math

import keras
import numpy as np
import pytest

from kerasbert.layers.activations import get_activation
from kerasbert.layers.attention import MultiHeadSelfAttention
from kerasbert.layers.encoder_block import TransformerEncoderBlock

pytestmark = pytest.mark.all_backends


def block(**kwargs):
    kwargs = {"num_heads": 2, "intermediate_dim": 32, "dropout": 0.0, "attention_dropout": 0.0, **kwargs}
    return TransformerEncoderBlock(**kwargs)


def inputs(batch=2, length=6, hidden=8, seed=0):
    return np.random.default_rng(seed).normal(size=(batch, length, hidden)).astype("float32")


def test_padding_does_not_leak_into_real_positions():
    layer = block()
    x = inputs()
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], "int32")
    out = keras.ops.convert_to_numpy(layer(x, padding_mask=mask))
    x_changed = x.copy()
    x_changed[0, 4:] = 100.0  # garbage in the padding
    out_changed = keras.ops.convert_to_numpy(layer(x_changed, padding_mask=mask))
    np.testing.assert_allclose(out[0, :4], out_changed[0, :4], atol=1e-5)
    np.testing.assert_allclose(out[1], out_changed[1], atol=1e-6)


def test_full_attention_mask_makes_a_causal_block():
    layer = block()
    x = inputs(batch=1)
    causal = np.tril(np.ones((1, 6, 6), "int32"))
    out = keras.ops.convert_to_numpy(layer(x, attention_mask=causal))
    x_changed = x.copy()
    x_changed[0, 3:] = inputs(batch=1, seed=1)[0, 3:]  # change the future of position 2
    out_changed = keras.ops.convert_to_numpy(layer(x_changed, attention_mask=causal))
    np.testing.assert_allclose(out[0, :3], out_changed[0, :3], atol=1e-5)
    assert np.abs(out[0, 3:] - out_changed[0, 3:]).max() > 1e-2


def test_attention_scores_are_probabilities_that_respect_masks():
    layer = block()
    mask = np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]], "int32")
    out, scores = layer(inputs(), padding_mask=mask, return_attention_scores=True)
    scores = keras.ops.convert_to_numpy(scores)
    assert scores.shape == (2, 2, 6, 6)
    np.testing.assert_allclose(scores.sum(-1), 1.0, atol=1e-5)
    assert np.abs(scores[0, :, :, 3:]).max() == 0.0
    assert keras.ops.convert_to_numpy(out).shape == (2, 6, 8)


def test_post_ln_is_default_and_pre_ln_differs():
    x = inputs()
    post = block()
    post(x)
    pre = block(normalize_first=True)
    pre(x)
    pre.set_weights(post.get_weights())
    post_out, pre_out = keras.ops.convert_to_numpy(post(x)), keras.ops.convert_to_numpy(pre(x))
    # Post-LN output is LayerNorm-ed: zero mean, unit variance per position (gamma=1, beta=0).
    np.testing.assert_allclose(post_out.mean(-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(post_out.std(-1), 1.0, atol=1e-3)
    assert np.abs(pre_out.std(-1) - 1.0).max() > 1e-2


def test_activations_exact_and_tanh_gelu():
    x = np.linspace(-10, 10, 401).astype("float32")  # the tails too: TensorFlow's GELU is written with erf
    exact = 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))
    tanh = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(get_activation("gelu")(x)), exact, atol=1e-6)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(get_activation("gelu_approximate")(x)), tanh, atol=1e-6)
    with pytest.raises(ValueError, match="gelu_approximate"):
        get_activation("gelu_tanhh")


def test_separate_dropout_and_attention_dropout():
    x = inputs()
    only_attention = block(attention_dropout=0.9)
    only_attention(x)
    a = keras.ops.convert_to_numpy(only_attention(x, training=True))
    b = keras.ops.convert_to_numpy(only_attention(x, training=False))
    assert np.abs(a - b).max() > 1e-3
    np.testing.assert_allclose(b, keras.ops.convert_to_numpy(only_attention(x)), atol=0)
    assert only_attention.get_config()["dropout"] == 0.0


def test_config_round_trip_and_head_divisibility():
    layer = block(activation="gelu_approximate", layer_norm_epsilon=1e-6, normalize_first=True)
    layer(inputs())
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(clone) is TransformerEncoderBlock
    assert clone.get_config() == layer.get_config()
    with pytest.raises(ValueError, match="not divisible by num_heads=3"):
        MultiHeadSelfAttention(num_heads=3)(inputs())


def test_lora_options_are_one_config_and_old_configs_load():
    from kerasbert.layers.lora import LoraConfig

    layer = block(lora_config=LoraConfig(rank=2, alpha=4, targets=["query", "output"]))
    layer(inputs())
    assert sorted(layer.lora) == ["output"] and sorted(layer.attention.lora) == ["query"]
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert clone.lora_config == LoraConfig(2, 4, ("query", "output"))
    saved_before = {**block().get_config(), "lora_rank": 2, "lora_alpha": 4, "lora_targets": ["value"],
                    "lora_dropout": 0.0}
    saved_before.pop("lora_config")
    assert TransformerEncoderBlock.from_config(saved_before).lora_config == LoraConfig(2, 4, ("value",))
    with pytest.raises(ValueError, match=r"lora_targets \['querry'\]: unknown"):
        LoraConfig(rank=2, targets=["querry"])
