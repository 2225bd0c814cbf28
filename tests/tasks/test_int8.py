"""int8 task models (issue 20, part 2): Keras `quantize("int8")` on kerasbert's layers, saved and deployed.

Reference: the same model in float32. Real weights (all-MiniLM-L6-v2) and real reviews.
"""

import os

import keras
import numpy as np
import pytest

from kerasbert.tasks import BertClassifier


@pytest.fixture(scope="module")
def float_and_int8(uci_reviews, tmp_path_factory):
    """A MiniLM classifier fitted briefly on real reviews, saved in float32, and a copy quantised to int8."""
    classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", sequence_length=64)
    classifier.fit(uci_reviews[0], epochs=1, batch_size=8, verbose=0)
    folder = tmp_path_factory.mktemp("int8")
    classifier.save(folder / "float.keras")
    quantized = keras.saving.load_model(folder / "float.keras")
    quantized.quantize("int8")
    quantized.save(folder / "int8.keras")
    return classifier, quantized, folder


def probabilities(model, texts):
    return np.stack(model.predict(texts, verbose=0)["probabilities"])


def test_int8_weights_are_at_most_30_percent_of_float_and_outputs_stay_close(float_and_int8, uci_reviews):
    classifier, quantized, folder = float_and_int8
    ratio = os.path.getsize(folder / "int8.keras") / os.path.getsize(folder / "float.keras")
    texts = uci_reviews[1]["text"].tolist()
    expected, got = probabilities(classifier, texts), probabilities(quantized, texts)
    print(f"int8 file {ratio:.1%} of float32; max |probability difference| {np.abs(expected - got).max():.4f}")
    assert ratio <= 0.30
    assert np.abs(expected - got).max() < 0.05
    kernels = {v.path.split("/")[-1]: v.dtype for v in quantized.backbone.weights}
    assert kernels["kernel"] == "int8" and kernels["embeddings"] == "int8"


def test_int8_file_reloads_in_a_fresh_process_in_safe_mode_with_identical_outputs(float_and_int8, uci_reviews,
                                                                                  fresh_python):
    _, quantized, folder = float_and_int8
    texts = uci_reviews[1]["text"].tolist()[:6]
    script = (
        "import json, keras, numpy as np; import kerasbert.tasks\n"
        f"model = keras.saving.load_model({str(folder / 'int8.keras')!r}, safe_mode=True)\n"
        f"print(json.dumps(np.stack(model.predict({texts!r}, verbose=0)['probabilities']).tolist()))\n"
    )
    result = fresh_python(script)
    reloaded = np.array(eval(result.stdout.strip().splitlines()[-1]))
    np.testing.assert_allclose(reloaded, probabilities(quantized, texts), atol=1e-6)


def test_int8_model_exports_and_serves_raw_text(float_and_int8, uci_reviews, tmp_path):
    import tensorflow as tf

    _, quantized, _ = float_and_int8
    texts = uci_reviews[1]["text"].tolist()[:4]
    quantized.export(tmp_path / "served")
    served = tf.saved_model.load(str(tmp_path / "served"))
    outputs = served.serve(tf.constant(texts))
    # The SavedModel pads to another length than predict: float sums in another order can move an activation across
    # an int8 rounding step (5.5e-5 on an AVX2 CPU), far less than int8 moves from float (the test above)
    np.testing.assert_allclose(np.asarray(outputs["probabilities"]), probabilities(quantized, texts), atol=3e-4)


def test_quantising_twice_or_to_another_mode_is_refused(float_and_int8):
    _, quantized, _ = float_and_int8
    with pytest.raises(ValueError, match="already quantised"):
        quantized.quantize("int8")
    with pytest.raises(ValueError, match="quantise to 'int8'"):
        BertClassifier.from_preset("all_minilm_l6_v2_en", labels=[0, 1], sequence_length=32).quantize("int4")


def test_weight_only_int8_keeps_float_activations_and_reloads(float_and_int8, uci_reviews, tmp_path):
    classifier, quantized, folder = float_and_int8
    weight_only = keras.saving.load_model(folder / "float.keras")
    weight_only.quantize("int8", weight_only=True)
    weight_only.save(tmp_path / "weights.keras")
    texts = uci_reviews[1]["text"].tolist()
    expected = probabilities(classifier, texts)
    got = probabilities(weight_only, texts)
    assert np.abs(expected - got).max() <= np.abs(expected - probabilities(quantized, texts)).max()
    reloaded = keras.saving.load_model(tmp_path / "weights.keras")
    assert reloaded.quantization == "int8_weight_only"
    np.testing.assert_allclose(probabilities(reloaded, texts), got, atol=1e-6)


def test_masked_lm_with_a_tied_int8_decoder_keeps_its_logits(tiny_preset, tmp_path):
    from kerasbert.tasks import BertMaskedLM

    fill = BertMaskedLM.from_preset(tiny_preset, sequence_length=32)
    texts = ["Emma was [MASK] and rich.", "Mr. [MASK] came to Hartfield."]
    inputs = {name: np.asarray(value) for name, value in fill.preprocessor(texts).items()}
    inputs["mask_positions"] = np.array([[1, 2, 3], [2, 3, 4]], np.int32)
    expected = np.asarray(fill(inputs))
    fill.quantize("int8")
    assert fill.backbone.token_embedding.quantization_mode == "int8"
    got = np.asarray(fill(inputs))
    relative = np.abs(got - expected).max() / np.abs(expected).max()
    print(f"masked LM logits, int8 vs float32: max difference {relative:.2%} of the largest logit")
    assert relative < 0.05
    fill.save(tmp_path / "fill.keras")
    reloaded = keras.saving.load_model(tmp_path / "fill.keras")
    np.testing.assert_allclose(np.asarray(reloaded(inputs)), got, atol=1e-6)
    assert reloaded.predict(texts, top_k=3, verbose=0)["tokens"].tolist() == \
        fill.predict(texts, top_k=3, verbose=0)["tokens"].tolist()
