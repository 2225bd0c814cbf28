"""Tokenizer machinery shared by the families: the base class, vocabularies, WordPiece word splitting, Unicode
tables and the `[CLS] A [SEP] B [SEP]` packer. Each family's tokenizer lives in `kerasbert.families`."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.tokenizers.bert_packer import BertPacker
from kerasbert.tokenizers.tokenizer_base import TokenizerBase
from kerasbert.tokenizers.tokenizer_json import TokenizerJsonError
