"""DistilBERT: no segments, no pooler; BERT's WordPiece tokenizer."""

from kerasbert.families.distilbert.distilbert_backbone import DistilBertBackbone

__all__ = ["DistilBertBackbone"]
