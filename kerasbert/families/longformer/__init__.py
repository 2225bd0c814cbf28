"""Longformer: RoBERTa with sliding-window attention and global tokens, for inputs of 4,096 tokens."""

from kerasbert.families.longformer.family import FAMILY
from kerasbert.families.longformer.longformer_backbone import LongformerBackbone

__all__ = ["FAMILY", "LongformerBackbone"]
