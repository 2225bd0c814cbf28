"""Backbones: functional keras.Model subclasses."""

from kerasbert.models.bert_backbone import BertBackbone
