"""DebertaV2Tokenizer: DeBERTa-v2/v3's SentencePiece tokenisation with the ids and offsets of HF's
`DebertaV2Tokenizer` (transformers 5, from `spm.model` or its `tokenizer.json`).

HF does not run SentencePiece's normaliser (the model's character map is unused). It cuts the special pieces
written in the text out, then on the rest: optionally lower-cases, makes every run of two or more whitespace
characters and every tab, newline or carriage return one space, NFC, strips whitespace at the end, turns
spaces into `▁` (splitting there), puts `▁` before the first word, and runs the unigram model on each word.
ALBERT's TensorFlow pipeline (`AlbertTokenizer`) does the same given these rules: no quote pairs, NFC of
each character alone and lower-casing as the per-character table, those spaces as the word breaks, and a
word's `▁` spanning the whitespace it stands for.
"""

import functools
import unicodedata

import keras
import tensorflow as tf

from kerasbert.families.albert.albert_tokenizer import AlbertTokenizer
from kerasbert.families.albert.code_point_ops import is_whitespace
from kerasbert.families.albert.sentencepiece_files import tables_of
from kerasbert.tokenizers import unicode_tables
from kerasbert.tokenizers.tokenizer_json import deberta_settings
from kerasbert.tokenizers.word_splitter import previous

BREAKING_SPACES = (0x20, 0x09, 0x0A, 0x0D)  # a space, tab, newline or carriage return alone breaks words


@functools.lru_cache(maxsize=2)
def deberta_tables(lowercase):
    """HF's Lowercase (Rust `to_lowercase`) then NFC, on each code point alone (NFC's singletons, such as
    the Ångström sign -> `Å`; a letter and the combining marks after it are not composed here)."""
    lower = unicode_tables.LOWERCASE_MAP if lowercase else {}
    changed = {point for point in range(0x110000) if not unicodedata.is_normalized("NFC", chr(point))}
    replacements = {}
    for code_point in sorted(changed | set(lower)):
        text = unicodedata.normalize("NFC", "".join(map(chr, lower.get(code_point, (code_point,)))))
        if text != chr(code_point):
            replacements[code_point] = tuple(map(ord, text))
    return tables_of(replacements)


@keras.saving.register_keras_serializable(package="kerasbert")
class DebertaV2Tokenizer(AlbertTokenizer):
    """Splits text into DeBERTa-v2/v3 SentencePiece ids, as HF's `DebertaV2Tokenizer` (transformers 5) does.

    The special pieces written in the text (`[CLS]`, `[SEP]`, `[PAD]`, `[UNK]`, `[MASK]`, and the model's
    other control and user-defined pieces) keep their ids; `[MASK]`, which DeBERTa-v3's `spm.model` lacks, gets
    the id after the model's last piece, as in HF. No `[CLS]`/`[SEP]` is added: `BertPacker` packs
    `[CLS] A [SEP] B [SEP]` with BERT's segment ids. Known difference: a letter followed by combining marks is
    not composed (HF's NFC makes `e` + U+0301 one `é`); a `▁` written in the text right after whitespace.

    Args:
        proto: the SentencePiece model: the path to `spm.model`, its folder, its bytes, or a `tokenizer.json`
            (its path, or a folder holding it and no `spm.model`); None to set it later (`set_proto`).
        do_lower_case: lower-case the text (HF's `do_lower_case`; DeBERTa-v3 is cased).
        special_tokens: the special pieces that differ from `default_special_tokens`, by name.

    Examples:
        >>> tokenizer = DebertaV2Tokenizer("deberta-v3-base")  # doctest: +SKIP
        >>> tokenizer(["The cat [MASK] on the mat."])  # doctest: +SKIP
    """

    default_special_tokens = {"unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                              "mask_token": "[MASK]"}
    config_names = ("do_lower_case",)
    families = ("deberta-v2",)
    proto_file = "spm.model"
    quote_characters = ()
    space_in_word_start = True
    # Pieces repeat in DeBERTa's words (`-----` is `-` `--` `--` or `--` `-` `--`): equal paths tie exactly
    # in HF, and must here too (sums of a word's scores stay under 2 ** 11, so float32 holds them exactly).
    score_step = 2.0 ** -12
    json_pipeline = staticmethod(deberta_settings)

    def __init__(self, proto=None, do_lower_case=False, special_tokens=None, **kwargs):
        super().__init__(proto, do_lower_case=do_lower_case, keep_accents=True, legacy_added_tokens=False,
                         special_tokens=special_tokens, **kwargs)

    def completed(self, proto, model):
        """The model with the mask token appended as a control piece when it lacks one (DeBERTa-v3's)."""
        if any(piece.piece == self.mask_token for piece in model.pieces):
            return proto, model
        model = type(model).FromString(proto)
        model.pieces.add(piece=self.mask_token, score=0.0, type=model.SentencePiece.CONTROL)
        return model.SerializeToString(), model

    def normalization(self, model):
        return deberta_tables(self.do_lower_case)

    def dropped_spaces(self, normalized, rows, special):
        """Whitespace that breaks words: a space, tab, newline or carriage return, a run of two or more
        whitespace characters, and whitespace alone before a special piece or the end (HF's right strip).
        Other whitespace alone (a no-break space) stays in its word."""
        space = is_whitespace(normalized) & ~special
        same_row_before = rows == previous(rows, -1)
        next_rows = tf.concat([rows[1:], tf.fill([1], tf.cast(-1, rows.dtype))], 0)
        next_space = tf.concat([space[1:], [False]], 0) & (next_rows == rows)
        at_end = (next_rows != rows) | tf.concat([special[1:], [False]], 0)
        breaking = tf.reduce_any([normalized == c for c in BREAKING_SPACES], axis=0)
        return space & (breaking | (previous(space, False) & same_row_before) | next_space | at_end)

    def hf_tokenizer_config(self):
        """The `tokenizer_config.json` settings HF's `DebertaV2Tokenizer` reads."""
        return {"tokenizer_class": "DebertaV2Tokenizer", "do_lower_case": self.do_lower_case,
                "split_by_punct": False, **self.special_tokens()}
