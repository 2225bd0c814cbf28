"""ELECTRA: the discriminator backbone (embedding projection) and the generator; BERT's WordPiece tokenizer."""

from kerasbert.families.electra.electra_backbone import ElectraBackbone
from kerasbert.families.electra.electra_generator import ElectraGenerator

__all__ = ["ElectraBackbone", "ElectraGenerator"]
