"""tf.data batching of real tokenised sentences: bucket shapes, masks, order, completeness."""

import warnings

import numpy as np
import pytest
import tensorflow as tf

from kerasbert.data.batch_order import GROUP_WINDOW_BATCHES, BatchOrder
from kerasbert.data.batching import (
    EagerBatches,
    length_buckets,
    make_batched_dataset,
    padding_statistics,
)
from kerasbert.data.shipped import load_dataset


@pytest.fixture(scope="module")
def token_ids(minilm_path):
    """The 1,000 real UCI IMDb sentences as unpadded MiniLM token ids ([CLS] ... [SEP]).

    Reference tokenizer: HF `BertTokenizerFast` loaded from the checkpoint folder.
    """
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(minilm_path))
    return tokenizer(load_dataset("uci_sentiment", "test")["text"].tolist())["input_ids"]


@pytest.fixture(scope="module")
def features(token_ids):
    return {"token_ids": token_ids, "segment_ids": [[0] * len(ids) for ids in token_ids]}


def epoch(dataset):
    """One epoch as a list of numpy structures."""
    return list(dataset.as_numpy_iterator())


def test_length_buckets_are_capped_at_max_length():
    assert length_buckets(512) == [8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
    assert length_buckets(100) == [8, 16, 24, 32, 48, 64, 96, 100]
    assert length_buckets(100, [16, 32, 64, 128]) == [16, 32, 64, 100]
    assert length_buckets(128, [128]) == [128]
    with pytest.raises(ValueError, match="increasing positive ints"):
        length_buckets(128, [64, 32])
    with pytest.raises(ValueError, match="max_length must be an int of at least 1"):
        length_buckets(0)


@pytest.mark.parametrize("group_by_length", [False, True])
def test_every_batch_shape_is_a_bucket_and_masks_match_lengths(
    features, token_ids, group_by_length
):
    lengths = np.array([len(ids) for ids in token_ids])
    ids = np.arange(len(token_ids))
    dataset = make_batched_dataset(
        features, labels=ids, batch_size=32, max_length=100, batch_order=BatchOrder(group_by_length=group_by_length)
    )
    for x, batch_ids in epoch(dataset):
        padded_length = x["token_ids"].shape[1]
        assert padded_length == min(b for b in length_buckets(100) if b >= lengths[batch_ids].max())
        np.testing.assert_array_equal(x["padding_mask"].sum(axis=1), lengths[batch_ids])
        for row, example in enumerate(batch_ids):
            real = x["padding_mask"][row].astype(bool)
            np.testing.assert_array_equal(x["token_ids"][row][real], token_ids[example])
            assert (x["token_ids"][row][~real] == 0).all()
            assert (x["segment_ids"][row][~real] == 0).all()


def test_order_is_the_input_order_without_shuffle(features, token_ids):
    ids = np.arange(len(token_ids))
    batches = epoch(make_batched_dataset(features, labels=ids, batch_size=32))
    np.testing.assert_array_equal(np.concatenate([y for _, y in batches]), ids)
    assert [len(y) for _, y in batches] == [32] * 31 + [8]


def test_prediction_dataset_yields_features_only_in_order(features, token_ids):
    batches = epoch(make_batched_dataset(features, batch_size=100))
    assert isinstance(batches[0], dict)
    first_rows = [
        batch["token_ids"][0][: len(token_ids[i * 100])] for i, batch in enumerate(batches)
    ]
    for i, row in enumerate(first_rows):
        np.testing.assert_array_equal(row, token_ids[i * 100])


@pytest.mark.parametrize("group_by_length", [False, True])
def test_shuffled_epochs_lose_and_duplicate_nothing(features, token_ids, group_by_length):
    ids = np.arange(len(token_ids))
    dataset = make_batched_dataset(
        features, labels=ids, batch_order=BatchOrder(shuffle=True, seed=7, group_by_length=group_by_length)
    )
    for _ in range(2):
        seen = np.concatenate([y for _, y in epoch(dataset)])
        np.testing.assert_array_equal(np.sort(seen), ids)


def test_same_seed_same_epochs_and_each_epoch_reshuffled(features, token_ids):
    ids = np.arange(len(token_ids))

    def two_epochs(seed):
        dataset = make_batched_dataset(
            features, labels=ids, batch_order=BatchOrder(shuffle=True, seed=seed, group_by_length=True)
        )
        return [np.concatenate([y for _, y in epoch(dataset)]) for _ in range(2)]

    first, second = two_epochs(seed=3)
    again_first, again_second = two_epochs(seed=3)
    np.testing.assert_array_equal(first, again_first)
    np.testing.assert_array_equal(second, again_second)
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, two_epochs(seed=4)[0])


def test_drop_remainder_gives_only_full_batches(features):
    for group_by_length in (False, True):
        dataset = make_batched_dataset(
            features, batch_size=64, drop_remainder=True, batch_order=BatchOrder(group_by_length=group_by_length)
        )
        assert {batch["token_ids"].shape[0] for batch in epoch(dataset)} == {64}


def test_per_token_labels_are_padded_and_masked_by_default_weights(features, token_ids):
    tags = [[i % 5 for i in range(len(ids))] for ids in token_ids]
    for x, y, weights in epoch(make_batched_dataset(features, labels=tags, batch_size=50)):
        np.testing.assert_array_equal(weights, x["padding_mask"].astype(np.float32))
        assert y.shape == x["token_ids"].shape
    explicit = [[float(i == 1) for i in range(len(ids))] for ids in token_ids]
    x, y, weights = epoch(make_batched_dataset(features, labels=tags, sample_weight=explicit))[0]
    np.testing.assert_array_equal(weights.sum(axis=1), np.ones(32))


def test_per_example_multi_hot_labels_and_weights_are_not_padded(features, token_ids):
    multi_hot = np.eye(3, dtype=np.float32)[np.arange(len(token_ids)) % 3]
    weights = np.linspace(0.5, 1.5, len(token_ids))
    x, y, w = epoch(make_batched_dataset(features, labels=multi_hot, sample_weight=weights))[0]
    assert y.shape == (32, 3) and w.shape == (32,) and w.dtype == np.float32


def test_fixed_padding_is_a_single_bucket(features, token_ids):
    stats = padding_statistics(
        make_batched_dataset(features, max_length=128, bucket_boundaries=[128])
    )
    assert stats.padded_lengths == (128,)
    assert stats.total_tokens == 128 * len(token_ids)


def test_padding_statistics_count_real_and_padded_tokens(features, token_ids):
    lengths = np.array([len(ids) for ids in token_ids])
    stats = padding_statistics(make_batched_dataset(features, batch_size=32))
    buckets = np.array(length_buckets(512))
    expected_total = sum(
        len(chunk) * buckets[buckets >= chunk.max()][0]
        for chunk in np.array_split(lengths, range(32, len(lengths), 32))
    )
    assert stats.examples == len(token_ids) and stats.batches == 32
    assert stats.real_tokens == lengths.sum()
    assert stats.total_tokens == expected_total
    assert stats.padding_tokens == expected_total - lengths.sum()
    grouped = padding_statistics(
        make_batched_dataset(features, batch_size=32, batch_order=BatchOrder(group_by_length=True))
    )
    assert grouped.real_tokens == lengths.sum()
    assert grouped.padding_fraction < stats.padding_fraction


def test_batches_train_a_keras_model_with_the_backbone_inputs(features, token_ids):
    from kerasbert.families.bert.bert_backbone import BertBackbone

    keras = pytest.importorskip("keras")
    backbone = BertBackbone(
        vocabulary_size=30522,
        num_layers=1,
        num_heads=2,
        hidden_dim=8,
        intermediate_dim=16,
        max_sequence_length=128,
    )
    logits = keras.layers.Dense(2)(backbone.output["pooled_output"])
    model = keras.Model(backbone.input, logits)
    model.compile(
        optimizer="adam",
        jit_compile=False,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    labels = load_dataset("uci_sentiment", "test")["label"].to_numpy()
    dataset = make_batched_dataset(
        features,
        labels=labels,
        batch_size=64,
        max_length=128,
        batch_order=BatchOrder(shuffle=True, seed=0, group_by_length=True),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(dataset, epochs=2, shuffle=False, verbose=0)
    assert not [w for w in caught if "ran out of data" in str(w.message)]
    assert np.isfinite(history.history["loss"]).all()
    assert model.predict(make_batched_dataset(features, max_length=128), verbose=0).shape == (
        1000,
        2,
    )


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"features": {"segment_ids": [[0]]}}, TypeError, "at least 'token_ids'"),
        (
            {"features": {"token_ids": [[1, 2]], "padding_mask": [[1, 1]]}},
            ValueError,
            "Leave 'padding_mask' out",
        ),
        (
            {"features": {"token_ids": np.ones((2, 3), int)}},
            TypeError,
            "'token_ids' must be ragged",
        ),
        (
            {"features": {"token_ids": [[1] * 600]}},
            ValueError,
            r"example 0 has 600 tokens. Truncate when tokenising \(sequence_length=512\)",
        ),
        (
            {"features": {"token_ids": [[1, 2]], "segment_ids": [[0]]}},
            ValueError,
            "example 0 has 1 values for 2 tokens",
        ),
        (
            {"features": {"token_ids": [[1, 2]]}, "labels": [0, 1]},
            ValueError,
            "'labels' has 2 examples but token_ids has 1",
        ),
        ({"features": {"token_ids": [[1, 2]]}, "labels": ["pos"]}, TypeError, "LabelEncoder"),
        (
            {"features": {"token_ids": [[1, 2]]}, "sample_weight": [1.0]},
            ValueError,
            "sample_weight was given without labels",
        ),
        ({"features": {"token_ids": [[1, 2]]}, "batch_size": 0}, ValueError, "batch_size must be"),
        ({"features": {"token_ids": [["a", "b"]]}}, TypeError, "must hold numbers"),
    ],
)
def test_bad_inputs_fail_before_building_the_pipeline(kwargs, error, message):
    with pytest.raises(error, match=message):
        make_batched_dataset(**kwargs)


def test_ragged_tensor_input_is_accepted(token_ids):
    ragged = tf.ragged.constant(token_ids[:10], dtype=tf.int64)
    batch = epoch(make_batched_dataset({"token_ids": ragged}, batch_size=10))[0]
    assert batch["token_ids"].dtype == np.int32
    np.testing.assert_array_equal(
        batch["padding_mask"].sum(axis=1), [len(ids) for ids in token_ids[:10]]
    )


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_grouped_dataset_knows_its_batch_count(features, drop_remainder):
    dataset = make_batched_dataset(
        features,
        batch_size=32,
        batch_order=BatchOrder(shuffle=True, seed=1, group_by_length=True),
        drop_remainder=drop_remainder,
    )
    assert int(dataset.cardinality()) == len(epoch(dataset)) == len(epoch(dataset))


def test_grouping_sorts_windows_of_batches_by_length_and_keeps_the_batch_count(features, token_ids):
    lengths = np.array([len(ids) for ids in token_ids])
    ids = np.arange(len(token_ids))
    window = 32 * GROUP_WINDOW_BATCHES
    batches = epoch(make_batched_dataset(features, labels=ids, batch_size=32,
                                         batch_order=BatchOrder(group_by_length=True)))
    assert len(batches) == 32                       # as without grouping: ceil(1000 / 32)
    order = np.concatenate([y for _, y in batches])
    for start in range(0, len(ids), window):       # each window: its own examples, shortest first
        chunk = order[start:start + window]
        np.testing.assert_array_equal(np.sort(chunk), ids[start:start + window])
        assert (np.diff(lengths[chunk]) >= 0).all()


def test_shuffled_grouping_halves_the_padding_yet_mixes_the_epoch(features, token_ids):
    lengths = np.array([len(ids) for ids in token_ids])
    ids = np.arange(len(token_ids))
    ungrouped = make_batched_dataset(features, labels=ids, batch_order=BatchOrder(shuffle=True, seed=0))
    grouped = make_batched_dataset(features, labels=ids, batch_order=BatchOrder(shuffle=True, seed=0,
                                                                                group_by_length=True))
    assert padding_statistics(grouped).total_tokens < 0.6 * padding_statistics(ungrouped).total_tokens
    batches = [y for _, y in epoch(grouped)]
    assert len(batches) == int(grouped.cardinality()) == 32
    # Not one sort over the epoch: short and long batches alternate, and a batch's examples come
    # from all over the input (a window is a random sample of it).
    batch_lengths = [lengths[y].max() for y in batches]
    assert np.corrcoef(np.arange(len(batches)), batch_lengths)[0, 1] < 0.5
    assert np.mean([np.ptp(y) for y in batches]) > len(ids) / 2


def test_a_given_order_is_the_batching_order(features, token_ids):
    lengths = np.array([len(ids) for ids in token_ids])
    ids = np.arange(len(token_ids))
    order = np.argsort(lengths, kind="stable")
    batches = epoch(make_batched_dataset(features, labels=ids, batch_size=32, batch_order=BatchOrder(order=order)))
    np.testing.assert_array_equal(np.concatenate([y for _, y in batches]), order)
    by_length = padding_statistics(make_batched_dataset(features, batch_order=BatchOrder(order=order)))
    in_order = padding_statistics(make_batched_dataset(features))
    assert by_length.total_tokens < 0.5 * in_order.total_tokens
    with pytest.raises(ValueError, match="permutation of the 1000 example indices"):
        make_batched_dataset(features, batch_order=BatchOrder(order=order[:-1]))
    with pytest.raises(ValueError, match="either `order` or `shuffle`"):
        BatchOrder(order=order, shuffle=True)


def test_eager_batches_are_the_datasets_batches_in_a_given_order(features, token_ids):
    """The numpy batches of inference (`EagerBatches`) equal tf.data's for the same order, part by part."""
    rng = np.random.default_rng(0)
    order = rng.permutation(len(token_ids))
    scores = rng.random(len(token_ids)).astype(np.float32)  # a per-example part beside the per-token ones
    with_scores = {**features, "scores": scores}
    eager = list(EagerBatches(with_scores, order, batch_size=48, max_length=512, pad_token_id=7))
    expected = epoch(make_batched_dataset(with_scores, batch_size=48, pad_token_id=7,
                                          batch_order=BatchOrder(order=order)))
    assert len(eager) == len(expected) == -(-len(token_ids) // 48)
    for got, want in zip(eager, expected):
        assert sorted(got) == sorted(want) == ["padding_mask", "scores", "segment_ids", "token_ids"]
        for name in want:
            assert got[name].dtype == want[name].dtype
            np.testing.assert_array_equal(got[name], want[name])
    assert (eager[0]["token_ids"][eager[0]["padding_mask"] == 0] == 7).all()
