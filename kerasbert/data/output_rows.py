"""Model outputs as rows: put back in input order, concatenated across batches of other lengths, or empty.

Examples:
    >>> in_input_order({"logits": np.array([[0.2], [0.9]])}, np.array([1, 0]))["logits"].tolist()
    [[0.9], [0.2]]
"""

import keras
import numpy as np
import tensorflow as tf
from tensorflow.python.ops.ragged.row_partition import RowPartition, _row_partition_factory_key


def empty_like_output(output):
    """A numpy array of no rows shaped like the symbolic model `output` (unknown sizes 0), for an empty predict."""
    return np.zeros((0, *[size or 0 for size in output.shape[1:]]), output.dtype)


def ragged_from_padded(packed):
    """Dense packer outputs -> ragged `token_ids`/`segment_ids` (padding removed, on either side: XLNet pads on
    the left)."""
    real = tf.cast(packed["padding_mask"], tf.bool)
    return {key: tf.ragged.boolean_mask(packed[key], real) for key in ("token_ids", "segment_ids")}


def traced_with_row_lengths(function, input_signature):
    """`tf.function(function, input_signature)`, traced at once and called as its concrete function (the
    `tf.function`'s own dispatch cost ~0.4 ms a call), whose ragged outputs come back with their row lengths computed
    in the graph and kept: a ragged tensor a `tf.function` returns otherwise recomputes them with eager ops (~0.25 ms)
    at every `row_lengths()`, and rebuilding it around them costs as much again (~2 ms of a one-text predict).

    Examples:
        >>> split = traced_with_row_lengths(tf.strings.bytes_split, [tf.TensorSpec([None], tf.string)])
        >>> split(tf.constant(["ab", "c"])).row_lengths().numpy().tolist()
        [2, 1]
    """
    def with_row_lengths(*args):
        outputs = function(*args)
        return outputs, [part.row_lengths() for part in tf.nest.flatten(outputs) if _is_ragged_rows(part)]

    traced = tf.function(with_row_lengths, input_signature=input_signature, autograph=False).get_concrete_function()

    def call(*args):
        outputs, row_lengths = traced(*args)
        row_lengths = iter(row_lengths)  # in `tf.nest` order, as `map_structure` visits the leaves
        return tf.nest.map_structure(
            lambda part: _with_row_lengths(part, next(row_lengths)) if _is_ragged_rows(part) else part, outputs)

    return call


def ragged_from_rows(flats, row_lengths):
    """`{name: tf.RaggedTensor}` of rows given as numpy: each name's `flat` values, all cut by the same
    `row_lengths` (one row partition), built without eager ops.

    Examples:
        >>> ragged_from_rows({"ids": np.array([7, 8, 9], np.int32)}, np.array([2, 1]))["ids"].to_list()
        [[7, 8], [9]]
    """
    splits = np.concatenate([[0], np.cumsum(row_lengths)]).astype(np.int64)
    partition = RowPartition(row_splits=tf.constant(splits), row_lengths=tf.constant(row_lengths, tf.int64),
                             internal=_row_partition_factory_key)
    return {name: tf.RaggedTensor._from_row_partition(tf.constant(flat), partition, validate=False)
            for name, flat in flats.items()}


def _is_ragged_rows(part):
    return isinstance(part, tf.RaggedTensor) and part.ragged_rank == 1


def _with_row_lengths(ragged, row_lengths):
    """`ragged` with its row lengths kept (TensorFlow's own constructor, as `RowPartition.from_row_lengths` calls it,
    with splits and lengths both known)."""
    partition = RowPartition(row_splits=ragged.row_splits, row_lengths=row_lengths, internal=_row_partition_factory_key)
    return tf.RaggedTensor._from_row_partition(ragged.values, partition, validate=False)


def concatenate_padded(batches):
    """Per-batch output structures -> one structure of arrays, each leaf zero-padded along its token
    axes to the longest batch (batches of another length differ in axis 1), then concatenated.

    Examples:
        >>> concatenate_padded([np.ones((2, 3)), np.ones((1, 5))]).shape
        (3, 5)
    """
    def concatenate(*arrays):
        arrays = [np.asarray(array) for array in arrays]
        if len(arrays) == 1:
            return arrays[0]
        widest = np.max([array.shape for array in arrays], axis=0)
        padded = [np.pad(array, [(0, 0)] + [(0, int(w - n)) for w, n in zip(widest[1:], array.shape[1:])])
                  for array in arrays]
        return np.concatenate(padded)

    return keras.tree.map_structure(concatenate, *batches)


def in_input_order(outputs, order):
    """Undo `order` on every array of `outputs`: row `order[i]` of the result is row `i` of the input.

    Examples:
        >>> in_input_order({"logits": np.array([[0.2], [0.9]])}, np.array([1, 0]))["logits"].tolist()
        [[0.9], [0.2]]
    """
    if isinstance(outputs, dict):
        return {key: in_input_order(value, order) for key, value in outputs.items()}
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(in_input_order(value, order) for value in outputs)
    restored = np.empty_like(outputs)
    restored[order] = outputs
    return restored
