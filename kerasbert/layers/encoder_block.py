"""The Transformer encoder block of BERT (post-LayerNorm by default, pre-LN as an option)."""

import keras
from keras import ops

from kerasbert.layers.activations import get_activation
from kerasbert.layers.adapter import Adapter
from kerasbert.layers.attention import MultiHeadSelfAttention, attention_output_spec, with_extra_outputs
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.lora import LoraConfig, LowRankUpdate, lora_config_from_legacy


@keras.saving.register_keras_serializable(package="kerasbert")
class TransformerEncoderBlock(keras.layers.Layer):
    """Self-attention and a feed-forward network, each with a residual and a LayerNorm.

    Post-LN (BERT): `x = LN(x + Attn(x)); x = LN(x + FFN(x))`.
    Pre-LN (`normalize_first=True`): `x = x + Attn(LN(x)); x = x + FFN(LN(x))`.

    Subclass it and pass the subclass as `BertBackbone(encoder_block=...)` to try a
    new block without copying the backbone. Its sub-layers come from factories, so a subclass
    changes one method and creates no unused weights: `make_attention()` (e.g. an attention with
    another `attention_scores`), `make_feed_forward(hidden_dim)`, `make_layer_norm(name)`; the
    computation is in `feed_forward` and `call`. Called on `keras.Input`s with
    `return_attention_scores=True` it returns the (output, probabilities) pair. With a `cache` (see
    `MultiHeadSelfAttention`) it runs on new positions only and returns the updated cache last.

    Args:
        num_heads: attention heads.
        intermediate_dim: width of the feed-forward layer (4 x hidden in BERT).
        activation: "gelu" (exact erf), "gelu_approximate" (tanh), "relu" or "silu".
        dropout: dropout after the attention output and the feed-forward output.
        attention_dropout: dropout on the attention probabilities.
        layer_norm_epsilon: LayerNorm epsilon.
        normalize_first: pre-LN instead of BERT's post-LN.
        initializer_range: standard deviation of the weight initialiser (`weight_initializer`).
        adapter_size: Houlsby adapters (`Adapter`) of this width after the attention and the feed-forward
            outputs (None: none).
        lora_config: a `LoraConfig`: LoRA updates (`LowRankUpdate`) on the projections among its `targets`
            ("query", "key", "value", "attention_output", "intermediate", "output"; default query and value,
            as peft); None: none.

    Examples:
        >>> block = TransformerEncoderBlock(num_heads=2, intermediate_dim=32)
        >>> x = ops.ones((2, 5, 8))
        >>> tuple(block(x, padding_mask=ops.ones((2, 5), "bool")).shape)
        (2, 5, 8)
    """

    def __init__(
        self,
        num_heads,
        intermediate_dim,
        activation="gelu",
        dropout=0.1,
        attention_dropout=0.1,
        layer_norm_epsilon=1e-12,
        normalize_first=False,
        initializer_range=0.02,
        adapter_size=None,
        lora_config=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.activation_fn = get_activation(activation)
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.normalize_first = normalize_first
        self.initializer_range = initializer_range
        self.adapter_size = adapter_size
        self.lora_config = LoraConfig.coerce(lora_config)
        self.attention_adapter = self.output_adapter = None  # set by build_parameter_efficient_parts
        self.lora = {}

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        self.attention = self.make_attention()
        self.attention_layer_norm = self.make_layer_norm("attention_layer_norm")
        self.intermediate_dense, self.output_dense = self.make_feed_forward(hidden_dim)
        self.output_layer_norm = self.make_layer_norm("output_layer_norm")
        self.dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)

        self.attention.build(input_shape)
        self.attention_layer_norm.build(input_shape)
        self.intermediate_dense.build(input_shape)
        self.output_dense.build(tuple(input_shape[:-1]) + (self.intermediate_dense.units,))
        self.output_layer_norm.build(input_shape)
        self.build_parameter_efficient_parts(input_shape)
        self.built = True

    def build_parameter_efficient_parts(self, input_shape):
        """The adapters and the feed-forward's LoRA updates the constructor asked for (none by default)."""
        self.attention_adapter = self.output_adapter = None
        if self.adapter_size:
            self.attention_adapter = Adapter(self.adapter_size, initializer_range=self.initializer_range,
                                             dtype=self.dtype_policy, name="attention_adapter")
            self.output_adapter = Adapter(self.adapter_size, initializer_range=self.initializer_range,
                                          dtype=self.dtype_policy, name="output_adapter")
            self.attention_adapter.build(input_shape)
            self.output_adapter.build(input_shape)
        self.lora = {}
        if self.lora_config:
            widths = {"intermediate": (input_shape, self.intermediate_dense.units),
                      "output": (tuple(input_shape[:-1]) + (self.intermediate_dense.units,), input_shape[-1])}
            for target, (shape, units) in widths.items():
                if target in self.lora_config.targets:
                    self.lora[target] = LowRankUpdate(units, self.lora_config.rank, self.lora_config.alpha,
                                                      self.lora_config.dropout, dtype=self.dtype_policy,
                                                      name=f"lora_{target}")
                    self.lora[target].build(shape)

    def make_attention(self):
        """The self-attention sub-layer (built by `build`); override to swap it.

        Examples:
            >>> class TemperatureBlock(TransformerEncoderBlock):
            ...     def make_attention(self):
            ...         return TemperatureAttention(self.num_heads, self.attention_dropout,
            ...                                     self.initializer_range, dtype=self.dtype_policy, name="attention")
        """
        return MultiHeadSelfAttention(
            self.num_heads, self.attention_dropout, self.initializer_range,
            lora_config=self.lora_config, dtype=self.dtype_policy, name="attention",
        )

    def make_feed_forward(self, hidden_dim):
        """(intermediate Dense, output Dense) of the feed-forward network that `feed_forward` applies."""
        initializer = weight_initializer(self.initializer_range)
        intermediate = keras.layers.Dense(
            self.intermediate_dim, kernel_initializer=initializer,
            dtype=self.dtype_policy, name="intermediate_dense",
        )
        output = keras.layers.Dense(
            hidden_dim, kernel_initializer=initializer, dtype=self.dtype_policy, name="output_dense",
        )
        return intermediate, output

    def make_layer_norm(self, name):
        """A LayerNormalization computed in float32 (also under mixed precision)."""
        return keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, dtype="float32", name=name)

    def normalize(self, layer_norm, x):
        """LayerNorm in float32, result back in the compute dtype."""
        return ops.cast(layer_norm(x), self.compute_dtype)

    def feed_forward(self, x, training=None):
        """Dense(intermediate) -> activation -> Dense(hidden) -> dropout (plus LoRA updates if enabled)."""
        intermediate = self.intermediate_dense(x)
        if "intermediate" in self.lora:
            intermediate = intermediate + self.lora["intermediate"](x, training=training)
        x = self.activation_fn(intermediate)
        output = self.output_dense(x)
        if "output" in self.lora:
            output = output + self.lora["output"](x, training=training)
        return self.dropout_layer(output, training=training)

    def call(
        self, x, padding_mask=None, attention_mask=None,
        return_attention_scores=False, training=None, cache=None, cache_update_index=0,
    ):
        residual = x
        if self.normalize_first:
            x = self.normalize(self.attention_layer_norm, x)
        attended = self.attention(  # (the cache only when given: an attention of your own may take none)
            x, padding_mask=padding_mask, attention_mask=attention_mask,
            return_attention_scores=return_attention_scores, training=training,
            **({} if cache is None else {"cache": cache, "cache_update_index": cache_update_index}),
        )
        scores = None
        if return_attention_scores or cache is not None:
            attended, *extras = attended
            scores = extras[0] if return_attention_scores else None
            cache = extras[-1] if cache is not None else None
        attended = self.dropout_layer(attended, training=training)
        if self.attention_adapter is not None:
            attended = self.attention_adapter(attended)
        x = residual + attended
        if not self.normalize_first:
            x = self.normalize(self.attention_layer_norm, x)

        residual = x
        if self.normalize_first:
            x = self.normalize(self.output_layer_norm, x)
        transformed = self.feed_forward(x, training=training)
        if self.output_adapter is not None:
            transformed = self.output_adapter(transformed)
        x = residual + transformed
        if not self.normalize_first:
            x = self.normalize(self.output_layer_norm, x)

        return with_extra_outputs(x, scores, cache)

    def compute_output_spec(self, x, padding_mask=None, attention_mask=None,
                            return_attention_scores=False, training=None, cache=None, cache_update_index=0):
        """The output's spec, and with `return_attention_scores` the attention probabilities' too, then
        the cache's when given one."""
        return attention_output_spec(x, self.num_heads, self.compute_dtype, return_attention_scores, cache)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "activation": self.activation,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "normalize_first": self.normalize_first,
                "initializer_range": self.initializer_range,
                "adapter_size": self.adapter_size,
                "lora_config": self.lora_config and self.lora_config.get_config(),
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**lora_config_from_legacy(config))
