"""The DeBERTa-v2/v3 family as data: HF config keys and defaults; its weight links are `deberta_v2_weights.py`
(DeBERTa's layers are not BERT's).

Its tokenizer is `DebertaV2Tokenizer` (`spm.model` or `tokenizer.json`, as HF transformers 5's
`DebertaV2Tokenizer`), packed `[CLS] A [SEP] B [SEP]` as BERT. Its masked-LM head is HF `DebertaV2ForMaskedLM`'s
(BERT's design: dense, activation, LayerNorm, tied decoder, bias) under either of HF's names; with
`enhanced_mask_decoder=True` it reads the DeBERTa paper's enhanced mask decoder (not HF's: `EnhancedMaskDecoder`).
"""

from kerasbert.families.deberta_v2.deberta_v2_backbone import DebertaV2Backbone
from kerasbert.families.deberta_v2.deberta_v2_tokenizer import DebertaV2Tokenizer
from kerasbert.families.deberta_v2.deberta_v2_weights import DebertaV2Names
from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.presets.hf_families import BERT_CONFIG_KEYS, HfFamily
from kerasbert.tokenizers.tokenizer_json import TokenizerJsonError, deberta_settings, special_tokens_of

DEBERTA_V2_CONFIG_KEYS = {**BERT_CONFIG_KEYS, "relative_attention": "relative_attention",
                          "pos_att_type": "pos_att_type", "position_buckets": "position_buckets",
                          "max_relative_positions": "max_relative_positions", "share_att_key": "share_att_key",
                          "norm_rel_ebd": "norm_rel_ebd", "position_biased_input": "position_biased_input",
                          "pooler_hidden_act": "pooler_activation"}
# HF DebertaV2Config's defaults of the keys a config.json may leave out (transformers 5.24; position_buckets,
# share_att_key and norm_rel_ebd are read with getattr defaults by the model).
DEBERTA_V2_DEFAULTS = {"layer_norm_eps": 1e-7, "hidden_act": "gelu", "type_vocab_size": 0,
                       "relative_attention": False, "pos_att_type": None, "position_buckets": -1,
                       "max_relative_positions": -1, "share_att_key": False, "norm_rel_ebd": "none",
                       "position_biased_input": True, "pooler_hidden_act": "gelu"}



def deberta_tokenizer_settings(fast, settings):
    """`DebertaV2Tokenizer` settings: casing from the `tokenizer.json` normaliser, else `tokenizer_config.json`;
    the special tokens the folder names."""
    found = {"do_lower_case": bool(settings.get("do_lower_case", False))}
    if fast is not None:
        try:
            found.update(deberta_settings(fast, "tokenizer.json"))
        except TokenizerJsonError:
            pass  # the classic model is read, or `unigram_model` names what the tokenizer.json has
    return {**found, "special_tokens": special_tokens_of(fast, settings, DebertaV2Tokenizer.default_special_tokens)}


FAMILY = Family(
    name="deberta-v2",
    backbone=DebertaV2Backbone,
    tokenizer=DebertaV2Tokenizer,
    checkpoint=HfFamily(DEBERTA_V2_CONFIG_KEYS, DEBERTA_V2_DEFAULTS, {}, "DebertaV2Model", "deberta.",
                        marker_weight="encoder.layer.0.attention.self.query_proj.weight",
                        tokenizer_files=("spm.model",), tokenizer_settings=deberta_tokenizer_settings,
                        required_values={"conv_kernel_size": 0}),
    weights=DebertaV2Names(),
    masked_lm_head=MaskedLMHeadNames(
        "lm_predictions.lm_head.", "lm_predictions.lm_head.dense", "lm_predictions.lm_head.LayerNorm",
        "lm_predictions.lm_head.bias", "lm_predictions.lm_head.decoder", None, "DebertaV2ForMaskedLM",
        alternative=MaskedLMHeadNames("cls.predictions.", "cls.predictions.transform.dense",
                                      "cls.predictions.transform.LayerNorm", "cls.predictions.bias",
                                      "cls.predictions.decoder", None, "DebertaV2ForMaskedLM")),
)
