"""Model families: one folder each (backbone, tokenizer, checkpoint names), and the registry that picks them."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.families.albert.albert_backbone import AlbertBackbone
from kerasbert.families.albert.albert_tokenizer import AlbertTokenizer
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.families.distilbert.distilbert_backbone import DistilBertBackbone
from kerasbert.families.electra.electra_backbone import ElectraBackbone
from kerasbert.families.electra.electra_generator import ElectraGenerator, generator_config_for
from kerasbert.families.preset_conversion import convert_preset
from kerasbert.families.registry import backbone_class_for
from kerasbert.families.roberta.roberta_backbone import RobertaBackbone
from kerasbert.families.roberta.roberta_packer import RobertaPacker
from kerasbert.families.roberta.roberta_tokenizer import RobertaTokenizer
from kerasbert.families.tokenizer_registry import tokenizer_from_preset
