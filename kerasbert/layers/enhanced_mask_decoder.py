"""DeBERTa's enhanced mask decoder (EMD): absolute positions brought in just before the masked-LM head."""

import keras
from keras import ops

from kerasbert.layers.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="kerasbert")
class EnhancedMaskDecoder(keras.layers.Layer):
    """DeBERTa's `EnhancedMaskDecoder` (He et al., 2021, section 3.2; `emd_context_layer` of DeBERTa's own code):
    the encoder's last block run `steps` more times over the input of that block, `hidden`, with queries that
    start as `hidden` plus absolute position embeddings and then are the previous run's output. Its output is what
    the masked-LM head of a model without absolute positions in its input (`position_biased_input=False`: DeBERTa-v2
    and v3) reads in pre-training.

    `block` is the backbone's last `DebertaEncoderBlock`, shared (a live link, not configuration: the backbone
    that owns both passes it again on load). The layer owns the position table (`position_embedding`,
    `[max_sequence_length, hidden_dim]`: the published checkpoints' `deberta.embeddings.position_embeddings.weight`,
    raw, no LayerNorm, as DeBERTa's embeddings return it).

    Examples:
        >>> decoder = EnhancedMaskDecoder(backbone.encoder_blocks[-1], max_sequence_length=512, hidden_dim=768)
        >>> decoded = decoder(hidden_states[-2], rel_embeddings, padding_mask)  # [batch, T, hidden]
    """

    def __init__(self, block, max_sequence_length, hidden_dim, steps=2, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.block = block
        self.max_sequence_length = max_sequence_length
        self.hidden_dim = hidden_dim
        self.steps = steps
        self.initializer_range = initializer_range
        self.position_embedding = keras.layers.Embedding(
            max_sequence_length, hidden_dim, embeddings_initializer=weight_initializer(initializer_range),
            dtype=self.dtype_policy, name="position_embedding")

    def build(self, hidden_shape, rel_embeddings_shape=None, padding_mask_shape=None):
        self.position_embedding.build((None,))

    def call(self, hidden, rel_embeddings=None, padding_mask=None, training=None):
        query = hidden + self.position_embedding(ops.arange(ops.shape(hidden)[1]))[None]
        for _ in range(self.steps):
            query = self.block(hidden, rel_embeddings=rel_embeddings, padding_mask=padding_mask, query_states=query,
                               training=training)
        return query

    def compute_output_shape(self, hidden_shape, rel_embeddings_shape=None, padding_mask_shape=None):
        return tuple(hidden_shape)

    def get_config(self):
        return {**super().get_config(), **{name: getattr(self, name) for name in (
            "max_sequence_length", "hidden_dim", "steps", "initializer_range")}}
