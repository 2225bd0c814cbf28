"""Batches of several tasks in one stream (MT-DNN): each batch comes from one task, carries that task's labels
and weights, and zeros with zero weights for every other task's output, so one Keras `fit` over a model with
an output per task trains each head on its own batches and the shared encoder on all of them.

Examples:
    >>> order = task_order([115, 157], epochs=3, mixing="proportional", seed=0)
    >>> specs = {"mrpc": tf.TensorSpec([None], tf.int32), "conll": tf.TensorSpec([None, None], tf.int32)}
    >>> stream = mixed_batches({"mrpc": mrpc_batches, "conll": conll_batches}, order, specs)
    >>> model.fit(stream, epochs=3, steps_per_epoch=115 + 157)
"""

import math

import numpy as np
import tensorflow as tf

from kerasbert.tokenizers.bert_packer import PACKED_INPUTS


def check_mixing(mixing, names):
    """`"proportional"` or `{task: weight}` over exactly the tasks being trained, weights >= 0, summing above 0."""
    if isinstance(mixing, str) and mixing == "proportional":
        return mixing
    if not isinstance(mixing, dict) or set(mixing) != set(names):
        raise ValueError(f"mixing must be 'proportional' or a dict of a weight for each task trained "
                         f"({sorted(names)}), got {mixing!r}.")
    weights = np.array([mixing[name] for name in names], dtype=float)
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError(f"mixing weights must be finite, non-negative and not all zero, got {mixing!r}.")
    return mixing


def task_order(batches, epochs, mixing, seed):
    """The task index of every step, epoch after epoch (`steps_per_epoch` = the sum of `batches`).

    "proportional": each epoch holds every task's batches once, shuffled together (MT-DNN); a dict of weights:
    each step draws a task with those weights. The same seed gives the same order.

    Examples:
        >>> task_order([2, 1], epochs=1, mixing="proportional", seed=0).tolist()
        [0, 1, 0]
    """
    steps = int(sum(batches))
    rng = np.random.default_rng(seed)
    if mixing == "proportional":
        one_epoch = np.repeat(np.arange(len(batches)), batches)
        return np.concatenate([rng.permutation(one_epoch) for _ in range(epochs)]).astype(np.int64)
    weights = np.asarray(mixing, dtype=float)
    return rng.choice(len(batches), size=steps * epochs, p=weights / weights.sum()).astype(np.int64)


def epochs_needed(order, batches):
    """How many epochs of its own data each task must supply for `order`."""
    counts = np.bincount(order, minlength=len(batches))
    return [max(1, math.ceil(count / size)) for count, size in zip(counts, batches)]


def unified(dataset, name, label_specs):
    """Map a task's `(x, y[, w])` batches to `(x, {task: y}, {task: w})` over every task in `label_specs`
    (`{task: TensorSpec of its labels}`, `None` for the per-token axis)."""

    def zeros_like_spec(spec, batch, length):
        shape = [batch] + [length if size is None else size for size in spec.shape[1:]]
        return tf.zeros(shape, spec.dtype)

    def weight_shape(spec, batch, length):
        return [batch, length] if spec.shape.rank >= 2 and spec.shape[1] is None else [batch]

    def to_all_tasks(x, y, weight=None):
        batch, length = tf.shape(x["token_ids"])[0], tf.shape(x["token_ids"])[1]
        labels, weights = {}, {}
        for task, spec in label_specs.items():
            if task == name:
                labels[task] = tf.cast(y, spec.dtype)
                weights[task] = tf.ones(weight_shape(spec, batch, length), tf.float32) if weight is None else \
                    tf.cast(weight, tf.float32)
            else:
                labels[task] = zeros_like_spec(spec, batch, length)
                weights[task] = tf.zeros(weight_shape(spec, batch, length), tf.float32)
        return {key: x[key] for key in PACKED_INPUTS}, labels, weights

    return dataset.map(to_all_tasks)


def mixed_batches(datasets, order, label_specs):
    """One stream of the unified batches of the tasks in `datasets`, in `order` (task indices, in the order
    of `datasets`), with labels for every task of `label_specs` (those not trained here get weight 0)."""
    names = list(datasets)
    streams = [unified(datasets[name], name, label_specs) for name in names]
    choices = tf.data.Dataset.from_tensor_slices(tf.constant(order, tf.int64))
    return tf.data.Dataset.choose_from_datasets(streams, choices).prefetch(2)
