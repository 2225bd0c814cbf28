"""MobileBERT against HF transformers (CPU torch).

Reference: HF `MobileBertModel` of seeded, randomly initialised tiny configs (hidden 64, embedding 32, bottleneck
16, 2 layers, 4 heads, 2 feed-forward networks), its norms and biases moved off their initial ones and zeros so
that every weight matters, saved with `save_pretrained` beside the real uncased WordPiece vocabulary (no real
MobileBERT weights can be downloaded here). Bar: max |difference| <= 1e-5 in float32 on sequence_output at real
positions, every hidden state, pooled_output and the attention probabilities, on real text tokenised by
kerasbert and padded.
"""

import keras
import numpy as np
import pandas as pd
import pytest

import kerasbert
from kerasbert.data.shipped import load_dataset
from kerasbert.distillation import student_from_teacher
from kerasbert.families import BertPreprocessor, MobileBertBackbone
from kerasbert.families.family import backbone_class_for
from kerasbert.layers.mobilebert_encoder_block import MobileBertEncoderBlock
from kerasbert.presets.loading import load_checkpoint
from kerasbert.tasks import BertClassifier, BertMaskedLM

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-5
TINY = {"hidden_size": 64, "embedding_size": 32, "intra_bottleneck_size": 16, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 32, "num_feedforward_networks": 2,
        "max_position_embeddings": 64}
# name -> HF MobileBertConfig settings beside TINY (trigram input on unless said)
CONFIGS = {
    "no_norm": {"normalization_type": "no_norm"},
    "layer_norm": {"normalization_type": "layer_norm", "classifier_activation": False},
    "bottleneck_attention": {"use_bottleneck_attention": True, "classifier_activation": False},
    "no_bottleneck": {"use_bottleneck": False, "trigram_input": False, "num_feedforward_networks": 1,
                      "normalization_type": "layer_norm"},
}
MOBILEBERT_UNCASED_PARAMETERS = 24_844_544  # HF MobileBertModel(MobileBertConfig()), its pooler dense included


@pytest.fixture(scope="module")
def mobilebert_folder(tmp_path_factory, minilm_path):
    """`mobilebert_folder(name)` -> (HF folder with model and tokenizer, HF model in eval mode), built once."""
    built = {}

    def build(name):
        if name not in built:
            torch.manual_seed(0)
            config = transformers.MobileBertConfig(**{**TINY, **CONFIGS[name]})
            model = transformers.MobileBertModel(config).eval()
            model.set_attn_implementation("eager")  # returns its attention probabilities
            with torch.no_grad():
                for weight_name, weight in model.named_parameters():
                    if "LayerNorm" in weight_name or weight_name.endswith("bias"):
                        weight.add_(torch.randn_like(weight) * 0.1)
            folder = tmp_path_factory.mktemp(name)
            model.save_pretrained(str(folder))
            transformers.BertTokenizerFast(f"{minilm_path}/vocab.txt", do_lower_case=True).save_pretrained(str(folder))
            built[name] = folder, model
        return built[name]

    return build


def real_batch(folder):
    """Real reviews and Austen lines of different lengths, tokenised by kerasbert, as single texts and as pairs."""
    texts = load_dataset("uci_sentiment", "test")["text"].tolist()[:3] + \
        [text[:200] for text in load_dataset("jane_austen", "test")["text"].tolist()[:3]]
    preprocessor = BertPreprocessor.from_preset(folder, sequence_length=48, pad_to_sequence_length=False)
    return [{key: np.asarray(value) for key, value in preprocessor(inputs).items()}
            for inputs in (texts, (texts[:3], texts[3:]))]


def hf_forward(model, inputs):
    with torch.no_grad():
        return model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                     token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long), output_hidden_states=True,
                     output_attentions=True)


def differences(backbone, hf_model, inputs):
    """Max |kerasbert - HF| of sequence_output (real positions), every hidden state, pooled_output and every
    layer's attention probabilities."""
    ours = keras.tree.map_structure(keras.ops.convert_to_numpy, backbone(inputs))
    reference = hf_forward(hf_model, inputs)
    real = inputs["padding_mask"].astype(bool)
    assert len(ours["hidden_states"]) == len(reference.hidden_states)
    return (np.abs(ours["sequence_output"][real] - reference.last_hidden_state.numpy()[real]).max(),
            max(np.abs(a[real] - b.numpy()[real]).max()
                for a, b in zip(ours["hidden_states"], reference.hidden_states)),
            np.abs(ours["pooled_output"] - reference.pooler_output.numpy()).max(),
            max(np.abs(a - b.numpy()).max() for a, b in zip(ours["attentions"], reference.attentions)))


@pytest.mark.all_backends
@pytest.mark.parametrize("name", list(CONFIGS))
def test_backbone_from_an_hf_folder_equals_transformers_on_real_text(name, mobilebert_folder):
    folder, hf_model = mobilebert_folder(name)
    checkpoint = load_checkpoint(str(folder))
    assert backbone_class_for(checkpoint) is MobileBertBackbone
    backbone = kerasbert.MobileBertBackbone.from_preset(str(folder), output_hidden_states=True,
                                                        output_attentions=True)
    assert backbone.use_pooler is hf_model.config.classifier_activation
    singles, pairs = real_batch(folder)
    assert not singles["padding_mask"].all() and pairs["segment_ids"].any()  # padded rows, two segments
    for inputs in (singles, pairs):
        sequence, hidden, pooled, attentions = differences(backbone, hf_model, inputs)
        print(f"{name} vs transformers: sequence {sequence:.2e}, hidden states {hidden:.2e}, pooled {pooled:.2e}, "
              f"attentions {attentions:.2e}")
        assert max(sequence, hidden, pooled, attentions) <= TOLERANCE


def test_parameter_count_equals_hf_mobilebert_uncased():
    torch.manual_seed(0)
    hf_count = transformers.MobileBertModel(transformers.MobileBertConfig()).num_parameters()
    assert hf_count == MOBILEBERT_UNCASED_PARAMETERS
    assert MobileBertBackbone().count_params() == MOBILEBERT_UNCASED_PARAMETERS
    pooler = 512 * 512 + 512  # classifier_activation=False: HF's pooler has no dense
    assert MobileBertBackbone(use_pooler=False).count_params() == MOBILEBERT_UNCASED_PARAMETERS - pooler


def test_classifier_fits_saves_and_reloads_with_identical_predictions(mobilebert_folder, uci_reviews, tmp_path):
    folder, _ = mobilebert_folder("no_norm")
    classifier = kerasbert.BertClassifier.from_preset(str(folder), num_classes=2, sequence_length=48)
    assert type(classifier.backbone) is MobileBertBackbone
    before = [keras.ops.convert_to_numpy(weight) for weight in classifier.backbone.trainable_weights]
    # two steps: the first one's learning rate is warmup's 0, as in HF Trainer
    history = classifier.fit(uci_reviews[0].iloc[:16], epochs=1, batch_size=8, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert any(not np.array_equal(b, np.asarray(w)) for b, w in zip(before, classifier.backbone.trainable_weights))
    path = tmp_path / "mobilebert.keras"
    classifier.save(path)
    reloaded = keras.saving.load_model(path)
    texts = uci_reviews[1]["text"].tolist()[:6]
    expected, got = classifier.predict(texts, verbose=0), reloaded.predict(texts, verbose=0)
    np.testing.assert_array_equal(np.stack(got["probabilities"]), np.stack(expected["probabilities"]))


def test_a_student_takes_the_teachers_blocks(mobilebert_folder):
    teacher = BertClassifier.from_preset(str(mobilebert_folder("no_norm")[0]), num_classes=2, sequence_length=48)
    student = student_from_teacher(teacher, layers=[1])  # DistilBERT's initialisation: the teacher's block 1
    assert type(student.backbone) is MobileBertBackbone and len(student.backbone.encoder_blocks) == 1
    for ours, teachers in zip(student.backbone.encoder_blocks[0].weights, teacher.backbone.encoder_blocks[1].weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(ours), keras.ops.convert_to_numpy(teachers))


@pytest.mark.parametrize("name", ["no_norm", "layer_norm"])
def test_hf_export_and_kerasbert_preset_give_the_outputs_again(name, mobilebert_folder, tmp_path):
    folder, hf_model = mobilebert_folder(name)
    backbone = MobileBertBackbone.from_preset(str(folder))
    tokenizer = BertPreprocessor.from_preset(folder).tokenizer
    exported = backbone.save_to_preset(tmp_path / "hf", tokenizer=tokenizer, format="hf")
    reloaded, loading = transformers.AutoModel.from_pretrained(str(exported), output_loading_info=True,
                                                               attn_implementation="eager")  # as the original
    assert type(reloaded) is transformers.MobileBertModel
    assert not loading["missing_keys"] and not loading["unexpected_keys"]
    inputs = real_batch(folder)[0]
    original, copy = hf_forward(hf_model, inputs), hf_forward(reloaded.eval(), inputs)
    np.testing.assert_array_equal(copy.last_hidden_state.numpy(), original.last_hidden_state.numpy())
    np.testing.assert_array_equal(copy.pooler_output.numpy(), original.pooler_output.numpy())
    preset = MobileBertBackbone.from_preset(backbone.save_to_preset(tmp_path / "kerasbert", tokenizer=tokenizer))
    assert {**preset.get_config(), "name": None} == {**backbone.get_config(), "name": None}
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(np.asarray(preset(inputs)[key]), np.asarray(backbone(inputs)[key]))


def test_bad_configs_and_missing_parts_are_named_errors(mobilebert_folder):
    tiny = {"vocabulary_size": 99, "num_layers": 1, "num_heads": 4, "hidden_dim": 64, "intermediate_dim": 32,
            "embedding_dim": 32, "intra_bottleneck_dim": 16}
    with pytest.raises(ValueError, match="attention width 16 .* not divisible by num_heads=3"):
        MobileBertBackbone(**{**tiny, "num_heads": 3})
    with pytest.raises(ValueError, match="normalization_type must be 'no_norm' .* or 'layer_norm'.*'batch_norm'"):
        MobileBertBackbone(**tiny, normalization_type="batch_norm")
    with pytest.raises(ValueError, match="intra_bottleneck_dim must equal hidden_dim .* key_query_shared_bottleneck"):
        MobileBertBackbone(**tiny, key_query_shared_bottleneck=False)
    with pytest.raises(ValueError, match="num_feedforward_networks must be an int >= 1"):
        MobileBertEncoderBlock(num_heads=4, intermediate_dim=32, num_feedforward_networks=0)
    folder, _ = mobilebert_folder("no_norm")
    with pytest.raises(ValueError, match="no adapters or LoRA updates .*fine_tuning='full' or 'frozen'"):
        BertClassifier.from_preset(str(folder), num_classes=2, fine_tuning="lora")
    with pytest.raises(ValueError, match="no masked-LM head of the mobilebert family"):
        BertMaskedLM.from_preset(str(folder))


def test_frozen_fine_tuning_leaves_the_backbone_unchanged(mobilebert_folder):
    folder, _ = mobilebert_folder("layer_norm")
    classifier = BertClassifier.from_preset(str(folder), num_classes=2, sequence_length=48, fine_tuning="frozen")
    before = [keras.ops.convert_to_numpy(weight) for weight in classifier.backbone.weights]
    data = pd.DataFrame({"text": ["A fine phone.", "It broke at once."], "label": [1, 0]})
    classifier.fit(data, epochs=1, batch_size=2, verbose=0)
    assert not classifier.backbone.trainable_weights
    for b, w in zip(before, classifier.backbone.weights):
        np.testing.assert_array_equal(b, np.asarray(w))
