"""The MobileBERT family as data: HF config keys and defaults, weight names; BERT's WordPiece tokenizer.

No masked-LM head: HF's `MobileBertLMPredictionHead` decodes with the tied `embedding_size`-wide word
embeddings stacked on an untied `[hidden_size - embedding_size, vocab]` matrix (its `dense`), which
`MaskedLMHead` (tied, or wholly untied) cannot hold, so `masked_lm_head` is None and `BertMaskedLM` on a
MobileBERT is a ValueError saying so. HF's `true_hidden_size` is no key here: HF derives it from
`use_bottleneck` and `intra_bottleneck_size` (and rewrites it on load), as `MobileBertEncoderBlock` does.
"""

from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.family import Family
from kerasbert.families.mobilebert.mobilebert_backbone import MobileBertBackbone
from kerasbert.families.mobilebert.mobilebert_weights import MobileBertNames
from kerasbert.presets.hf_families import BERT_CONFIG_KEYS, HfFamily

MOBILEBERT_CONFIG_KEYS = {**BERT_CONFIG_KEYS, "embedding_size": "embedding_dim",
                          "intra_bottleneck_size": "intra_bottleneck_dim", "use_bottleneck": "use_bottleneck",
                          "use_bottleneck_attention": "use_bottleneck_attention",
                          "key_query_shared_bottleneck": "key_query_shared_bottleneck",
                          "num_feedforward_networks": "num_feedforward_networks",
                          "normalization_type": "normalization_type", "trigram_input": "trigram_input",
                          "classifier_activation": "use_pooler"}
# HF MobileBertConfig's defaults of the keys a config.json may leave out (transformers 5.24).
MOBILEBERT_DEFAULTS = {"layer_norm_eps": 1e-12, "hidden_act": "relu", "embedding_size": 128,
                       "intra_bottleneck_size": 128, "use_bottleneck": True, "use_bottleneck_attention": False,
                       "key_query_shared_bottleneck": True, "num_feedforward_networks": 4,
                       "normalization_type": "no_norm", "trigram_input": True, "classifier_activation": True}

FAMILY = Family(
    name="mobilebert",
    backbone=MobileBertBackbone,
    tokenizer=BertTokenizer,
    checkpoint=HfFamily(MOBILEBERT_CONFIG_KEYS, MOBILEBERT_DEFAULTS, {}, "MobileBertModel", "mobilebert.",
                        marker_weight="embeddings.embedding_transformation.weight", hidden_wide_positions=True),
    weights=MobileBertNames(),
    masked_lm_head=None,
)
