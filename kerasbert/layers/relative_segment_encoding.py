"""XLNet's relative segment encoding: whether two positions are in the same segment (Yang et al. 2019)."""

from keras import ops


def relative_segment_encoding(segment_ids, memory_length=0):
    """`[batch, T, memory_length + T, 2]` float32 one-hot of "query i and key j are in different segments" (HF
    `XLNetModel`'s `seg_mat`): memory positions count as segment 0, as in HF.

    Examples:
        >>> encoding = relative_segment_encoding(ops.array([[0, 0, 1]]))
        >>> ops.convert_to_numpy(encoding[0, :, :, 1]).tolist()
        [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    """
    segment_ids = ops.cast(segment_ids, "int32")
    key_segments = segment_ids
    if memory_length:
        memory_segments = ops.repeat(ops.zeros_like(segment_ids[:, :1]), memory_length, axis=1)
        key_segments = ops.concatenate([memory_segments, segment_ids], axis=1)
    different = ops.cast(ops.not_equal(segment_ids[:, :, None], key_segments[:, None, :]), "int32")
    return ops.one_hot(different, 2, dtype="float32")
