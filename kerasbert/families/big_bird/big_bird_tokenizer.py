"""BigBirdTokenizer: BigBird's SentencePiece tokenisation with the ids and offsets of HF's `BigBirdTokenizer`
(transformers 5, from `spiece.model` or the `tokenizer.json` it writes).

HF does not run SentencePiece's normaliser (the model's character map is unused). It cuts the special pieces
written in the text out, then on the rest: makes each run of two or more spaces one `▁`, turns every other
space into `▁`, splits before each `▁`, puts `▁` before the first word, and runs the unigram model on each
word. Only the space (U+0020) breaks words: a tab or a newline stays in its word, and a space before a special
piece or at the end is a `▁` of its own. ALBERT's TensorFlow pipeline (`AlbertTokenizer`) does the same given
these rules: no quote pairs, the space as `▁` in the per-character table, all but the last space of a run
dropped.
"""

import functools

import keras
import tensorflow as tf

from kerasbert.families.albert.albert_tokenizer import AlbertTokenizer
from kerasbert.families.albert.sentencepiece_files import tables_of
from kerasbert.tokenizers.tokenizer_json import METASPACE, big_bird_settings

SPACE, WORD_START = 0x20, ord(METASPACE)


@functools.lru_cache(maxsize=1)
def big_bird_tables():
    """The space as `▁`, every other code point unchanged."""
    return tables_of({SPACE: (WORD_START,)})


@keras.saving.register_keras_serializable(package="kerasbert")
class BigBirdTokenizer(AlbertTokenizer):
    """Splits text into BigBird SentencePiece ids, as HF's `BigBirdTokenizer` (transformers 5) does.

    The special pieces written in the text (`[CLS]`, `[SEP]`, `[MASK]`, `<pad>`, `<unk>`, `<s>`, `</s>` and the
    model's other control and user-defined pieces) keep their ids. No `[CLS]`/`[SEP]` is added: `BertPacker`
    packs `[CLS] A [SEP] B [SEP]` with BERT's segment ids, as HF's template. BigBird is cased and keeps accents.
    Known difference: a `▁` written in the text right after a space.

    Args:
        proto: the SentencePiece model: the path to `spiece.model`, its folder, its bytes, or a `tokenizer.json`
            (its path, or a folder holding it and no `spiece.model`); None to set it later (`set_proto`).
        special_tokens: the special pieces that differ from `default_special_tokens`, by name.

    Examples:
        >>> tokenizer = BigBirdTokenizer("bigbird-roberta-base")  # doctest: +SKIP
        >>> tokenizer(["The cat [MASK] on the mat."])  # doctest: +SKIP
    """

    default_special_tokens = {"unk_token": "<unk>", "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "<pad>",
                              "mask_token": "[MASK]"}
    config_names = ()
    families = ("big_bird",)
    proto_file = "spiece.model"
    quote_characters = ()
    json_pipeline = staticmethod(big_bird_settings)
    score_step = 2.0 ** -12  # equal paths (`---`: `-` `--` or `--` `-`) tie exactly in HF: as DebertaV2Tokenizer

    def __init__(self, proto=None, special_tokens=None, **kwargs):
        for name in AlbertTokenizer.config_names:  # a config may name them: BigBird's are fixed
            kwargs.pop(name, None)
        super().__init__(proto, do_lower_case=False, keep_accents=True, legacy_added_tokens=False,
                         special_tokens=special_tokens, **kwargs)

    def normalization(self, model):
        return big_bird_tables()

    def dropped_spaces(self, normalized, rows, special):
        """The spaces of a run but its last: the run is one `▁` (HF's `Replace(' {2,}', '▁')`)."""
        space = (normalized == WORD_START) & ~special
        next_rows = tf.concat([rows[1:], tf.fill([1], tf.cast(-1, rows.dtype))], 0)
        next_space = tf.concat([space[1:], [False]], 0) & (next_rows == rows)
        return space & next_space

    def hf_tokenizer_config(self):
        """The `tokenizer_config.json` settings HF's `BigBirdTokenizer` reads."""
        return {"tokenizer_class": "BigBirdTokenizer", **self.special_tokens()}
