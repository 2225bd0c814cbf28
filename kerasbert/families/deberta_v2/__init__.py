"""DeBERTa-v2/v3: disentangled relative attention, and its SentencePiece tokenizer."""

from kerasbert.families.deberta_v2.deberta_generator import DebertaGenerator
from kerasbert.families.deberta_v2.deberta_v2_backbone import DebertaV2Backbone
from kerasbert.families.deberta_v2.deberta_v2_tokenizer import DebertaV2Tokenizer
from kerasbert.families.deberta_v2.family import FAMILY

__all__ = ["FAMILY", "DebertaGenerator", "DebertaV2Backbone", "DebertaV2Tokenizer"]
