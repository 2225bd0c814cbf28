"""The ModernBERT family as data: HF config keys and defaults, weight names (`modernbert_weights.py`).

Its tokenizer is a byte-level BPE of RoBERTa's kind, read by `RobertaTokenizer` from `vocab.json` and
`merges.txt`, or from the `tokenizer.json` answerdotai's folders ship alone (`roberta_settings` reads its special
tokens, added tokens and offset trimming). The masked-LM head is HF `ModernBertForMaskedLM`'s: `head.dense` (a
bias with `classifier_bias`), `classifier_activation` (the backbone keeps both: its task heads use them too),
`head.norm` (beta only with `norm_bias`), then `decoder`, tied to the token embeddings, with its bias (HF's
default `decoder_bias`).
"""

from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.families.modernbert.modernbert_backbone import ModernBertBackbone
from kerasbert.families.modernbert.modernbert_weights import ModernBertNames
from kerasbert.families.roberta.family import roberta_settings
from kerasbert.families.roberta.roberta_tokenizer import RobertaTokenizer
from kerasbert.presets.hf_families import HfFamily

MODERNBERT_CONFIG_KEYS = {
    "vocab_size": "vocabulary_size", "num_hidden_layers": "num_layers", "num_attention_heads": "num_heads",
    "hidden_size": "hidden_dim", "intermediate_size": "intermediate_dim",
    "max_position_embeddings": "max_sequence_length", "local_attention": "local_attention",
    "global_attn_every_n_layers": "global_attn_every_n_layers", "global_rope_theta": "global_rope_theta",
    "local_rope_theta": "local_rope_theta", "norm_bias": "norm_bias", "attention_bias": "attention_bias",
    "mlp_bias": "mlp_bias", "mlp_dropout": "dropout", "attention_dropout": "attention_dropout",
    "embedding_dropout": "embedding_dropout", "norm_eps": "layer_norm_epsilon",
    "initializer_range": "initializer_range", "classifier_pooling": "classifier_pooling",
    "classifier_activation": "classifier_activation", "classifier_bias": "classifier_bias",
}
# HF ModernBertConfig's defaults of the keys a config.json may leave out (transformers 5.24).
MODERNBERT_DEFAULTS = {
    "vocab_size": 50368, "hidden_size": 768, "intermediate_size": 1152, "num_hidden_layers": 22,
    "num_attention_heads": 12, "hidden_activation": "gelu", "max_position_embeddings": 8192,
    "initializer_range": 0.02, "norm_eps": 1e-5, "norm_bias": False, "attention_bias": False,
    "attention_dropout": 0.0, "local_attention": 128, "embedding_dropout": 0.0, "mlp_bias": False,
    "mlp_dropout": 0.0, "global_attn_every_n_layers": 3, "global_rope_theta": 160000.0,
    "local_rope_theta": 10000.0, "classifier_pooling": "cls", "classifier_activation": "gelu", "classifier_bias": False,
}


def every_n_layers(layer_types):
    """HF `global_attn_every_n_layers` of a `layer_types` list, or a ValueError when no such n gives it."""
    n = next((i for i, kind in enumerate(layer_types[1:], 1) if kind == "full_attention"), len(layer_types))
    expected = ["full_attention" if i % n == 0 else "sliding_attention" for i in range(len(layer_types))]
    if layer_types != expected:
        raise ValueError(f"layer_types {layer_types} is not one global layer every n (global_attn_every_n_layers): "
                         "ModernBertBackbone builds only that pattern.")
    return n


def modernbert_flat_config(hf_config):
    """An HF ModernBERT config with `rope_parameters` as `global_rope_theta` / `local_rope_theta` and
    `layer_types` as `global_attn_every_n_layers` (the keys `ModernBertConfig` also takes)."""
    flat = dict(hf_config)
    rope = flat.get("rope_parameters") or {}
    for kind, key in (("full_attention", "global_rope_theta"), ("sliding_attention", "local_rope_theta")):
        settings = rope.get(kind) or {}
        if settings.get("rope_type", "default") != "default":
            raise ValueError(f"rope_type={settings['rope_type']!r} on {kind}: ModernBertBackbone computes only "
                             "the default rotary embedding.")
        if "rope_theta" in settings:
            flat[key] = settings["rope_theta"]
    if flat.get("layer_types"):
        flat["global_attn_every_n_layers"] = every_n_layers(list(flat["layer_types"]))
    return flat


FAMILY = Family(
    name="modernbert",
    backbone=ModernBertBackbone,
    tokenizer=RobertaTokenizer,
    checkpoint=HfFamily(MODERNBERT_CONFIG_KEYS, MODERNBERT_DEFAULTS, {}, "ModernBertModel", "model.",
                        marker_weight="embeddings.tok_embeddings.weight", activation_key="hidden_activation",
                        tokenizer_files=("vocab.json", "merges.txt"), tokenizer_settings=roberta_settings,
                        flat_config=modernbert_flat_config),
    weights=ModernBertNames(),
    masked_lm_head=MaskedLMHeadNames(("head.", "decoder."), "head.dense", "head.norm", "decoder.bias", "decoder",
                                     "gelu", "ModernBertForMaskedLM", dense_bias=False),
)
