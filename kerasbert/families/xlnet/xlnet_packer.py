"""XLNetPacker: ids of one or two texts -> `A <sep> <cls>` or `A <sep> B <sep> <cls>`, truncated, padded on the left."""

import keras
import tensorflow as tf

from kerasbert.tokenizers.bert_packer import BertPacker, concat_rows, filled_like

CLS_SEGMENT_ID = 2  # XLNet's segment of `<cls>` (HF `SEG_ID_CLS`)


def reversed_rows(rows):
    """Each row of a ragged `[batch, (tokens)]` in reverse order."""
    row_ids = rows.value_rowids()
    last = tf.gather(rows.row_limits() - 1, row_ids)
    first = tf.gather(rows.row_starts(), row_ids)
    flat = tf.range(tf.size(row_ids, out_type=row_ids.dtype))
    return rows.with_flat_values(tf.gather(rows.flat_values, last - (flat - first)))


def left_padded(rows, value, shape):
    """A ragged `[batch, (tokens)]` as a dense tensor of `shape` whose rows end at the right edge."""
    return tf.reverse(reversed_rows(rows).to_tensor(value, shape=shape), axis=[1])


@keras.saving.register_keras_serializable(package="kerasbert")
class XLNetPacker(BertPacker):
    """Packs tokenised segments into XLNet's inputs, as HF's `XLNetTokenizer` (transformers 5) does.

    One segment gives `A <sep> <cls>`, a pair `A <sep> B <sep> <cls>`: the special tokens at the end, with
    `segment_ids` 0 for `A <sep>`, 1 for `B <sep>` and 2 for `<cls>`. Padding goes on the left (XLNet's
    `padding_side="left"`), with segment id 0 as HF pads `token_type_ids`; `padding_mask` is True on real
    tokens. Truncation is `BertPacker`'s (HF `longest_first`), and so are the arguments, inputs and outputs.

    Args:
        cls_token_id, sep_token_id, pad_token_id: the ids of `<cls>`, `<sep>` and `<pad>` (`XLNetTokenizer` has
            them as attributes of the same names).
        sequence_length: the longest output, special tokens included; `None`: no truncation, pad to the longest
            in the batch.
        pad_to_sequence_length: pad every output to `sequence_length` (True) or only to the longest in the
            batch (False).

    Examples:
        >>> packer = XLNetPacker(cls_token_id=3, sep_token_id=4, pad_token_id=5, sequence_length=8)
        >>> outputs = packer((tf.ragged.constant([[7, 8]]), tf.ragged.constant([[11, 12]])))
        >>> outputs["token_ids"].numpy().tolist()
        [[5, 7, 8, 4, 11, 12, 4, 3]]
        >>> outputs["segment_ids"].numpy().tolist()
        [[0, 0, 0, 0, 1, 1, 1, 2]]
    """

    cls_last = True  # `A <sep> B <sep> <cls>`: what code that packs pairs itself (QA windows) needs to know
    cls_segment_id = CLS_SEGMENT_ID

    def _pack(self, segments):
        token_ids = concat_rows([*[part for segment in segments for part in (segment, self.sep_token_id)],
                                 self.cls_token_id])
        segment_ids = concat_rows([*[part for index, segment in enumerate(segments)
                                     for part in (filled_like(segment, index), index)], CLS_SEGMENT_ID])
        shape = [None, self.sequence_length if self.pad_to_sequence_length else None]
        return {
            "token_ids": left_padded(token_ids, self.pad_token_id, shape),
            "segment_ids": left_padded(segment_ids, 0, shape),
            "padding_mask": left_padded(filled_like(token_ids, True), False, shape),
        }
