"""ScalarMix, Adapter and LoRA: their maths, identity at step 0, saving, and LoRA equal to HF peft's on the
same weights (peft 0.21 `LoraConfig` on transformers' `BertModel`)."""

import keras
import numpy as np
import pytest
from keras import ops

from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.layers.adapter import Adapter
from kerasbert.layers.scalar_mix import ScalarMix

torch = pytest.importorskip("torch", reason="the peft reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the peft reference needs transformers")
peft = pytest.importorskip("peft", reason="the LoRA reference is HF peft: pip install peft")

TINY = dict(vocabulary_size=120, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, dropout=0.0,
            attention_dropout=0.0, max_sequence_length=32)
ALL_TARGETS = ["query", "key", "value", "attention_output", "intermediate", "output"]
# kerasbert target -> the HF BERT module it adapts (regex over peft's module names)
HF_MODULES = {"query": r"attention\.self\.query", "key": r"attention\.self\.key", "value": r"attention\.self\.value",
              "attention_output": r"attention\.output\.dense", "intermediate": r"intermediate\.dense",
              "output": r"layer\.\d+\.output\.dense"}


def batch():
    rng = np.random.default_rng(0)
    token_ids = rng.integers(1, 120, (2, 7)).astype("int32")
    padding_mask = np.array([[1] * 7, [1] * 4 + [0] * 3], "int32")
    return {"token_ids": token_ids * padding_mask, "segment_ids": np.zeros((2, 7), "int32"),
            "padding_mask": padding_mask}


def test_scalar_mix_is_a_softmax_weighted_sum_times_gamma():
    mix = ScalarMix(3)
    tensors = [ops.convert_to_tensor(np.full((2, 4), value, "float32")) for value in (1.0, 2.0, 6.0)]
    assert np.allclose(mix(tensors), 3.0)  # equal weights at step 0: the mean
    mix.scalar_weights.assign([0.0, np.log(2.0), np.log(5.0)])
    mix.gamma.assign(2.0)
    expected = 2.0 * (1 * 1 + 2 * 2 + 5 * 6) / 8
    assert np.allclose(mix(tensors), expected)
    assert np.allclose(mix.layer_weights(), [1 / 8, 2 / 8, 5 / 8])
    assert ScalarMix.from_config(mix.get_config()).num_tensors == 3
    with pytest.raises(ValueError, match="num_tensors must be an int of at least 1"):
        ScalarMix(0)


def test_adapter_is_the_identity_at_step_0_then_a_bottleneck_with_a_residual():
    adapter = Adapter(bottleneck_dim=3, activation="relu")
    x = np.random.default_rng(1).normal(size=(2, 5, 8)).astype("float32")
    assert np.array_equal(adapter(x), x)
    up = np.random.default_rng(2).normal(size=(3, 8)).astype("float32")
    adapter.up.kernel.assign(up)
    down, bias = np.asarray(adapter.down.kernel), np.asarray(adapter.down.bias)
    assert np.allclose(adapter(x), x + np.maximum(x @ down + bias, 0) @ up, atol=1e-6)


def test_inserted_adapters_and_lora_leave_the_pretrained_outputs_unchanged_and_save(tiny_preset, tmp_path):
    stock = BertBackbone.from_preset(tiny_preset)
    adapted = BertBackbone.from_preset(tiny_preset, adapter_size=4, lora_rank=2, lora_targets=ALL_TARGETS)
    inputs = {**batch(), "token_ids": batch()["token_ids"] + 1000}
    for name in ("sequence_output", "pooled_output"):
        assert np.array_equal(stock(inputs)[name], adapted(inputs)[name])
    assert len(adapted.weights) == len(stock.weights) + stock.num_layers * (2 * 4 + 6 * 2)  # 2 adapters, 6 updates
    for weight in adapted.weights:  # move every adapter and factor off its identity start, then save
        if "adapter" in weight.path or "lora" in weight.path:
            weight.assign(np.random.default_rng(3).normal(0, 0.1, weight.shape).astype("float32"))
    adapted.save(tmp_path / "adapted.keras")
    reloaded = keras.saving.load_model(tmp_path / "adapted.keras")
    assert reloaded.adapter_size == 4 and reloaded.lora_targets == tuple(ALL_TARGETS)
    assert np.array_equal(reloaded(inputs)["sequence_output"], adapted(inputs)["sequence_output"])
    assert not np.allclose(reloaded(inputs)["sequence_output"], stock(inputs)["sequence_output"])


def hf_lora_model(targets, rank, alpha):
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=120, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=32, max_position_embeddings=32, hidden_dropout_prob=0.0,
                                     attention_probs_dropout_prob=0.0)
    base = transformers.BertModel(config)
    pattern = r".*(" + "|".join(HF_MODULES[target] for target in targets) + r")$"
    model = peft.get_peft_model(base, peft.LoraConfig(r=rank, lora_alpha=alpha, target_modules=pattern,
                                                      lora_dropout=0.0))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:  # peft starts B at zero; give the update something to compute
                parameter.normal_(0, 0.5)
    return base, model.eval()


@pytest.mark.parametrize("targets", [["query", "value"], ALL_TARGETS])
def test_lora_equals_peft_and_merging_keeps_the_outputs(tmp_path, targets):
    base, reference = hf_lora_model(targets, rank=4, alpha=8)
    stock = transformers.BertModel(base.config)  # the frozen weights peft wraps, saved as a stock HF folder
    stock.load_state_dict({name.replace("base_layer.", ""): tensor for name, tensor in base.state_dict().items()
                           if "lora" not in name})
    folder = tmp_path / "hf"
    stock.save_pretrained(folder)
    backbone = BertBackbone.from_preset(folder, lora_rank=4, lora_alpha=8, lora_targets=targets, dropout=0.0,
                                        attention_dropout=0.0)
    hf_names = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
                "attention_output": "attention.output.dense", "intermediate": "intermediate.dense",
                "output": "output.dense"}
    for index, block in enumerate(backbone.encoder_blocks):
        for target in targets:
            update = block.attention.lora.get(target) or block.lora.get(target)
            prefix = f"base_model.model.encoder.layer.{index}.{hf_names[target]}"
            parameters = dict(reference.named_parameters())
            update.lora_a.assign(parameters[f"{prefix}.lora_A.default.weight"].detach().numpy().T)
            update.lora_b.assign(parameters[f"{prefix}.lora_B.default.weight"].detach().numpy().T)
    inputs = batch()
    with torch.no_grad():
        expected = reference(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                             attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
                             token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long))
    outputs = backbone(inputs)
    real = inputs["padding_mask"].astype(bool)
    got, want = np.asarray(outputs["sequence_output"])[real], expected.last_hidden_state.numpy()[real]
    assert np.abs(got - want).max() < 1e-5
    assert np.abs(np.asarray(outputs["pooled_output"]) - expected.pooler_output.numpy()).max() < 1e-5
    merged = backbone.merged()
    assert merged.lora_rank is None and len(merged.weights) < len(backbone.weights)
    assert np.abs(np.asarray(merged(inputs)["sequence_output"])[real] - got).max() < 1e-5


@pytest.mark.parametrize("arguments, message", [
    ({"adapter_size": 0}, "adapter_size must be an int from 1 to 16, got 0. 16 is the hidden size."),
    ({"adapter_size": 17}, "adapter_size must be an int from 1 to 16, got 17. 16 is the hidden size."),
    ({"lora_rank": -1}, "lora_rank must be an int from 1 to 16, got -1. 16 is the hidden size."),
    ({"lora_rank": 2, "lora_targets": ["qkv"]}, "unknown ['qkv']; choose from ['query', 'key', 'value'"),
    ({"lora_rank": 2, "lora_alpha": 0}, "lora_alpha must be a number in (0, inf), got 0."),
])
def test_bad_sizes_are_named(arguments, message):
    with pytest.raises(ValueError) as raised:
        BertBackbone(**TINY, **arguments)
    assert message in str(raised.value)


def test_sizes_of_the_wrong_type_are_type_errors():
    with pytest.raises(TypeError, match="adapter_size must be an int from 1 to 16, got str '8'"):
        BertBackbone(**TINY, adapter_size="8")
    with pytest.raises(TypeError, match="lora_alpha must be a number in \\(0, inf\\), got bool True"):
        BertBackbone(**TINY, lora_rank=2, lora_alpha=True)
