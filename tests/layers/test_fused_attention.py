"""The fused attention path (`keras.ops.dot_product_attention`) equals the explicit one on every backend."""

import keras
import numpy as np
import pytest

from kerasbert.layers.attention import MultiHeadSelfAttention, fused_kernel_pays

pytestmark = pytest.mark.all_backends

BATCH, LENGTH, HIDDEN, HEADS = 3, 7, 16, 4


def twin_layers(**kwargs):
    """A fused and an explicit attention layer with the same weights."""
    fused = MultiHeadSelfAttention(HEADS, attention_dropout=0.0, fused_attention=True, **kwargs)
    explicit = MultiHeadSelfAttention(HEADS, attention_dropout=0.0, fused_attention=False, **kwargs)
    for layer in (fused, explicit):
        layer.build((None, None, HIDDEN))
    explicit.set_weights(fused.get_weights())
    return fused, explicit


def hidden_states(seed=0):
    return np.random.default_rng(seed).normal(size=(BATCH, LENGTH, HIDDEN)).astype("float32")


def masks():
    padding = np.ones((BATCH, LENGTH), "int32")
    padding[1, 4:] = 0
    padding[2, 1:] = 0
    attention = np.tril(np.ones((BATCH, LENGTH, LENGTH), "int32"))
    attention[0, 3] = 0  # a query that may see no key at all: uniform weights on both paths
    return padding, attention


def as_numpy(x):
    return keras.ops.convert_to_numpy(x)


@pytest.mark.parametrize("which", ["none", "padding", "attention", "both"])
def test_fused_equals_explicit(which):
    fused, explicit = twin_layers()
    padding, attention = masks()
    kwargs = {"padding_mask": padding if which in ("padding", "both") else None,
              "attention_mask": attention if which in ("attention", "both") else None}
    x = hidden_states()
    assert fused.fuses(False, None) and not explicit.fuses(False, None)
    np.testing.assert_allclose(as_numpy(fused(x, **kwargs)), as_numpy(explicit(x, **kwargs)), atol=1e-5)


def test_asking_for_probabilities_takes_the_explicit_path():
    fused, explicit = twin_layers()
    padding, _ = masks()
    x = hidden_states()
    output, probabilities = fused(x, padding_mask=padding, return_attention_scores=True)
    expected, expected_probabilities = explicit(x, padding_mask=padding, return_attention_scores=True)
    np.testing.assert_allclose(as_numpy(output), as_numpy(expected), atol=1e-5)
    np.testing.assert_allclose(as_numpy(probabilities), as_numpy(expected_probabilities), atol=1e-6)
    np.testing.assert_allclose(as_numpy(probabilities).sum(-1), 1.0, atol=1e-5)


def test_custom_scoring_and_training_dropout_take_the_explicit_path():
    class HalfTemperature(MultiHeadSelfAttention):
        def attention_scores(self, query, key):
            return super().attention_scores(query, key) * 2.0

    assert not HalfTemperature(HEADS, fused_attention=True).fuses(False, None)
    dropping = MultiHeadSelfAttention(HEADS, attention_dropout=0.1, fused_attention=True)
    assert dropping.fuses(False, False) and not dropping.fuses(False, True)
    assert MultiHeadSelfAttention(HEADS, attention_dropout=0.0, fused_attention=True).fuses(False, True)


def test_by_default_it_fuses_where_the_backend_has_a_kernel_that_pays():
    assert fused_kernel_pays() == (keras.backend.backend() == "torch")  # on a CPU: torch's SDPA only
    assert MultiHeadSelfAttention(HEADS).fuses(False, None) == fused_kernel_pays()
    with pytest.raises(ValueError, match="fused_attention must be None"):
        MultiHeadSelfAttention(HEADS, fused_attention="yes")


def test_fused_decoding_with_a_cache_equals_explicit():
    fused, explicit = twin_layers()
    x = hidden_states()
    cache = np.zeros((BATCH, 2, HEADS, LENGTH, HIDDEN // HEADS), "float32")
    seen = np.zeros((BATCH, 1, LENGTH), "int32")
    seen[:, :, :3] = 1  # positions 0-2 written: the step at position 2 sees them
    steps = [layer(x[:, 2:3], attention_mask=seen, cache=cache, cache_update_index=2) for layer in (fused, explicit)]
    np.testing.assert_allclose(as_numpy(steps[0][0]), as_numpy(steps[1][0]), atol=1e-5)
    np.testing.assert_allclose(as_numpy(steps[0][1]), as_numpy(steps[1][1]), atol=0)


def test_the_setting_survives_a_config_round_trip():
    layer = MultiHeadSelfAttention(HEADS, fused_attention=False)
    assert MultiHeadSelfAttention.from_config(layer.get_config()).fused_attention is False
    config = layer.get_config()
    del config["fused_attention"]  # a file saved before the setting existed
    assert MultiHeadSelfAttention.from_config(config).fused_attention is None
