"""LongformerEncoderBlock: BERT's post-LN block with Longformer's windowed and global self-attention."""

import keras

from kerasbert.layers.encoder_block import TransformerEncoderBlock
from kerasbert.layers.longformer_attention import LongformerSelfAttention, check_longformer_attention


@keras.saving.register_keras_serializable(package="kerasbert")
class LongformerEncoderBlock(TransformerEncoderBlock):
    """`TransformerEncoderBlock` whose attention is a `LongformerSelfAttention` (HF `LongformerLayer`): the same
    weights plus the global projections, the same residuals and LayerNorms; no adapters or LoRA.

    Args:
        window, max_global_tokens: the attention's (HF `attention_window` of this layer; the bound on global
            tokens a row may have). Others: `TransformerEncoderBlock`'s.

    Call args:
        x, padding_mask: as `TransformerEncoderBlock`. global_attention_mask: `[B, T]`, true on global tokens.

    Examples:
        >>> block = LongformerEncoderBlock(num_heads=2, intermediate_dim=16, window=4)
        >>> tuple(block(ops.ones((1, 9, 8)), global_attention_mask=ops.zeros((1, 9))).shape)
        (1, 9, 8)
    """

    def __init__(self, num_heads, intermediate_dim, window=512, max_global_tokens=128, **kwargs):
        super().__init__(num_heads, intermediate_dim, **kwargs)
        self.window = window
        self.max_global_tokens = max_global_tokens
        check_longformer_attention(window, max_global_tokens)  # now, not at build

    def make_attention(self):
        return LongformerSelfAttention(self.num_heads, self.attention_dropout, self.initializer_range, self.window,
                                       self.max_global_tokens, dtype=self.dtype_policy, name="attention")

    def call(self, x, padding_mask=None, global_attention_mask=None, return_attention_scores=False, training=None):
        return super().call(x, padding_mask=padding_mask, attention_mask=global_attention_mask,
                            return_attention_scores=return_attention_scores, training=training)

    def compute_output_spec(self, x, padding_mask=None, global_attention_mask=None, return_attention_scores=False,
                            training=None):
        return keras.KerasTensor(x.shape, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"window": self.window, "max_global_tokens": self.max_global_tokens})
        return config
