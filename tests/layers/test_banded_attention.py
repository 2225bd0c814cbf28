"""Local attention in blocks (`banded_attention`) against the full scores under `sliding_window_mask`: the same
outputs at every real position, for lengths that are and are not multiples of the block, with padding."""

import numpy as np
import pytest
from keras import ops

from kerasbert.layers.banded_attention import banded_attention
from kerasbert.layers.rotary_attention import RotarySelfAttention


@pytest.mark.parametrize("length, window", [(1, 4), (13, 4), (16, 8), (37, 5), (40, 128)])
def test_blocks_give_the_outputs_of_the_full_window_mask(length, window):
    rng = np.random.default_rng(length)
    x = rng.normal(size=(2, length, 16)).astype("float32")
    padding_mask = np.ones((2, length), "int32")
    padding_mask[1, max(1, length - 5):] = 0
    layer = RotarySelfAttention(num_heads=2, rope_theta=10000.0, window=window, attention_dropout=0.0)
    blocks = ops.convert_to_numpy(layer(x, padding_mask=padding_mask))
    full, probabilities = layer(x, padding_mask=padding_mask, return_attention_scores=True)  # the mask path
    real = padding_mask[..., None].astype(bool)
    np.testing.assert_allclose(np.where(real, blocks, 0), np.where(real, ops.convert_to_numpy(full), 0), atol=2e-6)
    seen = ops.convert_to_numpy(probabilities)[0, 0] > 0  # the window the full path used: |i - j| <= window // 2
    assert seen.sum(-1).max() == min(length, 2 * (window // 2) + 1)


def test_each_position_averages_its_window_when_all_scores_are_equal():
    # 4,096 positions, half window 4: blocks of 4 queries, each scoring 12 keys (the full path: 4,096)
    query = ops.ones((1, 1, 4096, 8))
    context = banded_attention(query, query, ops.arange(4096, dtype="float32")[None, None, :, None] * query, 4)
    # all scores equal: each position averages the values of the 9 positions around it (fewer at the ends)
    np.testing.assert_allclose(ops.convert_to_numpy(context)[0, 100:103, 0, 0], [100.0, 101.0, 102.0], rtol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(context)[0, 0, 0, 0], np.mean(np.arange(5)), rtol=1e-6)


def test_global_columns_join_each_window_in_one_softmax():
    # Longformer: query i sees key j when |i - j| <= 2 and j is local, or when j is global (positions 0 and 9)
    rng = np.random.default_rng(0)
    query, key, value = (rng.normal(size=(1, 2, 13, 4)).astype("float32") for _ in range(3))
    is_global = np.zeros(13, bool)
    is_global[[0, 9]] = True
    context = banded_attention(query, key, value, 2, padding_mask=~is_global[None], global_keys=key[:, :, is_global],
                               global_values=value[:, :, is_global], global_visible=np.ones((1, 2), bool))
    positions = np.arange(13)
    visible = (np.abs(positions[:, None] - positions[None, :]) <= 2) | is_global[None, :]
    scores = np.where(visible, query[0] @ key[0].transpose(0, 2, 1) / 2.0, -np.inf)
    probabilities = np.exp(scores - scores.max(-1, keepdims=True))
    expected = (probabilities / probabilities.sum(-1, keepdims=True)) @ value[0]  # [heads, T, d]
    np.testing.assert_allclose(ops.convert_to_numpy(context)[0], expected.transpose(1, 0, 2), atol=2e-6)
