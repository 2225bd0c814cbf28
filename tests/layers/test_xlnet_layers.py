"""XLNet's layers one by one against HF transformers' `modeling_xlnet` (CPU torch): the relative shift, the
sinusoidal relative positions (with and without clamping), the segment encoding; and their Keras configs."""

import keras
import numpy as np
import pytest

from kerasbert.layers.relative_attention import XLNetRelativeAttention, relative_shift
from kerasbert.layers.relative_position_encoding import relative_positional_encoding
from kerasbert.layers.relative_segment_encoding import relative_segment_encoding
from kerasbert.layers.xlnet_feed_forward import XLNetFeedForward

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
from transformers.models.xlnet import modeling_xlnet  # noqa: E402


def test_relative_shift_equals_hf_rel_shift_bnij():
    scores = np.random.default_rng(0).normal(size=(2, 3, 4, 10)).astype("float32")  # 4 queries, 6 keys
    ours = keras.ops.convert_to_numpy(relative_shift(keras.ops.convert_to_tensor(scores), 6))
    theirs = modeling_xlnet.XLNetRelativeAttention.rel_shift_bnij(torch.tensor(scores), klen=6).numpy()
    assert ours.shape == (2, 3, 4, 6) and np.array_equal(ours, theirs)


@pytest.mark.parametrize("clamp_length", [-1, 3])
def test_relative_positions_equal_hf(clamp_length):
    config = transformers.XLNetConfig(d_model=16, n_head=2, d_inner=32, n_layer=1, vocab_size=10,
                                      clamp_len=clamp_length)
    model = modeling_xlnet.XLNetModel(config)
    theirs = model.relative_positional_encoding(5, 9, bsz=1)[:, 0].numpy()  # 5 queries, 4 memory + 5 keys
    ours = keras.ops.convert_to_numpy(relative_positional_encoding(5, 9, 16, clamp_length))
    assert ours.shape == (14, 16) and float(np.abs(ours - theirs).max()) <= 1e-6


def test_relative_segments_put_the_memory_in_segment_zero():
    encoding = keras.ops.convert_to_numpy(relative_segment_encoding(keras.ops.convert_to_tensor([[1, 0]]), 2))
    assert encoding.shape == (1, 2, 4, 2)
    assert encoding[0, :, :, 1].tolist() == [[1, 1, 0, 1], [0, 0, 1, 0]]  # 1: another segment


def test_the_layers_rebuild_from_their_configs():
    attention = XLNetRelativeAttention(num_heads=4, dropout=0.2, layer_norm_epsilon=1e-6, name="attention")
    feed_forward = XLNetFeedForward(intermediate_dim=64, activation="relu", dropout=0.0, name="feed_forward")
    for layer in (attention, feed_forward):
        rebuilt = type(layer).from_config(layer.get_config())
        assert rebuilt.get_config() == layer.get_config()
    with pytest.raises(ValueError, match="not a multiple of num_heads=4"):
        attention.build((None, None, 30))
