"""DeBERTa-v2's input embedding and its shared relative-position embedding table."""

import keras
from keras import ops

from kerasbert.layers.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="kerasbert")
class DebertaEmbedding(keras.layers.Layer):
    """HF `DebertaV2Embeddings` (embedding width = hidden width): token embeddings, plus absolute position
    embeddings with `position_biased_input` (v2; none in v3) and segment embeddings when `num_segments > 0`,
    then LayerNorm, zeros at padded positions, and dropout.

    `token_table` (not configuration; None by default) is a function giving the `[vocabulary, hidden]` table to
    read the tokens from instead of `token_embedding`'s: DeBERTa-v3's gradient-disentangled embedding sharing
    (`GradientDisentangledSharing`) sets it while the discriminator runs in pre-training.

    Examples:
        >>> layer = DebertaEmbedding(100, 16, num_segments=0, position_biased_input=False)
        >>> tuple(layer(ops.ones((2, 5), "int32"), ops.zeros((2, 5), "int32"), ops.ones((2, 5))).shape)
        (2, 5, 16)
    """

    token_table = None

    def __init__(self, vocabulary_size, hidden_dim, max_sequence_length=512, num_segments=0,
                 position_biased_input=False, layer_norm_epsilon=1e-7, dropout=0.0, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.hidden_dim = hidden_dim
        self.max_sequence_length = max_sequence_length
        self.num_segments = num_segments
        self.position_biased_input = position_biased_input
        self.layer_norm_epsilon = layer_norm_epsilon
        self.dropout = dropout
        self.initializer_range = initializer_range
        initializer = weight_initializer(initializer_range)

        def table(rows, name):
            return keras.layers.Embedding(rows, hidden_dim, embeddings_initializer=initializer,
                                          dtype=self.dtype_policy, name=name)

        self.token_embedding = table(vocabulary_size, "token_embedding")
        self.position_embedding = table(max_sequence_length, "position_embedding") if position_biased_input else None
        self.segment_embedding = table(num_segments, "segment_embedding") if num_segments > 0 else None
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, dtype=self.dtype_policy,
                                                          name="layer_norm")
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, token_ids_shape, segment_ids_shape=None, padding_mask_shape=None):
        for embedding in (self.token_embedding, self.position_embedding, self.segment_embedding):
            if embedding is not None:
                embedding.build(token_ids_shape)
        self.layer_norm.build(tuple(token_ids_shape) + (self.hidden_dim,))

    def call(self, token_ids, segment_ids, padding_mask, training=None):
        if self.token_table is None:
            x = self.token_embedding(token_ids)
        else:
            x = ops.take(ops.cast(self.token_table(), self.compute_dtype), token_ids, axis=0)
        if self.position_embedding is not None:
            x = x + self.position_embedding(ops.arange(ops.shape(token_ids)[1]))[None]
        if self.segment_embedding is not None:
            x = x + self.segment_embedding(segment_ids)
        x = self.layer_norm(x) * ops.cast(padding_mask, x.dtype)[..., None]
        return self.dropout_layer(x, training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None, padding_mask_shape=None):
        return tuple(token_ids_shape) + (self.hidden_dim,)

    def get_config(self):
        return {**super().get_config(), **{name: getattr(self, name) for name in (
            "vocabulary_size", "hidden_dim", "max_sequence_length", "num_segments", "position_biased_input",
            "layer_norm_epsilon", "dropout", "initializer_range")}}


@keras.saving.register_keras_serializable(package="kerasbert")
class RelativeEmbeddingTable(keras.layers.Layer):
    """HF `DebertaV2Encoder.get_rel_embedding`: the `[rows, hidden_dim]` relative-position embeddings every
    block reads, LayerNormed when `normalize` (HF `norm_rel_ebd` containing "layer_norm"). Called on the
    hidden states only to place it in a functional model; it returns the table.

    Examples:
        >>> tuple(RelativeEmbeddingTable(16, 32, normalize=True)(ops.ones((2, 5, 32))).shape)
        (16, 32)
    """

    def __init__(self, rows, hidden_dim, normalize=True, layer_norm_epsilon=1e-7, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.rows = rows
        self.hidden_dim = hidden_dim
        self.normalize = normalize
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, dtype=self.dtype_policy,
                                                          name="layer_norm") if normalize else None

    def build(self, inputs_shape=None):
        self.embeddings = self.add_weight(shape=(self.rows, self.hidden_dim), name="embeddings",
                                          initializer=weight_initializer(self.initializer_range))
        if self.layer_norm is not None:
            self.layer_norm.build((self.rows, self.hidden_dim))

    def call(self, inputs):
        table = ops.convert_to_tensor(self.embeddings)
        return self.layer_norm(table) if self.layer_norm is not None else table

    def compute_output_shape(self, inputs_shape=None):
        return (self.rows, self.hidden_dim)

    def get_config(self):
        return {**super().get_config(), **{name: getattr(self, name) for name in (
            "rows", "hidden_dim", "normalize", "layer_norm_epsilon", "initializer_range")}}
