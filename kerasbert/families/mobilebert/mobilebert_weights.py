"""MobileBERT's HF weight names (`MobileBertModel`), linked to the layers of a `MobileBertBackbone`.

Its layers are not BERT's, so it names them itself instead of through `HfNames`: `weight_links` and
`hf_inexpressible` ask the family's `weights` for `links(backbone)` and `stock_layers(backbone)`. NoNorm
and LayerNorm both keep `weight` and `bias` in HF.

Examples:
    >>> sorted(export_links(MobileBertNames().links(backbone)))[0]
    'embeddings.LayerNorm.bias'
"""

from kerasbert.families.checkpoint_weights import dense_links
from kerasbert.layers.bottleneck_attention import BottleneckAttention
from kerasbert.layers.mobilebert_embedding import MobileBertEmbedding
from kerasbert.layers.mobilebert_encoder_block import MobileBertEncoderBlock


def norm_links(layer, name):
    """`(variable, hf_names, kind)` of a NoNorm or LayerNorm stored as HF's `name`."""
    yield layer.gamma, [f"{name}.weight"], "copy"
    yield layer.beta, [f"{name}.bias"], "copy"


def projection_links(pair, name):
    """A (Dense, norm) pair of a block, HF's `name.dense` and `name.LayerNorm`."""
    yield from dense_links(pair[0], f"{name}.dense")
    yield from norm_links(pair[1], f"{name}.LayerNorm")


def block_links(block, prefix):
    """`(variable, hf_names, kind)` of one `MobileBertEncoderBlock` under HF `MobileBertLayer` names."""
    if block.input_bottleneck is not None:
        yield from projection_links(block.input_bottleneck, f"{prefix}.bottleneck.input")
    if block.attention_bottleneck is not None:
        yield from projection_links(block.attention_bottleneck, f"{prefix}.bottleneck.attention")
    for part in ("query", "key", "value"):
        yield from dense_links(getattr(block.attention, part), f"{prefix}.attention.self.{part}")
    yield from dense_links(block.attention.output_dense, f"{prefix}.attention.output.dense")
    yield from norm_links(block.attention_norm, f"{prefix}.attention.output.LayerNorm")
    *extra, last = block.feed_forwards
    for index, (intermediate, output, norm) in enumerate(extra):
        yield from dense_links(intermediate, f"{prefix}.ffn.{index}.intermediate.dense")
        yield from dense_links(output, f"{prefix}.ffn.{index}.output.dense")
        yield from norm_links(norm, f"{prefix}.ffn.{index}.output.LayerNorm")
    yield from dense_links(last[0], f"{prefix}.intermediate.dense")
    yield from dense_links(last[1], f"{prefix}.output.dense")
    yield from norm_links(last[2], f"{prefix}.output.LayerNorm")
    if block.output_bottleneck is not None:
        yield from projection_links(block.output_bottleneck, f"{prefix}.output.bottleneck")


class MobileBertNames:
    """The family's `weights`: HF `MobileBertModel`'s names of every backbone weight, and the layers whose
    computation HF's model fixes."""

    pooler = "pooler.dense"  # optional when loading (`apply_checkpoint`)

    def links(self, backbone):
        """Yield `(variable, hf_names, kind)` of every weight of a `MobileBertBackbone`."""
        embedding = backbone.embedding
        yield embedding.token_embedding.embeddings, ["embeddings.word_embeddings.weight"], "copy"
        yield embedding.position_embedding.embeddings, ["embeddings.position_embeddings.weight"], "copy"
        yield embedding.segment_embedding.embeddings, ["embeddings.token_type_embeddings.weight"], "copy"
        yield from dense_links(embedding.embedding_projection, "embeddings.embedding_transformation")
        yield from norm_links(embedding.layer_norm, "embeddings.LayerNorm")
        for index, block in enumerate(backbone.encoder_blocks):
            yield from block_links(block, f"encoder.layer.{index}")
        if backbone.pooler is not None:
            yield from dense_links(backbone.pooler, self.pooler)

    def stock_layers(self, backbone):
        """`(layer, the class HF's model computes it as)` of each computing layer of `backbone`."""
        yield backbone.embedding, MobileBertEmbedding
        for block in backbone.encoder_blocks:
            yield block, MobileBertEncoderBlock
            yield block.attention, BottleneckAttention
