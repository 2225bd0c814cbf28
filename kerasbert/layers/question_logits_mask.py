"""QuestionLogitsMask: span logits that never point into the question (HF BigBird's answerer)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kerasbert")
class QuestionLogitsMask(keras.layers.Layer):
    """Take `penalty` from the start and end logits of the question's tokens: the first segment after `[CLS]`, up to
    and with its `[SEP]` (HF `BigBirdForQuestionAnswering`'s mask, positions 1 to the first `[SEP]`). The softmax
    of training and the null score (`[CLS]`) then see the context only, as HF's.

    Examples:
        >>> mask = QuestionLogitsMask()
        >>> logits = mask(ops.zeros((1, 5, 2)), ops.array([[0, 0, 0, 1, 1]]), ops.ones((1, 5)))
        >>> ops.convert_to_numpy(logits)[0, :, 0].tolist()
        [0.0, -1000000.0, -1000000.0, 0.0, 0.0]
    """

    def __init__(self, penalty=1e6, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.penalty = penalty

    def call(self, logits, segment_ids, padding_mask):
        after_cls = ops.arange(ops.shape(segment_ids)[1]) > 0
        question = ops.logical_and(ops.logical_and(ops.equal(segment_ids, 0), after_cls[None, :]),
                                   ops.not_equal(padding_mask, 0))
        return logits - ops.cast(question, logits.dtype)[..., None] * self.penalty

    def compute_output_shape(self, logits_shape, segment_ids_shape=None, padding_mask_shape=None):
        return logits_shape

    def get_config(self):
        return {**super().get_config(), "penalty": self.penalty}
