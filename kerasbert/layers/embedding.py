"""BERT's input embedding: token + segment + learned position, then LayerNorm and dropout."""

import keras
from keras import ops

from kerasbert.layers.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="kerasbert")
class TokenSegmentPositionEmbedding(keras.layers.Layer):
    """Sum of token, segment and learned position embeddings, then LayerNorm and dropout.

    Summing three lookups equals one lookup of the concatenated one-hot vectors
    through the stacked tables: this is the BERT input representation.

    Args:
        vocabulary_size: number of WordPiece tokens.
        hidden_dim: embedding width.
        max_sequence_length: number of learned positions (512 for BERT).
        num_segments: number of segment types (2: sentence A and B).
        dropout: dropout rate applied after the LayerNorm.
        layer_norm_epsilon: LayerNorm epsilon (1e-12 in BERT checkpoints).
        initializer_range: standard deviation of the weight initialiser (`weight_initializer`).

    Example:
    >>> layer = TokenSegmentPositionEmbedding(vocabulary_size=100, hidden_dim=8)
    >>> out = layer(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32"))
    >>> tuple(out.shape)
    (2, 5, 8)
    """

    def __init__(
        self,
        vocabulary_size,
        hidden_dim,
        max_sequence_length=512,
        num_segments=2,
        dropout=0.1,
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

        initializer = weight_initializer(initializer_range)
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim, embeddings_initializer=initializer,
            dtype=self.dtype_policy, name="token_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments, hidden_dim, embeddings_initializer=initializer,
            dtype=self.dtype_policy, name="segment_embedding",
        )
        self.position_embedding = keras.layers.Embedding(
            max_sequence_length, hidden_dim, embeddings_initializer=initializer,
            dtype=self.dtype_policy, name="position_embedding",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype="float32", name="layer_norm",
        )
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        self.segment_embedding.build(token_ids_shape)
        self.position_embedding.build(token_ids_shape)
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_dim,))
        self.built = True

    @property
    def embeddings(self):
        """The token embedding matrix `[vocabulary_size, hidden_dim]`, for weight tying."""
        return self.token_embedding.embeddings

    def call(self, token_ids, segment_ids, training=None):
        sequence_length = ops.shape(token_ids)[-1]
        positions = ops.arange(sequence_length, dtype="int32")
        x = (
            self.token_embedding(token_ids)
            + self.segment_embedding(segment_ids)
            + self.position_embedding(positions)[None, :, :]
        )
        x = ops.cast(self.layer_norm(x), self.compute_dtype)
        return self.dropout_layer(x, training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                "max_sequence_length": self.max_sequence_length,
                "num_segments": self.num_segments,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range,
            }
        )
        return config
