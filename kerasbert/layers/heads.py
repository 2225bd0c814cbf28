"""Pre-training heads: masked language model, next-sentence prediction and replaced-token detection (ELECTRA's,
DeBERTa-v3's)."""

import keras
from keras import ops

from kerasbert.layers.activations import get_activation
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.int8_grid import fake_int8


def tied_decoder_matrix(table):
    """The `[width, vocabulary]` decoder tied to a token `Embedding`: its table transposed (an int8 table scaled
    back to float, row by row).

    Examples:
        >>> tuple(tied_decoder_matrix(backbone.token_embedding).shape)   # bert_tiny
        (128, 30522)
    """
    if getattr(table, "quantization_mode", None) == "int8":
        return ops.transpose(ops.cast(table.embeddings, "float32") / ops.expand_dims(table.embeddings_scale, -1))
    if getattr(table, "on_int8_grid", False):  # quantisation-aware training (kerasbert.fine_tuning)
        return ops.transpose(fake_int8(table.embeddings, axis=-1))
    return ops.transpose(ops.convert_to_tensor(table.embeddings))


@keras.saving.register_keras_serializable(package="kerasbert")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the original token at masked positions.

    Gathers the hidden states at `mask_positions`, then dense -> activation ->
    LayerNorm -> decoder + output bias. The decoder is the transposed token embedding
    matrix when `token_embedding` is given (weight tying, as in BERT), otherwise a
    kernel of its own. ALBERT's and ELECTRA's generator heads transform to the (narrower)
    embedding width: `transform_dim` = that width, and the tied table is that wide.

    Args:
        vocabulary_size: number of output tokens.
        token_embedding: optional `keras.layers.Embedding` to tie the decoder to. It is a
            live link, not configuration: a model that owns both re-links it on load.
        activation: activation of the transform ("gelu" exact, "gelu_approximate", ...).
        layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: standard deviation of the weight initialiser (`weight_initializer`).
        transform_dim: output width of the dense (and of the LayerNorm and the decoder's input);
            None: the input's width (BERT).
        dense_bias, layer_norm_bias: whether the dense has a bias and the LayerNorm a beta (ModernBERT's
            head has neither: HF `classifier_bias`, `norm_bias`).

    Call args:
        sequence_output: `[batch, T, hidden]`.
        mask_positions: optional int `[batch, P]` positions to predict; all positions if None.

    Examples:
        >>> head = MaskedLMHead(vocabulary_size=100)
        >>> logits = head(ops.ones((2, 6, 8)), ops.array([[1, 2], [0, 5]]))
        >>> tuple(logits.shape)
        (2, 2, 100)
        >>> albert_like = MaskedLMHead(vocabulary_size=100, transform_dim=4)   # hidden 8 -> embedding width 4
        >>> tuple(albert_like(ops.ones((2, 6, 8))).shape), tuple(albert_like.decoder_kernel.shape)
        ((2, 6, 100), (4, 100))
    """

    def __init__(
        self,
        vocabulary_size,
        token_embedding=None,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        transform_dim=None,
        dense_bias=True,
        layer_norm_bias=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.dense_bias = dense_bias
        self.layer_norm_bias = layer_norm_bias
        self.token_embedding = token_embedding
        self.activation = activation
        self.activation_fn = get_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.transform_dim = transform_dim

    def build(self, sequence_output_shape, mask_positions_shape=None):
        hidden_dim = sequence_output_shape[-1]
        width = self.transform_dim or hidden_dim
        tied_width = None if self.token_embedding is None else self.token_embedding.output_dim
        if tied_width not in (None, width):
            raise ValueError(
                f"MaskedLMHead: the tied token embedding is {tied_width} wide but the transform gives {width} "
                f"(transform_dim={self.transform_dim}, input width {hidden_dim}). Set transform_dim={tied_width}, "
                "the embedding width (ALBERT and ELECTRA generators)."
            )
        initializer = weight_initializer(self.initializer_range)
        self.dense = keras.layers.Dense(
            width, use_bias=self.dense_bias, kernel_initializer=initializer, dtype=self.dtype_policy, name="dense",
        )
        self.dense.build((None, hidden_dim))
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, center=self.layer_norm_bias, dtype="float32", name="layer_norm",
        )
        self.layer_norm.build((None, width))
        if self.token_embedding is None:
            self.decoder_kernel = self.add_weight(
                shape=(width, self.vocabulary_size), initializer=initializer,
                name="decoder_kernel",
            )
        self.output_bias = self.add_weight(
            shape=(self.vocabulary_size,), initializer="zeros", name="output_bias",
        )
        self.built = True

    def decoder_matrix(self):
        """The `[width, vocabulary]` decoder: tied embeddings transposed, or its own kernel."""
        return self.decoder_kernel if self.token_embedding is None else tied_decoder_matrix(self.token_embedding)

    def call(self, sequence_output, mask_positions=None):
        x = sequence_output
        if mask_positions is not None:
            x = ops.take_along_axis(x, ops.cast(mask_positions, "int32")[:, :, None], axis=1)
        x = self.activation_fn(self.dense(x))
        x = ops.cast(self.layer_norm(x), self.compute_dtype)
        logits = ops.matmul(x, ops.cast(self.decoder_matrix(), self.compute_dtype))
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def compute_output_shape(self, sequence_output_shape, mask_positions_shape=None):
        length = sequence_output_shape[1] if mask_positions_shape is None else mask_positions_shape[1]
        return (sequence_output_shape[0], length, self.vocabulary_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "activation": self.activation,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
                "transform_dim": self.transform_dim,
                "dense_bias": self.dense_bias,
                "layer_norm_bias": self.layer_norm_bias,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="kerasbert")
class NSPHead(keras.layers.Dense):
    """Next-sentence prediction: pooled `[CLS]` output -> 2 logits, index 0 = IsNext.

    The index order is the one of the Google and HF checkpoints (`cls.seq_relationship`):
    0 means B really follows A, 1 means B is a random sentence. The same head serves
    sentence-order prediction (0 = in order, 1 = swapped).

    Examples:
        >>> tuple(NSPHead()(ops.ones((3, 8))).shape)
        (3, 2)
    """

    def __init__(self, units=2, initializer_range=0.02, **kwargs):
        kwargs.setdefault(
            "kernel_initializer", weight_initializer(initializer_range)
        )
        super().__init__(units, **kwargs)
        self.initializer_range = initializer_range

    def get_config(self):
        config = super().get_config()
        config["initializer_range"] = self.initializer_range
        return config


@keras.saving.register_keras_serializable(package="kerasbert")
class ReplacedTokenHead(keras.layers.Layer):
    """ELECTRA's discriminator head: one logit per token, > 0 for "the generator replaced this token".

    dense (hidden -> hidden) -> activation -> dense (hidden -> 1), squeezed: HF
    `ElectraDiscriminatorPredictions` (`discriminator_predictions.dense`, `.dense_prediction`).

    Args:
        activation: the backbone's activation (HF `hidden_act`; "gelu" is the exact erf GELU).
        initializer_range: standard deviation of the weight initialiser (`weight_initializer`).

    Call args:
        sequence_output: `[batch, T, hidden]`. Returns float32 `[batch, T]` logits.

    Examples:
        >>> head = ReplacedTokenHead()
        >>> tuple(head(ops.ones((2, 6, 8))).shape)
        (2, 6)
    """

    def __init__(self, activation="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.activation = activation
        self.activation_fn = get_activation(activation)
        self.initializer_range = initializer_range

    def build(self, sequence_output_shape):
        hidden_dim = sequence_output_shape[-1]
        initializer = weight_initializer(self.initializer_range)
        self.dense = keras.layers.Dense(hidden_dim, kernel_initializer=initializer, dtype=self.dtype_policy,
                                        name="dense")
        self.dense.build((None, hidden_dim))
        self.dense_prediction = keras.layers.Dense(1, kernel_initializer=initializer, dtype=self.dtype_policy,
                                                   name="dense_prediction")
        self.dense_prediction.build((None, hidden_dim))
        self.built = True

    def call(self, sequence_output):
        logits = self.dense_prediction(self.activation_fn(self.dense(sequence_output)))
        return ops.cast(ops.squeeze(logits, axis=-1), "float32")

    def compute_output_shape(self, sequence_output_shape):
        return tuple(sequence_output_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update({"activation": self.activation, "initializer_range": self.initializer_range})
        return config


@keras.saving.register_keras_serializable(package="kerasbert")
class ContextReplacedTokenHead(keras.layers.Layer):
    """DeBERTa-v3's discriminator head: one logit per token, > 0 for "the generator replaced this token", read
    from each token's state with the `[CLS]` state added.

    LayerNorm(`[CLS]` state + token state) -> dense (hidden -> hidden) -> activation -> dense (hidden -> 1),
    squeezed: DeBERTa's `LMMaskPredictionHead` (`mask_predictions.LayerNorm`, `.dense`, `.classifier` in its
    published checkpoints).

    Args:
        activation: the backbone's activation (HF `hidden_act`; "gelu" is the exact erf GELU).
        layer_norm_epsilon: the LayerNorm's epsilon (HF `layer_norm_eps`).
        initializer_range: standard deviation of the weight initialiser (`weight_initializer`).

    Examples:
        >>> head = ContextReplacedTokenHead()
        >>> tuple(head(ops.ones((2, 6, 8))).shape)
        (2, 6)
    """

    def __init__(self, activation="gelu", layer_norm_epsilon=1e-7, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.activation = activation
        self.activation_fn = get_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def build(self, sequence_output_shape):
        hidden_dim = sequence_output_shape[-1]
        initializer = weight_initializer(self.initializer_range)
        self.layer_norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy,
                                                          name="layer_norm")
        self.layer_norm.build((None, hidden_dim))
        self.dense = keras.layers.Dense(hidden_dim, kernel_initializer=initializer, dtype=self.dtype_policy,
                                        name="dense")
        self.dense.build((None, hidden_dim))
        self.classifier = keras.layers.Dense(1, kernel_initializer=initializer, dtype=self.dtype_policy,
                                             name="classifier")
        self.classifier.build((None, hidden_dim))
        self.built = True

    def call(self, sequence_output):
        states = self.layer_norm(sequence_output[:, :1, :] + sequence_output)
        logits = self.classifier(self.activation_fn(self.dense(states)))
        return ops.cast(ops.squeeze(logits, axis=-1), "float32")

    def compute_output_shape(self, sequence_output_shape):
        return tuple(sequence_output_shape[:-1])

    def get_config(self):
        return {**super().get_config(), "activation": self.activation, "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range}
