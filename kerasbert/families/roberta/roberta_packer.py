"""RobertaPacker: ids of one or two texts -> `<s> A </s>` or `<s> A </s></s> B </s>`, truncated and padded;
`SingleSeparatorPacker`: the same with one separator in a pair (ModernBERT's `[CLS] A [SEP] B [SEP]`)."""

import keras
import tensorflow as tf

from kerasbert.tokenizers.bert_packer import BertPacker, concat_rows, filled_like


@keras.saving.register_keras_serializable(package="kerasbert")
class RobertaPacker(BertPacker):
    """Packs tokenised segments into RoBERTa's inputs, as HF's `RobertaTokenizerFast` does.

    One segment gives `<s> A </s>`, a pair `<s> A </s></s> B </s>`; `segment_ids` are all 0 (RoBERTa
    has no segment embedding to speak of) and `padding_mask` is True on real tokens. Too long inputs
    are truncated as HF's `truncation="longest_first"`: a single segment loses its end; of a pair, the
    longer segment is cut first, down to an even split when both are long. The arguments, inputs and
    outputs are `BertPacker`'s.

    Args:
        cls_token_id, sep_token_id, pad_token_id: the ids of `<s>`, `</s>` and `<pad>`
            (`RobertaTokenizer` has them as attributes of the same names).
        sequence_length: the longest output, special tokens included (at least 4 for pairs);
            `None`: no truncation, pad to the longest in the batch.
        pad_to_sequence_length: pad every output to `sequence_length` (True) or only to the longest
            in the batch (False).

    Examples:
        >>> packer = RobertaPacker(cls_token_id=0, sep_token_id=2, pad_token_id=1, sequence_length=9)
        >>> outputs = packer((tf.ragged.constant([[7, 8, 9, 10]]), tf.ragged.constant([[11, 12]])))
        >>> outputs["token_ids"].numpy().tolist()
        [[0, 7, 8, 9, 2, 2, 11, 12, 2]]
    """

    pair_separators = 2  # `</s></s>`
    second_segment_id = 0

    def num_special_tokens(self, num_segments):
        """`<s>` and `</s>` around each segment (a pair: `<s> A </s></s> B </s>`)."""
        return 1 + num_segments + (self.pair_separators - 1) * (num_segments - 1)

    def _pack(self, segments):
        pair = [*[self.sep_token_id] * self.pair_separators, segments[1]] if len(segments) == 2 else []
        token_ids = concat_rows([self.cls_token_id, segments[0], *pair, self.sep_token_id])
        shape = [None, self.sequence_length if self.pad_to_sequence_length else None]
        padding_mask = filled_like(token_ids, True).to_tensor(False, shape=shape)
        return {
            "token_ids": token_ids.to_tensor(self.pad_token_id, shape=shape),
            "segment_ids": tf.zeros_like(padding_mask, tf.int32),
            "padding_mask": padding_mask,
        }


@keras.saving.register_keras_serializable(package="kerasbert")
class SingleSeparatorPacker(RobertaPacker):
    """`RobertaPacker` with one separator between a pair's texts: `[CLS] A [SEP] B [SEP]`, as ModernBERT's
    `tokenizer.json` template packs them (`RobertaTokenizer(pair_separators=1)` packs with it).

    Examples:
        >>> packer = SingleSeparatorPacker(cls_token_id=0, sep_token_id=2, pad_token_id=1, sequence_length=9)
        >>> packer((tf.ragged.constant([[7, 8, 9, 10]]), tf.ragged.constant([[11, 12]])))["token_ids"].numpy().tolist()
        [[0, 7, 8, 9, 10, 2, 11, 12, 2]]
    """

    pair_separators = 1
