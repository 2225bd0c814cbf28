"""ELECTRA: the discriminator backbone (embedding projection) and the generator; BERT's WordPiece tokenizer."""

from kerasbert.families.electra.electra_backbone import ElectraBackbone
from kerasbert.families.electra.electra_generator import ElectraGenerator
from kerasbert.families.electra.family import FAMILY

__all__ = ["FAMILY", "ElectraBackbone", "ElectraGenerator"]
