"""DataFrame <-> tf.data: loaders for public formats, shipped data sets, validation, labels, batching,
pre-training examples and masking."""

from kerasbert._quiet_start import import_tensorflow_quietly

import_tensorflow_quietly()  # before the first TensorFlow import below

from kerasbert.data.answer_spans import (
    AnswerPrediction,
    AnswerSpan,
    QuestionAnswerFeatures,
    best_null_score_threshold,
    best_spans,
    prepare_qa_features,
)
from kerasbert.data.batch_order import BatchOrder
from kerasbert.data.batching import (
    DEFAULT_BUCKET_BOUNDARIES,
    PaddingStatistics,
    length_buckets,
    make_batched_dataset,
    padding_statistics,
)
from kerasbert.data.choice_examples import book_sentences, next_sentence_examples
from kerasbert.data.conll import load_conll
from kerasbert.data.glue import GLUE_TASKS, load_glue_tsv
from kerasbert.data.labels import LabelEncoder
from kerasbert.data.masking import MaskedLMMasker
from kerasbert.data.masking_config import MaskingConfig
from kerasbert.data.mass_examples import mass_examples
from kerasbert.data.pretraining_examples import pretraining_examples
from kerasbert.data.pretraining_shards import prepare_pretraining, read_manifest
from kerasbert.data.pretraining_stream import PretrainingStream
from kerasbert.data.sentences import split_sentences
from kerasbert.data.shipped import available_datasets, load_dataset
from kerasbert.data.squad import load_squad
from kerasbert.data.swag import load_swag
from kerasbert.data.text_corpus import load_text_corpus
from kerasbert.data.token_alignment import WordPieceFeatures, encode_words, entity_char_spans, word_predictions
from kerasbert.data.label_validation import PROBLEM_TYPES, validate_label_column, validate_label_values
from kerasbert.data.list_validation import validate_token_columns
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns
