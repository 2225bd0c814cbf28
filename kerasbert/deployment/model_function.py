"""A function of a model's current weights, compiled for whichever Keras backend runs it."""

import keras
import numpy as np

from kerasbert.training.distribution import batch_shards


class ModelFunction:
    """`function(*args)` that calls `model`, compiled the way the backend compiles Keras' own steps.

    TensorFlow: a `tf.function` (one trace serves every batch shape once `trace` has seen the dataset's
    spec). JAX: `jax.jit` of a stateless call, so the weights are arguments, never constants baked into
    the trace (they stay current after training); under a `keras.distribution`, batches that split
    evenly over its devices are sharded along the batch axis (others run whole, with the same result). torch: eager, without autograd. Arguments may be
    TensorFlow tensors straight from `tf.data`; results come back as numpy arrays.

    Examples:
        >>> logits = ModelFunction(model, lambda x: model(x, training=False))
        >>> logits.trace(dataset.element_spec)
        >>> [logits(batch) for batch in dataset]
    """

    def __init__(self, model, function, static_argnums=()):
        self.model = model
        self.function = function
        self.backend = keras.backend.backend()
        self.compiled = self.compile(static_argnums)

    def compile(self, static_argnums):
        if self.backend == "tensorflow":
            import tensorflow as tf

            return tf.function(self.function, reduce_retracing=True)
        if self.backend == "jax":
            import jax

            def stateless(values, *args):
                mapping = list(zip(self.variables(), values))
                with keras.StatelessScope(state_mapping=mapping):
                    return self.function(*args)

            return jax.jit(stateless, static_argnums=tuple(i + 1 for i in static_argnums))
        return self.function

    def variables(self):
        return self.model.trainable_variables + self.model.non_trainable_variables

    def trace(self, element_spec):
        """TensorFlow: trace once for every shape `element_spec` admits (other backends: nothing to do)."""
        if self.backend == "tensorflow":
            self.compiled.get_concrete_function(element_spec)

    def __call__(self, *args):
        if self.backend == "tensorflow":
            outputs = self.compiled(*args)
        elif self.backend == "jax":
            args = keras.tree.map_structure(placed_for_distribution, keras.tree.map_structure(to_numpy, args))
            outputs = self.compiled([variable.value for variable in self.variables()], *args)
        else:
            import torch

            with torch.no_grad():
                outputs = self.compiled(*keras.tree.map_structure(to_numpy, args))
        return keras.tree.map_structure(keras.ops.convert_to_numpy, outputs)


def to_numpy(value):
    """TensorFlow tensors (from `tf.data`) -> numpy; Python values (e.g. a static `top_k`) unchanged."""
    return value.numpy() if hasattr(value, "numpy") and not isinstance(value, np.ndarray) else value


def placed_for_distribution(value):
    """JAX: an array sharded by the active distribution's data layout when its batch splits evenly."""
    shards = batch_shards()
    if shards == 1 or np.ndim(value) == 0 or value.shape[0] % shards:
        return value
    import jax

    layout = keras.distribution.distribution().get_data_layout(value.shape)
    return jax.device_put(value, layout.backend_layout)
