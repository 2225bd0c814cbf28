"""The files behind ALBERT-style SentencePiece tokenizers: the `spiece.model` proto (read, checked, and rewritten for
tensorflow-text's unigram model alone) and HF's normaliser composed per code point from its precompiled character map.

Examples:
    >>> proto, model = read_proto("albert_folder")            # doctest: +SKIP
    >>> tables = normalization_tables(model.normalizer_spec.precompiled_charsmap, True, True)  # doctest: +SKIP
"""

import functools
import os
import unicodedata
from typing import NamedTuple

import numpy as np
from sentencepiece import SentencePieceProcessor, sentencepiece_model_pb2

from kerasbert.tokenizers import unicode_tables

PROTO_ASSET = "spiece.model"  # inside a `.keras` file's assets: the SentencePiece model, as is
WORD_START = 0x2581  # "▁", SentencePiece's mark of a word start
BLOCK_SIZE = 256


def read_proto(proto, file_name=PROTO_ASSET):
    """`(bytes, ModelProto)` of a SentencePiece unigram model given as bytes, a file or a folder
    holding `file_name`; a ValueError naming the file if it is not one."""
    name = "the given bytes"
    if not isinstance(proto, bytes):
        name = os.fspath(proto)
        if os.path.isdir(name):
            name = os.path.join(name, file_name)
        if not os.path.isfile(name):
            raise ValueError(
                f"No SentencePiece model at {name}: give the path to `{file_name}` (or a tokenizer.json) or "
                "its folder."
            )
        with open(name, "rb") as file:
            proto = file.read()
    model = sentencepiece_model_pb2.ModelProto()
    try:
        model.ParseFromString(proto)
        SentencePieceProcessor(model_proto=proto)
    except Exception as error:  # protobuf's DecodeError, or SentencePiece refusing the model
        raise ValueError(f"{name} is not a SentencePiece model ({error}).") from None
    if not model.pieces or model.trainer_spec.model_type != model.trainer_spec.UNIGRAM:
        raise ValueError(f"{name} is not a SentencePiece unigram model (ALBERT's kind).")
    return proto, model


def unigram_only_proto(model, penalise_digit_commas, score_step=None):
    """The proto for tensorflow-text: no normalisation, no dummy prefix, no byte fallback, and every
    piece ordinary, as in HF's unigram model (where even the unknown piece's text can match), with
    a new unknown piece at the end (id = the model's size) for SentencePiece's unknown characters.
    `penalise_digit_commas`: pieces ending in a digit and a comma lose 100, as HF's `AlbertConverter`
    does (for ALBERT's `"9,"` rule). `score_step`: round the scores to multiples of it, so that SentencePiece's
    float32 sums of a word's scores are exact and equal paths tie as in HF's float64 (where HF keeps the path
    whose last piece starts first)."""
    model = type(model).FromString(model.SerializeToString())
    spec = model.normalizer_spec
    spec.name, spec.precompiled_charsmap = "none", no_op_charsmap()
    spec.add_dummy_prefix = spec.remove_extra_whitespaces = spec.escape_whitespaces = False
    model.trainer_spec.byte_fallback = False
    pieces = {piece.piece for piece in model.pieces}
    unknown = model.trainer_spec.unk_piece or "<unk>"
    while unknown in pieces:
        unknown += chr(WORD_START)
    for piece in model.pieces:
        piece.type = piece.NORMAL
        if penalise_digit_commas and piece.piece[-1:] == "," and piece.piece[-2:-1].isdigit():
            piece.score -= 100
        if score_step:
            piece.score = round(piece.score / score_step) * score_step
    model.pieces.add(piece=unknown, score=0.0, type=sentencepiece_model_pb2.ModelProto.SentencePiece.UNKNOWN)
    model.trainer_spec.unk_id, model.trainer_spec.unk_piece = len(model.pieces) - 1, unknown
    return model.SerializeToString()


def no_op_charsmap():
    """A precompiled character map that changes nothing: its one key, the byte 0xFF, is never in
    UTF-8 text. (An empty map does the same, but SentencePiece logs a notice for it at every load.)"""
    units = np.zeros(512, np.uint32)
    units[0] = 256 << 10  # the root: its child for byte b is unit 256 ^ b
    units[256 ^ 0xFF] = 0xFF | 1 << 8 | 1 << 10  # byte 0xFF, has a leaf, at unit (256 ^ 0xFF) ^ 1
    units[256 ^ 0xFF ^ 1] = 1 << 31  # the leaf: offset 0 of the strings, ""
    return len(units.tobytes()).to_bytes(4, "little") + units.tobytes() + b"\0"


def precompiled_characters(charsmap):
    """`{code point: replacement}` for every single-character entry of a precompiled character map
    (SentencePiece's `normalizer_spec.precompiled_charsmap`: a darts-clone trie, then strings).

    HF's `Precompiled` normaliser looks characters up one by one, but grapheme clusters shorter than
    6 bytes whole: after accent stripping that leaves CR LF (spaces either way); with accents kept,
    a letter and its combining marks, which HF composes (`e` + U+0301 -> `é`) and this map does not.
    """
    if not charsmap:
        return {}
    trie_size = int.from_bytes(charsmap[:4], "little")
    units = np.frombuffer(charsmap[4 : 4 + trie_size], np.uint32).astype(np.int64)
    strings = charsmap[4 + trie_size :]
    labels = units & ((1 << 31) | 0xFF)

    def offset(unit):
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    labels_tried = np.arange(1, 256)
    nodes, code_points, remaining = offset(units[:1]), np.zeros(1, np.int64), np.zeros(1, np.int64)
    found = {}
    for depth in range(4):  # one UTF-8 byte per level
        children = nodes[:, None] ^ labels_tried[None, :]
        parent, column = np.nonzero(labels[np.minimum(children, len(units) - 1)] == labels_tried[None, :])
        byte, child = labels_tried[column], children[parent, column]
        if depth == 0:
            length = np.select([byte < 0x80, byte >= 0xF0, byte >= 0xE0, byte >= 0xC0], [1, 4, 3, 2], 0)
            code_point = np.select(
                [byte < 0x80, byte >= 0xF0, byte >= 0xE0], [byte, byte & 7, byte & 15], byte & 31
            )
            valid, left = length > 0, length - 1
        else:
            valid = (byte & 0xC0) == 0x80
            code_point, left = code_points[parent] << 6 | (byte & 0x3F), remaining[parent] - 1
        child, code_point, left = child[valid], code_point[valid], left[valid]
        after = child ^ offset(units[child])
        whole = left == 0
        leaf = whole & ((units[child] >> 8) & 1 == 1)  # a whole character that is a key
        for point, node in zip(code_point[leaf], after[leaf]):
            start = int(units[node] & 0x7FFFFFFF)
            found[int(point)] = strings[start : strings.index(b"\0", start)].decode("utf-8")
        nodes, code_points, remaining = after[~whole], code_point[~whole], left[~whole]
    return found


@functools.lru_cache(maxsize=None)
def unicode_properties():
    """Python's NFKD of every code point it changes, and the combining marks (categories M*)."""
    decompositions, marks = {}, set()
    for code_point in range(0x110000):
        char = chr(code_point)
        if not unicodedata.is_normalized("NFKD", char):
            decompositions[code_point] = tuple(map(ord, unicodedata.normalize("NFKD", char)))
        if unicodedata.category(char)[0] == "M":
            marks.add(code_point)
    return decompositions, frozenset(marks)


class NormalizationTables(NamedTuple):
    """Code point -> `1 + index` of its replacement (0: unchanged), in two levels:
    `blocks[block_starts[cp >> 8] + (cp & 255)]`; replacement `i` is
    `values[row_splits[i]:row_splits[i + 1]]` (possibly empty: the character is dropped)."""

    block_starts: np.ndarray
    blocks: np.ndarray
    row_splits: np.ndarray
    values: np.ndarray


@functools.lru_cache(maxsize=4)
def normalization_tables(charsmap, lowercase, strip_accents):
    """HF's ALBERT normaliser after the quote replacement, composed per code point: NFKD and mark
    removal (`strip_accents`), lower-casing (Rust `to_lowercase`, measured) and the character map."""
    decompositions, marks = unicode_properties()
    character_map = {point: tuple(map(ord, text)) for point, text in precompiled_characters(charsmap).items()}
    lower = unicode_tables.LOWERCASE_MAP if lowercase else {}
    candidates = set(character_map) | set(lower)
    if strip_accents:
        candidates |= set(decompositions) | marks
    replacements = {}
    for code_point in sorted(candidates):
        result = (code_point,)
        if strip_accents:
            result = tuple(c for c in decompositions.get(code_point, result) if c not in marks)
        result = tuple(c for point in result for c in lower.get(point, (point,)))
        result = tuple(c for point in result for c in character_map.get(point, (point,)))
        if result != (code_point,):
            replacements[code_point] = result
    return tables_of(replacements)


def tables_of(replacements):
    """`NormalizationTables` of `{code point: tuple of code points}` (the code points not in it unchanged)."""
    index = np.zeros(0x110000, np.int32)
    index[list(replacements)] = np.arange(1, len(replacements) + 1, dtype=np.int32)
    blocks, block_ids = np.unique(index.reshape(-1, BLOCK_SIZE), axis=0, return_inverse=True)
    lengths = [len(values) for values in replacements.values()]
    return NormalizationTables(
        block_starts=(block_ids.reshape(-1) * BLOCK_SIZE).astype(np.int32),
        blocks=blocks.reshape(-1).astype(np.int32),
        row_splits=np.concatenate([[0, 0], np.cumsum(lengths)]).astype(np.int32),  # index 0: unused
        values=np.array([c for values in replacements.values() for c in values] + [0], np.int32),
    )
