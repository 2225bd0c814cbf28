"""ModernBERT against HF transformers (CPU torch).

Reference: HF `ModernBertModel` (eager attention) of a seeded, randomly initialised tiny config (hidden 32,
3 layers: one global and two local with `local_attention` 4, so that on 12 tokens the window cuts; 4 heads,
GeGLU inner width 48), its norms moved off their initial ones so that every weight matters, saved with
`save_pretrained` (no real ModernBERT weights can be downloaded here). Bar: max |difference| <= 1e-5 in
float32 on sequence_output and every hidden state at real positions of a right-padded batch (measured: 4.8e-7
on TensorFlow, 7.2e-7 on JAX, 0 on torch), and on the masked-LM logits of HF `ModernBertForMaskedLM` (same
config and seed). The folders also hold a tiny byte-level BPE (`vocab.json` + `merges.txt`, written here) so that
task models can be built on them.
"""

import json

import keras
import numpy as np
import pytest

import kerasbert
from kerasbert.families import ModernBertBackbone, tokenizer_from_preset
from kerasbert.families.family import backbone_class_for
from kerasbert.families.roberta.byte_level_bpe import bytes_to_unicode
from kerasbert.fine_tuning.frozen_features import caches_features
from kerasbert.presets.loading import load_checkpoint
from kerasbert.tasks.masked_lm_common import build_masked_lm_head, load_masked_lm_head

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-5
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
MERGES = ["Ġ t", "Ġ a", "t h", "e r", "i n", "o n", "a n", "Ġt h", "e d", "Ġ s", "o u", "i t"]
VOCABULARY = [*SPECIALS, *bytes_to_unicode().values(), *(merge.replace(" ", "") for merge in MERGES)]
TINY = {"vocab_size": len(VOCABULARY), "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 3,
        "num_attention_heads": 4, "local_attention": 4, "global_attn_every_n_layers": 3,
        "max_position_embeddings": 64, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
        "cls_token_id": 0, "sep_token_id": 2}
MODERNBERT_BASE_PARAMETERS = 149_014_272  # HF ModernBertModel(ModernBertConfig()).num_parameters()
TEXTS = ["The battery lasts all day.", "It works", "Good"]  # 12 tokens (cut), then right-padded: the window
LENGTH = 12                                                      # (2 either side) cuts every row


def saved_hf_model(class_name, folder, **settings):
    """(folder, an HF `class_name` of the `TINY` config and `settings`, seed 0, eager attention, its norms moved off
    their initial ones, in eval mode), saved in `folder` with a tiny byte-level BPE (`vocab.json`, `merges.txt`)."""
    torch.manual_seed(0)
    model = getattr(transformers, class_name)(transformers.ModernBertConfig(**TINY, **settings)).eval()
    model.set_attn_implementation("eager")
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "norm" in name or name.endswith("bias"):
                weight.add_(torch.randn_like(weight) * 0.1)
    model.save_pretrained(str(folder))
    (folder / "vocab.json").write_text(json.dumps({token: i for i, token in enumerate(VOCABULARY)}), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n", encoding="utf-8")
    return folder, model


@pytest.fixture(scope="module")
def modernbert_folder(tmp_path_factory):
    """`saved_hf_model` of HF `ModernBertModel`, built once."""
    return saved_hf_model("ModernBertModel", tmp_path_factory.mktemp("modernbert"))


def padded_batch(folder):
    """`TEXTS` packed by `folder`'s tokenizer (`[CLS] text [SEP]`, `LENGTH` tokens; numpy)."""
    preprocessor = kerasbert.BertPreprocessor(tokenizer_from_preset(str(folder)), sequence_length=LENGTH)
    inputs = {key: numpy(value).astype("int32") for key, value in preprocessor(TEXTS).items()}
    lengths = inputs["padding_mask"].sum(axis=1)
    assert lengths.tolist() == [LENGTH, 10, 6]  # one cut, two right-padded, each longer than the window
    return inputs


def numpy(tensor):
    return keras.ops.convert_to_numpy(tensor)


def max_diff(ours, theirs, mask):
    return float(np.max(np.abs(numpy(ours) - theirs.numpy()) * mask[..., None]))


@pytest.mark.all_backends
@pytest.mark.parametrize("unpadded", [False, True])  # the feed-forward halves on the real tokens only (not on JAX)
def test_matches_hf_modernbert_on_a_padded_batch_with_the_window_cutting(unpadded, modernbert_folder):
    folder, model = modernbert_folder
    checkpoint = load_checkpoint(folder)
    assert backbone_class_for(checkpoint) is ModernBertBackbone
    backbone = ModernBertBackbone.from_checkpoint(checkpoint, output_hidden_states=True, unpadded=unpadded)
    inputs = padded_batch(folder)
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                       attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
                       output_hidden_states=True)
    ours = backbone(inputs)
    mask = inputs["padding_mask"]
    diffs = [max_diff(ours["sequence_output"], theirs.last_hidden_state, mask)]
    assert len(ours["hidden_states"]) == len(theirs.hidden_states)
    diffs += [max_diff(a, b, mask) for a, b in zip(ours["hidden_states"], theirs.hidden_states)]
    print(f"ModernBERT (unpadded={unpadded}) vs transformers: max |diff| {max(diffs):.1e} over every hidden state")
    assert max(diffs) <= TOLERANCE, diffs
    # the window cuts: global attention everywhere changes the 12-token row
    unwindowed = ModernBertBackbone.from_checkpoint(checkpoint, local_attention=64)
    assert np.max(np.abs(numpy(unwindowed(inputs)["sequence_output"]) - numpy(ours["sequence_output"]))) > 1e-3


@pytest.mark.all_backends
def test_masked_lm_head_gives_hf_logits(tmp_path):
    folder, model = saved_hf_model("ModernBertForMaskedLM", tmp_path)
    with torch.no_grad():
        model.head.dense.weight.add_(torch.randn_like(model.head.dense.weight))  # a head unlike the fresh one
        model.decoder.bias.add_(torch.randn_like(model.decoder.bias))
    model.save_pretrained(str(folder))
    checkpoint = load_checkpoint(folder)
    backbone = ModernBertBackbone.from_checkpoint(checkpoint)
    head = build_masked_lm_head(backbone)
    inputs = padded_batch(folder)
    head(backbone(inputs)["sequence_output"])  # builds the head before its weights load
    load_masked_lm_head(head, checkpoint, "test", backbone.family)
    assert head.dense.bias is None and head.layer_norm.beta is None  # HF's classifier_bias, norm_bias: False
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                       attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long)).logits
    diff = max_diff(head(backbone(inputs)["sequence_output"]), theirs, inputs["padding_mask"])
    print(f"ModernBERT masked-LM logits vs transformers ModernBertForMaskedLM: max |diff| {diff:.1e}")
    assert diff <= TOLERANCE


def test_masked_lm_task_fills_saves_and_reloads(tmp_path):
    """The task around the head (TensorFlow only: the head's parity above runs on every backend)."""
    folder, _ = saved_hf_model("ModernBertForMaskedLM", tmp_path)
    fill = kerasbert.BertMaskedLM.from_preset(str(folder), sequence_length=16)
    texts = ["the <mask> in", "a <mask>"]
    expected = fill.predict(texts, top_k=3, verbose=0)
    assert [len(tokens) for tokens in expected["tokens"]] == [3, 3]
    fill.save(tmp_path / "fill.keras")
    copies = [keras.saving.load_model(tmp_path / "fill.keras"),
              kerasbert.BertMaskedLM.from_preset(str(fill.save_to_preset(tmp_path / "preset")))]
    for copy in copies:
        got = copy.predict(texts, top_k=3, verbose=0)
        assert got["tokens"].tolist() == expected["tokens"].tolist()
        np.testing.assert_allclose(np.stack(got["scores"]), np.stack(expected["scores"]), atol=1e-6)
    with pytest.raises(ValueError, match="HF folders of BERT only"):
        fill.export_to_hf(tmp_path / "hf")


def test_masked_lm_head_of_a_biased_config_gives_hf_logits_and_weights_the_config_denies_are_named(tmp_path):
    """`classifier_bias` and `classifier_activation` set: the head has its bias and activation; a config that
    says no bias over weights that hold one is a named error (the bias would be dropped)."""
    folder, model = saved_hf_model("ModernBertForMaskedLM", tmp_path, classifier_bias=True,
                                   classifier_activation="gelu_new")
    fill = kerasbert.BertMaskedLM.from_preset(str(folder), sequence_length=16)
    inputs = padded_batch(folder)
    positions = np.tile(np.arange(inputs["token_ids"].shape[1], dtype="int32"), (len(TEXTS), 1))
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                       attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long)).logits
    diff = max_diff(fill({**inputs, "mask_positions": positions}), theirs, inputs["padding_mask"])
    print(f"ModernBERT masked-LM logits (classifier_bias, gelu_new) vs transformers: max |diff| {diff:.1e}")
    assert diff <= TOLERANCE
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "classifier_bias": False}))
    with pytest.raises(ValueError, match=r"head\.dense\.bias.*classifier_bias"):
        kerasbert.BertMaskedLM.from_preset(str(folder), sequence_length=16)


@pytest.mark.on_request  # the base preset's count is test_family_backbones' (same HF number)
def test_parameter_count_equals_hf_modernbert_base():
    with torch.device("meta"):  # no memory, no initialisation: only the shapes
        reference = transformers.ModernBertModel(transformers.ModernBertConfig()).num_parameters()
    assert reference == MODERNBERT_BASE_PARAMETERS
    assert ModernBertBackbone().count_params() == MODERNBERT_BASE_PARAMETERS


def test_keras_file_and_hf_export_give_the_outputs_again(modernbert_folder, tmp_path):
    folder, model = modernbert_folder
    backbone = ModernBertBackbone.from_preset(str(folder), output_attentions=True)
    path = tmp_path / "modernbert.keras"
    backbone.save(path)
    reloaded = keras.saving.load_model(path)
    inputs = padded_batch(folder)
    expected, got = backbone(inputs), reloaded(inputs)
    assert len(got["attentions"]) == TINY["num_hidden_layers"]
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(numpy(got[key]), numpy(expected[key]))
    exported, loading = transformers.AutoModel.from_pretrained(str(backbone.export_to_hf(tmp_path / "hf")),
                                                               output_loading_info=True, attn_implementation="eager")
    assert type(exported) is transformers.ModernBertModel
    assert not loading["missing_keys"] and not loading["unexpected_keys"]
    assert exported.config.layer_types == model.config.layer_types
    with torch.no_grad():
        token_ids, padding_mask = (torch.tensor(inputs[key], dtype=torch.long) for key in ("token_ids", "padding_mask"))
        original = model(input_ids=token_ids, attention_mask=padding_mask).last_hidden_state
        copy = exported.eval()(input_ids=token_ids, attention_mask=padding_mask).last_hidden_state
    np.testing.assert_array_equal(copy.numpy(), original.numpy())


def test_classifier_fits_saves_and_reloads_with_identical_predictions(modernbert_folder, uci_reviews, tmp_path,
                                                                      fresh_python):
    classifier = kerasbert.BertClassifier.from_preset(str(modernbert_folder[0]), num_classes=2, sequence_length=16,
                                                      backbone_overrides={"unpadded": True})
    assert type(classifier.backbone) is ModernBertBackbone and classifier.backbone.unpadded
    before = [numpy(weight) for weight in classifier.backbone.trainable_weights]
    # two steps: the first one's learning rate is warmup's 0, as in HF Trainer
    history = classifier.fit(uci_reviews[0].iloc[:8], epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    assert any(not np.array_equal(b, numpy(w)) for b, w in zip(before, classifier.backbone.trainable_weights))
    path = tmp_path / "modernbert_classifier.keras"
    classifier.save(path)
    texts = uci_reviews[1]["text"].tolist()[:4]
    expected, got = classifier.predict(texts, verbose=0), fresh_python.predict(path, texts)  # raw text, new process
    np.testing.assert_array_equal(np.stack(got["probabilities"]), np.stack(expected["probabilities"]))
    assert keras.saving.load_model(path).backbone.unpadded
    padded = kerasbert.BertClassifier.from_preset(str(modernbert_folder[0]), num_classes=2, sequence_length=16)
    padded.set_weights(classifier.get_weights())
    np.testing.assert_allclose(np.stack(padded.predict(texts, verbose=0)["probabilities"]),
                               np.stack(expected["probabilities"]), atol=1e-6)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_frozen_classifier_trains_its_head_and_its_task_file_rebuilds_it(pooling, modernbert_folder, uci_reviews,
                                                                         tmp_path):
    """Frozen: with [CLS] pooling the head trains on cached [CLS] vectors; mean pooling reads every token, so the
    backbone runs each epoch. The task file holds the head (`task_transform` and logits) and its pooling."""
    folder = str(modernbert_folder[0])
    classifier = kerasbert.BertClassifier.from_preset(folder, num_classes=2, sequence_length=16, fine_tuning="frozen",
                                                      backbone_overrides={"classifier_pooling": pooling})
    head = classifier.get_layer("task_transform")
    before = numpy(head.dense.kernel)
    classifier.fit(uci_reviews[0].iloc[:8], epochs=2, batch_size=4, verbose=0)
    assert caches_features(classifier, None) == (pooling == "cls")
    assert not np.array_equal(numpy(head.dense.kernel), before)
    classifier.save_task_weights(tmp_path / "task.safetensors")
    again = kerasbert.BertClassifier.from_task_weights(tmp_path / "task.safetensors", folder)
    assert again.backbone.classifier_pooling == pooling
    texts = uci_reviews[1]["text"].tolist()[:4]
    np.testing.assert_allclose(np.stack(again.predict(texts, verbose=0)["probabilities"]),
                               np.stack(classifier.predict(texts, verbose=0)["probabilities"]), atol=1e-6)


def test_bad_configs_and_missing_parts_are_named_errors(modernbert_folder):
    with pytest.raises(ValueError, match="global_attn_every_n_layers"):
        ModernBertBackbone(num_layers=2, global_attn_every_n_layers=0)
    with pytest.raises(ValueError, match="local_attention"):
        ModernBertBackbone(num_layers=2, local_attention=1)
    with pytest.raises(ValueError, match="fine_tuning='full'"):
        ModernBertBackbone(num_layers=1, lora_rank=4)


TASKS = {  # name: (HF class, kerasbert task, the HF config's settings)
    "classifier_cls": ("ModernBertForSequenceClassification", kerasbert.BertClassifier,
                       {"id2label": {0: "bad", 1: "fine", 2: "great"}}),
    "classifier_mean": ("ModernBertForSequenceClassification", kerasbert.BertClassifier,
                        {"num_labels": 2, "classifier_pooling": "mean", "classifier_bias": True,
                         "classifier_activation": "gelu_new"}),
    "token_classifier": ("ModernBertForTokenClassification", kerasbert.BertTokenClassifier, {"num_labels": 5}),
    "question_answerer": ("ModernBertForQuestionAnswering", kerasbert.BertQuestionAnswerer, {}),
    "multiple_choice": ("ModernBertForMultipleChoice", kerasbert.BertMultipleChoice, {}),
    "cross_encoder": ("ModernBertForSequenceClassification", kerasbert.BertCrossEncoder,  # a reranker's shape
                      {"num_labels": 1}),
}


def packed(task, texts):
    return {key: numpy(value).astype("int32") for key, value in task.preprocessor(texts).items()}


@pytest.mark.parametrize("name", list(TASKS))
def test_task_logits_equal_hf_modernbert_task_models(name, uci_reviews, tmp_path):
    """HF's head before the logits (dense, activation, LayerNorm; on [CLS], the mean of the real tokens, or every
    token) is each task model's `task_transform`, loaded from the checkpoint's `head.*`."""
    class_name, task_class, settings = TASKS[name]
    folder, model = saved_hf_model(class_name, tmp_path, **settings)
    options = {"doc_stride": 8, "max_question_length": 8} if task_class is kerasbert.BertQuestionAnswerer else {}
    task = task_class.from_preset(str(folder), sequence_length=24, **options)
    texts = uci_reviews[1]["text"].tolist()[:6]
    inputs = packed(kerasbert.BertClassifier(task.backbone, task.preprocessor, num_classes=2), texts)
    if class_name == "ModernBertForMultipleChoice":  # two questions, three choices each
        inputs = {key: value.reshape(2, 3, -1) for key, value in inputs.items()}
    ours = numpy(task(inputs))
    with torch.no_grad():
        output = model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                       attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long))
    theirs = (torch.stack([output.start_logits, output.end_logits], -1) if name == "question_answerer"
              else output.logits).numpy()
    assert ours.shape == theirs.shape
    real = inputs["padding_mask"].astype(bool) if ours.ndim == 3 else np.ones(ours.shape, bool)
    difference = float(np.abs(ours - theirs)[real].max())
    print(f"{task_class.__name__} on ModernBERT vs transformers {class_name} ({name}): max |difference| "
          f"{difference:.1e}")
    assert difference <= TOLERANCE
    if name.startswith("classifier"):  # transformers 5 writes no id2label for two labels: HF's default names
        assert task.labels == (["bad", "fine", "great"] if name == "classifier_cls" else ["LABEL_0", "LABEL_1"])


def test_a_classifier_from_the_masked_lm_takes_its_head_as_hf_does(tmp_path):
    """ModernBERT-base ships as `ModernBertForMaskedLM`: HF's classifiers load its `head.*` (the same names) and
    start only `classifier` fresh; so do kerasbert's."""
    folder, model = saved_hf_model("ModernBertForMaskedLM", tmp_path)
    classifier = kerasbert.BertClassifier.from_preset(str(folder), num_classes=2, sequence_length=16)
    head = classifier.get_layer("task_transform")
    np.testing.assert_array_equal(numpy(head.dense.kernel), model.head.dense.weight.detach().numpy().T)
    np.testing.assert_array_equal(numpy(head.norm.gamma), model.head.norm.weight.detach().numpy())
    with pytest.raises(ValueError, match="classifier_pooling='cls' to mix layers"):
        kerasbert.BertClassifier.from_preset(str(folder), num_classes=2, sequence_length=16,
                                             backbone_overrides={"classifier_pooling": "mean"},
                                             fine_tuning=kerasbert.FineTuningConfig("frozen", layer_mix=True))
    with pytest.raises(ValueError, match="classifier_pooling='max'"):
        ModernBertBackbone(num_layers=1, classifier_pooling="max")
