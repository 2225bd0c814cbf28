import keras
import numpy as np
import pytest

from kerasbert.layers.embedding import TokenSegmentPositionEmbedding

pytestmark = pytest.mark.all_backends


def make_layer(**kwargs):
    layer = TokenSegmentPositionEmbedding(
        vocabulary_size=50, hidden_dim=8, max_sequence_length=16, dropout=0.0, **kwargs
    )
    layer(np.zeros((1, 4), "int32"), np.zeros((1, 4), "int32"))
    return layer


def layer_norm(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def test_sum_of_three_lookups_then_layer_norm():
    layer = make_layer()
    token_ids = np.array([[3, 7, 7, 49, 0]], "int32")
    segment_ids = np.array([[0, 0, 1, 1, 1]], "int32")
    out = keras.ops.convert_to_numpy(layer(token_ids, segment_ids))

    tokens = layer.token_embedding.embeddings.numpy()
    segments = layer.segment_embedding.embeddings.numpy()
    positions = layer.position_embedding.embeddings.numpy()
    summed = tokens[token_ids[0]] + segments[segment_ids[0]] + positions[:5]
    ln = layer.layer_norm
    expected = layer_norm(summed, ln.gamma.numpy(), ln.beta.numpy(), 1e-12)
    np.testing.assert_allclose(out[0], expected, atol=1e-5)


def test_sum_equals_one_lookup_of_concatenated_one_hots():
    """The seeds' identity: three lookups summed = [one-hot tok | seg | pos] @ stacked tables."""
    layer = make_layer()
    token_ids = np.array([5, 1, 33], "int32")
    segment_ids = np.array([0, 1, 1], "int32")
    tokens = layer.token_embedding.embeddings.numpy()
    segments = layer.segment_embedding.embeddings.numpy()
    positions = layer.position_embedding.embeddings.numpy()
    stacked = np.concatenate([tokens, segments, positions])
    one_hot = np.zeros((3, stacked.shape[0]), "float32")
    for i, (t, s) in enumerate(zip(token_ids, segment_ids)):
        one_hot[i, t] = one_hot[i, 50 + s] = one_hot[i, 52 + i] = 1
    summed = tokens[token_ids] + segments[segment_ids] + positions[:3]
    np.testing.assert_allclose(one_hot @ stacked, summed, atol=1e-6)


def test_exposes_token_matrix_for_tying_and_serialises():
    layer = make_layer(layer_norm_epsilon=1e-7, num_segments=3)
    assert layer.embeddings is layer.token_embedding.embeddings
    assert tuple(layer.embeddings.shape) == (50, 8)
    clone = TokenSegmentPositionEmbedding.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()
    assert clone.num_segments == 3 and clone.layer_norm_epsilon == 1e-7


def test_dropout_only_in_training():
    layer = TokenSegmentPositionEmbedding(vocabulary_size=50, hidden_dim=8, dropout=0.5)
    ids = np.ones((2, 6), "int32")
    inference = keras.ops.convert_to_numpy(layer(ids, ids * 0, training=False))
    np.testing.assert_allclose(inference, keras.ops.convert_to_numpy(layer(ids, ids * 0)), atol=0)
    training = keras.ops.convert_to_numpy(layer(ids, ids * 0, training=True))
    assert (training == 0).mean() > 0.2
    assert keras.saving.get_registered_name(TokenSegmentPositionEmbedding) == (
        "kerasbert>TokenSegmentPositionEmbedding"
    )
