"""The BERT family as data: HF config keys, weight names, masked-LM head names."""

from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.checkpoint_weights import BERT_BLOCK, HfNames
from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.presets.hf_families import BERT_CONFIG_KEYS, STOCK_BERT, HfFamily

FAMILY = Family(
    name="bert",
    backbone=BertBackbone,
    tokenizer=BertTokenizer,
    checkpoint=HfFamily(BERT_CONFIG_KEYS, {"layer_norm_eps": 1e-12, "hidden_act": "gelu"}, STOCK_BERT,
                        "BertModel", "bert."),
    weights=HfNames(BERT_BLOCK, "encoder.layer.{index}", None, "pooler.dense"),
    masked_lm_head=MaskedLMHeadNames("cls.predictions.", "cls.predictions.transform.dense",
                                     "cls.predictions.transform.LayerNorm", "cls.predictions.bias",
                                     "cls.predictions.decoder", None, "BertForMaskedLM"),
)
