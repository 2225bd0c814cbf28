"""The ALBERT family as data: HF config keys, tokenizer file and settings, weight names, masked-LM head."""

from kerasbert.families.albert.albert_backbone import AlbertBackbone
from kerasbert.families.albert.albert_tokenizer import AlbertTokenizer
from kerasbert.families.checkpoint_weights import HfNames
from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.presets.hf_families import BERT_CONFIG_KEYS, STOCK_BERT, HfFamily
from kerasbert.tokenizers.tokenizer_json import TokenizerJsonError, special_tokens_of, unigram_settings

# Where HF keeps each part of an ALBERT block, relative to the block's prefix.
ALBERT_BLOCK = {"query": "attention.query", "key": "attention.key", "value": "attention.value",
                "attention_output": "attention.dense", "attention_layer_norm": "attention.LayerNorm",
                "intermediate": "ffn", "output": "ffn_output", "output_layer_norm": "full_layer_layer_norm"}
SPECIAL_TOKENS = {"<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"}


def unigram_json_settings(fast, settings, defaults):
    """Casing and accents (`do_lower_case`, `keep_accents`) from a `tokenizer.json`'s normaliser, else from
    `tokenizer_config.json` (`defaults` where it says nothing), and the special tokens the folder names."""
    found = {name: bool(settings.get(name, default)) for name, default in defaults.items()}
    if fast is not None:
        try:
            found.update({name: value for name, value in unigram_settings(fast, "tokenizer.json").items()
                          if name in defaults})
        except TokenizerJsonError:
            pass  # the classic model is read, or `unigram_model` names what the tokenizer.json has
    return {**found, "special_tokens": special_tokens_of(fast, settings, AlbertTokenizer.default_special_tokens)}


def albert_settings(fast, settings):
    """`AlbertTokenizer` settings: casing and accents (`unigram_json_settings`), and `legacy_added_tokens`
    when a `tokenizer.json` written by transformers 4 (added tokens: the special tokens only, as in the
    published ALBERT checkpoints) is what HF loads."""
    legacy = fast is not None and {token.get("content") for token in fast.get("added_tokens", [])} <= \
        SPECIAL_TOKENS
    return {**unigram_json_settings(fast, settings, {"do_lower_case": True, "keep_accents": False}),
            "legacy_added_tokens": legacy}


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
