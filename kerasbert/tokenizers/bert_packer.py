"""BertPacker: token ids of one or two texts -> `[CLS] A [SEP] (B [SEP])`, truncated and padded."""

import keras
import tensorflow as tf

from kerasbert.arguments import check_count

# What a packer returns and a backbone takes, in that order.
PACKED_INPUTS = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable(package="kerasbert")
class BertPacker(keras.layers.Layer):
    """Packs tokenised segments into the BERT backbone's inputs.

    One segment gives `[CLS] A [SEP]`, a pair `[CLS] A [SEP] B [SEP]`, with `segment_ids` 0 for
    `[CLS] A [SEP]` and 1 for `B [SEP]`, and `padding_mask` True on real tokens. Too long inputs are
    truncated as HF's `truncation="longest_first"`: a single segment loses its end; of a pair, the
    longer segment is cut first, down to an even split when both are long (the second segment
    keeps the odd token, as in HF's fast tokenizers).

    Args:
        cls_token_id, sep_token_id, pad_token_id: the ids of `[CLS]`, `[SEP]` and `[PAD]`
            (`BertTokenizer` has them as attributes of the same names).
        sequence_length: the longest output, special tokens included; longer inputs are
            truncated. `None`: no truncation, pad to the longest in the batch.
        pad_to_sequence_length: pad every output to `sequence_length` (True) or only to the
            longest in the batch (False, dynamic padding).

    Call with a `tf.RaggedTensor` of ids `[batch, (tokens)]` (or one 1-D row), or a tuple of two
    of them for pairs. Returns a dict of `token_ids` and `segment_ids` (int32) and `padding_mask`
    (bool).

    Examples:
        >>> packer = BertPacker(cls_token_id=101, sep_token_id=102, pad_token_id=0, sequence_length=8)
        >>> outputs = packer((tf.ragged.constant([[7, 8, 9, 10]]), tf.ragged.constant([[11, 12, 13, 14]])))
        >>> outputs["token_ids"].numpy().tolist()
        [[101, 7, 8, 102, 11, 12, 13, 102]]
        >>> outputs["segment_ids"].numpy().tolist()
        [[0, 0, 0, 0, 1, 1, 1, 1]]
    """

    def __init__(
        self,
        cls_token_id,
        sep_token_id,
        pad_token_id,
        sequence_length=512,
        pad_to_sequence_length=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        self.built = True
        self.cls_token_id = int(cls_token_id)
        self.sep_token_id = int(sep_token_id)
        self.pad_token_id = int(pad_token_id)
        self.sequence_length = check_sequence_length(sequence_length)
        self.pad_to_sequence_length = bool(pad_to_sequence_length)

    def call(self, inputs):
        segments = list(inputs) if isinstance(inputs, (tuple, list)) else [inputs]
        if len(segments) not in (1, 2):
            raise ValueError(f"{type(self).__name__} packs one segment or a pair, got {len(segments)} segments.")
        segments = [to_ragged_ids(segment) for segment in segments]
        unbatched = segments[0].shape.rank == 1
        if unbatched:
            segments = [tf.RaggedTensor.from_tensor(segment[tf.newaxis]) for segment in segments]
        if any(segment.shape.rank != 2 for segment in segments):
            raise ValueError(f"{type(self).__name__} takes ids of shape [batch, (tokens)] or one row [(tokens)].")
        if self.sequence_length is not None:
            special_tokens = self.num_special_tokens(len(segments))
            if self.sequence_length < special_tokens:
                raise ValueError(f"{type(self).__name__} needs sequence_length of at least {special_tokens} for "
                                 f"{len(segments)} segment(s), got {self.sequence_length}.")
            segments = truncate_longest_first(segments, self.sequence_length - special_tokens)
        outputs = self._pack(segments)
        return {name: value[0] for name, value in outputs.items()} if unbatched else outputs

    # A pair's layout, for code that packs pairs itself (QA windows): separators between the segments, the
    # second segment's segment id, and whether `[CLS]` ends the input (XLNet) with its own segment id.
    pair_separators = 1
    second_segment_id = 1
    cls_last = False
    cls_segment_id = 0

    def num_special_tokens(self, num_segments):
        """`[CLS]` and one `[SEP]` per segment."""
        return num_segments + 1

    def _pack(self, segments):
        token_ids = concat_rows([self.cls_token_id, *[part for segment in segments
                                                      for part in (segment, self.sep_token_id)]])
        segment_ids = concat_rows([0, *[part for index, segment in enumerate(segments)
                                        for part in (filled_like(segment, index), index)]])
        shape = [None, self.sequence_length if self.pad_to_sequence_length else None]
        return {
            "token_ids": token_ids.to_tensor(self.pad_token_id, shape=shape),
            "segment_ids": segment_ids.to_tensor(0, shape=shape),
            "padding_mask": filled_like(token_ids, True).to_tensor(False, shape=shape),
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "cls_token_id": self.cls_token_id,
                "sep_token_id": self.sep_token_id,
                "pad_token_id": self.pad_token_id,
                "sequence_length": self.sequence_length,
                "pad_to_sequence_length": self.pad_to_sequence_length,
            }
        )
        return config


def check_sequence_length(sequence_length):
    """`sequence_length` if it is None or an int >= 3; a ValueError naming the rule otherwise."""
    if sequence_length is not None:
        check_count("sequence_length", sequence_length, 3, hint=" [CLS] A [SEP] B [SEP] needs 3 places beside the "
                    "text; None packs without truncation.")
    return sequence_length


def to_ragged_ids(ids):
    """int32 ids: ragged `[batch, (tokens)]`, or a dense 1-D row. Dense 2-D rows are taken whole."""
    if isinstance(ids, tf.RaggedTensor):
        return tf.cast(ids, tf.int32)
    if isinstance(ids, tf.Tensor):
        ids = tf.cast(ids, tf.int32)
        return tf.RaggedTensor.from_tensor(ids) if ids.shape.rank == 2 else ids
    if isinstance(ids, (list, tuple)):
        return tf.ragged.constant(ids, dtype=tf.int32)
    raise TypeError(
        f"BertPacker takes token ids (a tf.RaggedTensor or nested lists), got {type(ids).__name__}."
    )


def truncate_longest_first(segments, budget):
    """Keeps at most `budget` tokens per row in all, as HF `truncation="longest_first"` does.

    HF (tokenizers, `truncate_encodings`): with `short`/`long` the two lengths, the long one is cut to
    `max(short, budget - short)`; if that still does not fit, they get `budget // 2` and
    `budget - budget // 2` tokens, the first segment taking the smaller share on a tie.
    """
    lengths = [segment.row_lengths() for segment in segments]
    if len(segments) == 1:
        keep = [tf.minimum(lengths[0], budget)]
    else:
        swap = lengths[0] > lengths[1]
        short, long = tf.minimum(*lengths), tf.maximum(*lengths)
        keep_long = tf.where(short > budget, short, tf.maximum(short, budget - short))
        keep_short = short
        too_long = keep_short + keep_long > budget
        keep_short = tf.where(too_long, tf.cast(budget // 2, short.dtype), keep_short)
        keep_long = tf.where(too_long, tf.cast(budget - budget // 2, long.dtype), keep_long)
        keep = [tf.where(swap, keep_long, keep_short), tf.where(swap, keep_short, keep_long)]
    return [keep_first(segment, n) for segment, n in zip(segments, keep)]


def keep_first(segment, counts):
    """The first `counts[i]` tokens of each row `i` of a ragged `[batch, (tokens), ...]` (negative counts keep none).

    Examples:
        >>> keep_first(tf.ragged.constant([[7, 8, 9], [4]]), tf.constant([2, 2])).to_list()
        [[7, 8], [4]]
    """
    starts = segment.row_starts()
    kept = tf.maximum(tf.minimum(tf.cast(counts, starts.dtype), segment.row_lengths()), 0)
    indices = tf.ragged.range(starts, starts + kept)  # where each kept token sits in `segment.values`
    return indices.with_flat_values(tf.gather(segment.values, indices.flat_values))


def concat_rows(pieces):
    """Row `i` of each piece, joined end to end: `tf.concat(pieces, axis=1)` of ragged `[batch, (tokens)]` pieces,
    built from one ragged range and one gather (a ragged `tf.concat` of BERT's five pair pieces traces 264 ops, 28 of
    them asserts and conditionals, against 126). An int piece is that value once in every row (a special token); the
    pieces have the same number of rows, at least one is ragged.

    Examples:
        >>> concat_rows([101, tf.ragged.constant([[7, 8], [9]]), 102]).to_list()
        [[101, 7, 8, 102], [101, 9, 102]]
    """
    like = next(piece for piece in pieces if isinstance(piece, tf.RaggedTensor))
    rows, splits_dtype = like.nrows(), like.row_splits.dtype
    values, starts, lengths = [], [], []
    offset = tf.zeros([], splits_dtype)  # where the piece's values start in the concatenation of all pieces' values
    for piece in pieces:
        if isinstance(piece, tf.RaggedTensor):
            values.append(piece.values)
            starts.append(offset + piece.row_starts())
            lengths.append(piece.row_lengths())
        else:
            values.append(tf.fill([rows], tf.constant(piece, like.dtype)))
            starts.append(offset + tf.range(rows, dtype=splits_dtype))
            lengths.append(tf.ones([rows], splits_dtype))
        offset += tf.shape(values[-1], out_type=splits_dtype)[0]
    lengths = tf.stack(lengths, axis=1)
    starts = tf.reshape(tf.stack(starts, axis=1), [-1])  # row by row, piece by piece
    indices = tf.ragged.range(starts, starts + tf.reshape(lengths, [-1])).flat_values
    return tf.RaggedTensor.from_row_lengths(tf.gather(tf.concat(values, 0), indices), tf.reduce_sum(lengths, 1),
                                            validate=False)


def filled_like(rows, value):
    """A ragged tensor shaped as `rows` holding `value` everywhere (its dtype)."""
    return rows.with_flat_values(tf.fill(tf.shape(rows.flat_values), value))
