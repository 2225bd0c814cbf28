"""ModernBERT: rotary positions, alternating global and sliding-window attention, GeGLU, pre-norm blocks."""

from kerasbert.families.modernbert.family import FAMILY
from kerasbert.families.modernbert.modernbert_backbone import ModernBertBackbone

__all__ = ["FAMILY", "ModernBertBackbone"]
