"""Graph ops on the code points of a batch of texts, for the SentencePiece tokenizers' HF-exact word splitting:
whitespace as Rust's `char::is_whitespace`, runs of flags within a text, HF's quote-pair replacement.

Examples:
    >>> is_whitespace(tf.constant([32, 97, 0x3000])).numpy().tolist()
    [True, False, True]
"""

import tensorflow as tf

from kerasbert.tokenizers import unicode_tables
from kerasbert.tokenizers.word_splitter import previous

QUOTE_PAIRS = (0x60, 0x27)  # "``" and "''" become '"' (0x22)


def re_escape(token):
    """`token` as an RE2 literal."""
    return "".join(f"\\x{{{ord(char):x}}}" for char in token)


def is_whitespace(code_points):
    """Rust's `char::is_whitespace` (HF's `WhitespaceSplit`), measured."""
    ranges = unicode_tables.SPLIT_WHITESPACE_RANGES
    return tf.reduce_any([(code_points >= first) & (code_points <= last) for first, last in ranges], axis=0)


def whitespace_before(chars, rows, positions):
    """How many whitespace characters (of the same text) come right before each of `positions`."""
    space = is_whitespace(chars)
    run_first = run_firsts(space, rows)
    before = tf.maximum(positions - 1, 0)
    same_text = tf.gather(rows, before) == tf.gather(rows, positions)
    preceded = (positions > 0) & tf.gather(space, before) & same_text
    return tf.where(preceded, positions - tf.gather(run_first, before), 0)


def quote_pairs(chars, rows, excluded, quotes=QUOTE_PAIRS):
    """HF's `Replace("``", '"')` and `Replace("''", '"')`: in each run of one of those `quotes`, the
    characters 0-1, 2-3, ... pair up. Returns the first and second characters of every pair."""
    heads = tf.zeros_like(chars, tf.bool)
    index = tf.range(tf.size(chars))
    for quote in quotes:
        is_quote = (chars == quote) & ~excluded
        run_first = run_firsts(is_quote, rows)
        followed = tf.concat([is_quote[1:] & (run_first[1:] == run_first[:-1]), [False]], 0)
        heads |= is_quote & followed & ((index - run_first) % 2 == 0)
    return heads, previous(heads, False)


def run_firsts(flags, rows):
    """For each element, where the run of True `flags` (within one row) it is in starts; any value
    where `flags` is False."""
    run_start = flags & ~(previous(flags, False) & (rows == previous(rows, -1)))
    starts = tf.boolean_mask(tf.range(tf.size(flags)), run_start)
    return tf.gather(tf.concat([[0], starts], 0), tf.cumsum(tf.cast(run_start, tf.int32)))
