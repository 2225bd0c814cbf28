"""Reformer: LSH and chunked local self-attention in reversible blocks, axial position embeddings."""

from kerasbert.families.reformer.family import FAMILY
from kerasbert.families.reformer.reformer_backbone import ReformerBackbone

__all__ = ["FAMILY", "ReformerBackbone"]
