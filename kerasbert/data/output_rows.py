"""Model outputs as rows: put back in input order, concatenated across batches of other lengths, or empty.

Examples:
    >>> in_input_order({"logits": np.array([[0.2], [0.9]])}, np.array([1, 0]))["logits"].tolist()
    [[0.9], [0.2]]
"""

import keras
import numpy as np
import tensorflow as tf


def empty_like_output(output):
    """A numpy array of no rows shaped like the symbolic model `output` (unknown sizes 0), for an empty predict."""
    return np.zeros((0, *[size or 0 for size in output.shape[1:]]), output.dtype)


def ragged_from_padded(packed):
    """Dense packer outputs -> ragged `token_ids`/`segment_ids` (padding removed, on either side: XLNet pads on
    the left)."""
    real = tf.cast(packed["padding_mask"], tf.bool)
    return {key: tf.ragged.boolean_mask(packed[key], real) for key in ("token_ids", "segment_ids")}


def traced_with_row_lengths(function, input_signature):
    """`tf.function(function, input_signature)` whose ragged outputs come back with their row lengths computed in the
    graph and kept: a ragged tensor a `tf.function` returns otherwise recomputes them with eager ops (~0.25 ms) at
    every `row_lengths()`, and rebuilding it around them costs as much again (~2 ms of a one-text predict).

    Examples:
        >>> split = traced_with_row_lengths(tf.strings.bytes_split, [tf.TensorSpec([None], tf.string)])
        >>> split(tf.constant(["ab", "c"])).row_lengths().numpy().tolist()
        [2, 1]
    """
    traced = tf.function(lambda *args: _map_ragged(_ragged_parts, function(*args)), input_signature=input_signature)
    return lambda *args: _map_ragged(_ragged_of_parts, traced(*args), parts=True)


RAGGED_PARTS = ("ragged_values", "ragged_row_splits", "ragged_row_lengths")  # a rank-1 ragged tensor, taken apart


def _ragged_parts(ragged):
    return dict(zip(RAGGED_PARTS, (ragged.values, ragged.row_splits, ragged.row_lengths())))


def _ragged_of_parts(parts):
    """The ragged tensor of `_ragged_parts`, its row lengths kept (TensorFlow's own constructor, as
    `RowPartition.from_row_lengths` calls it, with splits and lengths both known)."""
    from tensorflow.python.ops.ragged.row_partition import RowPartition, _row_partition_factory_key

    values, row_splits, row_lengths = (parts[name] for name in RAGGED_PARTS)
    partition = RowPartition(row_splits=row_splits, row_lengths=row_lengths, internal=_row_partition_factory_key)
    return tf.RaggedTensor._from_row_partition(values, partition, validate=False)


def _map_ragged(convert, structure, parts=False):
    """`structure` (dicts, lists, tuples) with each rank-1 ragged tensor (or, `parts`, each dict of its parts)
    converted."""
    if parts and isinstance(structure, dict) and set(structure) == set(RAGGED_PARTS):
        return convert(structure)
    if isinstance(structure, dict):
        return {key: _map_ragged(convert, value, parts) for key, value in structure.items()}
    if isinstance(structure, (list, tuple)):
        return type(structure)(_map_ragged(convert, value, parts) for value in structure)
    if not parts and isinstance(structure, tf.RaggedTensor) and structure.ragged_rank == 1:
        return convert(structure)
    return structure


def concatenate_padded(batches):
    """Per-batch output structures -> one structure of arrays, each leaf zero-padded along its token
    axes to the longest batch (batches of another length differ in axis 1), then concatenated.

    Examples:
        >>> concatenate_padded([np.ones((2, 3)), np.ones((1, 5))]).shape
        (3, 5)
    """
    def concatenate(*arrays):
        arrays = [np.asarray(array) for array in arrays]
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
