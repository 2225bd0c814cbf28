"""MobileBERT: bottlenecked blocks, NoNorm, trigram embeddings; BERT's WordPiece tokenizer."""

from kerasbert.families.mobilebert.family import FAMILY
from kerasbert.families.mobilebert.mobilebert_backbone import MobileBertBackbone

__all__ = ["FAMILY", "MobileBertBackbone"]
