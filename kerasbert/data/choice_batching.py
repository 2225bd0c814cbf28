"""Batches of multiple-choice examples: `[batch, choices, tokens]`, each example's choices together."""

import numpy as np
import tensorflow as tf

from kerasbert.data.batch_order import BatchOrder
from kerasbert.data.batching import gather_examples, length_buckets


def make_choice_dataset(features, num_choices, labels=None, *, batch_size=32, max_length=512, pad_token_id=0,
                        batch_order=BatchOrder()):
    """Batches of whole examples `[batch, choices, tokens]` with dynamic padding (a text encoder's training rows:
    `[batch, texts, tokens]`).

    `features`: ragged `token_ids` and `segment_ids`, `[examples * choices, (tokens)]`, the
    choices of an example consecutive. A batch is padded to its longest sequence rounded up to a
    length bucket (`kerasbert.data.batching.length_buckets`). `batch_order` (a `BatchOrder`; grouping by an
    example's longest choice) works as in `kerasbert.data.batching.make_batched_dataset`.

    Examples:
        >>> features = {"token_ids": tf.ragged.constant([[101, 7, 102], [101, 8, 9, 102]]),
        ...             "segment_ids": tf.ragged.constant([[0, 0, 0], [0, 0, 1, 1]])}
        >>> x = next(iter(make_choice_dataset(features, num_choices=2)))
        >>> tuple(x["token_ids"].shape)     # 1 example, 2 choices, padded to the 8-token bucket
        (1, 2, 8)
    """
    per_example = {
        name: tf.RaggedTensor.from_uniform_row_length(tf.cast(features[name], tf.int32), num_choices)
        for name in ("token_ids", "segment_ids")
    }
    lengths = tf.reduce_max(per_example["token_ids"].row_lengths(axis=2), axis=1).numpy()
    buckets = length_buckets(max_length)
    x_padding = {"token_ids": pad_token_id, "segment_ids": 0, "padding_mask": 0}
    if labels is None:
        element, padding_values = per_example, x_padding
    else:
        labels = np.asarray(labels)  # choice indices as int32; an encoder's pair scores stay float32
        labels = labels.astype(np.float32 if np.issubdtype(labels.dtype, np.floating) else np.int32)
        element, padding_values = (per_example, labels), (x_padding, None)

    def batched(indices):
        dataset = gather_examples(element, indices).map(lambda *example: _on_x(_densify, example, pad_token_id),
                                                        num_parallel_calls=tf.data.AUTOTUNE)
        dataset = dataset.padded_batch(batch_size, padding_values=padding_values)
        return dataset.map(lambda *batch: _on_x(_pad_to_bucket, batch, buckets, pad_token_id),
                           num_parallel_calls=tf.data.AUTOTUNE)

    return batch_order.batches(batched, lengths, batch_size, -(-len(lengths) // batch_size))


def _on_x(function, element, *args):
    """Apply `function` to the features of an `x` or `(x, y)` dataset element."""
    return (function(element[0], *args), *element[1:]) if len(element) > 1 else function(element[0], *args)


def _densify(example, pad_token_id):
    """One example's ragged `[choices, (tokens)]` -> dense `[choices, longest]` plus `padding_mask`."""
    token_ids = example["token_ids"]
    return {
        "token_ids": token_ids.to_tensor(pad_token_id),
        "segment_ids": example["segment_ids"].to_tensor(0),
        "padding_mask": tf.ones_like(token_ids).to_tensor(0),
    }


def _pad_to_bucket(batch, buckets, pad_token_id):
    length = tf.shape(batch["token_ids"])[-1]
    target = tf.reduce_min(tf.boolean_mask(tf.constant(buckets), tf.constant(buckets) >= length))
    padding = [[0, 0], [0, 0], [0, target - length]]
    return {
        name: tf.pad(value, padding, constant_values=pad_token_id if name == "token_ids" else 0)
        for name, value in batch.items()
    }
