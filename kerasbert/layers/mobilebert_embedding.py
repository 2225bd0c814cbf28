"""MobileBERT's input embedding: narrow token embeddings of each token and its neighbours (trigram input),
projected to the hidden width, plus position and segment embeddings, then NoNorm or LayerNorm and dropout."""

import keras
from keras import ops

from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.no_norm import TORCH_LAYER_NORM_EPSILON, check_normalization_type, normalization


@keras.saving.register_keras_serializable(package="kerasbert")
class MobileBertEmbedding(keras.layers.Layer):
    """HF `MobileBertEmbeddings`: token embeddings `embedding_dim` wide; with `trigram_input` each position
    concatenates the next token's, its own and the previous token's (zeros past the ends), and a Dense
    `embedding_projection` maps them to `hidden_dim` (also without trigrams when the widths differ); then the
    `hidden_dim`-wide position and segment embeddings are added, and NoNorm or LayerNorm (torch's epsilon
    1e-5, as HF builds it) and dropout follow.

    The projection exists whenever HF has it (always), so the weights are HF's one for one; it is applied
    only where HF applies it.

    Examples:
        >>> layer = MobileBertEmbedding(vocabulary_size=100, embedding_dim=8, hidden_dim=16)
        >>> tuple(layer(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32")).shape)
        (2, 5, 16)
    """

    def __init__(self, vocabulary_size, embedding_dim, hidden_dim, max_sequence_length=512, num_segments=2,
                 trigram_input=True, normalization_type="no_norm", dropout=0.0, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        check_normalization_type(normalization_type)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.trigram_input = trigram_input
        self.normalization_type = normalization_type
        self.dropout = dropout
        self.initializer_range = initializer_range

        initializer = weight_initializer(initializer_range)
        self.token_embedding = keras.layers.Embedding(vocabulary_size, embedding_dim,
                                                      embeddings_initializer=initializer,
                                                      dtype=self.dtype_policy, name="token_embedding")
        self.segment_embedding = keras.layers.Embedding(num_segments, hidden_dim, embeddings_initializer=initializer,
                                                        dtype=self.dtype_policy, name="segment_embedding")
        self.position_embedding = keras.layers.Embedding(max_sequence_length, hidden_dim,
                                                         embeddings_initializer=initializer,
                                                         dtype=self.dtype_policy, name="position_embedding")
        self.embedding_projection = keras.layers.Dense(hidden_dim, kernel_initializer=initializer,
                                                       dtype=self.dtype_policy, name="embedding_projection")
        self.layer_norm = normalization(normalization_type, TORCH_LAYER_NORM_EPSILON, "layer_norm")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, token_ids_shape, segment_ids_shape=None):
        for embedding in (self.token_embedding, self.segment_embedding, self.position_embedding):
            embedding.build(token_ids_shape)
        widths = 3 if self.trigram_input else 1
        self.embedding_projection.build(tuple(token_ids_shape) + (widths * self.embedding_dim,))
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_dim,))
        self.built = True

    @property
    def embeddings(self):
        """The token embedding matrix `[vocabulary_size, embedding_dim]`, for weight tying."""
        return self.token_embedding.embeddings

    def call(self, token_ids, segment_ids, training=None):
        x = self.token_embedding(token_ids)
        if self.trigram_input:
            zeros = ops.zeros_like(x[:, :1])
            following = ops.concatenate([x[:, 1:], zeros], axis=1)
            preceding = ops.concatenate([zeros, x[:, :-1]], axis=1)
            x = ops.concatenate([following, x, preceding], axis=-1)
        if self.trigram_input or self.embedding_dim != self.hidden_dim:
            x = self.embedding_projection(x)
        positions = ops.arange(ops.shape(token_ids)[-1], dtype="int32")
        x = x + self.position_embedding(positions) + self.segment_embedding(segment_ids)  # HF's order of the sums
        x = ops.cast(self.layer_norm(x), self.compute_dtype)
        return self.dropout_layer(x, training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update({"vocabulary_size": self.vocabulary_size, "embedding_dim": self.embedding_dim,
                       "hidden_dim": self.hidden_dim, "max_sequence_length": self.max_sequence_length,
                       "num_segments": self.num_segments, "trigram_input": self.trigram_input,
                       "normalization_type": self.normalization_type, "dropout": self.dropout,
                       "initializer_range": self.initializer_range})
        return config
