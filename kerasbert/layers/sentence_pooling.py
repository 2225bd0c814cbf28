"""SentencePooling: one vector per text from BERT's token vectors (sentence-transformers' Pooling + Normalize)."""

import keras
from keras import ops

POOLING_MODES = ("mean", "cls", "max")


@keras.saving.register_keras_serializable(package="kerasbert")
class SentencePooling(keras.layers.Layer):
    """Pool `sequence_output` over the real tokens of `padding_mask`, optionally to unit length.

    `"mean"`: the average of the real tokens (sentence-transformers' `pooling_mode_mean_tokens`, a padding
    mask of zeros gives zeros), `"cls"`: the `[CLS]` vector, `"max"`: the largest value of each dimension
    over the real tokens. `normalize=True` divides by the L2 norm (at least 1e-12, as `torch.nn.functional
    .normalize`), so a dot product of two vectors is their cosine similarity. Computed in float32.

    Examples:
        >>> pooling = SentencePooling("mean", normalize=True)
        >>> vectors = pooling(backbone(inputs)["sequence_output"], inputs["padding_mask"])   # [batch, hidden]
    """

    def __init__(self, mode="mean", normalize=False, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        if mode not in POOLING_MODES:
            raise ValueError(f"pooling={mode!r} is not one of {list(POOLING_MODES)}.")
        if not isinstance(normalize, bool):
            raise ValueError(f"normalize must be True or False, got {normalize!r}.")
        self.mode = mode
        self.normalize = normalize

    def call(self, sequence_output, padding_mask):
        sequence_output = ops.cast(sequence_output, "float32")
        if self.mode == "cls":
            pooled = sequence_output[:, 0, :]
        else:
            mask = ops.expand_dims(ops.cast(padding_mask, "float32"), -1)
            if self.mode == "mean":
                pooled = ops.sum(sequence_output * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1e-9)
            else:
                pooled = ops.max(ops.where(mask > 0, sequence_output, -1e9), axis=1)
        if self.normalize:
            norm = ops.sqrt(ops.sum(ops.square(pooled), axis=-1, keepdims=True))
            pooled = pooled / ops.maximum(norm, 1e-12)
        return pooled

    def compute_output_shape(self, sequence_output_shape, padding_mask_shape=None):
        return (sequence_output_shape[0], sequence_output_shape[-1])

    def get_config(self):
        return {**super().get_config(), "mode": self.mode, "normalize": self.normalize}
