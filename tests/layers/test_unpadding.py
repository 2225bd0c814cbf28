"""`on_real_tokens`: a per-token layer run on the real tokens only gives the padded computation's values there."""

import keras
import numpy as np

from kerasbert.layers.unpadding import on_real_tokens


def test_real_tokens_get_the_padded_values_and_padding_gets_zeros():
    dense = keras.layers.Dense(5)  # another width than the input's, as a fused Q/K/V projection
    x = np.random.default_rng(0).normal(size=(3, 4, 2)).astype("float32")
    for mask in (np.array([[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]]), np.ones((3, 4), "int32")):
        expected = keras.ops.convert_to_numpy(dense(x)) * mask[..., None]
        got = keras.ops.convert_to_numpy(on_real_tokens(dense, x, mask))
        np.testing.assert_allclose(got, expected, atol=1e-6)
