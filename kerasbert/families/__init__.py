"""Model families: one folder each (backbone, tokenizer, HF names as data: its `FAMILY`), registered below with
one line each; every lookup by model type reads the registry (`kerasbert.families.family`)."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.families import (
    albert,
    bert,
    big_bird,
    deberta_v2,
    distilbert,
    electra,
    longformer,
    mobilebert,
    modernbert,
    reformer,
    roberta,
    xlnet,
)
from kerasbert.families.family import (
    FAMILIES,
    Family,
    backbone_class_for,
    family_named,
    register,
    tokenizer_from_preset,
)

register(bert.FAMILY)
register(albert.FAMILY)
register(roberta.FAMILY)
register(distilbert.FAMILY)
register(electra.FAMILY)
register(mobilebert.FAMILY)
register(xlnet.FAMILY)
register(deberta_v2.FAMILY)
register(modernbert.FAMILY)
register(reformer.FAMILY)
register(longformer.FAMILY)
register(big_bird.FAMILY)

from kerasbert.families.albert import AlbertBackbone, AlbertTokenizer  # noqa: E402  (the public names)
from kerasbert.families.bert import BertBackbone, BertTokenizer  # noqa: E402
from kerasbert.families.big_bird import BigBirdBackbone, BigBirdTokenizer  # noqa: E402
from kerasbert.families.bert_preprocessor import BertPreprocessor  # noqa: E402
from kerasbert.families.deberta_v2 import DebertaGenerator, DebertaV2Backbone, DebertaV2Tokenizer  # noqa: E402
from kerasbert.families.distilbert import DistilBertBackbone  # noqa: E402
from kerasbert.families.electra import ElectraBackbone, ElectraGenerator  # noqa: E402
from kerasbert.families.electra.electra_generator import generator_config_for  # noqa: E402
from kerasbert.families.longformer import LongformerBackbone  # noqa: E402
from kerasbert.families.mobilebert import MobileBertBackbone  # noqa: E402
from kerasbert.families.modernbert import ModernBertBackbone  # noqa: E402
from kerasbert.families.preset_conversion import convert_preset  # noqa: E402
from kerasbert.families.reformer import ReformerBackbone  # noqa: E402
from kerasbert.families.roberta import RobertaBackbone, RobertaPacker, RobertaTokenizer  # noqa: E402
from kerasbert.families.xlnet import XLNetBackbone, XLNetPacker, XLNetTokenizer  # noqa: E402
