"""The Reformer family as data: HF config keys and defaults, weight names (`reformer_weights.py`).

No tokenizer: HF's Reformer checkpoints use a SentencePiece model (crime-and-punishment) or raw bytes (enwik8),
and kerasbert has no Reformer packer yet; tokenise with HF's tokenizer (or bytes + 2 for enwik8) and feed ids.
No masked-LM head (HF's `ReformerOnlyLMHead` reads the doubled width): `masked_lm_head` is None.
"""

from kerasbert.families.family import Family
from kerasbert.families.reformer.reformer_backbone import ReformerBackbone
from kerasbert.families.reformer.reformer_weights import ReformerNames
from kerasbert.presets.hf_families import HfFamily

REFORMER_CONFIG_KEYS = {
    "vocab_size": "vocabulary_size", "hidden_size": "hidden_dim", "num_attention_heads": "num_heads",
    "attention_head_size": "head_dim", "feed_forward_size": "intermediate_dim", "attn_layers": "attn_layers",
    "num_hashes": "num_hashes", "num_buckets": "num_buckets", "lsh_attn_chunk_length": "lsh_chunk_length",
    "lsh_num_chunks_before": "lsh_num_chunks_before", "lsh_num_chunks_after": "lsh_num_chunks_after",
    "local_attn_chunk_length": "local_chunk_length", "local_num_chunks_before": "local_num_chunks_before",
    "local_num_chunks_after": "local_num_chunks_after", "hash_seed": "hash_seed",
    "axial_pos_embds": "axial_position_embeddings", "axial_pos_shape": "axial_position_shape",
    "axial_pos_embds_dim": "axial_position_dims", "axial_norm_std": "axial_initializer_stddev",
    "max_position_embeddings": "max_sequence_length", "hidden_dropout_prob": "dropout",
    "lsh_attention_probs_dropout_prob": "lsh_attention_dropout",
    "local_attention_probs_dropout_prob": "local_attention_dropout", "layer_norm_eps": "layer_norm_epsilon",
    "initializer_range": "initializer_range", "chunk_size_feed_forward": "feed_forward_chunk_size",
    "pad_token_id": "padding_token_id",
}
# HF ReformerConfig's defaults of the keys a config.json may leave out (transformers 5.24).
REFORMER_DEFAULTS = {
    "attention_head_size": 64, "attn_layers": ["local", "lsh", "local", "lsh", "local", "lsh"], "axial_norm_std": 1.0,
    "axial_pos_embds": True, "axial_pos_shape": [64, 64], "axial_pos_embds_dim": [64, 192], "feed_forward_size": 512,
    "hash_seed": None, "hidden_act": "relu", "hidden_dropout_prob": 0.05, "hidden_size": 256,
    "initializer_range": 0.02, "layer_norm_eps": 1e-12, "local_num_chunks_before": 1, "local_num_chunks_after": 0,
    "local_attention_probs_dropout_prob": 0.05, "local_attn_chunk_length": 64, "lsh_attn_chunk_length": 64,
    "lsh_attention_probs_dropout_prob": 0.0, "lsh_num_chunks_before": 1, "lsh_num_chunks_after": 0,
    "max_position_embeddings": 4096, "num_attention_heads": 12, "num_buckets": None, "num_hashes": 1,
    "vocab_size": 320, "chunk_size_feed_forward": 0, "pad_token_id": 0,
}

FAMILY = Family(
    name="reformer",
    backbone=ReformerBackbone,
    tokenizer=None,
    checkpoint=HfFamily(REFORMER_CONFIG_KEYS, REFORMER_DEFAULTS, {}, "ReformerModel", "reformer.",
                        marker_weight="encoder.layers.0.attention.layer_norm.weight", activation_key="hidden_act",
                        tokenizer_files=("spiece.model",), required_values={"is_decoder": False}),
    weights=ReformerNames(),
    masked_lm_head=None,
)
