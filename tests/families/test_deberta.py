"""DeBERTa-v2/v3 against HF transformers (CPU torch).

Reference: HF `DebertaV2Model` of seeded, randomly initialised tiny configs (hidden 32, 2 layers, 4 heads,
intermediate 64; max_relative_positions 16, position_buckets 8 in v3 and none in v2), its norms and biases
moved off their initial ones and zeros so that every weight matters, saved with `save_pretrained` (no real
DeBERTa weights can be downloaded here). Inputs: real UCI review pairs tokenized by `DebertaV2Tokenizer` (a
DeBERTa-v3-style `spm.model` trained here) and packed `[CLS] A [SEP] B [SEP]` to 24 positions (past the 16
relative positions, so bucketing and clipping both matter): one pair cut, two right-padded, segments 0 then 1. Bar: max |difference| <= 1e-5 in float32 on sequence_output, every hidden state and the attention
probabilities, padded positions included (HF masks padded queries and keys alike; measured: about 1e-6).
"""

import keras
import numpy as np
import pytest

import kerasbert
from kerasbert.families import DebertaV2Backbone, DebertaV2Tokenizer, tokenizer_from_preset
from kerasbert.families.family import backbone_class_for
from kerasbert.presets.checkpoint import CheckpointError
from kerasbert.presets.loading import load_checkpoint

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-5
VOCABULARY = 3001  # the spm.model's 3,000 pieces and the [MASK] HF appends
TINY = {"vocab_size": VOCABULARY, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 64, "max_position_embeddings": 64, "relative_attention": True,
        "pos_att_type": ["p2c", "c2p"], "position_buckets": 8, "max_relative_positions": 16}
# name -> HF DebertaV2Config settings beside TINY
CONFIGS = {
    "v3": {"norm_rel_ebd": "layer_norm", "share_att_key": True, "position_biased_input": False,
           "type_vocab_size": 0},
    "v2": {"share_att_key": False, "position_biased_input": True, "type_vocab_size": 2, "position_buckets": -1},
    # one kind of position scores alone, each with its own projection
    "c2p": {"pos_att_type": ["c2p"], "share_att_key": False, "position_biased_input": False, "type_vocab_size": 0},
    "p2c": {"pos_att_type": ["p2c"], "share_att_key": False, "position_biased_input": False, "type_vocab_size": 0},
}


@pytest.fixture(scope="module")
def deberta_folder(tmp_path_factory):
    """`deberta_folder(name)` -> (HF folder, HF model in eval mode), built once."""
    built = {}

    def build(name):
        if name not in built:
            torch.manual_seed(0)
            model = transformers.DebertaV2Model(transformers.DebertaV2Config(**{**TINY, **CONFIGS[name]})).eval()
            with torch.no_grad():
                for weight_name, weight in model.named_parameters():
                    if "LayerNorm" in weight_name or weight_name.endswith("bias"):
                        weight.add_(torch.randn_like(weight) * 0.1)
            folder = tmp_path_factory.mktemp(name)
            model.save_pretrained(str(folder))
            built[name] = folder, model
        return built[name]

    return build


@pytest.fixture(scope="module")
def padded_batch(deberta_spm_model, uci_reviews, tmp_path_factory):
    """Three review pairs packed to 24 positions (see the module docstring), numpy."""
    spm = tmp_path_factory.mktemp("deberta_tokenizer") / "spm.model"
    spm.write_bytes(deberta_spm_model)
    preprocessor = kerasbert.BertPreprocessor(DebertaV2Tokenizer(str(spm)), sequence_length=24)
    reviews = sorted(uci_reviews[1]["text"].tolist(), key=len)
    inputs = {key: keras.ops.convert_to_numpy(value).astype("int32")
              for key, value in preprocessor(([reviews[-1], reviews[1], reviews[4]], [reviews[-2], reviews[2], reviews[0]])).items()}
    real = inputs["padding_mask"].sum(axis=1)
    assert real[0] == 24 > real[1] and real[2] < 24 and inputs["segment_ids"].max() == 1
    return inputs


def hf_forward(model, inputs):
    with torch.no_grad():
        return model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                     token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
                     output_hidden_states=True, output_attentions=True)


def differences(backbone, hf_model, inputs):
    """Max |kerasbert - HF| on sequence_output, every hidden state and every layer's attention probabilities."""
    ours = {key: [keras.ops.convert_to_numpy(x) for x in value] if isinstance(value, list)
            else keras.ops.convert_to_numpy(value) for key, value in backbone(inputs).items()}
    reference = hf_forward(hf_model, inputs)
    return (np.abs(ours["sequence_output"] - reference.last_hidden_state.numpy()).max(),
            max(np.abs(a - b.numpy()).max() for a, b in zip(ours["hidden_states"], reference.hidden_states)),
            max(np.abs(a - b.numpy()).max() for a, b in zip(ours["attentions"], reference.attentions)))


def check_parity(name, deberta_folder, inputs):
    folder, hf_model = deberta_folder(name)
    assert backbone_class_for(load_checkpoint(str(folder))) is DebertaV2Backbone
    backbone = kerasbert.DebertaV2Backbone.from_preset(str(folder), output_hidden_states=True,
                                                       output_attentions=True)
    sequence, hidden, attentions = differences(backbone, hf_model, inputs)
    print(f"{name} vs transformers: sequence {sequence:.2e}, hidden states {hidden:.2e}, attentions {attentions:.2e}")
    assert max(sequence, hidden, attentions) <= TOLERANCE
    outputs = backbone(inputs)  # pooled_output: the ContextPooler (fresh here) on [CLS]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(outputs["pooled_output"]),
                               keras.ops.convert_to_numpy(backbone.pooler(outputs["sequence_output"][:, 0])), atol=1e-6)
    return backbone


@pytest.mark.all_backends
def test_deberta_v3_backbone_equals_transformers_on_a_padded_batch(deberta_folder, padded_batch):
    backbone = check_parity("v3", deberta_folder, padded_batch)
    assert backbone.embedding.position_embedding is None and backbone.embedding.segment_embedding is None


def test_deberta_v2_backbone_with_positions_segments_and_own_position_projections_equals_transformers(
        deberta_folder, padded_batch):
    backbone = check_parity("v2", deberta_folder, padded_batch)
    assert backbone.relative_embedding.layer_norm is None
    assert set(backbone.encoder_blocks[0].attention.projections) == {"query", "key", "value", "pos_key", "pos_query"}


@pytest.mark.parametrize("name", ["c2p", "p2c"])
def test_content_to_position_or_position_to_content_alone_equals_transformers(name, deberta_folder, padded_batch):
    backbone = check_parity(name, deberta_folder, padded_batch)
    assert set(backbone.encoder_blocks[0].attention.projections) == {"query", "key", "value",
                                                                      {"c2p": "pos_key", "p2c": "pos_query"}[name]}


def test_keras_file_and_hf_export_give_the_outputs_again(deberta_folder, padded_batch, tmp_path):
    folder, hf_model = deberta_folder("v3")
    backbone = DebertaV2Backbone.from_preset(str(folder))
    inputs = padded_batch
    expected = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    backbone.save(tmp_path / "deberta.keras")
    reloaded = keras.saving.load_model(tmp_path / "deberta.keras")
    assert {**reloaded.get_config(), "name": None} == {**backbone.get_config(), "name": None}
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(reloaded(inputs)["sequence_output"]), expected)
    exported = backbone.export_to_hf(tmp_path / "hf")
    copy, loading = transformers.AutoModel.from_pretrained(str(exported), output_loading_info=True)
    assert type(copy) is transformers.DebertaV2Model
    assert not loading["missing_keys"] and not loading["unexpected_keys"]
    np.testing.assert_array_equal(hf_forward(copy.eval(), inputs).last_hidden_state.numpy(),
                                  hf_forward(hf_model, inputs).last_hidden_state.numpy())


def test_bad_configs_and_missing_parts_are_named_errors(deberta_folder, tmp_path):
    tiny = {"vocabulary_size": VOCABULARY, "num_layers": 1, "num_heads": 4, "hidden_dim": 32,
            "intermediate_dim": 64, "position_buckets": 8, "max_relative_positions": 16}
    with pytest.raises(ValueError, match=r"pos_att_type \['p2p'\] is unknown: use a list of \['c2p', 'p2c'\]"):
        DebertaV2Backbone(**tiny, pos_att_type=["p2p"])
    with pytest.raises(ValueError, match="norm_rel_ebd='batch_norm': kerasbert knows"):
        DebertaV2Backbone(**tiny, norm_rel_ebd="batch_norm")
    with pytest.raises(ValueError, match="hidden width 32 is not a multiple of num_heads=3"):
        DebertaV2Backbone(**{**tiny, "num_heads": 3})
    with pytest.raises(ValueError, match="no adapters or LoRA updates .*fine_tuning='full' or 'frozen'"):
        DebertaV2Backbone(**tiny, lora_rank=4)
    folder, _ = deberta_folder("v3")
    with pytest.raises(FileNotFoundError, match="No spm.model .* a deberta-v2 tokenizer needs"):
        tokenizer_from_preset(str(folder))
    conv = tmp_path / "conv"
    transformers.DebertaV2Config(**TINY, conv_kernel_size=3).save_pretrained(str(conv))
    with pytest.raises(CheckpointError, match="conv_kernel_size=3 is not supported; kerasbert reads 0"):
        DebertaV2Backbone.from_preset(str(conv), load_weights=False)


def test_a_head_on_the_backbone_fits_with_dropout_and_trains_the_relative_table(deberta_folder, padded_batch):
    """A Dense head of one's own on `pooled_output`, fitted on packed ids."""
    backbone = DebertaV2Backbone.from_preset(str(deberta_folder("v3")[0]), dropout=0.1, attention_dropout=0.1)
    logits = keras.layers.Dense(2)(backbone.output["pooled_output"])
    model = keras.Model(backbone.input, logits)
    # eager: two steps; tracing the training step costs about 20 s on 2 cores
    model.compile(optimizer=keras.optimizers.Adam(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), run_eagerly=True)
    table = keras.ops.convert_to_numpy(backbone.relative_embedding.embeddings)
    history = model.fit(padded_batch, np.array([0, 1, 0]), epochs=2, batch_size=3, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert not np.array_equal(table, keras.ops.convert_to_numpy(backbone.relative_embedding.embeddings))
