"""BertTokenizer: BERT WordPiece tokenisation with the ids of HF's fast tokenizer, in TF graph ops."""

import re

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from kerasbert.tokenizers.string_inputs import to_string_tensor
from kerasbert.tokenizers.vocabulary import check_vocabulary, load_vocabulary
from kerasbert.tokenizers.word_splitter import WordSplitter

CONTINUATION_PREFIX = "##"
# HF's WordPiece decoder `cleanup`, applied to each token with the space put in front of it.
DECODER_CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)


@keras.saving.register_keras_serializable(package="kerasbert")
class BertTokenizer(keras.layers.Layer):
    """Splits text into BERT WordPiece ids, exactly as HF's `BertTokenizerFast` does.

    Text is cleaned (control characters dropped, whitespace made spaces), CJK ideographs are split
    off, accents stripped and case lowered as configured, words split on whitespace and
    punctuation, and each word cut greedily into the longest vocabulary pieces (`##` marks a piece
    inside a word; a word that cannot be cut, or longer than `max_chars_per_word`, is `[UNK]`).
    Special tokens written in the text (`"[MASK]"`, exactly so) keep their ids. No `[CLS]`/`[SEP]`
    is added: `BertPacker` does that. All of it is TensorFlow ops, so it runs in `tf.data` and in
    an exported SavedModel with only TensorFlow and tensorflow-text loaded.

    Args:
        vocabulary: the tokens (list of str, id = position) or the path to a `vocab.txt` (or the
            folder holding one).
        lowercase: lower-case the text (uncased checkpoints).
        strip_accents: drop accents (NFD, then remove nonspacing marks); `None` follows `lowercase`.
        tokenize_chinese_chars: make each CJK ideograph a word of its own.
        split_special_tokens: if True, `"[MASK]"` in the text is ordinary text, not the mask token.
        max_chars_per_word: longer words become the unknown token.
        unk_token, cls_token, sep_token, pad_token, mask_token: the special tokens, all of which
            must be in the vocabulary.

    Example:
    >>> tokenizer = BertTokenizer("all-MiniLM-L6-v2/vocab.txt")  # doctest: +SKIP
    >>> tokenizer(["The café [MASK] opens."]).to_list()  # doctest: +SKIP
    [[1996, 7668, 103, 7480, 1012]]
    >>> tokenizer.detokenize([[1996, 7668, 103, 7480, 1012]])  # doctest: +SKIP
    <tf.Tensor: shape=(1,), dtype=string, numpy=array([b'the cafe [MASK] opens.'], dtype=object)>
    """

    def __init__(
        self,
        vocabulary,
        lowercase=True,
        strip_accents=None,
        tokenize_chinese_chars=True,
        split_special_tokens=False,
        max_chars_per_word=100,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        **kwargs,
    ):
        super().__init__(**kwargs)
        # Inputs stay tf.string tensors (not backend tensors), and raw Python strings are allowed.
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        if not isinstance(max_chars_per_word, int) or max_chars_per_word < 1:
            raise ValueError(f"`max_chars_per_word` must be a positive int, got {max_chars_per_word!r}.")
        self._vocabulary = tuple(load_vocabulary(vocabulary))
        special_tokens = {
            "unk_token": unk_token,
            "cls_token": cls_token,
            "sep_token": sep_token,
            "pad_token": pad_token,
            "mask_token": mask_token,
        }
        check_vocabulary(self._vocabulary, special_tokens)
        self.lowercase = bool(lowercase)
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = bool(tokenize_chinese_chars)
        self.split_special_tokens = bool(split_special_tokens)
        self.max_chars_per_word = max_chars_per_word
        self.unk_token, self.cls_token, self.sep_token = unk_token, cls_token, sep_token
        self.pad_token, self.mask_token = pad_token, mask_token
        self._token_ids = {token: index for index, token in enumerate(self._vocabulary)}
        self._splitter = WordSplitter(
            lowercase=self.lowercase,
            strip_accents=self.lowercase if strip_accents is None else bool(strip_accents),
            tokenize_chinese_chars=self.tokenize_chinese_chars,
            special_tokens=[] if self.split_special_tokens else list(special_tokens.values()),
        )
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=list(self._vocabulary),
            suffix_indicator=CONTINUATION_PREFIX,
            max_bytes_per_word=4 * max_chars_per_word,  # longer words never reach it (_pieces_input)
            token_out_type=tf.int32,
            unknown_token=unk_token,
            no_pretokenization=True,
        )

    @classmethod
    def from_preset(cls, preset, **kwargs):
        """The tokenizer of a preset name or checkpoint folder (`vocab.txt` + tokenizer settings)."""
        from kerasbert import presets

        return presets.load_tokenizer(preset, cls=cls, **kwargs)

    @classmethod
    def from_vocabulary_file(cls, path, **kwargs):
        """Same as `BertTokenizer(path, **kwargs)`, spelled out."""
        return cls(vocabulary=path, **kwargs)

    # Vocabulary.

    def vocabulary_size(self):
        return len(self._vocabulary)

    def get_vocabulary(self):
        return list(self._vocabulary)

    def token_to_id(self, token):
        if token not in self._token_ids:
            raise ValueError(f"Token {token!r} is not in the vocabulary.")
        return self._token_ids[token]

    def id_to_token(self, token_id):
        if not 0 <= int(token_id) < len(self._vocabulary):
            raise ValueError(f"Id {token_id} is out of the vocabulary's range [0, {len(self._vocabulary)}).")
        return self._vocabulary[int(token_id)]

    @property
    def unk_token_id(self):
        return self._token_ids[self.unk_token]

    @property
    def cls_token_id(self):
        return self._token_ids[self.cls_token]

    @property
    def sep_token_id(self):
        return self._token_ids[self.sep_token]

    @property
    def pad_token_id(self):
        return self._token_ids[self.pad_token]

    @property
    def mask_token_id(self):
        return self._token_ids[self.mask_token]

    # Tokenising.

    def call(self, texts):
        return self.tokenize(texts)

    def tokenize(self, texts):
        """Token ids (int32 `tf.RaggedTensor`, one row per text; a scalar string gives one row)."""
        texts = to_string_tensor(texts, type(self).__name__)
        if isinstance(texts, tf.RaggedTensor):
            return texts.with_flat_values(self.tokenize(texts.flat_values))
        return restore_outer_shape(self._tokenize_rows(tf.reshape(texts, [-1])), texts)

    def tokenize_with_offsets(self, texts):
        """`(ids, starts, ends)`: offsets are character (code point) indices into the input text.

        A piece spans the input characters its normalised characters came from, as HF's
        `return_offsets_mapping` does: `"Ångström"` -> `ang` (0, 3), `##strom` (3, 8).
        """
        texts = to_string_tensor(texts, type(self).__name__)
        if isinstance(texts, tf.RaggedTensor):
            outputs = self.tokenize_with_offsets(texts.flat_values)
            return tuple(texts.with_flat_values(output) for output in outputs)
        outputs = self._tokenize_rows_with_offsets(tf.reshape(texts, [-1]))
        return tuple(restore_outer_shape(output, texts) for output in outputs)

    # One graph per tokenizer for the batch work: faster than running it op by op in eager mode.
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def _tokenize_rows(self, texts):
        words = self._splitter.split(texts)
        return join_words(self._wordpiece.tokenize(self._pieces_input(words)), words.row_splits)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def _tokenize_rows_with_offsets(self, texts):
        words = self._splitter.split(texts)
        pieces, byte_starts, byte_ends = self._wordpiece.tokenize_with_offsets(self._pieces_input(words))
        piece_words = pieces.value_rowids()
        too_long = tf.gather(words.word_lengths > self.max_chars_per_word, piece_words)
        word_bytes = tf.strings.length(words.words, unit="BYTE")
        byte_starts = tf.where(too_long, tf.zeros_like(byte_starts.flat_values), byte_starts.flat_values)
        byte_ends = tf.where(
            too_long, tf.cast(tf.gather(word_bytes, piece_words), tf.int64), byte_ends.flat_values
        )
        base = tf.gather(words.word_byte_starts, piece_words)
        first = tf.searchsorted(words.code_point_byte_starts, base + byte_starts, out_type=tf.int64)
        last = tf.searchsorted(words.code_point_byte_starts, base + byte_ends, out_type=tf.int64) - 1
        starts = pieces.with_flat_values(tf.gather(words.code_point_origins, first))
        ends = pieces.with_flat_values(tf.gather(words.code_point_origins, last) + 1)
        return tuple(join_words(output, words.row_splits) for output in (pieces, starts, ends))

    def _pieces_input(self, words):
        """The words for WordPiece; too long ones replaced by the unknown token, as HF does."""
        return tf.where(words.word_lengths > self.max_chars_per_word, self.unk_token, words.words)

    # Detokenising.

    def detokenize(self, ids):
        """Text from ids, as HF's `decode`: tokens joined by spaces, `##` pieces glued to the previous
        one, no space before `. ? ! ,`. A row of ids gives a string; a batch gives one per row."""
        ids = to_int_ids(ids)
        if ids.shape.rank == 1:
            return self.detokenize(ids[tf.newaxis])[0]
        if isinstance(ids, tf.Tensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        if tf.executing_eagerly() and tf.size(ids.flat_values) > 0:
            low, high = int(tf.reduce_min(ids.flat_values)), int(tf.reduce_max(ids.flat_values))
            if low < 0 or high >= len(self._vocabulary):
                raise ValueError(
                    f"Ids must be in [0, {len(self._vocabulary)}), got ids from {low} to {high}."
                )
        tokens = tf.gather(tf.constant(self._vocabulary), ids.flat_values)
        first_in_row = tf.range(tf.size(tokens, out_type=tf.int64)) == tf.gather(
            ids.row_splits, ids.value_rowids()
        )
        continuation = tf.strings.substr(tokens, 0, 2) == CONTINUATION_PREFIX
        tokens = tf.where(
            first_in_row,
            tokens,
            tf.where(
                continuation,
                tf.strings.regex_replace(tokens, "^##", "", replace_global=False),
                tf.strings.join([" ", tokens]),
            ),
        )
        for dirty, clean in DECODER_CLEANUP:
            tokens = tf.strings.regex_replace(tokens, re.escape(dirty), clean)
        return tf.strings.reduce_join(ids.with_flat_values(tokens), axis=-1)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": list(self._vocabulary),
                "lowercase": self.lowercase,
                "strip_accents": self.strip_accents,
                "tokenize_chinese_chars": self.tokenize_chinese_chars,
                "split_special_tokens": self.split_special_tokens,
                "max_chars_per_word": self.max_chars_per_word,
                "unk_token": self.unk_token,
                "cls_token": self.cls_token,
                "sep_token": self.sep_token,
                "pad_token": self.pad_token,
                "mask_token": self.mask_token,
            }
        )
        return config


def join_words(pieces, word_row_splits):
    """`[words, (pieces)]` with words grouped by `word_row_splits` -> `[texts, (pieces)]`."""
    return tf.RaggedTensor.from_row_splits(pieces.flat_values, tf.gather(pieces.row_splits, word_row_splits))


def restore_outer_shape(rows, texts):
    """Gives the one-row-per-text result the shape of `texts` (scalar -> one row, N-D -> nested)."""
    if texts.shape.rank == 0:
        return rows[0]
    for axis in reversed(range(1, texts.shape.rank)):
        rows = tf.RaggedTensor.from_uniform_row_length(rows, tf.shape(texts, out_type=tf.int64)[axis])
    return rows


def to_int_ids(ids):
    """Ids as an int32 Tensor or RaggedTensor (nested lists may have rows of different lengths)."""
    if isinstance(ids, (tf.Tensor, tf.RaggedTensor)):
        return tf.cast(ids, tf.int32)
    if isinstance(ids, (list, tuple)):
        return tf.ragged.constant(ids, dtype=tf.int32)
    return tf.constant(np.asarray(ids), tf.int32)
