"""DeBERTa-v2's HF weight names (`DebertaV2Model`), linked to the layers of a `DebertaV2Backbone`.

Its layers are not BERT's, so it names them itself (as MobileBERT does): `weight_links` and `hf_inexpressible`
ask the family's `weights` for `links(backbone)` and `stock_layers(backbone)`.

Examples:
    >>> sorted(export_links(DebertaV2Names().links(backbone)))[0]
    'embeddings.LayerNorm.bias'
"""

from kerasbert.families.checkpoint_weights import dense_links, norm_links
from kerasbert.families.deberta_v2.deberta_v2_backbone import MASK_DECODER_TABLE
from kerasbert.layers.deberta_embedding import DebertaEmbedding, RelativeEmbeddingTable
from kerasbert.layers.deberta_encoder_block import DebertaEncoderBlock
from kerasbert.layers.disentangled_attention import DisentangledSelfAttention

# DisentangledSelfAttention's projection -> HF's (`attention.self.<name>`).
ATTENTION_PROJECTIONS = {"query": "query_proj", "key": "key_proj", "value": "value_proj",
                         "pos_key": "pos_key_proj", "pos_query": "pos_query_proj"}


def block_links(block, prefix):
    """`(variable, hf_names, kind)` of one `DebertaEncoderBlock` under HF `DebertaV2Layer` names."""
    for ours, dense in block.attention.projections.items():
        yield from dense_links(dense, f"{prefix}.attention.self.{ATTENTION_PROJECTIONS[ours]}")
    yield from dense_links(block.attention_output, f"{prefix}.attention.output.dense")
    yield from norm_links(block.attention_norm, f"{prefix}.attention.output.LayerNorm")
    yield from dense_links(block.intermediate, f"{prefix}.intermediate.dense")
    yield from dense_links(block.output_dense, f"{prefix}.output.dense")
    yield from norm_links(block.output_norm, f"{prefix}.output.LayerNorm")


class DebertaV2Names:
    """The family's `weights`: HF `DebertaV2Model`'s names of every backbone weight, and the layers whose
    computation HF's model fixes."""

    pooler = None  # HF DebertaV2Model has no pooler: its task models have (`DebertaV2Backbone.from_checkpoint`)

    def task_model_weights(self, backbone):
        """The weights HF keeps in its task models, not in `DebertaV2Model` (the `ContextPooler`'s): a base
        folder leaves them out without losing the backbone."""
        return backbone.pooler.weights

    def links(self, backbone):
        """Yield `(variable, hf_names, kind)` of every weight of a `DebertaV2Backbone`."""
        embedding = backbone.embedding
        yield embedding.token_embedding.embeddings, ["embeddings.word_embeddings.weight"], "copy"
        if embedding.position_embedding is not None:
            yield embedding.position_embedding.embeddings, ["embeddings.position_embeddings.weight"], "copy"
        if embedding.segment_embedding is not None:
            yield embedding.segment_embedding.embeddings, ["embeddings.token_type_embeddings.weight"], "copy"
        yield from norm_links(embedding.layer_norm, "embeddings.LayerNorm")
        if backbone.mask_decoder is not None:  # the published checkpoints keep the decoder's table here
            yield backbone.mask_decoder.position_embedding.embeddings, [MASK_DECODER_TABLE], "copy"
        relative = backbone.relative_embedding
        if relative is not None:
            yield relative.embeddings, ["encoder.rel_embeddings.weight"], "copy"
            if relative.layer_norm is not None:
                yield from norm_links(relative.layer_norm, "encoder.LayerNorm")
        for index, block in enumerate(backbone.encoder_blocks):
            yield from block_links(block, f"encoder.layer.{index}")

    def stock_layers(self, backbone):
        """`(layer, the class HF's model computes it as)` of each computing layer of `backbone`."""
        yield backbone.embedding, DebertaEmbedding
        if backbone.relative_embedding is not None:
            yield backbone.relative_embedding, RelativeEmbeddingTable
        for block in backbone.encoder_blocks:
            yield block, DebertaEncoderBlock
            yield block.attention, DisentangledSelfAttention
