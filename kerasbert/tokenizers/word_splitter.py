"""BERT text normalisation and word splitting as TensorFlow graph ops (HF `BertNormalizer` +
`BertPreTokenizer`, with special tokens written in the text kept whole).

Everything works on the flat code points of a whole batch, so there is no per-string Python loop:
each input character is mapped to zero or more normalised code points, each normalised code point
remembers the input character it came from, and words are the runs between whitespace, with every
punctuation mark, CJK ideograph and special token a word of its own.
"""

import re
from typing import NamedTuple

import tensorflow as tf
import tensorflow_text as tf_text

from kerasbert.tokenizers import normalization_tables as nt


class Words(NamedTuple):
    """The words of a batch of texts, flat, with what is needed to map pieces back to characters.

    `words` are UTF-8 strings, `row_splits` say which words belong to which text, `word_lengths`
    count code points. For offsets: `code_point_byte_starts` is the byte position of every word
    code point in the concatenation of all words, `code_point_origins` the index (in characters,
    within its text) of the input character it came from, `word_byte_starts` where words begin.
    """

    words: tf.Tensor
    row_splits: tf.Tensor
    word_lengths: tf.Tensor
    word_byte_starts: tf.Tensor
    code_point_byte_starts: tf.Tensor
    code_point_origins: tf.Tensor


def previous(values, first_value):
    """`values` shifted right by one, `first_value` in front."""
    return tf.concat([tf.fill([1], tf.cast(first_value, values.dtype)), values[:-1]], axis=0)


def has(properties, bit):
    return tf.bitwise.bitwise_and(properties, bit) != 0


def utf8_lengths(code_points):
    return (
        1
        + tf.cast(code_points >= 0x80, tf.int64)
        + tf.cast(code_points >= 0x800, tf.int64)
        + tf.cast(code_points >= 0x10000, tf.int64)
    )


class WordSplitter:
    """Normalises texts and splits them into words, the way HF's fast BERT tokenizer does.

    Args:
        lowercase: lower-case (Rust `char::to_lowercase`, code point by code point).
        strip_accents: NFD, then drop nonspacing marks (already resolved: a bool).
        tokenize_chinese_chars: make each CJK ideograph a word of its own.
        special_tokens: strings matched verbatim in the raw text (before normalisation), each
            occurrence becoming one word; an empty list matches none.

    Examples:
        >>> splitter = WordSplitter(True, True, True, ["[MASK]"])
        >>> splitter.split(tf.constant(["Café [MASK]!"])).words.numpy().tolist()
        [b'cafe', b'[MASK]', b'!']
    """

    def __init__(self, lowercase, strip_accents, tokenize_chinese_chars, special_tokens):
        self.tables = nt.build_normalization_tables(lowercase, strip_accents)
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.special_tokens = sorted(set(special_tokens), key=len, reverse=True)
        # Longest first: RE2 takes the first alternative that matches, HF the longest.
        self.special_pattern = "|".join(re.escape(token) for token in self.special_tokens)

    def split(self, texts):
        """`texts`: a 1-D `tf.string` tensor. Returns `Words`."""
        code_points, byte_starts = tf.strings.unicode_decode_with_offsets(
            texts, "UTF-8", errors="replace", replacement_char=0xFFFD
        )
        chars = code_points.flat_values
        char_rows = code_points.value_rowids()
        properties = self._properties(chars)
        special_groups = self._special_groups(texts, char_rows, byte_starts.flat_values)
        normalized, origins = self._normalize(chars, properties, special_groups >= 0)
        groups = tf.gather(self._isolated_groups(properties, special_groups), origins)
        words = self._words(
            normalized, groups, tf.gather(char_rows, origins), tf.size(texts, out_type=tf.int64)
        )
        # Word code points index `normalized` so far: give the input character's index in its text.
        char_ids = tf.range(tf.size(chars, out_type=tf.int64))
        char_positions = char_ids - tf.gather(code_points.row_splits, char_rows)
        origins = tf.gather(char_positions, tf.gather(origins, words.code_point_origins))
        return words._replace(code_point_origins=tf.cast(origins, tf.int32))

    def _properties(self, code_points):
        """The int32 property word of each code point (see `normalization_tables`)."""
        block_starts = tf.gather(self.tables.block_starts, tf.bitwise.right_shift(code_points, 8))
        return tf.gather(self.tables.blocks, block_starts + tf.bitwise.bitwise_and(code_points, 255))

    def _special_groups(self, texts, char_rows, char_byte_starts):
        """For each character, the number of the special token occurrence it is part of, else -1."""
        not_special = tf.fill(tf.shape(char_rows), tf.constant(-1, tf.int64))
        if not self.special_tokens:
            return not_special
        # regex_split stops at a NUL byte, so it searches a copy with SOH in its place: the byte
        # offsets stay the same, and neither byte is in a special token.
        texts_without_nul = tf.strings.regex_replace(texts, r"\x00", "\x01")
        pieces, piece_starts, piece_ends = tf_text.regex_split_with_offsets(
            texts_without_nul, self.special_pattern, keep_delim_regex_pattern=self.special_pattern
        )
        is_special = tf.reduce_any([pieces.flat_values == token for token in self.special_tokens], axis=0)

        def mark_special_characters():
            # Byte positions in the concatenation of all texts, so that one sorted search does all rows.
            text_starts = tf.cumsum(tf.cast(tf.strings.length(texts), tf.int64), exclusive=True)
            piece_text_starts = tf.gather(text_starts, pieces.value_rowids())
            char_starts = char_byte_starts + tf.gather(text_starts, char_rows)
            first = tf.searchsorted(
                char_starts, tf.boolean_mask(piece_starts.flat_values + piece_text_starts, is_special)
            )
            end = tf.searchsorted(
                char_starts, tf.boolean_mask(piece_ends.flat_values + piece_text_starts, is_special)
            )
            num_chars = tf.size(char_rows) + 1
            opened = tf.math.unsorted_segment_sum(tf.ones_like(first, tf.int64), first, num_chars)
            closed = tf.math.unsorted_segment_sum(tf.ones_like(end, tf.int64), end, num_chars)
            inside = tf.cumsum(opened - closed)[:-1] > 0
            return tf.where(inside, tf.cumsum(opened)[:-1] - 1, -1)

        return tf.cond(tf.reduce_any(is_special), mark_special_characters, lambda: not_special)

    def _isolated_groups(self, properties, special_groups):
        """Which characters form a word of their own, whatever surrounds them: one group id per
        special token occurrence (0, 1, ...) and per CJK ideograph (from the number of characters
        on, so the two never meet); -1 for all other characters."""
        if not self.tokenize_chinese_chars:
            return special_groups
        num_chars = tf.size(properties, out_type=tf.int64)
        chinese = has(properties, nt.CHINESE) & (special_groups < 0)
        return tf.where(chinese, tf.range(num_chars) + num_chars, special_groups)

    def _normalize(self, chars, properties, special):
        """Maps each character to its normalised code points; returns them and each one's origin."""
        ordinary = ~special
        removed = has(properties, nt.REMOVED) & ordinary
        chars = tf.where(has(properties, nt.WHITESPACE) & ordinary, 32, chars)
        mapping = tf.bitwise.right_shift(properties, nt.MAPPING_SHIFT) - 1
        mapped = (mapping >= 0) & ordinary & ~removed
        row_splits = tf.constant(self.tables.map_row_splits)
        mapped_starts = tf.gather(row_splits, tf.maximum(mapping, 0))
        lengths = tf.where(
            removed, 0, tf.where(mapped, tf.gather(row_splits, mapping + 1) - mapped_starts, 1)
        )
        map_values = tf.constant(self.tables.map_values)

        def one_to_one():
            return tf.where(mapped, tf.gather(map_values, mapped_starts), chars), tf.range(tf.size(chars))

        def expanded():
            origins = tf.repeat(tf.range(tf.size(chars)), lengths)
            position = tf.range(tf.reduce_sum(lengths)) - tf.gather(
                tf.cumsum(lengths, exclusive=True), origins
            )
            from_map = tf.gather(map_values, tf.gather(mapped_starts, origins) + position)
            return tf.where(tf.gather(mapped, origins), from_map, tf.gather(chars, origins)), origins

        return tf.cond(tf.reduce_all(lengths == 1), one_to_one, expanded)

    def _words(self, normalized, groups, rows, num_texts):
        """Splits normalised code points into words; `code_point_origins` index `normalized` here."""
        properties = self._properties(normalized)
        free = groups < 0  # not part of a special token or CJK ideograph
        space = has(properties, nt.SPLIT_WHITESPACE) & free
        punctuation = has(properties, nt.PUNCTUATION) & free
        starts_word = ~space & (
            (rows != previous(rows, -1))
            | previous(space, True)
            | punctuation
            | previous(punctuation, False)
            | (groups != previous(groups, -1))
        )
        kept = ~space
        word_ids = tf.boolean_mask(tf.cumsum(tf.cast(starts_word, tf.int64)) - 1, kept)
        word_code_points = tf.RaggedTensor.from_value_rowids(
            tf.boolean_mask(normalized, kept), word_ids, nrows=tf.reduce_sum(tf.cast(starts_word, tf.int64)),
            validate=False,
        )
        word_rows = tf.boolean_mask(rows, starts_word)
        byte_starts = tf.cumsum(utf8_lengths(word_code_points.flat_values), exclusive=True)
        return Words(
            words=tf.strings.unicode_encode(word_code_points, "UTF-8"),
            row_splits=tf.ragged.segment_ids_to_row_splits(word_rows, num_segments=num_texts),
            word_lengths=tf.cast(word_code_points.row_lengths(), tf.int32),
            word_byte_starts=tf.gather(
                tf.concat([byte_starts, tf.zeros([1], tf.int64)], 0), word_code_points.row_splits[:-1]
            ),
            code_point_byte_starts=byte_starts,
            code_point_origins=tf.where(kept)[:, 0],
        )
