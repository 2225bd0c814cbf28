"""DeferredDense: a Dense layer whose number of units can be given after it is built.

A task built without knowing its labels (`BertClassifier.from_preset(preset)`, then `fit(df)`) has a
logits layer of unknown width: the functional graph is built, and the layer's weights are created on the
first `fit`, once the labels are known (`set_units`). With `units` given it is an ordinary Dense layer.
"""

import keras


@keras.saving.register_keras_serializable(package="kerasbert")
class DeferredDense(keras.layers.Dense):
    """`keras.layers.Dense` that also accepts `units=None` until `set_units(n)` creates its weights.

    Examples:
        >>> logits = DeferredDense(None, name="logits")
        >>> logits(keras.Input((8,))).shape      # built, no weights yet
        (None, None)
        >>> logits.set_units(3)                  # kernel (8, 3), bias (3,)
    """

    def __init__(self, units, **kwargs):
        super().__init__(units or 1, **kwargs)  # Dense checks for a positive int
        self.units = units
        self.deferred_input_shape = None

    def build(self, input_shape):
        if self.units is None:
            self.deferred_input_shape = tuple(input_shape)
            return
        super().build(input_shape)

    def set_units(self, units):
        """Give the width and create the weights (once; Keras' own pattern for weights added after build)."""
        if self.units is not None:
            raise ValueError(f"{self.name} already has {self.units} units.")
        self.units = int(units)
        self._tracker.unlock()
        super().build(self.deferred_input_shape)
        self._tracker.lock()

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.units)

    def call(self, inputs, training=None):
        if self.units is None:
            raise ValueError(f"{self.name} has no units yet: the task learns its labels on the first fit.")
        return super().call(inputs, training=training)
