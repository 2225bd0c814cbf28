"""The default optimizer's clipping: the global norm of embedding gradients with repeated tokens."""

import numpy as np
import tensorflow as tf

from kerasbert.training.optimizers import create_optimizer, summed_slices


def test_summed_slices_sums_duplicate_rows_and_keeps_the_dense_gradient():
    gradient = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), tf.constant([4, 1, 4]),
                                tf.constant([6, 2]))
    summed = summed_slices(gradient)
    np.testing.assert_array_equal(tf.convert_to_tensor(summed), tf.convert_to_tensor(gradient))
    assert sorted(summed.indices.numpy().tolist()) == [1, 4]
    dense = tf.ones((2, 2))
    assert summed_slices(dense) is dense


def test_clipping_uses_the_norm_of_the_summed_gradient():
    # One row looked up twice: the true gradient of row 0 is [6, 8] (norm 10), not two slices [3, 4].
    variable = tf.Variable(tf.zeros((3, 2)))
    optimizer = create_optimizer(total_steps=10, learning_rate=1.0, warmup_fraction=0.0, weight_decay=0.0)
    gradient = tf.IndexedSlices(tf.constant([[3.0, 4.0], [3.0, 4.0]]), tf.constant([0, 0]), tf.constant([3, 2]))
    clipped = optimizer._clip_gradients([gradient])[0]
    np.testing.assert_allclose(tf.convert_to_tensor(clipped)[0], [0.6, 0.8], rtol=1e-6)  # scaled by 1/10
    optimizer.apply_gradients([(gradient, variable)])
    np.testing.assert_allclose(variable[0], [-1.0, -1.0], rtol=1e-4)  # Adam's first step: -lr * sign
