"""XLNet: the backbone (relative attention, memory, the permutation LM's query stream), its HF weight links, and
its SentencePiece tokenizer and packer (`A <sep> B <sep> <cls>`, padded on the left)."""

from kerasbert.families.xlnet.family import FAMILY
from kerasbert.families.xlnet.xlnet_backbone import XLNetBackbone
from kerasbert.families.xlnet.xlnet_packer import XLNetPacker
from kerasbert.families.xlnet.xlnet_tokenizer import XLNetTokenizer

__all__ = ["FAMILY", "XLNetBackbone", "XLNetPacker", "XLNetTokenizer"]
