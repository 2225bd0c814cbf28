"""The ALBERT family as data: HF config keys, tokenizer file and settings, weight names, masked-LM head."""

from kerasbert.families.albert.albert_backbone import AlbertBackbone
from kerasbert.families.albert.albert_tokenizer import AlbertTokenizer
from kerasbert.families.checkpoint_weights import HfNames
from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.presets.hf_families import BERT_CONFIG_KEYS, STOCK_BERT, HfFamily

# Where HF keeps each part of an ALBERT block, relative to the block's prefix.
ALBERT_BLOCK = {"query": "attention.query", "key": "attention.key", "value": "attention.value",
                "attention_output": "attention.dense", "attention_layer_norm": "attention.LayerNorm",
                "intermediate": "ffn", "output": "ffn_output", "output_layer_norm": "full_layer_layer_norm"}
SPECIAL_TOKENS = {"<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"}


def albert_settings(fast, settings):
    """`AlbertTokenizer` settings: casing and accents from `tokenizer_config.json`, and
    `legacy_added_tokens` when a `tokenizer.json` written by transformers 4 (added tokens: the special
    tokens only, as in the published ALBERT checkpoints) is what HF loads."""
    legacy = fast is not None and {token.get("content") for token in fast.get("added_tokens", [])} <= \
        SPECIAL_TOKENS
    return {"do_lower_case": bool(settings.get("do_lower_case", True)),
            "keep_accents": bool(settings.get("keep_accents", False)), "legacy_added_tokens": legacy}


FAMILY = Family(
    name="albert",
    backbone=AlbertBackbone,
    tokenizer=AlbertTokenizer,
    checkpoint=HfFamily({**BERT_CONFIG_KEYS, "embedding_size": "embedding_dim", "num_hidden_groups": "num_block_groups",
                         "inner_group_num": "blocks_per_group"},
                        {"layer_norm_eps": 1e-12, "hidden_act": "gelu_new", "embedding_size": 128,
                         "num_hidden_groups": 1, "inner_group_num": 1},
                        STOCK_BERT, "AlbertModel", "albert.",
                        marker_weight="encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight",
                        tokenizer_files=("spiece.model",), tokenizer_settings=albert_settings),
    weights=HfNames(ALBERT_BLOCK, "encoder.albert_layer_groups.{group}.albert_layers.{inner}",
                    "encoder.embedding_hidden_mapping_in", "pooler"),
    masked_lm_head=MaskedLMHeadNames("predictions.", "predictions.dense", "predictions.LayerNorm",
                                     "predictions.bias", "predictions.decoder", None, "AlbertForMaskedLM"),
)
