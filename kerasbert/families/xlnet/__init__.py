"""XLNet: the backbone (relative attention, memory, the permutation LM's query stream) and its HF weight links."""

from kerasbert.families.xlnet.family import FAMILY
from kerasbert.families.xlnet.xlnet_backbone import XLNetBackbone

__all__ = ["FAMILY", "XLNetBackbone"]
