"""Lookup arrays for BERT text normalisation, composed from the measured `unicode_tables`.

HF's `BertNormalizer` cleans the text, then strips accents (NFD, then drops nonspacing marks),
then lower-cases, one code point at a time. Composing those steps per code point gives one map
`code point -> code points` that the TensorFlow graph applies by lookup, keeping track of which
input character every output code point came from (for offsets).

Every code point's properties (the classes below, and where its mapping is) sit in one int32,
found with a two-level table: `blocks[block_starts[cp >> 8] + (cp & 255)]`.
"""

import functools
from typing import NamedTuple

import numpy as np

from kerasbert.tokenizers import unicode_tables

NUM_CODE_POINTS = 0x110000
BLOCK_SIZE = 256
HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3

# Property bits. Above them: 1 + the index of the code point's mapping, or 0 if it maps to itself.
REMOVED = 1  # clean_text drops it
WHITESPACE = 2  # clean_text makes it a space
CHINESE = 4  # a CJK ideograph: a word of its own
PUNCTUATION = 8  # the pre-tokenizer makes it a word of its own
SPLIT_WHITESPACE = 16  # the pre-tokenizer splits on it
MAPPING_SHIFT = 5


class NormalizationTables(NamedTuple):
    """The arrays the TensorFlow graph looks code points up in.

    Examples:
        >>> tables = build_normalization_tables(lowercase=True, strip_accents=True)
        >>> properties = tables.blocks[tables.block_starts[ord("A") >> 8] + (ord("A") & 255)]
        >>> mapping = (properties >> MAPPING_SHIFT) - 1
        >>> tables.map_values[tables.map_row_splits[mapping]:tables.map_row_splits[mapping + 1]].tolist()
        [97]
    """

    block_starts: np.ndarray
    blocks: np.ndarray
    map_row_splits: np.ndarray
    map_values: np.ndarray


def hangul_decomposition(code_point):
    """Canonical decomposition of a precomposed Hangul syllable into its 2 or 3 jamo."""
    index = code_point - HANGUL_FIRST
    jamo = [0x1100 + index // 588, 0x1161 + index % 588 // 28]
    if index % 28:
        jamo.append(0x11A7 + index % 28)
    return tuple(jamo)


def accent_stripped(code_point, removed_marks):
    if code_point in removed_marks:
        return ()
    if HANGUL_FIRST <= code_point <= HANGUL_LAST:
        return hangul_decomposition(code_point)
    return unicode_tables.ACCENT_MAP.get(code_point, (code_point,))


def lowercased(code_points):
    lower = unicode_tables.LOWERCASE_MAP
    return tuple(c for code_point in code_points for c in lower.get(code_point, (code_point,)))


def build_character_map(lowercase, strip_accents):
    """Every code point that accent stripping and/or lower-casing changes -> what it becomes."""
    candidates = set()
    removed_marks = set()
    if strip_accents:
        removed_marks = {
            c for first, last in unicode_tables.ACCENT_REMOVED_RANGES for c in range(first, last + 1)
        }
        candidates |= (
            removed_marks | set(unicode_tables.ACCENT_MAP) | set(range(HANGUL_FIRST, HANGUL_LAST + 1))
        )
    if lowercase:
        candidates |= set(unicode_tables.LOWERCASE_MAP)
    character_map = {}
    for code_point in sorted(candidates):
        result = accent_stripped(code_point, removed_marks) if strip_accents else (code_point,)
        if lowercase:
            result = lowercased(result)
        if result != (code_point,):
            character_map[code_point] = result
    return character_map


def mark_ranges(properties, ranges, bit):
    for first, last in ranges:
        properties[first : last + 1] |= bit


@functools.cache
def build_normalization_tables(lowercase, strip_accents):
    """The arrays for one configuration (`strip_accents` already resolved to a bool), built once a process (0.3 s)
    and shared by every tokenizer of that configuration: read-only."""
    properties = np.zeros(NUM_CODE_POINTS, np.int32)
    mark_ranges(properties, unicode_tables.REMOVED_RANGES, REMOVED)
    mark_ranges(properties, unicode_tables.WHITESPACE_RANGES, WHITESPACE)
    mark_ranges(properties, unicode_tables.CHINESE_RANGES, CHINESE)
    mark_ranges(properties, unicode_tables.PUNCTUATION_RANGES, PUNCTUATION)
    mark_ranges(properties, unicode_tables.SPLIT_WHITESPACE_RANGES, SPLIT_WHITESPACE)
    character_map = build_character_map(lowercase, strip_accents)
    keys = np.array(list(character_map), np.int64)
    properties[keys] |= (np.arange(len(keys), dtype=np.int32) + 1) << MAPPING_SHIFT
    blocks, block_ids = np.unique(properties.reshape(-1, BLOCK_SIZE), axis=0, return_inverse=True)
    lengths = [len(values) for values in character_map.values()]
    tables = NormalizationTables(
        block_starts=(block_ids.reshape(-1) * BLOCK_SIZE).astype(np.int32),
        blocks=blocks.reshape(-1),
        map_row_splits=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32),
        # One spare value at the end keeps every gather in range, even past an empty last mapping.
        map_values=np.array([c for values in character_map.values() for c in values] + [0], np.int32),
    )
    for array in tables:
        array.setflags(write=False)
    return tables
