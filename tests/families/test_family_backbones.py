"""ALBERT, RoBERTa, DistilBERT and ELECTRA backbones against HF transformers (CPU torch).

Reference: the HF base model (`AlbertModel`, `RobertaModel`, `DistilBertModel`, `ElectraModel`) of a seeded,
randomly initialised small config, saved with `save_pretrained` (see conftest.py; no real weights of these
families can be downloaded here). Bar: max |difference| <= 1e-4 in float32 on sequence_output at real
positions, on every hidden state, and on pooled_output where HF has a pooler.
"""

import json
import shutil

import keras
import numpy as np
import pytest

from kerasbert.families.albert.albert_backbone import AlbertBackbone
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.big_bird.big_bird_backbone import BigBirdBackbone
from kerasbert.families.deberta_v2.deberta_v2_backbone import DebertaV2Backbone
from kerasbert.families.distilbert.distilbert_backbone import DistilBertBackbone
from kerasbert.families.electra.electra_backbone import ElectraBackbone
from kerasbert.families.family import backbone_class_for, family_named
from kerasbert.families.longformer.longformer_backbone import LongformerBackbone
from kerasbert.families.modernbert.modernbert_backbone import ModernBertBackbone
from kerasbert.families.roberta.roberta_backbone import RobertaBackbone
from kerasbert.presets.checkpoint import CheckpointError, FamilyMismatchError, UnsupportedModelTypeError
from kerasbert.presets.loading import load_checkpoint
from kerasbert.presets.registry import PRESETS

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-4
# conftest name -> (kerasbert class, padding id, segment types, whether HF has a pooler)
FAMILIES = {
    "bert": (BertBackbone, 0, 2, True),
    "albert": (AlbertBackbone, 0, 2, True),
    "albert_grouped": (AlbertBackbone, 0, 2, True),
    "roberta": (RobertaBackbone, 1, 1, True),
    "distilbert": (DistilBertBackbone, 0, 0, False),
    "electra": (ElectraBackbone, 0, 2, False),
    "electra_same_width": (ElectraBackbone, 0, 2, False),  # no embeddings_project
}


def padded_batch(padding_token_id, num_segments, length=9):
    """Random ids in rows of 9, 6 and 2 real tokens, padded with `padding_token_id`; two segments when the model
    has them."""
    padding_mask = (np.arange(length)[None, :] < np.array([[length], [6], [2]])).astype("int32")
    token_ids = np.random.default_rng(0).integers(3, 99, size=padding_mask.shape)
    segment_ids = np.zeros_like(padding_mask)
    if num_segments > 1:
        segment_ids[:, length // 2:] = 1
    return {"token_ids": np.where(padding_mask == 1, token_ids, padding_token_id).astype("int32"),
            "segment_ids": segment_ids * padding_mask, "padding_mask": padding_mask}


def hf_forward(model, inputs):
    arguments = {"input_ids": torch.tensor(inputs["token_ids"], dtype=torch.long),
                 "attention_mask": torch.tensor(inputs["padding_mask"], dtype=torch.long)}
    if model.config.model_type != "distilbert":
        arguments["token_type_ids"] = torch.tensor(inputs["segment_ids"], dtype=torch.long)
    with torch.no_grad():
        return model(**arguments, output_hidden_states=True)


def numpy_outputs(backbone, inputs):
    return keras.tree.map_structure(keras.ops.convert_to_numpy, backbone(inputs))


@pytest.mark.parametrize(
    "backbone_class, preset, expected",
    [(AlbertBackbone, "albert_base_v2", 11_683_584), (RobertaBackbone, "roberta_base", 124_645_632),
     (DistilBertBackbone, "distilbert_base_uncased", 66_362_880),
     (ElectraBackbone, "electra_small_discriminator", 13_483_008),
     (DebertaV2Backbone, "deberta_v3_base", 183_831_552), (LongformerBackbone, "longformer_base_4096", 148_659_456),
     (BigBirdBackbone, "bigbird_roberta_base", 127_468_800), (ModernBertBackbone, "modernbert_base", 149_014_272)],
)
def test_presets_have_the_hf_parameter_counts_offline(backbone_class, preset, expected):
    """HF's `<Family>Model(config).num_parameters()` of each preset's published config (transformers 5.24); kerasbert's
    backbone may also hold weights HF keeps in its task models (DeBERTa's `ContextPooler`), left out here."""
    checkpoint = load_checkpoint(preset, load_weights=False)
    assert backbone_class_for(checkpoint) is backbone_class
    backbone = backbone_class.from_checkpoint(checkpoint)
    task_model_weights = getattr(family_named(backbone.family).weights, "task_model_weights", lambda _: [])(backbone)
    held_by_hf_task_models = sum(int(np.prod(weight.shape)) for weight in task_model_weights)
    assert backbone.count_params() - held_by_hf_task_models == expected
    assert PRESETS[preset].get("parameters", backbone.count_params()) == backbone.count_params()  # `kerasbert presets`


@pytest.mark.all_backends
@pytest.mark.parametrize("name", list(FAMILIES))
def test_backbone_loaded_from_an_hf_folder_matches_transformers(name, hf_family_model):
    folder, hf_model = hf_family_model(name)
    backbone_class, padding_token_id, num_segments, has_pooler = FAMILIES[name]
    checkpoint = load_checkpoint(str(folder))
    backbone = backbone_class_for(checkpoint).from_checkpoint(checkpoint, output_hidden_states=True)
    assert type(backbone) is backbone_class

    inputs = padded_batch(padding_token_id, num_segments)
    ours, reference = numpy_outputs(backbone, inputs), hf_forward(hf_model, inputs)
    real = inputs["padding_mask"].astype(bool)
    sequence_diff = np.abs(ours["sequence_output"][real] - reference.last_hidden_state.numpy()[real]).max()
    assert len(ours["hidden_states"]) == len(reference.hidden_states)
    hidden_diff = max(np.abs(a[real] - b.numpy()[real]).max()
                      for a, b in zip(ours["hidden_states"], reference.hidden_states))
    if has_pooler:
        pooled_diff = np.abs(ours["pooled_output"] - reference.pooler_output.numpy()).max()
    else:  # no pooler in HF: the [CLS] hidden state
        np.testing.assert_array_equal(ours["pooled_output"], ours["sequence_output"][:, 0])
        pooled_diff = np.abs(ours["pooled_output"] - reference.last_hidden_state.numpy()[:, 0]).max()
    print(f"{name} vs transformers: sequence {sequence_diff:.2e}, hidden states {hidden_diff:.2e}, "
          f"pooled {pooled_diff:.2e}")
    assert max(sequence_diff, hidden_diff, pooled_diff) <= TOLERANCE


@pytest.mark.parametrize("name", ["albert", "roberta", "distilbert", "electra"])
def test_keras_file_round_trip_gives_identical_outputs(name, hf_family_model, tmp_path):
    backbone_class, padding_token_id, num_segments, _ = FAMILIES[name]
    backbone = backbone_class.from_preset(str(hf_family_model(name)[0]))
    backbone.save(tmp_path / f"{name}.keras")
    reloaded = keras.saving.load_model(tmp_path / f"{name}.keras")
    assert type(reloaded) is backbone_class and reloaded.get_config() == backbone.get_config()
    inputs = padded_batch(padding_token_id, num_segments)
    expected, actual = numpy_outputs(backbone, inputs), numpy_outputs(reloaded, inputs)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(actual[key], expected[key])


@pytest.mark.parametrize("name", list(FAMILIES))
def test_export_to_hf_loads_in_transformers_with_equal_outputs(name, hf_family_model, tmp_path):
    folder, hf_model = hf_family_model(name)
    backbone_class, padding_token_id, num_segments, _ = FAMILIES[name]
    exported = backbone_class.from_preset(str(folder)).save_to_preset(tmp_path / "hf", format="hf")
    reloaded, loading = transformers.AutoModel.from_pretrained(str(exported), output_loading_info=True)
    assert type(reloaded) is type(hf_model)
    assert not loading["missing_keys"] and not loading["unexpected_keys"]
    inputs = padded_batch(padding_token_id, num_segments)
    original, copy = hf_forward(hf_model, inputs), hf_forward(reloaded.eval(), inputs)
    np.testing.assert_allclose(copy.last_hidden_state.numpy(), original.last_hidden_state.numpy(), atol=1e-6)
    if original.get("pooler_output") is not None:
        np.testing.assert_allclose(copy.pooler_output.numpy(), original.pooler_output.numpy(), atol=1e-6)


def test_unsupported_model_type_is_a_named_error_listing_the_supported_ones(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_layer": 2}))
    with pytest.raises(UnsupportedModelTypeError,
                       match="'gpt2'.*albert, bert, big_bird, deberta-v2, distilbert, electra, longformer, mobilebert, "
                             "modernbert, reformer, roberta, xlnet"):
        load_checkpoint(str(tmp_path), load_weights=False)
    with pytest.raises(UnsupportedModelTypeError):
        BertBackbone.from_preset(str(tmp_path))


def mixed_folder(tmp_path, config_folder, weights_folder):
    folder = tmp_path / "mixed"
    folder.mkdir(parents=True)
    shutil.copy(config_folder / "config.json", folder / "config.json")
    shutil.copy(weights_folder / "model.safetensors", folder / "model.safetensors")
    return str(folder)


def test_weights_of_another_family_fail_before_a_model_is_built(hf_family_model, tmp_path):
    roberta, distilbert, bert = (hf_family_model(name)[0] for name in ("roberta", "distilbert", "bert"))
    # load_checkpoint reads files and builds no model
    with pytest.raises(FamilyMismatchError, match=r"'roberta' model, but the weights have no encoder\.layer\.0.*"
                                              r"named as in a distilbert checkpoint"):
        load_checkpoint(mixed_folder(tmp_path / "a", roberta, distilbert))
    with pytest.raises(CheckpointError, match=r"position_embeddings\.weight has shape \(40, 32\).*\(42, 32\)"):
        load_checkpoint(mixed_folder(tmp_path / "b", roberta, bert))


def test_a_family_class_refuses_another_familys_checkpoint(hf_family_model):
    with pytest.raises(FamilyMismatchError, match="'roberta' model; BertBackbone builds 'bert'.*backbone_class_for"):
        BertBackbone.from_preset(str(hf_family_model("roberta")[0]))


def test_export_refuses_what_the_family_cannot_hold(tmp_path):
    with_segments = DistilBertBackbone(vocabulary_size=99, num_layers=1, num_heads=2, hidden_dim=8,
                                       intermediate_dim=16, num_segments=2)
    with pytest.raises(ValueError, match="HF distilbert model cannot hold a backbone with num_segments=2"):
        with_segments.export_to_hf(tmp_path / "out")
    assert not (tmp_path / "out").exists()
