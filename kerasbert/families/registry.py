"""The backbone class of each model family, and so of any checkpoint.

Examples:
    >>> checkpoint = load_checkpoint("my_roberta_folder")           # HF config.json: "model_type": "roberta"
    >>> backbone = backbone_class_for(checkpoint).from_checkpoint(checkpoint)
    >>> type(backbone).__name__
    'RobertaBackbone'
"""

from kerasbert.families.albert.albert_backbone import AlbertBackbone
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.distilbert.distilbert_backbone import DistilBertBackbone
from kerasbert.families.electra.electra_backbone import ElectraBackbone
from kerasbert.families.roberta.roberta_backbone import RobertaBackbone
from kerasbert.presets.checkpoint import UnsupportedModelTypeError

BACKBONE_CLASSES = {cls.family: cls for cls in
                    (BertBackbone, AlbertBackbone, RobertaBackbone, DistilBertBackbone, ElectraBackbone)}


def backbone_class_for(checkpoint):
    """The backbone class of a `kerasbert.presets.Checkpoint`'s family (`BertBackbone` when it does not say)."""
    family = checkpoint.family or BertBackbone.family
    if family not in BACKBONE_CLASSES:
        raise UnsupportedModelTypeError(f"{checkpoint.source} holds a {family!r} model; kerasbert builds "
                                        f"{', '.join(sorted(BACKBONE_CLASSES))}.")
    return BACKBONE_CLASSES[family]

