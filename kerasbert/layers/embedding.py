"""BERT's input embedding: token + segment + learned position, then LayerNorm and dropout (and the RoBERTa
and DistilBERT variants: positions counted over the non-padding tokens, no segments)."""

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
        num_segments: number of segment types (2: sentence A and B; 0: no segment embedding, as
            DistilBERT, and `segment_ids` are ignored).
        dropout: dropout rate applied after the LayerNorm.
        layer_norm_epsilon: LayerNorm epsilon (1e-12 in BERT checkpoints).
        initializer_range: standard deviation of the weight initialiser (`weight_initializer`).
        padding_token_id: None: positions 0, 1, ..., T - 1 (BERT). An id: RoBERTa's positions (HF
            `create_position_ids_from_input_ids`): the tokens other than this id are numbered
            `padding_token_id + 1, + 2, ...` in order, the padding tokens get `padding_token_id`.

    Examples:
        >>> layer = TokenSegmentPositionEmbedding(vocabulary_size=100, hidden_dim=8)
        >>> out = layer(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32"))
        >>> tuple(out.shape)
        (2, 5, 8)
        >>> roberta = TokenSegmentPositionEmbedding(100, 8, max_sequence_length=514, num_segments=1, padding_token_id=1)
        >>> roberta.position_ids(ops.array([[0, 7, 2, 1, 1]]))  # [[2, 3, 4, 1, 1]]
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
        padding_token_id=None,
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
        self.padding_token_id = padding_token_id

        initializer = weight_initializer(initializer_range)
        self.token_embedding = keras.layers.Embedding(
            vocabulary_size, hidden_dim, embeddings_initializer=initializer,
            dtype=self.dtype_policy, name="token_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            num_segments, hidden_dim, embeddings_initializer=initializer,
            dtype=self.dtype_policy, name="segment_embedding",
        ) if num_segments else None
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
        if self.segment_embedding is not None:
            self.segment_embedding.build(token_ids_shape)
        self.position_embedding.build(token_ids_shape)
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_dim,))
        self.built = True

    @property
    def embeddings(self):
        """The token embedding matrix `[vocabulary_size, hidden_dim]`, for weight tying."""
        return self.token_embedding.embeddings

    def position_ids(self, token_ids):
        """The position of each token: `[T]` for BERT, `[batch, T]` counted over the non-padding tokens with
        `padding_token_id` (RoBERTa)."""
        if self.padding_token_id is None:
            return ops.arange(ops.shape(token_ids)[-1], dtype="int32")
        real = ops.cast(ops.not_equal(token_ids, self.padding_token_id), "int32")
        return ops.cumsum(real, axis=-1) * real + self.padding_token_id

    def call(self, token_ids, segment_ids, training=None):
        x = self.token_embedding(token_ids)
        if self.segment_embedding is not None:
            x = x + self.segment_embedding(segment_ids)
        x = x + self.position_embedding(self.position_ids(token_ids))  # HF's order of the sums
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
                "padding_token_id": self.padding_token_id,
            }
        )
        return config
