"""Research extension points on the real all-MiniLM-L6-v2 weights: attention probabilities against HF
`output_attentions`, symbolic (output, probabilities) pairs for probe models, blocks that change one
factory or method (a temperature attention, a gated residual) loading the real weights, fine-tuning
and reloading from `.keras`, and the HF export refusing what HF BERT cannot express.
"""

import json
import warnings

import keras
import numpy as np
import pytest
from keras import ops

import kerasbert as kb
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.layers.attention import MultiHeadSelfAttention
from kerasbert.layers.encoder_block import TransformerEncoderBlock

SENTENCES = ["The battery lasts all day and the screen is sharp.", "Not what I expected, sadly.",
             "It broke after a week."]


@keras.saving.register_keras_serializable(package="kerasbert_tests")
class TemperatureAttention(MultiHeadSelfAttention):
    """Attention with softer (temperature > 1) or sharper scores: one method changed."""

    def __init__(self, num_heads, temperature=1.0, **kwargs):
        super().__init__(num_heads, **kwargs)
        self.temperature = temperature

    def attention_scores(self, query, key):
        return super().attention_scores(query, key) / self.temperature

    def get_config(self):
        return {**super().get_config(), "temperature": self.temperature}


@keras.saving.register_keras_serializable(package="kerasbert_tests")
class TemperatureBlock(TransformerEncoderBlock):
    """A block whose attention is `TemperatureAttention(temperature=2)`: one factory changed."""

    def make_attention(self):
        return TemperatureAttention(self.num_heads, temperature=2.0, attention_dropout=self.attention_dropout,
                                    initializer_range=self.initializer_range, dtype=self.dtype_policy,
                                    name="attention")


@keras.saving.register_keras_serializable(package="kerasbert_tests")
class GatedResidualBlock(TransformerEncoderBlock):
    """x + g * FFN(x) with a learned per-unit gate g (starts at 1: the stock block)."""

    def build(self, input_shape):
        super().build(input_shape)
        self.gate = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gate")

    def feed_forward(self, x, training=None):
        return ops.cast(self.gate, self.compute_dtype) * super().feed_forward(x, training=training)


@pytest.fixture(scope="module")
def encoded(minilm_path):
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(minilm_path))
    return tokenizer(SENTENCES, padding=True, return_tensors="np")


def keras_inputs(encoded):
    return {"token_ids": encoded["input_ids"].astype("int32"),
            "segment_ids": encoded["token_type_ids"].astype("int32"),
            "padding_mask": encoded["attention_mask"].astype("int32")}


@pytest.mark.all_backends
def test_output_attentions_match_hf_eager_attention(minilm_path, encoded):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.BertModel.from_pretrained(str(minilm_path), attn_implementation="eager").eval()
    with torch.no_grad():
        reference = model(**{k: torch.tensor(v) for k, v in encoded.items()}, output_attentions=True).attentions
    backbone = BertBackbone.from_preset(str(minilm_path), output_attentions=True)
    attentions = backbone(keras_inputs(encoded))["attentions"]
    length = encoded["input_ids"].shape[1]
    assert len(attentions) == len(reference) == 6
    assert tuple(attentions[0].shape) == tuple(reference[0].shape) == (3, 12, length, length)
    for ours, theirs in zip(attentions, reference):
        np.testing.assert_allclose(ops.convert_to_numpy(ours), theirs.numpy(), atol=1e-5)
    padded_keys = encoded["attention_mask"][:, None, None, :] == 0
    assert np.all(ops.convert_to_numpy(attentions[0])[np.broadcast_to(padded_keys, attentions[0].shape)] == 0)
    assert BertBackbone.from_config(backbone.get_config()).output_attentions


@pytest.mark.all_backends
def test_layers_return_the_pair_symbolically_so_a_probe_model_builds(tiny_config, tiny_inputs):
    x, padding_mask = keras.Input((None, 16)), keras.Input((None,), dtype="int32")
    output, probabilities = MultiHeadSelfAttention(num_heads=2)(x, return_attention_scores=True)
    assert tuple(output.shape) == (None, None, 16) and tuple(probabilities.shape) == (None, 2, None, None)
    block = TransformerEncoderBlock(2, 32)
    _, maps = block(x, padding_mask=padding_mask, return_attention_scores=True)
    assert tuple(maps.shape) == (None, 2, None, None) and maps.dtype == "float32"
    probe = keras.Model([x, padding_mask], maps)  # what failed with "Iterating over a symbolic KerasTensor"
    states = np.random.default_rng(0).normal(size=(2, 8, 16)).astype("float32")
    values = ops.convert_to_numpy(probe([states, tiny_inputs["padding_mask"]]))
    assert values.shape == (2, 2, 8, 8)
    np.testing.assert_allclose(values.sum(-1), 1.0, atol=1e-6)
    assert np.all(values[1, :, :, 5:] == 0)  # padded keys get no attention


def fine_tune_and_reload(block, minilm_path, tmp_path):
    """Classifier on the real weights with `block`: loss falls on real reviews, and the `.keras` file
    reloads to the same probabilities."""
    reviews = kb.data.load_dataset("uci_sentiment", "train").head(16)
    classifier = kb.BertClassifier.from_preset(str(minilm_path), sequence_length=32, labels=[0, 1],
                                               backbone_overrides={"encoder_block": block})
    history = classifier.fit(reviews, epochs=3, batch_size=8, learning_rate=1e-4, verbose=0).history["loss"]
    assert history[-1] < history[0]
    path = tmp_path / f"{block.__name__}.keras"
    classifier.save(path)
    reloaded = keras.saving.load_model(path)
    assert isinstance(reloaded.backbone.encoder_blocks[0], block)
    before = np.stack(classifier.predict(SENTENCES)["probabilities"])
    np.testing.assert_allclose(np.stack(reloaded.predict(SENTENCES)["probabilities"]), before, atol=1e-6)
    return classifier


def test_temperature_attention_changes_one_method_and_creates_no_unused_weights(minilm_path, encoded, tmp_path):
    stock = BertBackbone.from_preset(str(minilm_path), output_attentions=True)
    warm = BertBackbone.from_preset(str(minilm_path), encoder_block=TemperatureBlock, output_attentions=True)
    assert [v.path for v in warm.weights] == [v.path for v in stock.weights]  # nothing orphaned
    assert isinstance(warm.encoder_blocks[0].attention, TemperatureAttention)
    stock_maps = ops.convert_to_numpy(stock(keras_inputs(encoded))["attentions"][0])
    warm_maps = ops.convert_to_numpy(warm(keras_inputs(encoded))["attentions"][0])
    real = encoded["attention_mask"][:, None, None, :].astype(bool)
    entropy = lambda p: -np.sum(np.where(real, p * np.log(np.maximum(p, 1e-30)), 0), -1).mean()
    assert entropy(warm_maps) > entropy(stock_maps)  # temperature 2 spreads the attention
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "Gradients do not exist" for unused weights
        fine_tune_and_reload(TemperatureBlock, minilm_path, tmp_path)


def test_gated_residual_block_loads_real_weights_fine_tunes_and_reloads(minilm_path, encoded, tmp_path):
    stock = BertBackbone.from_preset(str(minilm_path))
    gated = BertBackbone.from_preset(str(minilm_path), encoder_block=GatedResidualBlock)
    assert gated.count_params() == stock.count_params() + 6 * 384
    np.testing.assert_allclose(ops.convert_to_numpy(gated(keras_inputs(encoded))["sequence_output"]),
                               ops.convert_to_numpy(stock(keras_inputs(encoded))["sequence_output"]), atol=1e-6)
    classifier = fine_tune_and_reload(GatedResidualBlock, minilm_path, tmp_path)
    gate = ops.convert_to_numpy(classifier.backbone.encoder_blocks[0].gate)
    assert not np.allclose(gate, 1.0)  # the gate trained


@pytest.mark.all_backends
def test_hf_export_refuses_what_hf_bert_cannot_express(minilm_path, tmp_path):
    stock = BertBackbone.from_preset(str(minilm_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "writing the stock-BERT part only"
        stock.export_to_hf(tmp_path / "stock")
    gated = BertBackbone.from_preset(str(minilm_path), encoder_block=GatedResidualBlock)
    with pytest.raises(ValueError, match=r"GatedResidualBlock \(a TransformerEncoderBlock\) overrides build, "
                                         r"feed_forward.*6 weight\(s\) have no HF name \(encoder_block_0/gate"):
        gated.export_to_hf(tmp_path / "gated")
    assert not (tmp_path / "gated").exists()
    with pytest.raises(ValueError, match="save_to_preset"):
        gated.save_to_preset(tmp_path / "gated", format="hf")
    with pytest.raises(ValueError, match="TemperatureAttention.*overrides attention_scores"):
        BertBackbone.from_preset(str(minilm_path), encoder_block=TemperatureBlock).export_to_hf(tmp_path / "t")
    with pytest.warns(UserWarning, match="stock-BERT part only"):
        gated.export_to_hf(tmp_path / "lossy", allow_lossy=True)
    assert json.loads((tmp_path / "lossy" / "config.json").read_text())["num_hidden_layers"] == 6

    gated.encoder_blocks[2].gate.assign(np.full(384, 0.5, "float32"))
    gated.save_to_preset(tmp_path / "kept")  # the kerasbert format keeps the block and the gate
    reloaded = BertBackbone.from_preset(str(tmp_path / "kept"))
    assert isinstance(reloaded.encoder_blocks[2], GatedResidualBlock)
    np.testing.assert_array_equal(ops.convert_to_numpy(reloaded.encoder_blocks[2].gate), 0.5)
