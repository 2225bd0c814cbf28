"""Examples made of several texts, batched whole and run as one row per text: a text encoder's anchor, positive
and negatives, a reranker's query with its passages. What `BertTextEncoder` and `BertCrossEncoder` share.

A grouped `Prepared` holds `extras[GROUP_SIZE]` packed rows per example, an example's rows consecutive.

Examples:
    >>> dataset = grouped_batches(encoder, prepared, with_labels=True, batch_size=32, batch_order=BatchOrder())
    >>> x, y = next(iter(dataset))     # x: [32 * texts, tokens]; y: [32], one value per example
"""

import tensorflow as tf

from kerasbert.data.choice_batching import make_choice_dataset
from kerasbert.data.output_rows import in_input_order
from kerasbert.data.prepared import Prepared

GROUP_SIZE = "texts_per_example"  # the `Prepared.extras` key of the rows per example


def is_grouped(prepared):
    return GROUP_SIZE in prepared.extras


def grouped_batches(task, prepared, *, with_labels, batch_size, batch_order):
    """Batches of whole examples (`make_choice_dataset`), flattened to `[examples * texts, tokens]`; labels, one per
    example, as they are."""
    dataset = make_choice_dataset(
        prepared.features, prepared.extras[GROUP_SIZE], prepared.labels if with_labels else None,
        batch_size=batch_size, max_length=task.sequence_length or task.backbone.max_sequence_length,
        pad_token_id=task.tokenizer.pad_token_id, batch_order=batch_order)
    return dataset.map(flatten_examples)


def flatten_examples(x, *y):
    """A batch `[examples, texts, tokens]` -> `[examples * texts, tokens]` (labels as they are)."""
    flat = {name: tf.reshape(value, [-1, tf.shape(value)[-1]]) for name, value in x.items()}
    return (flat, *y) if y else flat


def longest_of_each(lengths, prepared):
    """Per-row `lengths` -> per example (its longest row)."""
    return lengths.reshape(-1, prepared.extras[GROUP_SIZE]).max(axis=1)


def outputs_of_rows(task, prepared, batch_size, verbose):
    """The model's outputs for every row of `prepared` (rows run sorted by length, as `predict` runs them), of a
    grouped one `[examples, texts, ...]`."""
    rows = Prepared(frame=None, features=prepared.features)
    order = task.length_order(rows)
    outputs = in_input_order(task.outputs_of(task.batches(rows, with_labels=False, batch_size=batch_size,
                                                          order=order), verbose), order)
    if not is_grouped(prepared):
        return outputs
    return outputs.reshape(len(prepared.frame), prepared.extras[GROUP_SIZE], *outputs.shape[1:])
