"""Frozen features cached across epochs: a frozen classifier trained on cached vectors ends with the weights of
one that runs BERT every epoch (no dropout, so both see the same numbers), with and without a layer mix."""

import keras
import numpy as np
import pytest

from kerasbert.fine_tuning import FineTuningConfig, frozen_features
from kerasbert.tasks import BertClassifier, BertTokenClassifier


def frozen_classifier(tiny_preset, layer_mix=False, **options):
    keras.utils.set_random_seed(0)  # the same head weights at the start
    return BertClassifier.from_preset(tiny_preset, sequence_length=64, labels=[0, 1],
                                      fine_tuning=FineTuningConfig("frozen", layer_mix=layer_mix),
                                      dropout=0.0, backbone_overrides={"dropout": 0.0, "attention_dropout": 0.0},
                                      **options)


def trained_head(tiny_preset, uci_reviews, cache_features, **options):
    classifier = frozen_classifier(tiny_preset, **options)
    history = classifier.fit(uci_reviews[0], validation_data=uci_reviews[1], epochs=2, batch_size=8,
                             learning_rate=1e-2, verbose=0, cache_features=cache_features)
    return {weight.path: np.array(weight) for weight in classifier.trainable_weights}, history.history


@pytest.mark.parametrize("layer_mix", [False, True])
def test_cached_features_train_the_head_as_recomputed_ones(tiny_preset, uci_reviews, monkeypatch, layer_mix):
    extracted = []
    original = frozen_features.with_frozen_features
    monkeypatch.setattr("kerasbert.tasks.pipeline_model.with_frozen_features",
                        lambda task, prepared: extracted.append(len(prepared.labels)) or original(task, prepared))
    cached, cached_history = trained_head(tiny_preset, uci_reviews, None, layer_mix=layer_mix)
    assert extracted == [16, 24]  # validation and training rows, each once for both epochs
    recomputed, recomputed_history = trained_head(tiny_preset, uci_reviews, False, layer_mix=layer_mix)
    assert extracted == [16, 24]
    mix = {"layer_mix/scalar_weights", "layer_mix/gamma"} if layer_mix else set()
    assert set(cached) == set(recomputed) == {"logits/kernel", "logits/bias"} | mix
    for path in cached:
        np.testing.assert_allclose(cached[path], recomputed[path], rtol=1e-3, atol=1e-5, err_msg=path)
    np.testing.assert_allclose(cached_history["val_loss"], recomputed_history["val_loss"], rtol=1e-3)
    assert not np.allclose(cached["logits/kernel"], frozen_classifier(tiny_preset).get_layer("logits").kernel)


def test_cache_features_is_checked(tiny_preset, uci_reviews):
    full = BertClassifier.from_preset(tiny_preset, sequence_length=64, labels=[0, 1])
    with pytest.raises(ValueError, match="cache_features=True needs fine_tuning='frozen'.*fine_tuning='full'"):
        full.fit(uci_reviews[0], cache_features=True, batch_size=8)
    with pytest.raises(ValueError, match="cache_features must be True, False or None"):
        full.fit(uci_reviews[0], cache_features="yes", batch_size=8)
    tagger = BertTokenClassifier.from_preset(tiny_preset, sequence_length=64, labels=["O", "B-PER"],
                                             fine_tuning="frozen")
    with pytest.raises(ValueError, match="reads one vector per example"):
        tagger.fit({"tokens": [["Emma", "smiled"]], "tags": [["B-PER", "O"]]}, cache_features=True, batch_size=1)
