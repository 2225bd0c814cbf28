"""BigBirdQuestionAnsweringHead: the feed-forward block HF's BigBird answerer puts before `qa_outputs`."""

import keras

from kerasbert.layers.xlnet_feed_forward import XLNetFeedForward


@keras.saving.register_keras_serializable(package="kerasbert")
class BigBirdQuestionAnsweringHead(XLNetFeedForward):
    """`LayerNorm(x + dropout(W2 activation(W1 dropout(x))))` on every token (HF `BigBirdForQuestionAnsweringHead`
    before its `qa_outputs`): `XLNetFeedForward`'s weights and inference, with BigBird's dropout places (on the
    block's input, not after the activation). `padding_mask` is accepted and unused (a task transform's call).

    Examples:
        >>> head = BigBirdQuestionAnsweringHead(intermediate_dim=64, activation="gelu_approximate")
        >>> tuple(head(ops.ones((2, 5, 32))).shape)
        (2, 5, 32)
    """

    pooling = None  # a per-token transform (kerasbert.tasks.heads.family_transform)

    def call(self, inputs, padding_mask=None, training=None):
        x = self.activation_function(self.inner_dense(self.dropout_layer(inputs, training=training)))
        return self.layer_norm(self.dropout_layer(self.output_dense(x), training=training) + inputs)
