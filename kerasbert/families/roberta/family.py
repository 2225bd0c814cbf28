"""The RoBERTa family as data: HF config keys, tokenizer files and settings, weight names, masked-LM head."""

from kerasbert.families.checkpoint_weights import BERT_BLOCK, HfNames
from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.families.roberta.roberta_backbone import RobertaBackbone
from kerasbert.families.roberta.roberta_tokenizer import RobertaTokenizer
from kerasbert.presets.hf_families import BERT_CONFIG_KEYS, STOCK_BERT, HfFamily
from kerasbert.presets.hf_format import added_token


def roberta_settings(fast, settings):
    """`RobertaTokenizer` settings: the prefix space (the pre-tokenizer's, else `tokenizer_config.json`'s) and
    whether `<mask>` takes the space on its left (its added token's `lstrip`; RoBERTa's is True)."""
    pre_tokenizer = (fast or {}).get("pre_tokenizer") or {}
    add_prefix_space = pre_tokenizer.get("add_prefix_space", settings.get("add_prefix_space", False))
    mask_token = settings.get("mask_token", "<mask>")
    mask = added_token(fast, mask_token.get("content") if isinstance(mask_token, dict) else mask_token)
    return {"add_prefix_space": bool(add_prefix_space), "mask_token_lstrip": bool((mask or {}).get("lstrip", True))}


FAMILY = Family(
    name="roberta",
    backbone=RobertaBackbone,
    tokenizer=RobertaTokenizer,
    checkpoint=HfFamily({**BERT_CONFIG_KEYS, "pad_token_id": "padding_token_id"},
                        {"layer_norm_eps": 1e-12, "hidden_act": "gelu", "pad_token_id": 1}, STOCK_BERT,
                        "RobertaModel", "roberta.", tokenizer_files=("vocab.json", "merges.txt"),
                        tokenizer_settings=roberta_settings),
    weights=HfNames(BERT_BLOCK, "encoder.layer.{index}", None, "pooler.dense"),
    masked_lm_head=MaskedLMHeadNames("lm_head.", "lm_head.dense", "lm_head.layer_norm", "lm_head.bias",
                                     "lm_head.decoder", "gelu", "RobertaForMaskedLM"),
)
