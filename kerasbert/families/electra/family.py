"""The ELECTRA family as data: HF config keys, weight names, the generator's masked-LM head; BERT's WordPiece."""

from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.checkpoint_weights import BERT_BLOCK, HfNames
from kerasbert.families.electra.electra_backbone import ElectraBackbone
from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.presets.hf_families import BERT_CONFIG_KEYS, STOCK_BERT, HfFamily

FAMILY = Family(
    name="electra",
    backbone=ElectraBackbone,
    tokenizer=BertTokenizer,
    checkpoint=HfFamily({**BERT_CONFIG_KEYS, "embedding_size": "embedding_dim"},
                        {"layer_norm_eps": 1e-12, "hidden_act": "gelu", "embedding_size": 128},
                        {**STOCK_BERT, "use_pooler": False}, "ElectraModel", "electra.",
                        projects_only_other_widths=True),
    weights=HfNames(BERT_BLOCK, "encoder.layer.{index}", "embeddings_project", None),
    masked_lm_head=MaskedLMHeadNames("generator_", "generator_predictions.dense", "generator_predictions.LayerNorm",
                                     "generator_lm_head.bias", "generator_lm_head", "gelu", "ElectraForMaskedLM"),
)
