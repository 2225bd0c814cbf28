"""MobileBERT's encoder block: bottlenecks around a narrow attention and a stack of feed-forward networks."""

import keras
from keras import ops

from kerasbert.layers.activations import get_activation
from kerasbert.layers.attention import attention_output_spec
from kerasbert.layers.bottleneck_attention import BottleneckAttention
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.no_norm import TORCH_LAYER_NORM_EPSILON, check_normalization_type, normalization


@keras.saving.register_keras_serializable(package="kerasbert")
class MobileBertEncoderBlock(keras.layers.Layer):
    """HF `MobileBertLayer`, post-norm throughout (`norm` is NoNorm or LayerNorm by `normalization_type`).

    With `use_bottleneck`, the block's input `x` (`hidden_dim` wide) is projected to `intra_bottleneck_dim`
    (`b = norm(Dense(x))`, HF `bottleneck.input`), the width the block works at (HF `true_hidden_size`;
    without a bottleneck it is `hidden_dim`). Attention reads queries and keys from a second projection
    `norm(Dense(x))` with `key_query_shared_bottleneck` (HF `bottleneck.attention`) and values from `x`; with
    `use_bottleneck_attention` all three from `b`. Then `a = norm(b + Attention)`, the `num_feedforward_networks - 1`
    extra feed-forward networks `a = norm(a + FFN(a))`, the last one `norm(a + FFN(a))` (HF builds that norm
    with torch's epsilon 1e-5) and, with a bottleneck, `norm(x + Dense(.))` back to `hidden_dim` (HF
    `output.bottleneck`). Every feed-forward network is `Dense(intermediate_dim) -> activation -> Dense`.
    Dropout follows the attention and the last feed-forward network without a bottleneck, and the output
    bottleneck with one, as in HF.

    Args:
        num_heads: attention heads (they divide the attention width). intermediate_dim: feed-forward width.
        intra_bottleneck_dim: the bottleneck width. use_bottleneck, use_bottleneck_attention,
            key_query_shared_bottleneck, num_feedforward_networks, normalization_type: as HF `MobileBertConfig`.
        activation, dropout, attention_dropout, layer_norm_epsilon, initializer_range: as `TransformerEncoderBlock`.

    Examples:
        >>> block = MobileBertEncoderBlock(num_heads=2, intermediate_dim=16, intra_bottleneck_dim=8)
        >>> tuple(block(ops.ones((2, 5, 32)), padding_mask=ops.ones((2, 5), "bool")).shape)
        (2, 5, 32)
    """

    def __init__(self, num_heads, intermediate_dim, intra_bottleneck_dim=128, use_bottleneck=True,
                 use_bottleneck_attention=False, key_query_shared_bottleneck=True, num_feedforward_networks=4,
                 normalization_type="no_norm", activation="relu", dropout=0.0, attention_dropout=0.1,
                 layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        check_normalization_type(normalization_type)
        if isinstance(num_feedforward_networks, bool) or not isinstance(num_feedforward_networks, int) \
                or num_feedforward_networks < 1:
            raise ValueError(f"num_feedforward_networks must be an int >= 1 (4 in google/mobilebert-uncased), got "
                             f"{num_feedforward_networks!r}.")
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.intra_bottleneck_dim = intra_bottleneck_dim
        self.use_bottleneck = use_bottleneck
        self.use_bottleneck_attention = use_bottleneck_attention
        self.key_query_shared_bottleneck = key_query_shared_bottleneck
        self.num_feedforward_networks = num_feedforward_networks
        self.normalization_type = normalization_type
        self.activation = activation
        self.activation_fn = get_activation(activation)
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def dense(self, units, name):
        return keras.layers.Dense(units, kernel_initializer=weight_initializer(self.initializer_range),
                                  dtype=self.dtype_policy, name=name)

    def norm(self, name, epsilon=None):
        return normalization(self.normalization_type, epsilon or self.layer_norm_epsilon, name)

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        width = self.intra_bottleneck_dim if self.use_bottleneck else hidden_dim
        queries_from_input = self.use_bottleneck and not (self.use_bottleneck_attention
                                                          or self.key_query_shared_bottleneck)
        if queries_from_input and width != hidden_dim:
            raise ValueError(f"With use_bottleneck and neither key_query_shared_bottleneck nor "
                             f"use_bottleneck_attention, queries come from the {hidden_dim}-wide input, so "
                             f"intra_bottleneck_dim must equal hidden_dim (got {width}); set "
                             "key_query_shared_bottleneck=True (HF fails on this config too).")
        narrow = tuple(input_shape[:-1]) + (width,)
        inner = tuple(input_shape[:-1]) + (self.intermediate_dim,)
        self.input_bottleneck = self.attention_bottleneck = self.output_bottleneck = None
        if self.use_bottleneck:
            self.input_bottleneck = (self.dense(width, "input_bottleneck_dense"), self.norm("input_bottleneck_norm"))
            if self.key_query_shared_bottleneck:  # HF makes it even where use_bottleneck_attention leaves it unused
                self.attention_bottleneck = (self.dense(width, "attention_bottleneck_dense"),
                                             self.norm("attention_bottleneck_norm"))
            self.output_bottleneck = (self.dense(hidden_dim, "output_bottleneck_dense"),
                                      self.norm("output_bottleneck_norm"))
        for pair, shape in ((self.input_bottleneck, input_shape), (self.attention_bottleneck, input_shape),
                            (self.output_bottleneck, narrow)):
            if pair is not None:
                pair[0].build(shape)
                pair[1].build(tuple(shape[:-1]) + (pair[0].units,))
        self.attention = BottleneckAttention(self.num_heads, self.attention_dropout, self.initializer_range,
                                             dtype=self.dtype_policy, name="attention")
        self.attention.build(narrow, narrow if self.use_bottleneck_attention else input_shape)
        self.attention_norm = self.norm("attention_norm")
        self.attention_norm.build(narrow)
        self.feed_forwards = []  # (intermediate Dense, output Dense, norm) of each FFN, the last one included
        for index in range(self.num_feedforward_networks):
            last = index == self.num_feedforward_networks - 1
            prefix = "" if last else f"ffn_{index}_"
            layers = (self.dense(self.intermediate_dim, f"{prefix}intermediate_dense"),
                      self.dense(width, f"{prefix}output_dense"),
                      self.norm(f"{prefix}output_norm", TORCH_LAYER_NORM_EPSILON if last else None))
            layers[0].build(narrow)
            layers[1].build(inner)
            layers[2].build(narrow)
            self.feed_forwards.append(layers)
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)
        self.built = True

    def normalize(self, layer, x):
        """NoNorm or LayerNorm in float32, result back in the compute dtype."""
        return ops.cast(layer(x), self.compute_dtype)

    def project(self, pair, x):
        dense, norm = pair
        return self.normalize(norm, dense(x))

    def feed_forward(self, layers, x):
        intermediate, output, _ = layers
        return output(self.activation_fn(intermediate(x)))

    def call(self, x, padding_mask=None, return_attention_scores=False, training=None):
        layer_input = query_key = value = x
        if self.use_bottleneck:
            layer_input = self.project(self.input_bottleneck, x)
            if self.use_bottleneck_attention:
                query_key = value = layer_input
            elif self.key_query_shared_bottleneck:
                query_key = self.project(self.attention_bottleneck, x)
        attended = self.attention(query_key, value, padding_mask=padding_mask,
                                  return_attention_scores=return_attention_scores, training=training)
        scores = None
        if return_attention_scores:
            attended, scores = attended
        if not self.use_bottleneck:
            attended = self.dropout_layer(attended, training=training)
        hidden = self.normalize(self.attention_norm, layer_input + attended)
        for layers in self.feed_forwards[:-1]:
            hidden = self.normalize(layers[2], hidden + self.feed_forward(layers, hidden))
        last = self.feed_forwards[-1]
        transformed = self.feed_forward(last, hidden)
        if not self.use_bottleneck:
            transformed = self.dropout_layer(transformed, training=training)
        output = self.normalize(last[2], hidden + transformed)
        if self.use_bottleneck:
            dense, norm = self.output_bottleneck
            output = self.normalize(norm, x + self.dropout_layer(dense(output), training=training))
        return (output, scores) if return_attention_scores else output

    def compute_output_spec(self, x, padding_mask=None, return_attention_scores=False, training=None):
        return attention_output_spec(x, self.num_heads, self.compute_dtype, return_attention_scores)

    def get_config(self):
        config = super().get_config()
        config.update({"num_heads": self.num_heads, "intermediate_dim": self.intermediate_dim,
                       "intra_bottleneck_dim": self.intra_bottleneck_dim, "use_bottleneck": self.use_bottleneck,
                       "use_bottleneck_attention": self.use_bottleneck_attention,
                       "key_query_shared_bottleneck": self.key_query_shared_bottleneck,
                       "num_feedforward_networks": self.num_feedforward_networks,
                       "normalization_type": self.normalization_type, "activation": self.activation,
                       "dropout": self.dropout, "attention_dropout": self.attention_dropout,
                       "layer_norm_epsilon": self.layer_norm_epsilon, "initializer_range": self.initializer_range})
        return config
