"""DistilBERT: no segments, no pooler; BERT's WordPiece tokenizer."""

from kerasbert.families.distilbert.distilbert_backbone import DistilBertBackbone
from kerasbert.families.distilbert.family import FAMILY

__all__ = ["FAMILY", "DistilBertBackbone"]
