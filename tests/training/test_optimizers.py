"""The default optimizer: the global norm of embedding gradients with repeated tokens, steps equal to torch AdamW
on every Keras backend (TensorFlow's fused kernel, torch's `_foreach` kernels, JAX's keras.ops)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasbert.training.default_optimizer import create_optimizer
from kerasbert.training.optimizers import AdamW, summed_slices


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


def kernel_gradient(gradient):
    """TensorFlow: the sparse `IndexedSlices` an embedding lookup gives; other backends: dense."""
    if keras.backend.backend() == "tensorflow":
        return tf.IndexedSlices(tf.constant(gradient), tf.range(gradient.shape[0]), tf.constant(gradient.shape))
    return keras.ops.convert_to_tensor(gradient)


@pytest.mark.all_backends
@pytest.mark.parametrize("clip", [None, 1.0])
def test_steps_equal_torch_adamw_with_decay_only_where_it_belongs(clip):
    # Ten steps on a kernel (decayed, an embedding-style sparse gradient) and a bias (not decayed,
    # gradients of 1e-8 so that where epsilon sits matters), against torch.optim.AdamW.
    torch = pytest.importorskip("torch", reason="the reference needs torch: pip install torch==2.13.0")
    rng = np.random.default_rng(0)
    start = {"kernel": rng.normal(size=(4, 3)).astype("float32"), "bias": rng.normal(size=3).astype("float32")}
    grads = [{"kernel": rng.normal(size=(4, 3)).astype("float32"),
              "bias": (1e-8 * rng.normal(size=3)).astype("float32")} for _ in range(10)]
    optimizer = create_optimizer(total_steps=10, learning_rate=0.1, global_clipnorm=clip)
    kernel = keras.Variable(start["kernel"], name="kernel")
    bias = keras.Variable(start["bias"], name="bias")
    optimizer.build([kernel, bias])
    reference = {name: torch.nn.Parameter(torch.tensor(value)) for name, value in start.items()}
    torch_optimizer = torch.optim.AdamW([{"params": [reference["kernel"]], "weight_decay": 0.01},
                                         {"params": [reference["bias"]], "weight_decay": 0.0}],
                                        lr=0.1, betas=(0.9, 0.999), eps=1e-8)
    for grad in grads:
        learning_rate = float(optimizer.learning_rate)
        optimizer.apply_gradients([(kernel_gradient(grad["kernel"]), kernel),
                                   (keras.ops.convert_to_tensor(grad["bias"]), bias)])
        for group in torch_optimizer.param_groups:
            group["lr"] = learning_rate
        for name, parameter in reference.items():
            parameter.grad = torch.tensor(grad[name])
        if clip:
            torch.nn.utils.clip_grad_norm_(list(reference.values()), clip)
        torch_optimizer.step()
    # float32 rounding over ten steps of size 0.1; a misplaced epsilon or decay moves them by > 1e-3.
    np.testing.assert_allclose(kernel.numpy(), reference["kernel"].detach().numpy(), atol=2e-6)
    np.testing.assert_allclose(bias.numpy(), reference["bias"].detach().numpy(), atol=2e-6)
    assert np.abs(kernel.numpy() - start["kernel"]).min() > 1e-2  # every weight moved


def test_amsgrad_is_refused_rather_than_ignored():
    with pytest.raises(ValueError, match="AMSGrad"):
        AdamW(learning_rate=1e-3, amsgrad=True)
