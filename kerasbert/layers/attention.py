"""Multi-head self-attention with padding and full attention masks."""

import math

import keras
from keras import ops

from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.lora import LoraConfig, LowRankUpdate, lora_config_from_legacy

FLOAT32_MIN = -3.4028234663852886e38  # the score of a masked key, as HF transformers gives it


def fused_kernel_pays():
    """Whether this backend and device have a fused attention kernel faster than the explicit path: torch
    (SDPA) anywhere, JAX on a GPU or TPU (see `MultiHeadSelfAttention`)."""
    backend = keras.backend.backend()
    if backend == "torch":
        return True
    if backend == "jax":
        import jax

        return jax.devices()[0].platform in ("gpu", "tpu")
    return False


def merge_masks(padding_mask=None, attention_mask=None):
    """Combine a `[B, T]` key padding mask and a `[B, T, T]` attention mask.

    Returns a boolean `[B, 1, T|1, T]` mask (True = may attend) broadcastable over
    heads, or None when neither mask is given.

    Examples:
        >>> merge_masks(ops.array([[1, 1, 0]])).shape
        (1, 1, 1, 3)
    """
    mask = None
    if padding_mask is not None:
        mask = ops.cast(padding_mask, "bool")[:, None, None, :]
    if attention_mask is not None:
        full = ops.cast(attention_mask, "bool")[:, None, :, :]
        mask = full if mask is None else ops.logical_and(mask, full)
    return mask


def attention_output_spec(x, num_heads, dtype, return_attention_scores, cache=None):
    """KerasTensor(s) of an attention or block output: `x`'s shape in `dtype`, the float32
    `[B, num_heads, T, T]` probabilities when `return_attention_scores` (`[B, num_heads, T, S]` with a
    `cache` of S positions), and the updated cache when given one."""
    outputs = (keras.KerasTensor(x.shape, dtype),)
    if return_attention_scores:
        keys = x.shape[1] if cache is None else cache.shape[3]
        outputs += (keras.KerasTensor((x.shape[0], num_heads, x.shape[1], keys), "float32"),)
    if cache is not None:
        outputs += (keras.KerasTensor(cache.shape, cache.dtype),)
    return outputs if len(outputs) > 1 else outputs[0]


def with_extra_outputs(output, probabilities, cache):
    """`output`, followed by the attention probabilities and the updated cache when they are not None."""
    extras = tuple(value for value in (probabilities, cache) if value is not None)
    return (output, *extras) if extras else output


@keras.saving.register_keras_serializable(package="kerasbert")
class MultiHeadSelfAttention(keras.layers.Layer):
    """BERT self-attention: fused Q/K/V projection, scaled dot products, output projection.

    `attention_scores(query, key)` is the scoring step: override it to try another scoring
    function without copying `call` (see its example). Masked positions get a score of the
    float32 minimum before the softmax (as in HF transformers), and the softmax always runs in
    float32, also under mixed precision. Called on `keras.Input`s with
    `return_attention_scores=True` it returns the (output, probabilities) pair too.

    Fused attention: when nothing needs the probabilities themselves (no `return_attention_scores`, the
    stock `attention_scores`, no attention dropout at this call), the scores, softmax and weighted sum can run
    as one `keras.ops.dot_product_attention`. By default (`fused_attention=None`) they do where the backend
    has a fused kernel that pays: torch (`scaled_dot_product_attention`, CPU and GPU; MiniLM inference on 2
    CPU cores 1.30x at 128 tokens, 2.89x at 512) and JAX on a GPU or TPU (cuDNN, Splash). On TensorFlow and
    on JAX's CPU, Keras composes the same ops as the explicit path (measured 0.77-1.41x and 0.86-0.92x:
    no gain), so the explicit path runs there (`benchmarks/attention.py`). `True` fuses on every backend,
    `False` never. Outputs equal the explicit path's (1e-5 in float32), a row with every key masked
    included (uniform weights on both paths).

    Args:
        num_heads: number of attention heads; `hidden_dim` must divide evenly.
        attention_dropout: dropout on the attention probabilities.
        initializer_range: standard deviation of the weight initialiser (`weight_initializer`).
        lora_config: a `LoraConfig`: LoRA updates (`LowRankUpdate`) on the projections among its
            `targets` "query", "key", "value", "attention_output" (others are the block's); None: none.

    Call args:
        x: `[batch, T, hidden_dim]`.
        padding_mask: optional `[batch, T]`, 1/True on real tokens.
        attention_mask: optional `[batch, T, T]`, 1/True where query i may see key j.
        return_attention_scores: also return the `[batch, heads, T, T]` probabilities.
        cache: optional `[batch, 2, heads, S, head_dim]` keys and values (compute dtype) of S positions, for
            decoding one step at a time (see `BertSeq2Seq`): the keys and values of `x` are written into it
            from position `cache_update_index`, then `x` attends to all S cached positions (the masks are
            then `[batch, S]` and `[batch, T, S]`), and the updated cache is returned last.
        cache_update_index: where `x`'s keys and values go in `cache` (an int or a scalar tensor).
        fused_attention: None (where it pays, see above), True (always when the call allows it) or False.

    Examples:
        >>> attention = MultiHeadSelfAttention(num_heads=2)
        >>> tuple(attention(ops.ones((1, 4, 8))).shape)
        (1, 4, 8)
    """

    def __init__(self, num_heads, attention_dropout=0.1, initializer_range=0.02, lora_config=None,
                 fused_attention=None, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        if fused_attention not in (None, True, False):
            raise ValueError(f"fused_attention must be None (where it pays), True or False; got {fused_attention!r}.")
        self.fused_attention = fused_attention
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.lora_config = LoraConfig.coerce(lora_config)
        self.lora = {}  # target name -> LowRankUpdate, made in build
        self.dropout_layer = keras.layers.Dropout(attention_dropout, dtype=self.dtype_policy)

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        if hidden_dim % self.num_heads:
            raise ValueError(
                f"hidden_dim={hidden_dim} is not divisible by num_heads={self.num_heads}; "
                "choose num_heads that divides the hidden size."
            )
        self.hidden_dim = hidden_dim
        self.head_dim = hidden_dim // self.num_heads
        initializer = weight_initializer(self.initializer_range)
        self.qkv_dense = keras.layers.Dense(
            3 * hidden_dim, kernel_initializer=initializer,
            dtype=self.dtype_policy, name="qkv_dense",
        )
        self.qkv_dense.build(input_shape)
        self.output_dense = keras.layers.Dense(
            hidden_dim, kernel_initializer=initializer,
            dtype=self.dtype_policy, name="output_dense",
        )
        self.output_dense.build(input_shape)
        self.lora = {}
        if self.lora_config:
            for target in ("query", "key", "value", "attention_output"):
                if target in self.lora_config.targets:
                    self.lora[target] = LowRankUpdate(hidden_dim, self.lora_config.rank, self.lora_config.alpha,
                                                      self.lora_config.dropout, dtype=self.dtype_policy,
                                                      name=f"lora_{target}")
                    self.lora[target].build(input_shape)
        self.built = True

    def split_heads(self, x):
        """`[B, T, H]` -> `[B, heads, T, head_dim]`."""
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch, length, self.num_heads, self.head_dim))
        return ops.transpose(x, (0, 2, 1, 3))

    def attention_scores(self, query, key):
        """Float32 scores `[B, heads, T_query, T_key]` before masking and softmax: scaled dot products.

        Override to change the scoring, e.g. a temperature:
        >>> class TemperatureAttention(MultiHeadSelfAttention):
        ...     def attention_scores(self, query, key):
        ...         return super().attention_scores(query, key) / 2.0
        """
        scores = ops.matmul(query, ops.transpose(key, (0, 1, 3, 2)))
        return ops.cast(scores, "float32") / math.sqrt(self.head_dim)

    def call(
        self, x, padding_mask=None, attention_mask=None,
        return_attention_scores=False, training=None, cache=None, cache_update_index=0,
    ):
        query, key, value = self.project_heads(x, training)
        if cache is not None:
            start = (0, 0, 0, cache_update_index, 0)
            cache = ops.slice_update(cache, start, ops.stack([key, value], axis=1))
            key, value = cache[:, 0], cache[:, 1]

        mask = merge_masks(padding_mask, attention_mask)
        if self.fuses(return_attention_scores, training):
            probabilities = None
            context = self.fused_context(query, key, value, mask)
        else:
            scores = self.attention_scores(query, key)
            if mask is not None:
                scores = ops.where(mask, scores, ops.cast(FLOAT32_MIN, "float32"))
            probabilities = ops.softmax(scores, axis=-1)
            dropped = self.dropout_layer(ops.cast(probabilities, self.compute_dtype), training=training)
            context = ops.transpose(ops.matmul(dropped, value), (0, 2, 1, 3))
        output = self.project_output(context, training)
        return with_extra_outputs(output, probabilities if return_attention_scores else None, cache)

    def project_heads(self, x, training=None):
        """`(query, key, value)`, each `[B, heads, T, head_dim]`, of `x` `[B, T, hidden]` (LoRA updates
        included)."""
        query, key, value = ops.split(self.qkv_dense(x), 3, axis=-1)
        if self.lora:
            query, key, value = (part + self.lora[name](x, training=training) if name in self.lora else part
                                 for name, part in zip(("query", "key", "value"), (query, key, value)))
        return self.split_heads(query), self.split_heads(key), self.split_heads(value)

    def project_output(self, context, training=None):
        """The output projection (LoRA update included) of a `[B, T, heads, head_dim]` context."""
        batch, length = ops.shape(context)[0], ops.shape(context)[1]
        context = ops.reshape(context, (batch, length, self.hidden_dim))
        output = self.output_dense(context)
        if "attention_output" in self.lora:
            output = output + self.lora["attention_output"](context, training=training)
        return output

    def fuses(self, return_attention_scores, training):
        """Whether this call may take the fused path: nothing asks for the probabilities (returned, rescored
        by an overridden `attention_scores`, or dropped out in training)."""
        wanted = fused_kernel_pays() if self.fused_attention is None else self.fused_attention
        return (wanted and not return_attention_scores
                and type(self).attention_scores is MultiHeadSelfAttention.attention_scores
                and not (training and self.attention_dropout > 0))

    def fused_context(self, query, key, value, mask):
        """`[B, T, heads, head_dim]` context of `[B, heads, T|S, head_dim]` queries, keys and values through
        `keras.ops.dot_product_attention` (its `mask` gives masked keys a large negative score)."""
        query, key, value = (ops.transpose(part, (0, 2, 1, 3)) for part in (query, key, value))
        context = ops.dot_product_attention(query, key, value, mask=mask, scale=1.0 / math.sqrt(self.head_dim))
        return ops.cast(context, self.compute_dtype)

    def compute_output_spec(self, x, padding_mask=None, attention_mask=None,
                            return_attention_scores=False, training=None, cache=None, cache_update_index=0):
        """The output's spec, and with `return_attention_scores` the `[B, heads, T, T]` float32
        probabilities' too (so a symbolic call returns the pair), then the cache's when given one."""
        return attention_output_spec(x, self.num_heads, self.compute_dtype, return_attention_scores, cache)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "attention_dropout": self.attention_dropout,
                "initializer_range": self.initializer_range,
                "lora_config": self.lora_config and self.lora_config.get_config(),
                "fused_attention": self.fused_attention,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**lora_config_from_legacy(config))
