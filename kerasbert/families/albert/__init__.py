"""ALBERT: factorised embeddings and blocks shared in groups; the SentencePiece tokenizer."""

from kerasbert.families.albert.albert_backbone import AlbertBackbone
from kerasbert.families.albert.albert_tokenizer import AlbertTokenizer
from kerasbert.families.albert.family import FAMILY

__all__ = ["FAMILY", "AlbertBackbone", "AlbertTokenizer"]
