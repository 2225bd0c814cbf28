"""Quantisation-aware fine-tuning (Q8BERT; issue 37): training on Keras' int8 grid, then `quantize("int8")`.

References: Keras' own `abs_max_quantize` (the grid) and the same model after `quantize("int8")` (the forward).
"""

import keras
import numpy as np
import pytest

from kerasbert.fine_tuning import FineTuningConfig
from kerasbert.layers.int8_grid import fake_int8
from kerasbert.tasks import BertClassifier, BertMaskedLM

Q8 = FineTuningConfig("full", quantization_aware=True)


@pytest.mark.all_backends
def test_the_grid_is_keras_int8_and_the_gradient_passes_unchanged():
    x = np.random.default_rng(0).normal(size=(3, 5, 7)).astype("float32")
    for axis in (0, -1):
        quantized, scale = keras.quantizers.abs_max_quantize(x, axis=axis)
        expected = keras.ops.convert_to_numpy(quantized).astype("float32") / keras.ops.convert_to_numpy(scale)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(fake_int8(x, axis)), expected, atol=1e-6)
        assert np.abs(keras.ops.convert_to_numpy(fake_int8(x, axis)) - x).max() > 1e-4  # it does round

    gradient = gradient_of(lambda v: keras.ops.sum(fake_int8(v, -1) * 3.0), x)
    np.testing.assert_array_equal(gradient, np.full_like(x, 3.0))


def gradient_of(function, x):
    """d function(x) / dx on the current backend, as numpy."""
    if keras.backend.backend() == "jax":
        import jax

        return np.asarray(jax.grad(function)(x))
    if keras.backend.backend() == "torch":
        import torch

        x = torch.tensor(x, requires_grad=True)
        function(x).backward()
        return x.grad.numpy()
    import tensorflow as tf

    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        value = function(x)
    return tape.gradient(value, x).numpy()


def test_training_on_the_grid_gives_the_int8_models_outputs_and_reloads(tiny_preset, uci_reviews, tmp_path):
    train, test = uci_reviews
    texts = test["text"].tolist()
    classifier = BertClassifier.from_preset(tiny_preset, sequence_length=64, fine_tuning=Q8)
    before = [keras.ops.convert_to_numpy(w).copy() for w in classifier.backbone.weights]
    classifier.fit(train, epochs=1, batch_size=8, verbose=0)
    assert any(np.abs(keras.ops.convert_to_numpy(w) - b).max() > 0 for w, b in zip(classifier.backbone.weights,
                                                                                     before))
    on_grid = np.stack(classifier.predict(texts, verbose=0)["probabilities"])

    classifier.save(tmp_path / "q8.keras")
    reloaded = keras.saving.load_model(tmp_path / "q8.keras")
    assert reloaded.get_config()["fine_tuning"] == {"mode": "full", "quantization_aware": True}
    np.testing.assert_allclose(np.stack(reloaded.predict(texts, verbose=0)["probabilities"]), on_grid, atol=1e-6)

    ids = np.random.default_rng(0).integers(1000, 30000, size=(4, 24)).astype("int32")
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    grid_states = keras.ops.convert_to_numpy(classifier.backbone(inputs)["sequence_output"])

    plain = BertClassifier.from_preset(tiny_preset, sequence_length=64, labels=classifier.labels)
    plain.set_weights(classifier.get_weights())
    float_outputs = np.stack(plain.predict(texts, verbose=0)["probabilities"])
    assert np.abs(float_outputs - on_grid).max() > 1e-6  # the grid changes the outputs ...

    float_states = keras.ops.convert_to_numpy(plain.backbone(inputs)["sequence_output"])
    print(f"float vs grid: probabilities {np.abs(float_outputs - on_grid).max():.2e}, "
          f"states {np.abs(float_states - grid_states).max():.2e}")
    assert np.abs(float_states - grid_states).max() > 1e-3

    # ... to the int8 model's: the same products, summed in another order (int8 x int8, then scaled)
    classifier.quantize("int8")
    int8_outputs = np.stack(classifier.predict(texts, verbose=0)["probabilities"])
    int8_states = keras.ops.convert_to_numpy(classifier.backbone(inputs)["sequence_output"])
    print(f"int8 vs grid: states {np.abs(int8_states - grid_states).max():.2e}")
    np.testing.assert_allclose(int8_states, grid_states, atol=1e-5)
    np.testing.assert_allclose(int8_outputs, on_grid, atol=2e-6)


def test_the_tied_masked_lm_decoder_reads_the_table_on_the_grid_as_int8_does(tiny_preset):
    fill = BertMaskedLM.from_preset(tiny_preset, sequence_length=16, fine_tuning=Q8)
    ids = np.random.default_rng(1).integers(1000, 30000, size=(2, 12)).astype("int32")
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids),
              "mask_positions": np.array([[1, 5], [2, 7]], "int32")}
    on_grid = keras.ops.convert_to_numpy(fill(inputs))
    fill.quantize("int8")
    np.testing.assert_allclose(keras.ops.convert_to_numpy(fill(inputs)), on_grid, atol=1e-5)


def test_the_switch_is_checked():
    with pytest.raises(TypeError, match="quantization_aware must be True or False"):
        FineTuningConfig("full", quantization_aware="yes")
    assert FineTuningConfig("lora", quantization_aware=True).saved() == {"mode": "lora", "quantization_aware": True}
    assert FineTuningConfig("full").saved() == "full"
