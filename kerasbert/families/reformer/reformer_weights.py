"""Reformer's HF weight names (`ReformerModel`), linked to the layers of a `ReformerBackbone`.

Its layers are not BERT's, so it names them itself (as ModernBERT's `modernbert_weights.py`). The attention
projections have no biases; the axial position weights are HF's `embeddings.position_embeddings.weights.<axis>`.

Examples:
    >>> sorted(export_links(ReformerNames().links(backbone)))[0]
    'embeddings.position_embeddings.weights.0'
"""

from kerasbert.families.checkpoint_weights import dense_links, norm_links
from kerasbert.layers.axial_position_embedding import AxialPositionEmbedding
from kerasbert.layers.local_self_attention import ChunkedLocalSelfAttention
from kerasbert.layers.lsh_self_attention import LshSelfAttention
from kerasbert.layers.reversible_block import ReversibleBlock


def attention_links(attention, prefix):
    """The projections of one LSH or local attention under HF's names (`query_key` or `query` and `key`)."""
    if isinstance(attention, LshSelfAttention):
        parts = {"query_key": attention.query_key_dense, "value": attention.value_dense}
    else:
        parts = {"query": attention.query_dense, "key": attention.key_dense, "value": attention.value_dense}
    for name, dense in parts.items():
        yield dense.kernel, [f"{prefix}.self_attention.{name}.weight"], "kernel"
    yield attention.output_dense.kernel, [f"{prefix}.output.dense.weight"], "kernel"


def block_links(block, prefix):
    """`(variable, hf_names, kind)` of one `ReversibleBlock` under HF `ReformerLayer` names."""
    yield from norm_links(block.attention_layer_norm, f"{prefix}.attention.layer_norm")
    yield from attention_links(block.attention, f"{prefix}.attention")
    yield from norm_links(block.feed_forward_layer_norm, f"{prefix}.feed_forward.layer_norm")
    yield from dense_links(block.intermediate_dense, f"{prefix}.feed_forward.dense.dense")
    yield from dense_links(block.output_dense, f"{prefix}.feed_forward.output.dense")


class ReformerNames:
    """The family's `weights`: HF `ReformerModel`'s names of every backbone weight, and the layers whose
    computation HF's model fixes."""

    pooler = None  # HF's base model has no pooler

    def links(self, backbone):
        """Yield `(variable, hf_names, kind)` of every weight of a `ReformerBackbone`."""
        yield backbone.token_embedding.embeddings, ["embeddings.word_embeddings.weight"], "copy"
        if isinstance(backbone.position_embedding, AxialPositionEmbedding):
            for axis, weight in enumerate(backbone.position_embedding.axis_weights):
                yield weight, [f"embeddings.position_embeddings.weights.{axis}"], "copy"
        else:
            yield backbone.position_embedding.embeddings, ["embeddings.position_embeddings.embedding.weight"], "copy"
        for index, block in enumerate(backbone.encoder_blocks):
            yield from block_links(block, f"encoder.layers.{index}")
        yield from norm_links(backbone.final_layer_norm, "encoder.layer_norm")

    def stock_layers(self, backbone):
        """`(layer, the class HF's model computes it as)` of each computing layer of `backbone`."""
        for kind, block in zip(backbone.attn_layers, backbone.encoder_blocks):
            yield block, ReversibleBlock
            yield block.attention, LshSelfAttention if kind == "lsh" else ChunkedLocalSelfAttention
