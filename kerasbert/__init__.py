"""kerasbert: the BERT toolkit for Keras 3.

Example:
>>> import kerasbert as kb
>>> backbone = kb.BertBackbone.from_preset("all_minilm_l6_v2_en")
"""

__version__ = "0.1.0"

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()

from kerasbert import applications, data, layers, models, presets, tokenizers, training
from kerasbert.applications import (
    BertClassifier,
    BertMaskedLM,
    BertMultipleChoice,
    BertPretrainer,
    BertQuestionAnswerer,
    BertTokenClassifier,
)
from kerasbert.layers import (
    MaskedLMHead,
    MultiHeadSelfAttention,
    NSPHead,
    TokenSegmentPositionEmbedding,
    TransformerEncoderBlock,
)
from kerasbert.models import BertBackbone
from kerasbert.tokenizers import BertPacker, BertPreprocessor, BertTokenizer
