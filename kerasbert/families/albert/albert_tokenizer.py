"""AlbertTokenizer: ALBERT's SentencePiece tokenisation with the ids and offsets of HF's fast tokenizer.

HF's `AlbertTokenizerFast` (transformers 5, built from an `spiece.model`) does not run SentencePiece's
own pipeline. It cuts the special and user-defined pieces written in the raw text out, then, on the
rest: makes two backquotes or two apostrophes a `"`, NFKD, drops combining marks, lower-cases, applies
the model's precompiled character map, splits on whitespace (which also drops extra spaces, ALBERT's
`remove_space`), puts `▁` in front of every word (a `▁` inside a word starts a new one) and runs the
unigram model on each word. Here the same steps are TensorFlow graph ops on the code points of the
whole batch; SentencePiece (tensorflow-text) only runs the unigram model, from a copy of the proto
with its normaliser switched off and all its pieces ordinary, as they are for HF.
"""

import os
from typing import NamedTuple

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from kerasbert.atomic_files import write_bytes_atomically
from kerasbert.families.albert.code_point_ops import (
    QUOTE_PAIRS,
    is_whitespace,
    quote_pairs,
    re_escape,
    whitespace_before,
)
from kerasbert.families.albert.sentencepiece_files import (
    PROTO_ASSET,
    WORD_START,
    normalization_tables,
    read_proto,
    unigram_only_proto,
)
from kerasbert.tokenizers.bert_packer import BertPacker
from kerasbert.tokenizers.tokenizer_base import TokenizerBase
from kerasbert.tokenizers.tokenizer_json import (
    TOKENIZER_JSON,
    is_tokenizer_json,
    read_tokenizer_json,
    unigram_model,
    unigram_settings,
)
from kerasbert.tokenizers.word_splitter import previous, utf8_lengths


class Words(NamedTuple):
    """The SentencePiece inputs of a batch: one `▁`-led word per element, flat.

    `row_splits` group words by text, `special_ids` is the id of a word that is a special piece
    written in the text (-1 for others). For offsets: `code_points` are the words' code points,
    concatenated, and `starts`/`ends` the input characters (within its text) each one came from.
    """

    words: tf.Tensor
    row_splits: tf.Tensor
    special_ids: tf.Tensor
    code_points: tf.RaggedTensor
    starts: tf.Tensor
    ends: tf.Tensor


@keras.saving.register_keras_serializable(package="kerasbert")
class AlbertTokenizer(TokenizerBase, keras.layers.Layer):
    """Splits text into ALBERT SentencePiece ids, exactly as HF's `AlbertTokenizerFast` does.

    Text is lower-cased, its accents stripped (NFKD, then combining marks dropped), two backquotes
    or two apostrophes made `"`, the model's character map applied (NFKC, control characters
    dropped, odd spaces made spaces), words split on whitespace, each word given its leading `▁` and
    cut into pieces by the unigram model. The model's special and user-defined pieces written in the
    text (`"[MASK]"`, exactly so, and ALBERT's `"(", ")", '"', "-", ".", "–", "£", "€"`) are cut out
    first. No `[CLS]`/`[SEP]` is added: `BertPacker` does that. All of it is TensorFlow ops, so it
    runs in `tf.data` and in an exported SavedModel with only TensorFlow and tensorflow-text loaded.

    The model is not part of `get_config()`: a `.keras` file stores it as the asset `spiece.model`
    (Keras `save_assets`/`load_assets`). A tokenizer made from a config alone has no model until
    `set_proto` or `load_assets`.

    Args:
        proto: the SentencePiece model: the path to `spiece.model`, its folder, or its bytes; or a
            `tokenizer.json` (its path, or a folder holding it and no `spiece.model`: its unigram model,
            whose normaliser sets `do_lower_case` and `keep_accents`); None to set it later.
        do_lower_case: lower-case the text (ALBERT's checkpoints are uncased).
        keep_accents: keep accents (no NFKD, no mark removal).
        legacy_added_tokens: tokenise as HF does from a checkpoint's `tokenizer.json` written by
            transformers 4 (the published ALBERT checkpoints have one), closer to SentencePiece
            and ALBERT's pre-training: user-defined pieces are found by the unigram model inside
            words, not cut out first (`"lost - it"` -> `▁lost ▁ - ▁it`, not `▁lost - ▁it`), `[MASK]`
            takes the whitespace before it into its span, and pieces ending in a digit and a comma
            lose 100 of score. False: as HF's `AlbertTokenizerFast` built from `spiece.model`.
        special_tokens: the special pieces that differ from `default_special_tokens`, by name ("unk_token",
            "cls_token", "sep_token", "pad_token", "mask_token"); all must be in the model.

    Examples:
        >>> tokenizer = AlbertTokenizer("albert-base-v2/spiece.model")  # doctest: +SKIP
        >>> ids = tokenizer(["The cat [MASK] on the mat."])  # doctest: +SKIP
        >>> [tokenizer.id_to_token(i) for i in ids[0].numpy()]  # doctest: +SKIP
        ['▁the', '▁cat', '[MASK]', '▁on', '▁the', '▁mat', '.']
        >>> tokenizer.detokenize(ids)  # doctest: +SKIP
        <tf.Tensor: shape=(1,), dtype=string, numpy=array([b'the cat[MASK] on the mat.'], dtype=object)>
    """

    default_special_tokens = {"unk_token": "<unk>", "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "<pad>",
                              "mask_token": "[MASK]"}
    config_names = ("do_lower_case", "keep_accents", "legacy_added_tokens")
    vocabulary_files = "SentencePiece model"
    set_vocabulary_call = "set_proto('spiece.model')"

    def __init__(self, proto=None, do_lower_case=True, keep_accents=False, legacy_added_tokens=False,
                 special_tokens=None, **kwargs):
        super().__init__(**kwargs)
        self.do_lower_case = bool(do_lower_case)
        self.keep_accents = bool(keep_accents)
        self.legacy_added_tokens = bool(legacy_added_tokens)
        self.set_special_tokens(special_tokens)
        self._proto = self._vocabulary = None
        if proto is not None:
            self.set_proto(proto)

    def set_proto(self, proto):
        """Give a tokenizer made without one (e.g. from a config) its SentencePiece model. It is set
        once; a tokenizer that has one keeps it.

        Examples:
            >>> tokenizer = AlbertTokenizer.from_config(config)  # doctest: +SKIP
            >>> tokenizer.set_proto("albert-base-v2/spiece.model")  # doctest: +SKIP
        """
        self.check_no_vocabulary_yet()
        if isinstance(proto, (str, os.PathLike)) and os.path.isdir(proto) \
                and not os.path.isfile(os.path.join(proto, self.proto_file)) \
                and os.path.isfile(os.path.join(proto, TOKENIZER_JSON)):
            proto = os.path.join(proto, TOKENIZER_JSON)
        if is_tokenizer_json(proto):
            proto, settings = unigram_model(read_tokenizer_json(proto), os.fspath(proto),
                                            restore_digit_commas=self.legacy_added_tokens, pipeline=self.json_pipeline)
            for name, value in settings.items():
                setattr(self, name, value)
        proto, model = self.completed(*read_proto(proto, self.proto_file))
        tokens = tuple(piece.piece for piece in model.pieces)
        token_ids = {token: index for index, token in enumerate(tokens)}
        missing = [token for token in self.special_tokens().values() if token not in token_ids]
        if missing:
            raise ValueError(
                f"The SentencePiece model has no piece {missing[0]!r}; check the special tokens."
            )
        # Cut out of the raw text as HF's added tokens: the special tokens, control and user-defined pieces.
        matched = set(self.special_tokens().values())
        if not self.legacy_added_tokens:
            kinds = (model.pieces[0].CONTROL, model.pieces[0].USER_DEFINED)
            matched |= {piece.piece for piece in model.pieces if piece.type in kinds}
        self._matched_tokens = sorted(matched, key=len, reverse=True)  # RE2 takes the first that matches
        self._matched_ids = np.array([token_ids[token] for token in self._matched_tokens], np.int32)
        self._tables = self.normalization(model)
        self._sentencepiece = tf_text.SentencepieceTokenizer(
            unigram_only_proto(model, penalise_digit_commas=self.legacy_added_tokens, score_step=self.score_step),
            out_type=tf.int32
        )
        self._unknown_id = len(tokens)  # SentencePiece's unknown piece in that proto
        self._token_ids = token_ids
        self._vocabulary = tokens
        self._proto = proto

    # Presets: HF's `spiece.model` and tokenizer settings.

    families = ("albert",)
    proto_file = PROTO_ASSET  # the model's name in a checkpoint folder
    packer_class = BertPacker  # `[CLS] A [SEP] B [SEP]`, as BERT
    word_start_marker = "\u2581"  # "▁"

    quote_characters = QUOTE_PAIRS  # two of these become '"'
    json_pipeline = staticmethod(unigram_settings)  # reads a tokenizer.json's normaliser and pre-tokenizer
    space_in_word_start = False  # whether the `▁` of a word spans the whitespace before it
    score_step = None  # `unigram_only_proto`'s rounding of the scores

    def completed(self, proto, model):
        """`(proto, model)` as the tokenizer uses them (ALBERT's: as read)."""
        return proto, model

    def normalization(self, model):
        """The `NormalizationTables` of HF's normaliser after the quote replacement."""
        return normalization_tables(
            model.normalizer_spec.precompiled_charsmap, self.do_lower_case, not self.keep_accents
        )

    def dropped_spaces(self, normalized, rows, special):
        """Which normalised characters are whitespace that splits words (and is dropped): all, as
        HF's `WhitespaceSplit`."""
        return is_whitespace(normalized) & ~special

    def write_files(self, folder):
        """Write the SentencePiece model (`spiece.model`) into `folder`."""
        self._checked_vocabulary()
        write_bytes_atomically(os.path.join(folder, self.proto_file), self._proto)

    def hf_tokenizer_config(self):
        """The `tokenizer_config.json` settings HF's `AlbertTokenizer` reads (HF builds its fast tokenizer from
        `spiece.model` alone: `legacy_added_tokens=False`)."""
        return {"tokenizer_class": "AlbertTokenizer", "do_lower_case": self.do_lower_case,
                "keep_accents": self.keep_accents, "remove_space": True, **self.special_tokens()}

    # Saving: the model is a file in the `.keras` archive, not part of the config.

    def save_assets(self, dir_path):
        self._checked_vocabulary()
        with open(os.path.join(dir_path, PROTO_ASSET), "wb") as file:
            file.write(self._proto)

    def load_assets(self, dir_path):
        path = os.path.join(dir_path, PROTO_ASSET)
        if not os.path.isfile(path):
            raise ValueError(
                f"The saved model has no {PROTO_ASSET} for {type(self).__name__} '{self.name}': the file is "
                "incomplete. Save the model again with model.save('model.keras')."
            )
        self.set_proto(path)

    # Tokenising.

    def compute_output_spec(self, texts):
        """Ragged int32 ids, one more axis than the texts, without running SentencePiece (a model
        that holds this layer is rebuilt from its config before the `spiece.model` asset is loaded)."""
        return keras.KerasTensor((*texts.shape, None), "int32", ragged=True)

    def tokenize_with_offsets(self, texts):
        """`(ids, starts, ends)`: offsets are character (code point) indices into the input text.

        A piece spans the input characters its normalised characters came from, as HF's
        `return_offsets_mapping` does: `"Ångström"` becomes `▁angstrom`, whose piece `strom` would
        span (3, 8). A word's `▁` has its first character's span (a lone `▁` piece too), the `"`
        made of `''` the second quote's, and a special piece written in the text its own span.
        """
        return self.per_text(self._tokenize_rows_with_offsets, texts)

    # One graph per tokenizer for the batch work: faster than running it op by op in eager mode.
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def _tokenize_rows(self, texts):
        words = self._words(texts)
        return self._join_words(words, self._sentencepiece.tokenize(words.words))[0]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
    def _tokenize_rows_with_offsets(self, texts):
        words = self._words(texts)
        pieces, byte_starts, byte_ends = self._sentencepiece.tokenize_with_offsets(words.words)
        flat_bytes = tf.cumsum(utf8_lengths(words.code_points.flat_values), exclusive=True)
        word_bytes = tf.gather(
            tf.concat([flat_bytes, tf.zeros([1], tf.int64)], 0), words.code_points.row_splits[:-1]
        )
        base = tf.gather(word_bytes, pieces.value_rowids())
        first = tf.searchsorted(flat_bytes, base + byte_starts.flat_values, out_type=tf.int64)
        last = tf.searchsorted(flat_bytes, base + byte_ends.flat_values, out_type=tf.int64) - 1
        return self._join_words(words, pieces, tf.gather(words.starts, first), tf.gather(words.ends, last))

    def _join_words(self, words, pieces, starts=None, ends=None):
        """`[words, (pieces)]` -> `[texts, (ids)]` (and the offsets, flat, if given). Special words
        get their ids, and a run of unknown pieces in a word (SentencePiece's unknown, or the text
        of the unknown piece) becomes one, as in HF's unigram model."""
        piece_words = pieces.value_rowids()
        special = tf.gather(words.special_ids, piece_words)
        unk_id = self._token_ids[self.unk_token]
        ids = tf.where(pieces.flat_values == self._unknown_id, unk_id, pieces.flat_values)
        ids = tf.where(special >= 0, special, ids)
        unknown = ids == unk_id
        kept = ~(unknown & previous(unknown, False) & (piece_words == previous(piece_words, -1)))
        word_rows = tf.ragged.row_splits_to_segment_ids(words.row_splits)
        text_rows = tf.gather(word_rows, tf.boolean_mask(piece_words, kept))
        outputs = [tf.boolean_mask(ids, kept)]
        if starts is not None:
            runs = tf.cumsum(tf.cast(kept, tf.int64)) - 1
            outputs += [tf.boolean_mask(starts, kept), tf.math.segment_max(ends, runs)]
        num_texts = tf.size(words.row_splits, out_type=tf.int64) - 1
        return tuple(tf.RaggedTensor.from_value_rowids(values, text_rows, num_texts) for values in outputs)

    def _words(self, texts):
        """Normalises texts and cuts them into `▁`-led words, as HF's normaliser and pre-tokenizer."""
        code_points, byte_starts = tf.strings.unicode_decode_with_offsets(
            texts, "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        chars, rows = code_points.flat_values, code_points.value_rowids()
        char_ids = tf.range(tf.size(chars, out_type=tf.int64))
        positions = tf.cast(char_ids - tf.gather(code_points.row_splits, rows), tf.int32)  # in its text
        special_ids, special_lengths, left_spans = self._special_pieces(
            texts, chars, rows, byte_starts.flat_values
        )
        special = special_ids >= 0
        inside_special = special_lengths == 0
        quote_heads, quote_tails = quote_pairs(chars, rows, special | inside_special, self.quote_characters)
        chars = tf.where(quote_tails, 0x22, chars)

        # Each character -> its normalised code points (none for a removed one).
        tables = self._tables
        replacement = tf.gather(
            tf.constant(tables.blocks),
            tf.gather(tf.constant(tables.block_starts), tf.bitwise.right_shift(chars, 8))
            + tf.bitwise.bitwise_and(chars, 255),
        )
        replacement = tf.where(special | inside_special, 0, replacement)
        row_splits = tf.constant(tables.row_splits)
        replaced_starts = tf.gather(row_splits, replacement)
        lengths = tf.where(replacement > 0, tf.gather(row_splits, replacement + 1) - replaced_starts, 1)
        lengths = tf.where(inside_special | quote_heads, 0, lengths)
        origins = tf.repeat(tf.range(tf.size(chars)), lengths)
        position = tf.range(tf.reduce_sum(lengths)) - tf.gather(tf.cumsum(lengths, exclusive=True), origins)
        normalized = tf.where(
            tf.gather(replacement > 0, origins),
            tf.gather(tf.constant(tables.values), tf.gather(replaced_starts, origins) + position),
            tf.gather(tf.where(special, WORD_START, chars), origins),
        )
        special_ids = tf.gather(special_ids, origins)
        units_special = special_ids >= 0
        unit_rows = tf.gather(rows, origins)
        starts = tf.gather(positions - left_spans, origins)
        ends = tf.gather(positions + tf.where(special, special_lengths, 1), origins)

        # Words: split on whitespace; special pieces and `▁` start words; `▁` put in front of the others.
        space = self.dropped_spaces(normalized, unit_rows, units_special)
        new_word = ~space & (
            (unit_rows != previous(unit_rows, -1))
            | previous(space, True)
            | units_special
            | previous(units_special, False)
            | (normalized == WORD_START)
        )
        prefixed = new_word & (normalized != WORD_START)
        kept = tf.where(~space)[:, 0]
        counts = 1 + tf.cast(tf.gather(prefixed, kept), tf.int64)
        repeats = tf.repeat(tf.range(tf.size(kept, out_type=tf.int64)), counts)
        units = tf.gather(kept, repeats)
        copy_ids = tf.range(tf.size(units, out_type=tf.int64))
        is_prefix = (copy_ids == tf.gather(tf.cumsum(counts, exclusive=True), repeats)) & tf.gather(
            counts == 2, repeats
        )
        word_ids = tf.gather(tf.cumsum(tf.cast(new_word, tf.int64)) - 1, units)
        num_words = tf.reduce_sum(tf.cast(new_word, tf.int64))
        word_code_points = tf.RaggedTensor.from_value_rowids(
            tf.where(is_prefix, WORD_START, tf.gather(normalized, units)), word_ids, nrows=num_words
        )
        unit_starts, unit_ends = tf.gather(starts, units), tf.gather(ends, units)
        if self.space_in_word_start:  # the `▁` spans the whitespace character right before the word, if any
            spanned = is_prefix & tf.gather(whitespace_before(chars, rows, origins) > 0, units)
            unit_ends = tf.where(spanned, unit_starts, unit_ends)
            unit_starts = tf.where(spanned, unit_starts - 1, unit_starts)
        return Words(
            words=tf.strings.unicode_encode(word_code_points, "UTF-8"),
            row_splits=tf.ragged.segment_ids_to_row_splits(
                tf.boolean_mask(unit_rows, new_word), num_segments=tf.size(texts, out_type=tf.int64)
            ),
            special_ids=tf.boolean_mask(special_ids, new_word),
            code_points=word_code_points,
            starts=unit_starts,
            ends=unit_ends,
        )

    def _special_pieces(self, texts, chars, char_rows, char_byte_starts):
        """Special pieces written in the raw text (leftmost, longest first). Per character: the
        piece's id on its first character (-1 elsewhere); lengths in characters: the piece's on
        its first character, 0 on its other characters, 1 outside pieces; and on the first character
        of a `[MASK]` with `legacy_added_tokens`, the whitespace before it that its span takes."""
        none = tf.fill(tf.shape(char_rows), -1)
        # regex_split stops at a NUL byte: it searches a copy with SOH there (same byte offsets).
        pattern = "|".join(re_escape(token) for token in self._matched_tokens)
        pieces, piece_starts, piece_ends = tf_text.regex_split_with_offsets(
            tf.strings.regex_replace(texts, r"\x00", "\x01"), pattern, keep_delim_regex_pattern=pattern
        )
        matches = tf.equal(pieces.flat_values[:, None], tf.constant(self._matched_tokens)[None, :])
        is_special = tf.reduce_any(matches, axis=1)
        ids = tf.gather(self._matched_ids, tf.argmax(matches, axis=1, output_type=tf.int32))
        text_starts = tf.cumsum(tf.cast(tf.strings.length(texts), tf.int64), exclusive=True)
        piece_text_starts = tf.gather(text_starts, pieces.value_rowids())
        char_starts = char_byte_starts + tf.gather(text_starts, char_rows)
        first, end = (
            tf.searchsorted(char_starts, tf.boolean_mask(offsets.flat_values + piece_text_starts, is_special))
            for offsets in (piece_starts, piece_ends)
        )
        num_chars = tf.size(char_rows, out_type=tf.int64)
        opened = tf.math.unsorted_segment_sum(tf.ones_like(first), first, num_chars + 1)
        closed = tf.math.unsorted_segment_sum(tf.ones_like(end), end, num_chars + 1)
        inside = (tf.cumsum(opened - closed)[:-1] > 0) & (opened[:-1] == 0)
        ids = tf.boolean_mask(ids, is_special)
        special_ids = tf.tensor_scatter_nd_update(none, first[:, None], ids)
        lengths = tf.tensor_scatter_nd_update(
            tf.where(inside, 0, tf.ones_like(none)), first[:, None], tf.cast(end - first, tf.int32)
        )
        left_spans = tf.zeros_like(none)
        if self.legacy_added_tokens:  # HF's `lstrip=True` on the mask token
            is_mask = ids == self._token_ids[self.mask_token]
            spans = tf.where(is_mask, whitespace_before(chars, char_rows, first), 0)
            left_spans = tf.tensor_scatter_nd_update(left_spans, first[:, None], spans)
        return special_ids, lengths, left_spans

    # Detokenising.

    def join_tokens(self, ids):
        """`detokenize`'s join, as HF's `decode`: the pieces joined, `▁` made a space, none at the start."""
        tokens = tf.gather(tf.constant(self._checked_vocabulary()), ids.flat_values)
        token_ids = tf.range(tf.size(tokens, out_type=tf.int64))
        first_in_row = token_ids == tf.gather(ids.row_splits, ids.value_rowids())
        tokens = tf.where(
            first_in_row,
            tf.strings.regex_replace(tokens, chr(WORD_START), ""),
            tf.strings.regex_replace(tokens, chr(WORD_START), " "),
        )
        return tf.strings.reduce_join(ids.with_flat_values(tokens), axis=-1)
