"""Texts read in Rust: HF `tokenizers` tokenises and packs as a kerasbert WordPiece tokenizer and `BertPacker` do
in TensorFlow, with the same ids, without running a TensorFlow op (one 180-token text: ~0.1 ms against ~1.3 ms of
the traced TensorFlow reading). ONNX folders read their texts with it (`load_onnx_task`), where the model itself
takes a few milliseconds.

Examples:
    >>> reader = NativeReader.of(classifier.preprocessor)  # None where no Rust equivalent exists
    >>> reader(["a lovely film"])["features"]["token_ids"].to_list()
    [[101, 1037, 8403, 2143, 102]]
"""

import itertools

import numpy as np

from kerasbert.data.output_rows import ragged_from_rows
from kerasbert.data.ragged_rows import RaggedRows
from kerasbert.tokenizers.bert_packer import BertPacker


def rust_tokenizer_of(tokenizer):
    """`tokenizer`'s HF `tokenizers` equivalent (`rust_tokenizer()`), or None where it has none or `tokenizers` is
    not installed."""
    try:
        import tokenizers  # noqa: F401
    except ImportError:
        return None
    return tokenizer.rust_tokenizer() if hasattr(tokenizer, "rust_tokenizer") else None


class NativeReader:
    """Reads texts (or pairs) into ragged `token_ids` / `segment_ids` and each row's word pieces before
    truncation, equal to the preprocessor's tokenizer and packer, with HF `tokenizers`.

    `NativeReader.of(preprocessor)` gives one where the tokenizer has a Rust equivalent (`rust_tokenizer()`:
    WordPiece) and packs with `BertPacker` itself, and `tokenizers` is installed; None otherwise.
    """

    def __init__(self, preprocessor):
        self.preprocessor = preprocessor
        self.rust = preprocessor.tokenizer.rust_tokenizer()  # tokenises whole texts
        self.packing = preprocessor.tokenizer.rust_tokenizer()  # truncates and adds [CLS] / [SEP]
        self.packing_for = None

    @classmethod
    def of(cls, preprocessor):
        if type(preprocessor.packer) is not BertPacker or rust_tokenizer_of(preprocessor.tokenizer) is None:
            return None
        return cls(preprocessor)

    def __call__(self, *texts):
        """One list of texts, or two for pairs -> `{"features": {"token_ids", "segment_ids"}, "pieces"}`, the
        features as `tf.RaggedTensor`s."""
        read = self.read_rows(*texts)
        rows = read["features"]
        return {"features": ragged_from_rows({name: part.flat for name, part in rows.items()},
                                             rows["token_ids"].lengths), "pieces": read["pieces"]}

    def read_rows(self, *texts):
        """As calling the reader, the features as numpy `RaggedRows`: no TensorFlow op (inference batches)."""
        self._follow(self.preprocessor.packer)
        segments = [self.rust.encode_batch_fast([str(text) for text in part], add_special_tokens=False)
                    for part in texts]
        pieces = np.sum([[len(encoding.ids) for encoding in part] for part in segments], axis=0, dtype=np.int64)
        packed = [self.packing.post_process(*row, add_special_tokens=True) for row in zip(*segments)]
        lengths = np.fromiter((len(encoding.ids) for encoding in packed), np.int64, len(packed))
        features = {name: RaggedRows(np.fromiter(itertools.chain.from_iterable(getattr(row, field) for row in packed),
                                                 np.int32, int(lengths.sum())), lengths)
                    for name, field in (("token_ids", "ids"), ("segment_ids", "type_ids"))}
        return {"features": features, "pieces": pieces}

    def _follow(self, packer):
        """Pack as `packer` does now: `[CLS] A [SEP] (B [SEP])`, truncated longest first to its length."""
        if self.packing_for == (packer.cls_token_id, packer.sep_token_id, packer.sequence_length):
            return
        from tokenizers.processors import TemplateProcessing

        self.packing.post_processor = TemplateProcessing(
            single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
            special_tokens=[("[CLS]", packer.cls_token_id), ("[SEP]", packer.sep_token_id)])
        if packer.sequence_length is None:
            self.packing.no_truncation()
        else:
            self.packing.enable_truncation(packer.sequence_length, strategy="longest_first")
        self.packing_for = (packer.cls_token_id, packer.sep_token_id, packer.sequence_length)
