"""BertTokenizer: BERT WordPiece tokenisation with the ids of HF's fast tokenizer, in TF graph ops."""

import json
import os
import re

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from kerasbert.atomic_files import write_text_atomically
from kerasbert.tokenizers.bert_packer import BertPacker
from kerasbert.tokenizers.tokenizer_base import TokenizerBase
from kerasbert.tokenizers.vocabulary import CONTINUATION_PREFIX, check_vocabulary, load_vocabulary
from kerasbert.tokenizers.word_splitter import WordSplitter

VOCABULARY_ASSET = "vocabulary.json"  # inside a `.keras` file's assets: the tokens as a JSON list
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
class BertTokenizer(TokenizerBase, keras.layers.Layer):
    """Splits text into BERT WordPiece ids, exactly as HF's `BertTokenizerFast` does.

    Text is cleaned (control characters dropped, whitespace made spaces), CJK ideographs are split
    off, accents stripped and case lowered as configured, words split on whitespace and
    punctuation, and each word cut greedily into the longest vocabulary pieces (`##` marks a piece
    inside a word; a word that cannot be cut, or longer than `max_chars_per_word`, is `[UNK]`).
    Special tokens written in the text (`"[MASK]"`, exactly so) keep their ids. No `[CLS]`/`[SEP]`
    is added: `BertPacker` does that. All of it is TensorFlow ops, so it runs in `tf.data` and in
    an exported SavedModel with only TensorFlow and tensorflow-text loaded.

    The vocabulary is not part of `get_config()`: a `.keras` file stores it as the asset
    `vocabulary.json` (Keras `save_assets`/`load_assets`), so the config stays small. A tokenizer
    made from a config alone has no vocabulary until `set_vocabulary` or `load_assets`.

    Args:
        vocabulary: the tokens (list of str, id = position) or the path to a `vocab.txt` (or the
            folder holding one); None to set it later.
        lowercase: lower-case the text (uncased checkpoints).
        strip_accents: drop accents (NFD, then remove nonspacing marks); `None` follows `lowercase`.
        tokenize_chinese_chars: make each CJK ideograph a word of its own.
        split_special_tokens: if True, `"[MASK]"` in the text is ordinary text, not the mask token.
        max_chars_per_word: longer words become the unknown token.
        special_tokens: the special tokens that differ from `default_special_tokens`, by name ("unk_token",
            "cls_token", "sep_token", "pad_token", "mask_token"); all must be in the vocabulary.

    Examples:
        >>> tokenizer = BertTokenizer("all-MiniLM-L6-v2/vocab.txt")  # doctest: +SKIP
        >>> tokenizer(["The café [MASK] opens."]).to_list()  # doctest: +SKIP
        [[1996, 7668, 103, 7480, 1012]]
        >>> tokenizer.detokenize([[1996, 7668, 103, 7480, 1012]])  # doctest: +SKIP
        <tf.Tensor: shape=(1,), dtype=string, numpy=array([b'the cafe [MASK] opens.'], dtype=object)>
    """

    default_special_tokens = {"unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                              "mask_token": "[MASK]"}
    config_names = ("lowercase", "strip_accents", "tokenize_chinese_chars", "split_special_tokens",
                    "max_chars_per_word")
    set_vocabulary_call = "set_vocabulary(tokens or 'vocab.txt')"

    def __init__(
        self,
        vocabulary=None,
        lowercase=True,
        strip_accents=None,
        tokenize_chinese_chars=True,
        split_special_tokens=False,
        max_chars_per_word=100,
        special_tokens=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if not isinstance(max_chars_per_word, int) or max_chars_per_word < 1:
            raise ValueError(f"`max_chars_per_word` must be a positive int, got {max_chars_per_word!r}.")
        self.lowercase = bool(lowercase)
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = bool(tokenize_chinese_chars)
        self.split_special_tokens = bool(split_special_tokens)
        self.max_chars_per_word = max_chars_per_word
        self.set_special_tokens(special_tokens)
        self._splitter = WordSplitter(
            lowercase=self.lowercase,
            strip_accents=self.lowercase if strip_accents is None else bool(strip_accents),
            tokenize_chinese_chars=self.tokenize_chinese_chars,
            special_tokens=[] if self.split_special_tokens else list(self.special_tokens().values()),
        )
        self._vocabulary = None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def set_vocabulary(self, vocabulary):
        """Give a tokenizer made without one (e.g. from a config) its vocabulary: a list of tokens
        or the path to a `vocab.txt`. It is set once; a tokenizer that has one keeps it.

        Examples:
            >>> tokenizer = BertTokenizer.from_config(config)  # doctest: +SKIP
            >>> tokenizer.set_vocabulary("vocab.txt")  # doctest: +SKIP
        """
        self.check_no_vocabulary_yet()
        tokens = tuple(load_vocabulary(vocabulary))
        check_vocabulary(tokens, self.special_tokens())
        self._token_ids = {token: index for index, token in enumerate(tokens)}
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=list(tokens),
            suffix_indicator=CONTINUATION_PREFIX,
            max_bytes_per_word=4 * max(self.max_chars_per_word, *map(len, self.special_tokens().values())),
            token_out_type=tf.int32,
            unknown_token=self.unk_token,
            no_pretokenization=True,
        )
        self._vocabulary = tokens

    # Saving: the vocabulary is a file in the `.keras` archive, not part of the config.

    def save_assets(self, dir_path):
        with open(os.path.join(dir_path, VOCABULARY_ASSET), "w", encoding="utf-8") as file:
            json.dump(list(self._checked_vocabulary()), file, ensure_ascii=False)

    def load_assets(self, dir_path):
        if self.has_vocabulary:  # from the config of a file written before vocabularies became assets
            return
        path = os.path.join(dir_path, VOCABULARY_ASSET)
        if not os.path.isfile(path):
            raise ValueError(
                f"The saved model has no {VOCABULARY_ASSET} for BertTokenizer '{self.name}': the file "
                "is incomplete. Save the model again with model.save('model.keras')."
            )
        with open(path, encoding="utf-8") as file:
            self.set_vocabulary(json.load(file))

    # Presets: HF's `vocab.txt` and tokenizer settings.

    families = ("bert", "distilbert", "electra", "mobilebert")  # the families whose checkpoints use WordPiece
    packer_class = BertPacker
    continuation_marker = CONTINUATION_PREFIX

    def write_files(self, folder):
        """Write `vocab.txt` (one token a line, id = line) into `folder`."""
        write_text_atomically(os.path.join(folder, "vocab.txt"), "\n".join(self.get_vocabulary()) + "\n")

    def hf_tokenizer_config(self):
        """The `tokenizer_config.json` settings HF's `BertTokenizer` reads."""
        return {"tokenizer_class": "BertTokenizer", "do_lower_case": self.lowercase,
                "strip_accents": self.strip_accents, "tokenize_chinese_chars": self.tokenize_chinese_chars,
                **self.special_tokens()}

    def rust_tokenizer(self):
        """The same tokenisation in HF `tokenizers` (Rust), built as HF's `BertTokenizerFast` is: the ids of
        `__call__` (no `[CLS]`/`[SEP]`), ~10x faster for a few texts; `kerasbert.data.native_reading` packs
        with it. Needs `pip install tokenizers`.

        Examples:
            >>> tokenizer.rust_tokenizer().encode("The café", add_special_tokens=False).ids  # doctest: +SKIP
            [1996, 7668]
        """
        from tokenizers import Tokenizer, normalizers, pre_tokenizers
        from tokenizers.models import WordPiece

        special = self.special_tokens()
        rust = Tokenizer(WordPiece(dict(self._token_ids), unk_token=special["unk_token"],
                                   max_input_chars_per_word=self.max_chars_per_word))
        rust.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=self.tokenize_chinese_chars,
                                                     strip_accents=self.strip_accents, lowercase=self.lowercase)
        rust.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        rust.add_special_tokens(list(special.values()))
        rust.encode_special_tokens = self.split_special_tokens
        return rust

    @classmethod
    def from_vocabulary_file(cls, path, **kwargs):
        """Same as `BertTokenizer(path, **kwargs)`, spelled out."""
        return cls(vocabulary=path, **kwargs)

    # Tokenising.

    def tokenize_with_offsets(self, texts):
        """`(ids, starts, ends)`: offsets are character (code point) indices into the input text.

        A piece spans the input characters its normalised characters came from, as HF's
        `return_offsets_mapping` does: `"Ångström"` -> `ang` (0, 3), `##strom` (3, 8).
        """
        return self.per_text(self._tokenize_rows_with_offsets, texts)

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
        too_long = tf.gather(self._too_long(words), piece_words)
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
        """The words for WordPiece; too long ones replaced by the unknown token, as HF does (a special token
        written in the text is no word for that rule: HF matches it before WordPiece)."""
        return tf.where(self._too_long(words), self.unk_token, words.words)

    def _too_long(self, words):
        too_long = words.word_lengths > self.max_chars_per_word
        if not self.split_special_tokens:
            too_long &= tf.reduce_all([words.words != token for token in self.special_tokens().values()], axis=0)
        return too_long

    # Detokenising.

    def join_tokens(self, ids):
        """`detokenize`'s join, as HF's `decode`: tokens joined by spaces, `##` pieces glued to the previous
        one, no space before `. ? ! ,`."""
        tokens = tf.gather(tf.constant(self._checked_vocabulary()), ids.flat_values)
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


def join_words(pieces, word_row_splits):
    """`[words, (pieces)]` with words grouped by `word_row_splits` -> `[texts, (pieces)]`."""
    return tf.RaggedTensor.from_row_splits(pieces.flat_values, tf.gather(pieces.row_splits, word_row_splits),
                                         validate=False)
