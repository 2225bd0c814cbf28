"""Checks for training under a `keras.distribution` (JAX): every batch must split over the devices.

`keras.distribution.DataParallel` and `ModelParallel` cut each batch into equal pieces along the
mesh's batch axis; JAX cannot place a batch of 7 on 2 devices. `check_batches_split_evenly` finds
such a batch before training starts and says how to fix it. TensorFlow's `MirroredStrategy` splits
uneven batches itself, so it needs no check.

Example:
>>> keras.distribution.set_distribution(keras.distribution.DataParallel())
>>> batch_shards()  # 2 on two devices
2
>>> check_batches_split_evenly(31, 8)  # ValueError: batch 3 of the training data has 7 examples
"""

import keras


def batch_shards():
    """How many pieces the active Keras distribution cuts each batch into (1 without one)."""
    distribution = keras.distribution.distribution()
    if distribution is None or distribution.batch_dim_name is None:
        return 1
    mesh = distribution.device_mesh
    return mesh.shape[mesh.axis_names.index(distribution.batch_dim_name)]


def check_batches_split_evenly(rows, batch_size, what="the training data"):
    """ValueError naming the first batch of `rows` examples in batches of `batch_size` (the last one
    holds the remainder) that the active distribution cannot split over its devices."""
    shards = batch_shards()
    if shards == 1:
        return
    for index, size in enumerate(batch_sizes(rows, batch_size)):
        if size % shards:
            raise ValueError(
                f"Batch {index} of {what} has {size} examples ({rows} in batches of {batch_size}), "
                f"which the active {type(keras.distribution.distribution()).__name__} distribution "
                f"cannot split over its {shards} devices. Make every batch a multiple of {shards}: "
                f"a batch_size that is, and a number of examples that is (drop "
                f"{size % shards} or add {shards - size % shards})."
            )


def check_dataset_splits_evenly(dataset, what="the training data"):
    """The same for a `tf.data.Dataset` whose batch size is static (batched with
    `drop_remainder=True`); a dynamic batch size is checked by JAX at the first step instead,
    because reading the dataset here would advance its shuffling."""
    import tensorflow as tf

    shards = batch_shards()
    size = tf.nest.flatten(dataset.element_spec)[0].shape[0]
    if size is not None and size % shards:
        check_batches_split_evenly(size, size, what)


def batch_sizes(rows, batch_size):
    """Examples per batch: `batch_size` each, then the remainder.

    >>> batch_sizes(31, 8)
    [8, 8, 8, 7]
    """
    return [batch_size] * (rows // batch_size) + ([rows % batch_size] if rows % batch_size else [])


def rows_of(x):
    """Examples in Keras-level array data (a dict of arrays or an array)."""
    first = next(iter(x.values())) if isinstance(x, dict) else x
    return int(first.shape[0]) if hasattr(first, "shape") else len(first)
