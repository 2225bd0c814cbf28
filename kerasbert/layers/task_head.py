"""DenseTaskHead: dropout and a Dense layer on one backbone output, as a `head=` for any task model."""

import keras

from kerasbert.layers.initializers import weight_initializer

HEAD_READS = ("pooled_output", "sequence_output")


@keras.saving.register_keras_serializable(package="kerasbert")
class DenseTaskHead(keras.layers.Layer):
    """`Dense(units)(Dropout(dropout)(features[reads]))` in float32: HF's classification / token-classification
    head as a layer of its own, so several tasks can each keep one on a shared backbone (`BertMultiTask`).

    Args:
        units: outputs per example ("pooled_output") or per token ("sequence_output").
        reads: the backbone output it reads.
        dropout: dropout rate before the Dense layer.
        initializer_range: the standard deviation of the kernel's initialiser (the backbone's).

    Examples:
        >>> head = DenseTaskHead(3, reads="pooled_output")
        >>> classifier = BertClassifier(backbone, preprocessor, labels=["a", "b", "c"], head=head)
    """

    def __init__(self, units, reads="pooled_output", dropout=0.1, initializer_range=0.02, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        if reads not in HEAD_READS:
            raise ValueError(f"reads={reads!r} is not one of {list(HEAD_READS)}.")
        self.units, self.reads, self.dropout, self.initializer_range = units, reads, dropout, initializer_range
        self.dropout_layer = keras.layers.Dropout(dropout, name="dropout")
        self.dense = keras.layers.Dense(units, name="dense", dtype="float32",
                                        kernel_initializer=weight_initializer(initializer_range))

    def build(self, features_shape):
        self.dense.build(features_shape[self.reads])
        self.built = True

    def call(self, features, training=None):
        return self.dense(self.dropout_layer(keras.ops.cast(features[self.reads], "float32"), training=training))

    def compute_output_shape(self, features_shape):
        return (*features_shape[self.reads][:-1], self.units)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "reads": self.reads, "dropout": self.dropout,
                "initializer_range": self.initializer_range}
