"""Longformer's HF weight names (`LongformerModel`), linked to the layers of a `LongformerBackbone`.

BERT's names (`checkpoint_weights.block_links`) and, in each layer's `attention.self`, the global projections
`query_global`, `key_global`, `value_global` (held fused in `global_qkv_dense`).

Examples:
    >>> sorted(export_links(LongformerNames().links(backbone)))[0]
    'embeddings.LayerNorm.bias'
"""

from kerasbert.families.checkpoint_weights import BERT_BLOCK, block_links, dense_links, embedding_links
from kerasbert.families.longformer.global_tokens import GlobalTokens
from kerasbert.layers.embedding import TokenSegmentPositionEmbedding
from kerasbert.layers.longformer_attention import LongformerSelfAttention
from kerasbert.layers.longformer_encoder_block import LongformerEncoderBlock

GLOBAL_PROJECTIONS = ("query_global", "key_global", "value_global")


class LongformerNames:
    """The family's `weights`: HF `LongformerModel`'s names of every backbone weight, and the layers whose
    computation HF's model fixes."""

    pooler = "pooler.dense"

    def links(self, backbone):
        """Yield `(variable, hf_names, kind)` of every weight of a `LongformerBackbone`."""
        yield from embedding_links(backbone.embedding)
        for index, block in enumerate(backbone.encoder_blocks):
            prefix = f"encoder.layer.{index}"
            yield from block_links(block, {part: f"{prefix}.{name}" for part, name in BERT_BLOCK.items()})
            names = [f"{prefix}.attention.self.{name}" for name in GLOBAL_PROJECTIONS]
            yield block.attention.global_qkv_dense.kernel, [f"{name}.weight" for name in names], "qkv_kernel"
            yield block.attention.global_qkv_dense.bias, [f"{name}.bias" for name in names], "qkv_bias"
        yield from dense_links(backbone.pooler, self.pooler)

    def stock_layers(self, backbone):
        """`(layer, the class HF's model computes it as)` of each computing layer of `backbone`."""
        yield backbone.embedding, TokenSegmentPositionEmbedding
        yield backbone.get_layer("global_tokens"), GlobalTokens
        for block in backbone.encoder_blocks:
            yield block, LongformerEncoderBlock
            yield block.attention, LongformerSelfAttention
