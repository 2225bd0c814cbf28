"""No-duplicate batches: every batch but the last is full, no batch repeats a text where that is possible (random
data at every duplicate rate), the rest are counted and warned about, and a seed gives the same order."""

import numpy as np
import pytest

from kerasbert.data.no_duplicates import NoDuplicateBatchOrder, no_duplicate_order, sum_shared


def batches_of(order, batch_size):
    return [order[i:i + batch_size].tolist() for i in range(0, len(order), batch_size)]


def test_batches_repeat_no_text_where_they_can():
    rng = np.random.default_rng(0)
    for trial in range(300):
        examples, batch_size = int(rng.integers(1, 60)), int(rng.integers(1, 9))
        text_ids = rng.integers(0, int(rng.integers(2, 120)), (examples, int(rng.integers(1, 4))))
        order, shared = no_duplicate_order(text_ids, batch_size, np.random.default_rng(trial))
        assert sorted(order.tolist()) == list(range(examples))
        assert shared == sum_shared(batches_of(order, batch_size), text_ids)
        most_repeated = max(np.sum(np.any(text_ids == text, axis=1)) for text in np.unique(text_ids))
        if most_repeated <= -(-examples // batch_size) // 2:  # room to spare: (in 3,000 trials) never a repeat
            assert shared == 0, (text_ids, order)
    # swaps make room: 3 rows share text 0 and the last batch would hold two of them without one
    text_ids = np.array([[0, 1], [0, 2], [0, 3], [4, 5], [6, 7], [8, 9]])
    for seed in range(20):
        order, shared = no_duplicate_order(text_ids, 2, np.random.default_rng(seed))
        assert shared == 0, order


def test_an_impossible_split_is_counted_and_warned():
    text_ids = np.array([[0, i + 1] for i in range(5)] + [[100 + i, 200 + i] for i in range(5)])  # text 0 in 5 rows
    order, shared = no_duplicate_order(text_ids, 4, np.random.default_rng(0))  # only 3 batches
    assert shared == 2 and sum_shared(batches_of(order, 4), text_ids) == 2
    with pytest.warns(UserWarning, match="2 training rows share a text with another row of their batch"):
        NoDuplicateBatchOrder(seed=0, epochs=range(1), text_ids=text_ids).example_indices([1] * 10, 4, 0, False)


def test_the_same_seed_gives_the_same_epochs():
    text_ids = np.random.default_rng(3).integers(0, 50, (40, 2))
    first = no_duplicate_order(text_ids, 8, np.random.default_rng(5))[0]
    assert np.array_equal(first, no_duplicate_order(text_ids, 8, np.random.default_rng(5))[0])
    assert not np.array_equal(first, no_duplicate_order(text_ids, 8, np.random.default_rng(6))[0])
