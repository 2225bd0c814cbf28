"""MobileBERT's layers by themselves: NoNorm's map, the trigram embedding written out in numpy, configs that
round-trip. Their parity with HF transformers is in tests/families/test_mobilebert.py."""

import keras
import numpy as np
import pytest

from kerasbert.layers.bottleneck_attention import BottleneckAttention
from kerasbert.layers.mobilebert_embedding import MobileBertEmbedding
from kerasbert.layers.mobilebert_encoder_block import MobileBertEncoderBlock
from kerasbert.layers.no_norm import NoNorm

pytestmark = pytest.mark.all_backends


def numpy(x):
    return keras.ops.convert_to_numpy(x)


def test_no_norm_is_x_times_gamma_plus_beta():
    layer = NoNorm()
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype("float32")
    layer.build(x.shape)
    layer.gamma.assign(np.array([1.0, 2.0, -1.0, 0.5], "float32"))
    layer.beta.assign(np.array([0.0, 1.0, 2.0, -3.0], "float32"))
    np.testing.assert_allclose(numpy(layer(x)), x * [1.0, 2.0, -1.0, 0.5] + [0.0, 1.0, 2.0, -3.0], atol=1e-6)


def test_trigram_embedding_concatenates_next_own_previous_then_projects():
    layer = MobileBertEmbedding(50, embedding_dim=4, hidden_dim=8, max_sequence_length=16, dropout=0.0)
    token_ids, segment_ids = np.array([[3, 7, 9, 1]], "int32"), np.array([[0, 0, 1, 1]], "int32")
    out = numpy(layer(token_ids, segment_ids))
    tokens = numpy(layer.token_embedding.embeddings)[token_ids[0]]
    zero = np.zeros((1, 4), "float32")
    trigrams = np.concatenate([np.concatenate([tokens[1:], zero]), tokens, np.concatenate([zero, tokens[:-1]])], -1)
    projection = layer.embedding_projection
    summed = (trigrams @ numpy(projection.kernel) + numpy(projection.bias)
              + numpy(layer.position_embedding.embeddings)[:4] + numpy(layer.segment_embedding.embeddings)[segment_ids[0]])
    expected = summed * numpy(layer.layer_norm.gamma) + numpy(layer.layer_norm.beta)  # NoNorm
    np.testing.assert_allclose(out[0], expected, atol=1e-6)


@pytest.mark.parametrize("layer, inputs", [
    (MobileBertEmbedding(50, 4, 8, normalization_type="layer_norm", trigram_input=False),
     (np.ones((1, 3), "int32"), np.zeros((1, 3), "int32"))),
    (BottleneckAttention(num_heads=2), (np.ones((1, 3, 8), "float32"), np.ones((1, 3, 16), "float32"))),
    (MobileBertEncoderBlock(num_heads=2, intermediate_dim=8, intra_bottleneck_dim=4, num_feedforward_networks=3),
     (np.ones((1, 3, 16), "float32"),)),
    (NoNorm(), (np.ones((1, 3, 4), "float32"),)),
])
def test_configs_round_trip_and_rebuild_the_same_weights(layer, inputs):
    layer(*inputs)
    copy = type(layer).from_config(layer.get_config())
    copy(*inputs)
    assert copy.get_config() == layer.get_config()
    assert [tuple(w.shape) for w in copy.weights] == [tuple(w.shape) for w in layer.weights]
