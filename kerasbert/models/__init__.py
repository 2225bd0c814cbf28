"""Backbones: functional keras.Model subclasses."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.models.albert_backbone import AlbertBackbone
from kerasbert.models.backbone_families import backbone_class_for
from kerasbert.models.bert_backbone import BertBackbone
from kerasbert.models.distilbert_backbone import DistilBertBackbone
from kerasbert.models.electra_backbone import ElectraBackbone
from kerasbert.models.electra_generator import ElectraGenerator, generator_config_for
from kerasbert.models.roberta_backbone import RobertaBackbone
from kerasbert.models.preset_conversion import convert_preset
