"""Batches without repeated texts, for losses whose negatives are the batch's other texts: a repeated text would be
its own negative. As sentence-transformers' `NoDuplicatesBatchSampler`: the examples are shuffled, and each batch
takes the next examples that share no text with it; the others wait for a later batch.

Unlike that sampler, every batch but the last is full (Keras counts the steps of an epoch before it starts): where
the last examples cannot avoid each other, one is swapped with an example of an earlier batch that fits both ways;
an example that fits nowhere joins its batch anyway, and `fit` warns with how many did.

Examples:
    >>> order, shared = no_duplicate_order(np.array([[0, 1], [0, 2], [3, 4], [5, 6]]), 2, np.random.default_rng(0))
    >>> shared        # examples 0 and 1 (both with text 0) never in one batch of 2
    0
"""

import dataclasses
import warnings

import numpy as np
import tensorflow as tf

from kerasbert.data.batch_order import BatchOrder


def no_duplicate_order(text_ids, batch_size, rng):
    """`(order, shared)`: a permutation of the examples whose consecutive `batch_size` chunks share no text
    (`text_ids[i]`: the text numbers of example i), and how many examples still share one with their batch."""
    waiting = dict.fromkeys(rng.permutation(len(text_ids)).tolist())
    batches = []
    while waiting:
        batch, seen = [], set()
        for index in waiting:
            if seen.isdisjoint(text_ids[index].tolist()):
                batch.append(index)
                seen.update(text_ids[index].tolist())
                if len(batch) == batch_size:
                    break
        for index in batch:
            del waiting[index]
        if len(batch) < batch_size and waiting:  # the rest all repeat a text of this batch
            placed = list(waiting)[:batch_size - len(batch)]
            fill_by_swapping(batches, batch, placed, text_ids)
            for index in placed:
                del waiting[index]
        batches.append(batch)
    return np.asarray([index for batch in batches for index in batch], np.int64), sum_shared(batches, text_ids)


def fill_by_swapping(batches, batch, candidates, text_ids):
    """Fill `batch` with `candidates` (which each repeat a text of it): each takes the place of an example of an
    earlier batch that it fits, if the displaced one fits `batch`; else it joins `batch` as it is."""
    texts_of = [set(ids.tolist()) for ids in text_ids]

    def fits(index, members, leaving=None):
        return all(texts_of[index].isdisjoint(texts_of[other]) for other in members if other != leaving)

    for candidate in candidates:
        swap = next(((earlier, member) for earlier in batches for member in earlier
                     if fits(member, batch) and fits(candidate, earlier, leaving=member)), None)
        if swap is None:
            batch.append(candidate)
            continue
        earlier, member = swap
        earlier[earlier.index(member)] = candidate
        batch.append(member)


def sum_shared(batches, text_ids):
    """Examples that repeat a text of an earlier example of their batch."""
    shared = 0
    for batch in batches:
        seen = set()
        for index in batch:
            texts = set(text_ids[index].tolist())
            shared += not seen.isdisjoint(texts)
            seen.update(texts)
    return shared


@dataclasses.dataclass(frozen=True, eq=False)
class NoDuplicateBatchOrder(BatchOrder):
    """A `BatchOrder` whose epochs are `no_duplicate_order`s drawn from the epoch's seed (`text_ids`: each
    example's text numbers); batches of any length (no grouping by length: in-batch negatives stay a random
    sample)."""

    text_ids: np.ndarray = None

    def example_indices(self, lengths, batch_size, seed, reshuffle):
        order, shared = no_duplicate_order(self.text_ids, batch_size, np.random.default_rng(seed))
        if shared:
            warnings.warn(f"{shared} training rows share a text with another row of their batch (some text repeats "
                          "in more rows than an epoch has batches): that text counts as its own negative there. "
                          "Drop repeated rows, or train with a smaller batch_size.", stacklevel=2)
        return tf.data.Dataset.from_tensor_slices(order)
