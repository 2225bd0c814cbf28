"""Byte-level BPE as RoBERTa and GPT-2 define it: the byte alphabet, the pre-tokenizer's word pattern (RE2, with the
letters and digits Rust's regex adds), the `vocab.json`/`merges.txt` files, and the graph helpers the tokenizer shares.

Examples:
    >>> bytes_to_unicode()[ord(" ")]
    'Ġ'
"""

import json
import os

import tensorflow as tf

from kerasbert.tokenizers.tokenizer_json import TOKENIZER_JSON, bpe_model, is_tokenizer_json, read_tokenizer_json

VOCABULARY_FILE = "vocab.json"  # token -> id, as in HF RoBERTa and GPT-2 folders (and `.keras` assets)
MERGES_FILE = "merges.txt"  # one merge "a b" a line, the first merged first
# Unicode White_Space: HF's pre-tokenizer `\s` (Oniguruma) and what a `<mask>` with `lstrip` takes
# (Rust `char::is_whitespace`).
WHITESPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
WHITESPACE += "\u2028\u2029\u202f\u205f\u3000"
SPACE_CHARACTER = "\u0120"  # "Ġ", the byte-level character of " "


def re2_literal(text):
    return "".join(f"\\x{{{ord(c):x}}}" for c in text)


WS = re2_literal(WHITESPACE)
SPACES = WS + re2_literal(SPACE_CHARACTER)  # what HF trims off the ends of a token's offsets
# Letters and digits new in Unicode 16: HF's regex engine knows them, TensorFlow's RE2 not yet.
LETTERS_ADDED = "".join(
    rf"\x{{{first:x}}}-\x{{{last:x}}}"
    for first, last in [
        (0x1C89, 0x1C8A), (0xA7CB, 0xA7CD), (0xA7DA, 0xA7DC), (0x105C0, 0x105F3), (0x10D4A, 0x10D65),
        (0x10D6F, 0x10D85), (0x10EC2, 0x10EC4), (0x11380, 0x11389), (0x1138B, 0x1138B), (0x1138E, 0x1138E),
        (0x11390, 0x113B5), (0x113B7, 0x113B7), (0x113D1, 0x113D1), (0x113D3, 0x113D3), (0x11BC0, 0x11BE0),
        (0x13460, 0x143FA), (0x16100, 0x1611D), (0x16D40, 0x16D6C), (0x18CFF, 0x18CFF), (0x1E5D0, 0x1E5ED),
        (0x1E5F0, 0x1E5F0), (0x2EBF0, 0x2EE5D),
    ]
)
DIGITS_ADDED = "".join(
    rf"\x{{{first:x}}}-\x{{{first + 9:x}}}"
    for first in [0x10D40, 0x116D0, 0x116DA, 0x11BF0, 0x16130, 0x16D70, 0x1CCF0, 0x1E5F1]
)
LETTER = rf"\p{{L}}{LETTERS_ADDED}"
DIGIT = rf"\p{{N}}{DIGITS_ADDED}"
# GPT-2's pre-tokenizer `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+` less
# its look-ahead (RE2 has none): whitespace is matched one character at a time, and `_split_words`
# joins the runs as the look-ahead cuts them.
WORD_PATTERN = rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{LETTER}]+| ?[{DIGIT}]+| ?[^{WS}{LETTER}{DIGIT}]+|[{WS}]"


def bytes_to_unicode():
    """GPT-2's byte -> character table: printable bytes stand for themselves, the others for U+0100 on."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), 256)]
    table = {b: chr(b) for b in printable}
    table.update({b: chr(256 + n) for n, b in enumerate(b for b in range(256) if b not in table)})
    return table


def read_bpe_files(vocabulary, merges=None):
    """`({token: id}, [(a, b), ...])` from a folder (`vocab.json` and `merges.txt`, else `tokenizer.json`), the
    two files' paths, a `tokenizer.json`'s path, or a dict and a list.

    Examples:
        >>> vocabulary, merges = read_bpe_files("roberta-base")  # doctest: +SKIP
    """
    if isinstance(vocabulary, (str, os.PathLike)) and os.path.isdir(vocabulary):
        if merges is not None:
            raise ValueError("Pass a tokenizer folder alone, or the paths of vocab.json and merges.txt.")
        folder = os.fspath(vocabulary)
        missing = missing_files(folder)
        if missing and os.path.isfile(os.path.join(folder, TOKENIZER_JSON)):
            vocabulary = os.path.join(folder, TOKENIZER_JSON)
        elif missing:
            raise ValueError(
                f"The folder '{folder}' has no {' and no '.join(missing)}. A RoBERTa tokenizer folder holds "
                f"{VOCABULARY_FILE} (token -> id) and {MERGES_FILE} (the byte-pair merges, one 'a b' a "
                "line), as HF RoBERTa and GPT-2 checkpoints ship them, or a byte-level BPE tokenizer.json."
            )
        else:
            vocabulary, merges = os.path.join(folder, VOCABULARY_FILE), os.path.join(folder, MERGES_FILE)
    if merges is None and is_tokenizer_json(vocabulary):
        vocabulary, merges = bpe_model(read_tokenizer_json(vocabulary), os.fspath(vocabulary))
    if merges is None:
        raise ValueError(
            "RobertaTokenizer needs the merges with the vocabulary: a folder holding vocab.json and "
            "merges.txt, the paths of the two, or a {token: id} dict and a list of 'a b' merges."
        )
    if isinstance(vocabulary, (str, os.PathLike)):
        with open(vocabulary, encoding="utf-8") as file:
            vocabulary = json.load(file)
    if not isinstance(vocabulary, dict):
        raise TypeError(
            f"`vocabulary` must be a {{token: id}} dict or a path, got {type(vocabulary).__name__}."
        )
    if isinstance(merges, (str, os.PathLike)):
        with open(merges, encoding="utf-8") as file:
            merges = [line for line in file.read().splitlines() if line and not line.startswith("#version")]
    pairs = [tuple(merge.split(" ")) if isinstance(merge, str) else tuple(merge) for merge in merges]
    for number, pair in enumerate(pairs, 1):
        if len(pair) != 2:
            raise ValueError(f"Merge {number} ({' '.join(pair)!r}) is not two tokens 'a b'.")
    return dict(vocabulary), pairs


def missing_files(folder):
    return [name for name in (VOCABULARY_FILE, MERGES_FILE) if not os.path.isfile(os.path.join(folder, name))]


def byte_length(strings):
    return tf.cast(tf.strings.length(strings), tf.int64)


def row_ids(ragged):
    """The row of each value of a 2-D ragged tensor (`value_rowids()` costs rows x longest row)."""
    positions = tf.range(tf.size(ragged.flat_values, out_type=tf.int64))
    return tf.searchsorted(ragged.row_splits[1:], positions, side="right", out_type=tf.int64)


def interleave(mask, where_true, where_false):
    """One vector in the order of `mask`: `where_true`'s values at its True places, `where_false`'s at
    the others."""
    positions = tf.range(tf.size(mask))
    return tf.dynamic_stitch(
        [tf.boolean_mask(positions, mask), tf.boolean_mask(positions, ~mask)], [where_true, where_false]
    )
