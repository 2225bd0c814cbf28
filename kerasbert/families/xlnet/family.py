"""The XLNet family as data: HF config keys and the settings kerasbert reads, its SentencePiece tokenizer; its
weight links are `xlnet_weights.py` (XLNet's layers are not BERT's)."""

from kerasbert.families.albert.family import unigram_json_settings
from kerasbert.families.family import Family
from kerasbert.families.xlnet.xlnet_backbone import XLNetBackbone
from kerasbert.families.xlnet.xlnet_tokenizer import XLNetTokenizer
from kerasbert.presets.hf_families import HfFamily
from kerasbert.tokenizers.tokenizer_json import special_tokens_of

XLNET_CONFIG_KEYS = {"vocab_size": "vocabulary_size", "n_layer": "num_layers", "n_head": "num_heads",
                     "d_model": "hidden_dim", "d_inner": "intermediate_dim", "dropout": "dropout",
                     "layer_norm_eps": "layer_norm_epsilon", "initializer_range": "initializer_range",
                     "mem_len": "memory_length", "clamp_len": "clamp_length"}
# HF XLNetConfig's defaults (a config.json written by save_pretrained leaves out the keys that equal them).
XLNET_DEFAULTS = {"vocab_size": 32000, "d_model": 1024, "n_layer": 24, "n_head": 16, "d_inner": 4096,
                  "ff_activation": "gelu", "dropout": 0.1, "layer_norm_eps": 1e-12, "initializer_range": 0.02,
                  "mem_len": 512, "clamp_len": -1}


def xlnet_settings(fast, settings):
    """`XLNetTokenizer` settings: casing (HF strips accents whatever it says) and the special tokens, from the
    `tokenizer.json` or `tokenizer_config.json`."""
    found = unigram_json_settings(fast, settings, {"do_lower_case": False})
    found["special_tokens"] = special_tokens_of(fast, settings, XLNetTokenizer.default_special_tokens)
    return found


FAMILY = Family(
    name="xlnet",
    backbone=XLNetBackbone,
    tokenizer=XLNetTokenizer,
    checkpoint=HfFamily(XLNET_CONFIG_KEYS, XLNET_DEFAULTS, {}, "XLNetModel", "transformer.",
                        marker_weight="layer.0.rel_attn.q", activation_key="ff_activation",
                        tokenizer_files=("spiece.model",), tokenizer_settings=xlnet_settings,
                        required_values={"attn_type": "bi", "bi_data": False, "reuse_len": None}),
    weights=None,
    masked_lm_head=None,
)
