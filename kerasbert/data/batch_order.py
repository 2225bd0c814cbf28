"""`BatchOrder`: the order examples are batched in and the epochs a dataset holds, one object for every batching
function (`make_batched_dataset`, `make_choice_dataset`, `make_text_window_dataset`).

Input order, a given `order`, or a shuffle (`shuffle`, `seed`; again each time the dataset is iterated), and
`group_by_length` then sorts each window of `GROUP_WINDOW_BATCHES` batches by length (far less padding, the same
number of batches, batch order shuffled again when shuffling), as HF's `group_by_length` with its megabatches.

Examples:
    >>> list(BatchOrder(group_by_length=True).example_indices([5, 3, 9, 4], 2, None, True).as_numpy_iterator())
    [1, 3, 0, 2]
"""

import dataclasses
import functools

import numpy as np
import tensorflow as tf

# Length grouping sorts windows of this many batches (HF's megabatches are 50): on UCI sentiment
# training, 8 leaves 1.42x the real tokens (sorting everything: 1.24x; no grouping: 2.76x), and
# each window is still a random sample of the epoch.
GROUP_WINDOW_BATCHES = 8


@dataclasses.dataclass(frozen=True)
class BatchOrder:
    """How a batching function orders its examples.

    Args:
        shuffle: shuffle all examples, again each epoch; the same `seed` gives the same epochs.
        seed: the shuffle seed.
        group_by_length: sort the (shuffled) examples by length within windows of `GROUP_WINDOW_BATCHES`
            batches, and shuffle the batch order again when `shuffle` is on.
        order: example indices to batch in this order instead (e.g. `np.argsort(lengths)` for prediction with
            the least padding); excludes `shuffle` and `group_by_length`.
        epochs: None: one epoch, reshuffled each time it is iterated. A range of epoch numbers: those epochs back
            to back, epoch `e` shuffled from `(seed, e)` alone, so that a run resumed at epoch `e` sees the orders
            of an uninterrupted run (give Keras `steps_per_epoch` = batches per epoch).

    Examples:
        >>> make_batched_dataset(features, labels=y, batch_order=BatchOrder(shuffle=True, seed=1,
        ...                                                                 group_by_length=True))
    """

    shuffle: bool = False
    seed: int = None
    group_by_length: bool = False
    order: tuple = None
    epochs: range = None

    def __post_init__(self):
        if self.order is not None and (self.shuffle or self.group_by_length):
            raise ValueError("Give either `order` or `shuffle`/`group_by_length`, not both.")
        if self.epochs is not None and self.seed is None:
            raise ValueError("Numbered epochs need a seed (their orders are drawn from it).")

    def example_indices(self, lengths, batch_size, seed, reshuffle):
        """The example indices of one epoch, as a `tf.data.Dataset` of int64 (`seed`: the epoch's)."""
        if self.order is not None:
            order = np.asarray(self.order, np.int64)
            if order.shape != (len(lengths),) or not np.array_equal(np.sort(order), np.arange(len(lengths))):
                raise ValueError(f"order must be a permutation of the {len(lengths)} example indices.")
            return tf.data.Dataset.from_tensor_slices(order)
        indices = tf.data.Dataset.range(len(lengths))
        if self.shuffle:
            indices = indices.shuffle(len(lengths), seed=seed, reshuffle_each_iteration=reshuffle)
        if self.group_by_length:
            all_lengths = tf.constant(np.asarray(lengths, np.int64))

            def by_length(window):
                return tf.gather(window, tf.argsort(tf.gather(all_lengths, window), stable=True))

            indices = indices.batch(batch_size * GROUP_WINDOW_BATCHES).map(by_length).unbatch()
        return indices

    def batches(self, batch_indices, lengths, batch_size, batches_per_epoch):
        """The finished dataset: `batch_indices(indices)` (a dataset of example indices -> a dataset of batches)
        over this order's epochs, with the batch count declared and prefetching on."""

        def one_epoch(seed, reshuffle):
            dataset = batch_indices(self.example_indices(lengths, batch_size, seed, reshuffle))
            if self.shuffle and self.group_by_length:  # the length-sorted batches, in a shuffled order
                dataset = dataset.shuffle(GROUP_WINDOW_BATCHES, seed=seed, reshuffle_each_iteration=reshuffle)
            return dataset

        return finish_batches(self.over_epochs(one_epoch), batches_per_epoch, self.epochs)

    def over_epochs(self, one_epoch):
        """`one_epoch(seed, reshuffle=True)` when `epochs` is None; else the epochs back to back, each
        `one_epoch(seed of (seed, e), reshuffle=False)`: an epoch's order depends on its number only."""
        if self.epochs is None:
            return one_epoch(self.seed, True)
        if not len(self.epochs):
            return one_epoch(self.seed, False).take(0)
        parts = [one_epoch(self.seed * 1_000_003 + epoch, False) for epoch in self.epochs]
        return functools.reduce(tf.data.Dataset.concatenate, parts)


def finish_batches(dataset, batches, epochs=None):
    """Declare the batch count (`batches` per epoch, times the `epochs` the dataset holds; Keras sizes
    epochs and progress bars with it), prefetch, and switch tf.data's autotuner off.

    The autotuner's background thread sleeps up to a minute between rounds, and deleting an
    iterator that was not run to its end (Keras stops after `cardinality` steps) waited for it:
    `fit` on UCI sentiment took 95 s instead of 59 s, 36 s of it in that wait after the last step.
    """
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(batches * (1 if epochs is None else len(epochs))))
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.prefetch(2).with_options(options)


def training_order(training, seed, group_by_length, order, epochs):
    """The `BatchOrder` of a task's batches: training batches shuffled with `seed` (and grouped by length unless
    `group_by_length=False`); others in `order`, else the input order."""
    return BatchOrder(shuffle=training, seed=seed, group_by_length=training and group_by_length, order=order,
                      epochs=epochs)
