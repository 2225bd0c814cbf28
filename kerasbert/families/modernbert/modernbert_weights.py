"""ModernBERT's HF weight names (`ModernBertModel`), linked to the layers of a `ModernBertBackbone`.

Its layers are not BERT's, so it names them itself (as MobileBERT's `mobilebert_weights.py`). Biases and
LayerNorm betas exist only with HF `attention_bias`, `mlp_bias`, `norm_bias`.

Examples:
    >>> sorted(export_links(ModernBertNames().links(backbone)))[0]
    'embeddings.norm.weight'
"""

from kerasbert.families.checkpoint_weights import dense_links, norm_links
from kerasbert.layers.geglu_feed_forward import GegluFeedForward
from kerasbert.layers.modernbert_encoder_block import ModernBertEncoderBlock
from kerasbert.layers.rotary_attention import RotarySelfAttention


def block_links(block, prefix):
    """`(variable, hf_names, kind)` of one `ModernBertEncoderBlock` under HF `ModernBertEncoderLayer` names."""
    if block.attention_layer_norm is not None:
        yield from norm_links(block.attention_layer_norm, f"{prefix}.attn_norm")
    yield from dense_links(block.attention.qkv_dense, f"{prefix}.attn.Wqkv")
    yield from dense_links(block.attention.output_dense, f"{prefix}.attn.Wo")
    yield from norm_links(block.mlp_layer_norm, f"{prefix}.mlp_norm")
    yield from dense_links(block.mlp.input_dense, f"{prefix}.mlp.Wi")
    yield from dense_links(block.mlp.output_dense, f"{prefix}.mlp.Wo")


class ModernBertNames:
    """The family's `weights`: HF `ModernBertModel`'s names of every backbone weight, and the layers whose
    computation HF's model fixes."""

    pooler = None  # HF's base model has no pooler

    def links(self, backbone):
        """Yield `(variable, hf_names, kind)` of every weight of a `ModernBertBackbone`."""
        yield backbone.token_embedding.embeddings, ["embeddings.tok_embeddings.weight"], "copy"
        yield from norm_links(backbone.embedding_norm, "embeddings.norm")
        for index, block in enumerate(backbone.encoder_blocks):
            yield from block_links(block, f"layers.{index}")
        yield from norm_links(backbone.final_layer_norm, "final_norm")

    def stock_layers(self, backbone):
        """`(layer, the class HF's model computes it as)` of each computing layer of `backbone`."""
        for block in backbone.encoder_blocks:
            yield block, ModernBertEncoderBlock
            yield block.attention, RotarySelfAttention
            yield block.mlp, GegluFeedForward
