"""The DistilBERT family as data: HF config keys (its own names), weight names, masked-LM head; BERT's WordPiece."""

from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.checkpoint_weights import HfNames
from kerasbert.families.distilbert.distilbert_backbone import DistilBertBackbone
from kerasbert.families.family import Family
from kerasbert.families.family_heads import MaskedLMHeadNames
from kerasbert.presets.hf_families import STOCK_BERT, HfFamily

# Where HF keeps each part of a DistilBERT block, relative to the block's prefix.
DISTILBERT_BLOCK = {"query": "attention.q_lin", "key": "attention.k_lin", "value": "attention.v_lin",
                    "attention_output": "attention.out_lin", "attention_layer_norm": "sa_layer_norm",
                    "intermediate": "ffn.lin1", "output": "ffn.lin2", "output_layer_norm": "output_layer_norm"}

FAMILY = Family(
    name="distilbert",
    backbone=DistilBertBackbone,
    tokenizer=BertTokenizer,
    checkpoint=HfFamily({"vocab_size": "vocabulary_size", "n_layers": "num_layers", "n_heads": "num_heads",
                         "dim": "hidden_dim", "hidden_dim": "intermediate_dim", "dropout": "dropout",
                         "attention_dropout": "attention_dropout",
                         "max_position_embeddings": "max_sequence_length", "initializer_range": "initializer_range"},
                        {"activation": "gelu"},
                        {**STOCK_BERT, "num_segments": 0, "use_pooler": False, "layer_norm_epsilon": 1e-12},
                        "DistilBertModel", "distilbert.", marker_weight="transformer.layer.0.attention.q_lin.weight",
                        activation_key="activation"),
    weights=HfNames(DISTILBERT_BLOCK, "transformer.layer.{index}", None, None),
    masked_lm_head=MaskedLMHeadNames("vocab_", "vocab_transform", "vocab_layer_norm", "vocab_projector.bias",
                                     "vocab_projector", None, "DistilBertForMaskedLM"),
)
