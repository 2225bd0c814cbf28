"""BERT: the backbone every family builds on, and the WordPiece tokenizer."""

from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.bert.family import FAMILY

__all__ = ["FAMILY", "BertBackbone", "BertTokenizer"]
