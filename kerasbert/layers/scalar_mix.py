"""ScalarMix: a learned, softmax-normalised weighted sum of same-shape tensors (ELMo's layer mix)."""

import keras
from keras import ops

from kerasbert.arguments import check_count


@keras.saving.register_keras_serializable(package="kerasbert")
class ScalarMix(keras.layers.Layer):
    """`gamma * sum_i softmax(w)_i * tensors[i]` (Peters et al. 2018): feed a head every layer of BERT.

    The weights `w` start equal (zeros), `gamma` at one, so at step 0 the mix is the mean of its
    inputs. After training, `layer_weights()` tells how much each layer contributes.

    Args:
        num_tensors: how many tensors each call mixes (e.g. `num_layers + 1` hidden states).

    Examples:
        >>> mix = ScalarMix(num_tensors=3)
        >>> tuple(mix([ops.ones((2, 4)), ops.zeros((2, 4)), ops.ones((2, 4))]).shape)
        (2, 4)
        >>> mix.layer_weights().round(3).tolist()
        [0.333, 0.333, 0.333]
    """

    def __init__(self, num_tensors, **kwargs):
        super().__init__(**kwargs)
        self.num_tensors = check_count("num_tensors", num_tensors)

    def build(self, input_shape):
        if len(input_shape) != self.num_tensors:
            raise ValueError(f"ScalarMix(num_tensors={self.num_tensors}) was called on {len(input_shape)} tensors.")
        self.scalar_weights = self.add_weight(shape=(self.num_tensors,), initializer="zeros", name="scalar_weights")
        self.gamma = self.add_weight(shape=(), initializer="ones", name="gamma")
        self.built = True

    def call(self, tensors):
        weights = ops.softmax(ops.cast(self.scalar_weights, "float32"))
        mixed = sum(ops.cast(weights[i], tensor.dtype) * tensor for i, tensor in enumerate(tensors))
        return ops.cast(self.gamma, mixed.dtype) * mixed

    def compute_output_shape(self, input_shape):
        return input_shape[0]

    def layer_weights(self):
        """The softmax-normalised weight of each input tensor, as a numpy array that sums to one."""
        return keras.ops.convert_to_numpy(ops.softmax(ops.cast(self.scalar_weights, "float32")))

    def get_config(self):
        return {**super().get_config(), "num_tensors": self.num_tensors}
