"""The Longformer family as data: HF config keys and defaults, weight names (`longformer_weights.py`).

Its tokenizer and packer are RoBERTa's (`vocab.json`, `merges.txt`), and so is its masked-LM head (HF
`LongformerLMHead`: `lm_head.*`, exact GELU); masked LM reads with local attention only, as HF's
`LongformerForMaskedLM` does without a `global_attention_mask`.
"""

from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.families.longformer.longformer_backbone import LongformerBackbone
from kerasbert.families.longformer.longformer_weights import LongformerNames
from kerasbert.families.roberta.family import roberta_settings
from kerasbert.families.roberta.roberta_tokenizer import RobertaTokenizer
from kerasbert.presets.hf_families import BERT_CONFIG_KEYS, HfFamily

LONGFORMER_CONFIG_KEYS = {**BERT_CONFIG_KEYS, "pad_token_id": "padding_token_id", "sep_token_id": "sep_token_id",
                          "attention_window": "attention_window"}
# HF LongformerConfig's defaults of the keys a config.json may leave out (transformers 5.24).
LONGFORMER_DEFAULTS = {
    "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512, "type_vocab_size": 2,
    "initializer_range": 0.02, "layer_norm_eps": 1e-12, "attention_window": 512, "sep_token_id": 2,
    "pad_token_id": 1,
}

FAMILY = Family(
    name="longformer",
    backbone=LongformerBackbone,
    tokenizer=RobertaTokenizer,
    checkpoint=HfFamily(LONGFORMER_CONFIG_KEYS, LONGFORMER_DEFAULTS, {}, "LongformerModel", "longformer.",
                        marker_weight="encoder.layer.0.attention.self.query_global.weight",
                        tokenizer_files=("vocab.json", "merges.txt"), tokenizer_settings=roberta_settings),
    weights=LongformerNames(),
    masked_lm_head=MaskedLMHeadNames("lm_head.", "lm_head.dense", "lm_head.layer_norm", "lm_head.bias",
                                     "lm_head.decoder", "gelu", "LongformerForMaskedLM"),
)
