"""The RoBERTa family as data: HF config keys, tokenizer files and settings, weight names, masked-LM head."""

from kerasbert.families.checkpoint_weights import BERT_BLOCK, HfNames
from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.families.roberta.roberta_backbone import RobertaBackbone
from kerasbert.families.roberta.roberta_tokenizer import RobertaTokenizer
from kerasbert.presets.hf_families import BERT_CONFIG_KEYS, STOCK_BERT, HfFamily
from kerasbert.presets.hf_format import added_token
from kerasbert.tokenizers.tokenizer_json import special_tokens_of, template_pair_separators


def trims_offsets(fast):
    """Whether HF trims spaces off the offsets: a `RobertaProcessing` or `ByteLevel` post-processor's
    `trim_offsets` (a plain template trims nothing); True without a `tokenizer.json`, as HF's RoBERTa."""
    if fast is None:
        return True
    processor = fast.get("post_processor") or {}
    steps = processor.get("processors", []) if processor.get("type") == "Sequence" else [processor]
    return any(step.get("type") in ("RobertaProcessing", "ByteLevel") and step.get("trim_offsets", True)
               for step in steps)


def roberta_settings(fast, settings):
    """`RobertaTokenizer` settings: the prefix space (the pre-tokenizer's, else `tokenizer_config.json`'s),
    whether `<mask>` takes the space on its left (its added token's `lstrip`; RoBERTa's is True), whether
    offsets are trimmed, the special tokens the folder names (ModernBERT's `[CLS]`, ...), the other added
    tokens of its `tokenizer.json` and the separators between a pair's texts (`pair_separators`)."""
    pre_tokenizer = (fast or {}).get("pre_tokenizer") or {}
    if pre_tokenizer.get("type") == "Sequence" and len(pre_tokenizer.get("pretokenizers") or []) == 1:
        pre_tokenizer = pre_tokenizer["pretokenizers"][0]
    add_prefix_space = pre_tokenizer.get("add_prefix_space", settings.get("add_prefix_space", False))
    special_tokens = special_tokens_of(fast, settings, RobertaTokenizer.default_special_tokens)
    mask = added_token(fast, special_tokens.get("mask_token", "<mask>"))
    return {"add_prefix_space": bool(add_prefix_space), "mask_token_lstrip": bool((mask or {}).get("lstrip", True)),
            "trim_offsets": trims_offsets(fast), "special_tokens": special_tokens,
            "pair_separators": template_pair_separators(fast),
            "added_tokens": [token["content"] for token in (fast or {}).get("added_tokens", [])
                             if token["content"] not in {**RobertaTokenizer.default_special_tokens, **special_tokens}.values()]}


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
