"""BertTextEncoder.fit: on a training batch of real text and the real all-MiniLM-L6-v2 weights the loss equals
sentence-transformers' (its model embeds the same rows); training batches never repeat a text; a fit on real pairs
raises retrieval accuracy; bad rows are named before anything runs."""

import numpy as np
import pandas as pd
import pytest

from kerasbert.data.shipped import load_dataset
from kerasbert.tasks import BertTextEncoder
from kerasbert.training.encoder_losses import CoSENTLoss, MatryoshkaLoss, MultipleNegativesRankingLoss, TripletLoss


@pytest.fixture(scope="module")
def review_pairs():
    """48 rows from 24 real reviews: each review is the positive of two anchors, its first and its last words."""
    reviews = [text for text in load_dataset("uci_sentiment", "train")["text"] if len(text.split()) >= 12][:24]
    rows = [(" ".join(text.split()[:5]), text) for text in reviews] + \
           [(" ".join(text.split()[-5:]), text) for text in reviews]
    return pd.DataFrame(rows, columns=["anchor", "positive"])


@pytest.fixture(scope="module")
def tiny_encoder(tiny_preset):
    return BertTextEncoder.from_preset(tiny_preset)


def first_batch(encoder, rows, batch_size):
    prepared = encoder.prepare(rows, with_labels=True, training=True)
    dataset = encoder.batches(prepared, with_labels=True, training=True, batch_size=batch_size, epochs=range(1))
    return next(iter(dataset))


def test_batch_loss_equals_sentence_transformers(minilm_path, review_pairs):
    """All rows in one batch (the losses do not depend on the rows' order), dropout off on both sides."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer import losses as st_losses

    rows = review_pairs.iloc[:12].assign(negative=review_pairs["positive"].iloc[12:24].tolist()[::-1])
    encoder = BertTextEncoder.from_preset(str(minilm_path))
    model = SentenceTransformer(str(minilm_path), device="cpu").eval()
    features = [model.tokenize(rows[column].tolist()) for column in ("anchor", "positive", "negative")]
    scores = np.linspace(0, 1, 12, dtype=np.float32)
    scored = pd.DataFrame({"text": rows["anchor"], "text_pair": rows["positive"], "score": scores})
    cases = [
        (rows, MultipleNegativesRankingLoss(), st_losses.MultipleNegativesRankingLoss(model), features, None),
        (rows, MatryoshkaLoss(MultipleNegativesRankingLoss(scale=10.0), (384, 128, 32)),
         st_losses.MatryoshkaLoss(model, st_losses.MultipleNegativesRankingLoss(model, scale=10.0), [384, 128, 32]),
         features, None),
        (rows, TripletLoss(), st_losses.TripletLoss(model), features, None),
        (scored, CoSENTLoss(), st_losses.CoSENTLoss(model), features[:2], torch.tensor(scores)),
    ]
    batches = {}  # one forward per layout: the anchor rows' batch serves three losses
    for data, loss, reference, st_features, labels in cases:
        if id(data) not in batches:
            x, y = first_batch(encoder, data, batch_size=12)
            batches[id(data)] = y, encoder(x, training=False)
        ours = float(np.asarray(loss(*batches[id(data)])))
        with torch.no_grad():
            assert ours == pytest.approx(float(reference(st_features, labels)), abs=1e-5), type(loss).__name__


def test_training_batches_repeat_no_text(tiny_encoder, review_pairs):
    encoder = tiny_encoder
    prepared = encoder.prepare(review_pairs, with_labels=True, training=True)
    dataset = encoder.batches(prepared, with_labels=True, training=True, batch_size=8, seed=3, epochs=range(2))
    batches = list(dataset)
    assert len(batches) == 12 and [len(y) for _, y in batches] == [8] * 12
    for x, _ in batches:
        positives = [tuple(row) for row in x["token_ids"].numpy()[1::2]]  # each example: anchor, positive
        assert len(set(positives)) == len(positives)


def test_fit_on_real_pairs_raises_retrieval_accuracy(tiny_preset, review_pairs):
    encoder = BertTextEncoder.from_preset(tiny_preset)
    before = encoder.evaluate(review_pairs)
    history = encoder.fit(review_pairs, epochs=4, batch_size=8, learning_rate=1e-3, verbose=0)
    after = encoder.evaluate(review_pairs)
    losses = history.history["loss"]
    assert losses[-1] < 0.8 * losses[0], losses
    assert after["accuracy"] > before["accuracy"] + 0.1 and after["mrr@10"] > before["mrr@10"], (before, after)


@pytest.mark.parametrize("rows, loss, message", [
    ({"anchor": ["a"], "pos": ["b"]}, None, r"these columns are missing: \['positive'\]"),
    ({"text": ["a"], "text_pair": ["b"]}, None, r"these columns are missing: \['score'\]"),
    ({"text": ["a", "b"], "text_pair": ["b", "c"], "score": [1.0, np.nan]}, None, "missing"),
    ({"anchor": ["a", ""], "positive": ["b", "c"]}, None, "not usable text"),
    ({"anchor": ["a", "b"], "positive": ["b", "c"], "negative": [["x", "y"], ["z"]]}, None,
     "has 1 negatives, but row 0 has 2"),
    ({"anchor": ["a", "b"], "positive": ["b", "c"]}, "cosent", "CoSENTLoss trains on scored pairs"),
    ({"anchor": ["a", "b"], "positive": ["b", "c"]}, TripletLoss(), "Give one `negative` text per row"),
    ({"text": ["a"], "text_pair": ["b"], "score": [1.0]}, "triplet", "these are scored pairs"),
])
def test_bad_rows_are_named_before_training(tiny_encoder, rows, loss, message):
    encoder = tiny_encoder
    weights = [w.copy() for w in encoder.get_weights()[:2]]
    with pytest.raises((ValueError, TypeError), match=message):
        encoder.fit(pd.DataFrame(rows), loss=loss, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(weights, encoder.get_weights()[:2]))
