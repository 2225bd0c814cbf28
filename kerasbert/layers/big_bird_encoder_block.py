"""BigBirdEncoderBlock: BERT's post-LN block with BigBird's block-sparse self-attention."""

import keras

from kerasbert.layers.block_sparse_attention import BlockSparseSelfAttention, check_block_sparse
from kerasbert.layers.encoder_block import TransformerEncoderBlock


@keras.saving.register_keras_serializable(package="kerasbert")
class BigBirdEncoderBlock(TransformerEncoderBlock):
    """`TransformerEncoderBlock` whose attention is a `BlockSparseSelfAttention` (HF `BigBirdLayer`): BERT's
    weights, residuals and LayerNorms, adapters and LoRA included.

    Args:
        block_size, num_random_blocks, attention_type: the attention's (HF `block_size`, `num_random_blocks`,
            `attention_type`). Others: `TransformerEncoderBlock`'s.

    Examples:
        >>> block = BigBirdEncoderBlock(num_heads=2, intermediate_dim=16, block_size=2, num_random_blocks=1)
        >>> tuple(block(ops.ones((1, 20, 8))).shape)
        (1, 20, 8)
    """

    def __init__(self, num_heads, intermediate_dim, block_size=64, num_random_blocks=3,
                 attention_type="block_sparse", **kwargs):
        super().__init__(num_heads, intermediate_dim, **kwargs)
        check_block_sparse(block_size, num_random_blocks, attention_type)  # now, not at build
        self.block_size = block_size
        self.num_random_blocks = num_random_blocks
        self.attention_type = attention_type

    def make_attention(self):
        return BlockSparseSelfAttention(
            self.num_heads, self.attention_dropout, self.initializer_range, lora_config=self.lora_config,
            block_size=self.block_size, num_random_blocks=self.num_random_blocks,
            attention_type=self.attention_type, dtype=self.dtype_policy, name="attention")

    def get_config(self):
        config = super().get_config()
        config.update({"block_size": self.block_size, "num_random_blocks": self.num_random_blocks,
                       "attention_type": self.attention_type})
        return config
