"""SpanBERT's span-boundary objective (SBO): each masked token is predicted from the states of the two tokens
around its span and its position inside the span (Joshi et al. 2020, section 3.2)."""

import keras
from keras import ops

from kerasbert.layers.activations import get_activation
from kerasbert.layers.heads import tied_decoder_matrix
from kerasbert.layers.initializers import weight_initializer


def span_boundaries(mask_positions, sequence_length):
    """The span of every masked position: the nearest unmasked position to its left and to its right, and its
    1-based place in the span (`position - left`). A span is a run of adjacent masked positions; position 0
    (`[CLS]`) is never masked, so 0 in `mask_positions` is padding. Padding slots get boundaries (0, 0).

    Examples:
        >>> left, right, place = span_boundaries(ops.array([[2, 3, 4, 7, 0]]), 10)
        >>> ops.convert_to_numpy(left), ops.convert_to_numpy(right), ops.convert_to_numpy(place)
        (array([[1, 1, 1, 6, 0]]), array([[5, 5, 5, 8, 0]]), array([[1, 2, 3, 1, 0]]))
    """
    positions = ops.cast(mask_positions, "int32")
    everywhere = ops.arange(sequence_length, dtype="int32")
    masked = ops.any(ops.equal(positions[:, :, None], everywhere) & (positions[:, :, None] > 0), axis=1)
    unmasked = ops.logical_not(masked)[:, None, :]  # [batch, 1, T]
    before = unmasked & (everywhere < positions[:, :, None])  # [batch, P, T]
    after = unmasked & (everywhere > positions[:, :, None])
    left = ops.max(ops.where(before, everywhere, -1), axis=-1)
    right = ops.min(ops.where(after, everywhere, sequence_length), axis=-1)
    real = positions > 0
    left, right = ops.where(real, left, 0), ops.where(real, ops.minimum(right, sequence_length - 1), 0)
    return left, right, ops.where(real, positions - left, 0)


@keras.saving.register_keras_serializable(package="kerasbert")
class SpanBoundaryHead(keras.layers.Layer):
    """SpanBERT's SBO head: for a masked token at place i of a span with boundary states x_left and x_right,
    h = LayerNorm(act(W2 LayerNorm(act(W1 [x_left; x_right; p_i])))) and its logits are h times the tied
    decoder plus a bias of its own (SpanBERT's `PairTargetPredictionHead`). `p_i` is a learned embedding of the
    place; places past `max_span_length` share the last one (SpanBERT caps spans at 10 words, which can be more
    tokens).

    Args:
        vocabulary_size: number of output tokens.
        token_embedding: the token `Embedding` the decoder is tied to (None: a kernel of its own).
        max_span_length: places with an embedding of their own.
        position_embedding_dim: width of the place embedding (None: the hidden width; the paper leaves it open).
        activation, layer_norm_epsilon, initializer_range: as the backbone's.

    Call args:
        sequence_output: `[batch, T, hidden]`. mask_positions: int `[batch, P]` (0: padding slot).

    Examples:
        >>> head = SpanBoundaryHead(vocabulary_size=100)
        >>> tuple(head(ops.ones((2, 6, 8)), ops.array([[1, 2], [4, 0]])).shape)
        (2, 2, 100)
    """

    def __init__(self, vocabulary_size, token_embedding=None, max_span_length=10, position_embedding_dim=None,
                 activation="gelu", layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.token_embedding = token_embedding
        self.max_span_length = max_span_length
        self.position_embedding_dim = position_embedding_dim
        self.activation = activation
        self.activation_fn = get_activation(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def build(self, sequence_output_shape, mask_positions_shape=None):
        hidden_dim = sequence_output_shape[-1]
        width = hidden_dim if self.token_embedding is None else self.token_embedding.output_dim
        place_width = self.position_embedding_dim or hidden_dim
        initializer = weight_initializer(self.initializer_range)
        self.position_embeddings = self.add_weight(
            shape=(self.max_span_length, place_width), initializer=initializer,
            name="position_embeddings")
        self.dense_1, self.dense_2 = (
            keras.layers.Dense(width_out, kernel_initializer=initializer, dtype=self.dtype_policy, name=name)
            for width_out, name in ((hidden_dim, "dense_1"), (width, "dense_2")))
        self.dense_1.build((None, 2 * hidden_dim + place_width))
        self.dense_2.build((None, hidden_dim))
        self.layer_norm_1, self.layer_norm_2 = (
            keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, dtype="float32", name=name)
            for name in ("layer_norm_1", "layer_norm_2"))
        self.layer_norm_1.build((None, hidden_dim))
        self.layer_norm_2.build((None, width))
        if self.token_embedding is None:
            self.decoder_kernel = self.add_weight(shape=(width, self.vocabulary_size), initializer=initializer,
                                                  name="decoder_kernel")
        self.output_bias = self.add_weight(shape=(self.vocabulary_size,), initializer="zeros", name="output_bias")
        self.built = True

    def call(self, sequence_output, mask_positions):
        left, right, place = span_boundaries(mask_positions, ops.shape(sequence_output)[1])
        place_vectors = ops.take(self.position_embeddings, ops.clip(place - 1, 0, self.max_span_length - 1), axis=0)
        x = ops.concatenate([ops.take_along_axis(sequence_output, left[:, :, None], axis=1),
                             ops.take_along_axis(sequence_output, right[:, :, None], axis=1),
                             ops.cast(place_vectors, sequence_output.dtype)], axis=-1)
        x = ops.cast(self.layer_norm_1(self.activation_fn(self.dense_1(x))), self.compute_dtype)
        x = ops.cast(self.layer_norm_2(self.activation_fn(self.dense_2(x))), self.compute_dtype)
        decoder = self.decoder_kernel if self.token_embedding is None else tied_decoder_matrix(self.token_embedding)
        logits = ops.matmul(x, ops.cast(decoder, self.compute_dtype))
        return ops.cast(logits, "float32") + ops.cast(self.output_bias, "float32")

    def compute_output_shape(self, sequence_output_shape, mask_positions_shape):
        return (sequence_output_shape[0], mask_positions_shape[1], self.vocabulary_size)

    def get_config(self):
        return {**super().get_config(), "vocabulary_size": self.vocabulary_size,
                "max_span_length": self.max_span_length, "position_embedding_dim": self.position_embedding_dim,
                "activation": self.activation, "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range}
