"""Quantisation-aware fine-tuning (Q8BERT, Zafrir et al. 2019): train on the int8 grid, then `quantize("int8")`.

With `FineTuningConfig(mode, quantization_aware=True)` every layer that `quantize("int8")` will turn int8 computes
on int8-rounded numbers while it trains, on the grid Keras' int8 uses: Dense kernels rounded per output column
and their inputs per token (abs-max, 127 levels each side), embedding tables per row. Gradients pass the rounding
unchanged (the straight-through estimator), so the float weights learn to sit where rounding costs least. The
float forward of such a model is the forward of its int8 model to float rounding; `quantize("int8")` afterwards
gives that int8 model (the tied masked-LM decoder reads the token table on the grid too, as int8 reads it).

Examples:
    >>> q8 = FineTuningConfig("full", quantization_aware=True)
    >>> classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2, fine_tuning=q8)
    >>> classifier.fit(train)
    >>> classifier.quantize("int8")
"""

import keras
from keras import ops

from kerasbert.deployment.quantize import quantizable
from kerasbert.layers.int8_grid import fake_int8


def dense_on_int8_grid(layer):
    """A `call` for the Dense `layer`: inputs per token and kernel per output column on the int8 grid."""
    def call(inputs, training=None):
        outputs = ops.matmul(fake_int8(inputs, axis=-1), fake_int8(layer.kernel, axis=0))
        if layer.bias is not None:
            outputs = outputs + layer.bias
        return outputs if layer.activation is None else layer.activation(outputs)
    return call


def embedding_on_int8_grid(layer):
    """A `call` for the Embedding `layer`: rows of its table on the int8 grid (`on_int8_grid` tells the tied
    masked-LM decoder to read the table so too)."""
    layer.on_int8_grid = True
    def call(inputs):
        if ops.dtype(inputs) not in ("int32", "int64"):
            inputs = ops.cast(inputs, "int32")
        return ops.take(fake_int8(layer.embeddings, axis=-1), inputs, axis=0)
    return call


def train_on_int8_grid(model):
    """Make every layer of `model` that `quantize("int8")` turns int8 compute on the int8 grid (see the module
    docstring). A layer already quantised keeps Keras' int8 call, which takes precedence."""
    for layer in model._flatten_layers(include_self=False):
        if quantizable(layer):
            make_call = embedding_on_int8_grid if isinstance(layer, keras.layers.Embedding) else dense_on_int8_grid
            layer.call = make_call(layer)
