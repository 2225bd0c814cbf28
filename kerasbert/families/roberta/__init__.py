"""RoBERTa: positions after the padding id; the byte-level BPE tokenizer and its `<s> A </s></s> B </s>` packer."""

from kerasbert.families.roberta.family import FAMILY
from kerasbert.families.roberta.roberta_backbone import RobertaBackbone
from kerasbert.families.roberta.roberta_packer import RobertaPacker, SingleSeparatorPacker
from kerasbert.families.roberta.roberta_tokenizer import RobertaTokenizer

__all__ = ["FAMILY", "RobertaBackbone", "RobertaPacker", "RobertaTokenizer", "SingleSeparatorPacker"]
