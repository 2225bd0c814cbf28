import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasbert.layers.activations import get_activation
from kerasbert.layers.heads import MaskedLMHead, NSPHead


@pytest.mark.all_backends
def test_masked_lm_head_gathers_positions_and_ties_decoder():
    embedding = keras.layers.Embedding(40, 8)
    embedding.build((None,))
    head = MaskedLMHead(vocabulary_size=40, token_embedding=embedding)
    x = np.random.default_rng(0).normal(size=(2, 7, 8)).astype("float32")
    positions = np.array([[1, 5], [0, 6]], "int32")
    logits = keras.ops.convert_to_numpy(head(x, positions))
    assert logits.shape == (2, 2, 40)

    gathered = np.stack([x[0, [1, 5]], x[1, [0, 6]]])
    h = keras.ops.convert_to_numpy(get_activation("gelu")(gathered @ head.dense.kernel.numpy() + head.dense.bias.numpy()))
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-12)
    h = h * head.layer_norm.gamma.numpy() + head.layer_norm.beta.numpy()
    expected = h @ embedding.embeddings.numpy().T + head.output_bias.numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-4)
    assert not hasattr(head, "decoder_kernel")  # tied: no decoder matrix of its own


def test_tied_decoder_trains_the_embedding():
    embedding = keras.layers.Embedding(30, 8)
    embedding.build((None,))
    head = MaskedLMHead(vocabulary_size=30, token_embedding=embedding)
    x = tf.random.normal((1, 4, 8))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(head(x, tf.constant([[2]])))
    gradient = tape.gradient(loss, embedding.embeddings)
    assert gradient is not None and float(tf.reduce_max(tf.abs(tf.convert_to_tensor(gradient)))) > 0


@pytest.mark.all_backends
def test_untied_head_has_its_own_decoder_and_serialises():
    head = MaskedLMHead(vocabulary_size=30, activation="gelu_approximate", layer_norm_epsilon=1e-6)
    logits = head(np.ones((1, 3, 8), "float32"))  # no positions: every position
    assert tuple(logits.shape) == (1, 3, 30)
    assert tuple(head.decoder_kernel.shape) == (8, 30)
    clone = MaskedLMHead.from_config(head.get_config())
    assert clone.get_config() == head.get_config()


@pytest.mark.all_backends
def test_nsp_head_two_logits_and_config():
    head = NSPHead(initializer_range=0.05)
    assert tuple(head(np.ones((3, 8), "float32")).shape) == (3, 2)
    clone = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(head))
    assert type(clone) is NSPHead and clone.units == 2 and clone.initializer_range == 0.05
