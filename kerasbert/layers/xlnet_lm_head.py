"""XLNetLMHead: XLNet's language-model output, tied to the word embedding (HF `XLNetLMHeadModel.lm_loss`)."""

import keras
from keras import ops

from kerasbert.layers.heads import tied_decoder_matrix


@keras.saving.register_keras_serializable(package="kerasbert")
class XLNetLMHead(keras.layers.Layer):
    """`logits = hidden @ word_embedding.T + bias`: the decoder is the token embedding table (a live link, not
    configuration: the model that owns both re-links it on load) and the bias `[vocabulary]` is the head's own.

    Args:
        token_embedding: the backbone's token `Embedding` (`backbone.token_embedding`).

    Call args:
        hidden: `[batch, P, hidden]`, e.g. the backbone's `query_output` in permutation LM training.

    Examples:
        >>> head = XLNetLMHead(backbone.token_embedding)
        >>> logits = head(backbone(inputs)["query_output"])   # [batch, P, vocabulary]
    """

    def __init__(self, token_embedding, **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding

    def build(self, input_shape):
        self.bias = self.add_weight(shape=(self.token_embedding.input_dim,), initializer="zeros", name="bias")
        self.built = True

    def call(self, hidden):
        decoder = ops.cast(tied_decoder_matrix(self.token_embedding), hidden.dtype)
        return ops.cast(ops.matmul(hidden, decoder) + ops.cast(self.bias, hidden.dtype), "float32")
