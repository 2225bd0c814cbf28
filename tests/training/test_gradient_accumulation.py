"""Gradient accumulation: k batches of b train as one batch of k * b (the same updates, the same weights), through
`fit(..., gradient_accumulation_steps=k)` on the task models and the pre-trainers."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kerasbert.tasks import BertClassifier, BertPretrainer

NO_DROPOUT = {"dropout": 0.0, "attention_dropout": 0.0}


def trained_weights(model, data, **fit_options):
    model.fit(data, epochs=3, verbose=0, seed=0, **fit_options)
    return {weight.path: np.array(weight) for weight in model.weights}


def assert_same_weights(accumulated, whole, start, atol=1e-7):
    moved = 0
    for path, value in whole.items():
        np.testing.assert_allclose(accumulated[path], value, rtol=1e-5, atol=atol, err_msg=path)
        moved += np.abs(value - start[path]).max() > 1e-6
    assert moved > len(whole) // 2  # the comparison is of trained weights


def tiny_classifier(tiny_preset):
    keras.utils.set_random_seed(0)
    return BertClassifier.from_preset(tiny_preset, sequence_length=32, num_classes=2, dropout=0.0,
                                      backbone_overrides=NO_DROPOUT)


ACCUMULATED = {"batch_size": 4, "gradient_accumulation_steps": 2}


@pytest.mark.all_backends
def test_two_batches_of_four_train_as_one_of_eight(tiny_preset, uci_reviews):
    # Eight real reviews, three epochs: each epoch is one update either way, of the same eight rows. SGD's step is
    # the gradient: the weights are equal to float rounding.
    reviews = uci_reviews[0].head(8)
    runs = {}
    for name, steps in {"whole": None, "accumulated": 2}.items():
        classifier = tiny_classifier(tiny_preset)
        start = {weight.path: np.array(weight) for weight in classifier.weights}
        classifier.compile(optimizer=keras.optimizers.SGD(0.5, gradient_accumulation_steps=steps),
                           loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        runs[name] = trained_weights(classifier, reviews, batch_size=8 // (steps or 1))
    assert_same_weights(runs["accumulated"], runs["whole"], start)


def test_fits_own_adamw_accumulates_with_its_schedule_counting_updates(tiny_preset, uci_reviews):
    # Adam divides by sqrt(v), so a gradient near zero turns its rounding noise into up to ~1% of the learning
    # rate (a schedule counting batches, or a lost batch, moves weights by ~50% of it).
    reviews = uci_reviews[0].head(8)
    classifier = tiny_classifier(tiny_preset)
    start = {weight.path: np.array(weight) for weight in classifier.weights}
    whole = trained_weights(classifier, reviews, batch_size=8, learning_rate=1e-3)
    classifier = tiny_classifier(tiny_preset)
    accumulated = trained_weights(classifier, reviews, learning_rate=1e-3, **ACCUMULATED)
    assert int(classifier.optimizer.iterations) == 3  # updates, not batches
    assert_same_weights(accumulated, whole, start, atol=1e-5)


def masked_examples(pretrainer, texts):
    """Eight masked examples as Keras-level data, each with three masked positions (MLM's loss is a mean over the
    masked tokens of a batch: batches with equal counts make the mean of means the mean of the whole)."""
    features = {name: np.asarray(value) for name, value in pretrainer.preprocessor(tf.constant(texts)).items()}
    positions = np.tile([1, 4, 7], (len(texts), 1))
    targets = np.take_along_axis(features["token_ids"], positions, axis=1)
    features = {**features, "mask_positions": positions}
    return features, targets, np.ones_like(targets, dtype="float32")


def test_pretraining_with_lamb_accumulates_as_one_large_batch(tiny_preset, real_sentences):
    runs = {}
    for name, (batch_size, steps) in {"whole": (8, None), "accumulated": (2, 4)}.items():
        keras.utils.set_random_seed(0)
        pretrainer = BertPretrainer.from_preset(tiny_preset, next_sentence=None, max_sequence_length=16,
                                                backbone_overrides=NO_DROPOUT)
        features, targets, weights = masked_examples(pretrainer, real_sentences[:8])
        data = tf.data.Dataset.from_tensor_slices((features, {"mlm": targets}, {"mlm": weights})).batch(batch_size)
        start = {weight.path: np.array(weight) for weight in pretrainer.weights}
        runs[name] = trained_weights(pretrainer, data, learning_rate=1e-3, optimizer="lamb",
                                     gradient_accumulation_steps=steps)
    assert_same_weights(runs["accumulated"], runs["whole"], start, atol=1e-6)


def test_accumulation_that_leaves_batches_unapplied_is_refused(tiny_preset, uci_reviews):
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=32, num_classes=2)
    with pytest.raises(ValueError, match=r"gradient_accumulation_steps=4 does not divide the 3 batches of this fit"):
        classifier.fit(uci_reviews[0].head(24), batch_size=8, gradient_accumulation_steps=4, verbose=0)
    classifier.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match="compiled with your own optimizer"):
        classifier.fit(uci_reviews[0].head(24), batch_size=8, gradient_accumulation_steps=3, verbose=0)
