"""Backbones: functional keras.Model subclasses."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.models.bert_backbone import BertBackbone
from kerasbert.models.preset_conversion import convert_preset
