import textwrap

import keras
import numpy as np
import pytest

from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.layers.encoder_block import TransformerEncoderBlock


@keras.saving.register_keras_serializable(package="kerasbert_tests")
class ReluFeedForwardBlock(TransformerEncoderBlock):
    """A research variant: the feed-forward output is scaled by one half."""

    def feed_forward(self, x, training=None):
        return 0.5 * super().feed_forward(x, training=training)


@pytest.mark.parametrize(
    "preset, expected",
    [("bert_base_en_uncased", 109_482_240),
     pytest.param("bert_large_en_uncased", 335_141_888, marks=pytest.mark.on_request)],  # 14 s; base checks the formula
)
def test_exact_parameter_counts_offline(preset, expected):
    backbone = BertBackbone.from_preset(preset, load_weights=False)
    assert backbone.count_params() == expected


@pytest.mark.all_backends
def test_outputs_and_hidden_states(tiny_config, tiny_inputs):
    backbone = BertBackbone(**tiny_config, dropout=0.0, output_hidden_states=True)
    outputs = keras.tree.map_structure(keras.ops.convert_to_numpy, backbone(tiny_inputs))
    assert tuple(outputs["sequence_output"].shape) == (2, 8, 16)
    assert tuple(outputs["pooled_output"].shape) == (2, 16)
    hidden_states = outputs["hidden_states"]
    assert len(hidden_states) == tiny_config["num_layers"] + 1
    np.testing.assert_allclose(hidden_states[-1], outputs["sequence_output"], atol=0)
    embedded = keras.ops.convert_to_numpy(backbone.embedding(tiny_inputs["token_ids"], tiny_inputs["segment_ids"]))
    np.testing.assert_allclose(hidden_states[0], embedded, atol=1e-6)
    pooled = np.tanh(
        keras.ops.convert_to_numpy(outputs["sequence_output"])[:, 0] @ backbone.pooler.kernel.numpy()
        + backbone.pooler.bias.numpy()
    )
    np.testing.assert_allclose(outputs["pooled_output"], pooled, atol=1e-5)


@pytest.mark.all_backends
def test_padding_tokens_do_not_change_real_outputs(tiny_config, tiny_inputs):
    backbone = BertBackbone(**tiny_config, dropout=0.0)
    changed = {k: v.copy() for k, v in tiny_inputs.items()}
    changed["token_ids"][1, 5:] = 7
    a = keras.ops.convert_to_numpy(backbone(tiny_inputs)["sequence_output"])
    b = keras.ops.convert_to_numpy(backbone(changed)["sequence_output"])
    np.testing.assert_allclose(a[1, :5], b[1, :5], atol=1e-5)


@pytest.mark.all_backends
def test_custom_encoder_block_swaps_in_and_round_trips(tiny_config, tiny_inputs, tmp_path):
    backbone = BertBackbone(**tiny_config, encoder_block=ReluFeedForwardBlock)
    assert all(type(b) is ReluFeedForwardBlock for b in backbone.encoder_blocks)
    plain = BertBackbone(**tiny_config)
    plain.set_weights(backbone.get_weights())
    custom_out = keras.ops.convert_to_numpy(backbone(tiny_inputs)["sequence_output"])
    assert np.abs(custom_out - keras.ops.convert_to_numpy(plain(tiny_inputs)["sequence_output"])).max() > 1e-3

    path = tmp_path / "custom.keras"
    backbone.save(path)
    reloaded = keras.saving.load_model(path)
    assert all(type(b) is ReluFeedForwardBlock for b in reloaded.encoder_blocks)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(reloaded(tiny_inputs)["sequence_output"]), custom_out,
                               atol=1e-6)
    with pytest.raises(TypeError, match="TransformerEncoderBlock subclass"):
        BertBackbone(**tiny_config, encoder_block=keras.layers.Dense)


@pytest.mark.all_backends
def test_pre_ln_backbone_has_final_layer_norm(tiny_config, tiny_inputs):
    backbone = BertBackbone(**tiny_config, normalize_first=True)
    assert backbone.final_layer_norm is not None
    out = keras.ops.convert_to_numpy(backbone(tiny_inputs)["sequence_output"])
    np.testing.assert_allclose(out.mean(-1), 0.0, atol=1e-5)


@pytest.mark.all_backends
def test_mixed_bfloat16_keeps_float32_variables(tiny_config, tiny_inputs):
    backbone = BertBackbone(**tiny_config, dtype="mixed_bfloat16")
    outputs = backbone(tiny_inputs)
    assert all(v.dtype == "float32" for v in backbone.weights)
    assert keras.backend.standardize_dtype(outputs["pooled_output"].dtype) == "bfloat16"
    assert backbone.get_config()["dtype"]["config"]["name"] == "mixed_bfloat16"


def test_saved_real_backbone_reloads_in_a_fresh_process(minilm_path, tmp_path, fresh_python):
    backbone = BertBackbone.from_preset(str(minilm_path))
    rng = np.random.default_rng(1)
    inputs = {
        "token_ids": rng.integers(999, 30000, size=(3, 12)).astype("int32"),
        "segment_ids": np.zeros((3, 12), "int32"),
        "padding_mask": (np.arange(12)[None, :] < np.array([[12], [7], [3]])).astype("int32"),
    }
    expected = backbone(inputs)
    np.savez(tmp_path / "inputs.npz", **inputs)
    backbone.save(tmp_path / "minilm.keras")
    script = textwrap.dedent(f"""
        import numpy as np, keras, kerasbert
        model = keras.saving.load_model({str(tmp_path / "minilm.keras")!r})  # safe_mode=True
        inputs = dict(np.load({str(tmp_path / "inputs.npz")!r}))
        out = model(inputs)
        np.savez({str(tmp_path / "out.npz")!r}, **{{k: keras.ops.convert_to_numpy(out[k]) for k in ("sequence_output", "pooled_output")}})
    """)
    fresh_python(script)
    reloaded = np.load(tmp_path / "out.npz")
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(reloaded[key], keras.ops.convert_to_numpy(expected[key]))
