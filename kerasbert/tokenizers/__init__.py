"""WordPiece tokenizer (exact HF parity) and the packer that builds token_ids/segment_ids/padding_mask."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.tokenizers.albert_tokenizer import AlbertTokenizer
from kerasbert.tokenizers.bert_packer import BertPacker
from kerasbert.tokenizers.bert_preprocessor import BertPreprocessor
from kerasbert.tokenizers.bert_tokenizer import BertTokenizer
from kerasbert.tokenizers.family_tokenizers import tokenizer_from_preset
from kerasbert.tokenizers.roberta_packer import RobertaPacker
from kerasbert.tokenizers.roberta_tokenizer import RobertaTokenizer
