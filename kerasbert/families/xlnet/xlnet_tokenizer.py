"""XLNetTokenizer: XLNet's SentencePiece tokenisation with the ids and offsets of HF's `XLNetTokenizer`."""

import keras

from kerasbert.families.albert.albert_tokenizer import AlbertTokenizer
from kerasbert.families.xlnet.xlnet_packer import XLNetPacker


@keras.saving.register_keras_serializable(package="kerasbert")
class XLNetTokenizer(AlbertTokenizer):
    """Splits text into XLNet SentencePiece ids, exactly as HF's `XLNetTokenizer` (transformers 5, built from an
    `spiece.model`) does.

    HF runs ALBERT's pipeline on XLNet's model (see `AlbertTokenizer`): the model's special and user-defined
    pieces written in the text (`"<mask>"`, `"<eop>"`, `"."`, ...) cut out first, two backquotes or apostrophes
    made `"`, NFKD with the accents always stripped, the model's character map, whitespace splitting, a `▁`
    before every word, the unigram model on each. XLNet is cased (`do_lower_case=False`). No `<sep>`/`<cls>` is
    added: `XLNetPacker` puts them at the end (`A <sep> B <sep> <cls>`) and pads on the left.

    Args:
        proto: the SentencePiece model: the path to `spiece.model`, its folder, or its bytes; None to set it
            later (`set_proto`).
        do_lower_case: lower-case the text (HF's `do_lower_case`; XLNet's checkpoints are cased).
        special_tokens: the special pieces that differ from `default_special_tokens`, by name.

    Examples:
        >>> tokenizer = XLNetTokenizer("xlnet-base-cased/spiece.model")  # doctest: +SKIP
        >>> preprocessor = BertPreprocessor(tokenizer, sequence_length=16)  # doctest: +SKIP
        >>> preprocessor((["The cat sat."], ["On the mat."]))["segment_ids"]  # doctest: +SKIP
    """

    default_special_tokens = {"unk_token": "<unk>", "cls_token": "<cls>", "sep_token": "<sep>", "pad_token": "<pad>",
                              "mask_token": "<mask>"}
    config_names = ("do_lower_case",)
    families = ("xlnet",)
    packer_class = XLNetPacker  # `A <sep> B <sep> <cls>`, padded on the left

    def __init__(self, proto=None, do_lower_case=False, special_tokens=None, **kwargs):
        super().__init__(proto, do_lower_case=do_lower_case, keep_accents=False, legacy_added_tokens=False,
                         special_tokens=special_tokens, **kwargs)

    def hf_tokenizer_config(self):
        """The `tokenizer_config.json` settings HF's `XLNetTokenizer` reads."""
        return {"tokenizer_class": "XLNetTokenizer", "do_lower_case": self.do_lower_case, "remove_space": True,
                "keep_accents": False, "padding_side": "left", **self.special_tokens()}
