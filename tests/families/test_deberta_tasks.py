"""BERT's task models on DeBERTa-v2/v3 against HF transformers' DeBERTa task models (CPU torch).

Reference: HF `DebertaV2ForSequenceClassification` and `DebertaV2ForMultipleChoice` (a `ContextPooler`: Linear
and GELU on `[CLS]`, then `classifier`), `DebertaV2ForTokenClassification` (`classifier`) and
`DebertaV2ForQuestionAnswering` (`qa_outputs`) of a seeded, randomly initialised tiny DeBERTa-v3 (hidden 32, 2
layers, 4 heads, 8 position buckets), saved with `save_pretrained` beside a DeBERTa-v3-style `spm.model` trained on
Austen paragraphs, in eval mode. Both sides read the same token ids: real UCI reviews tokenized by
`DebertaV2Tokenizer` with that `spm.model`, packed `[CLS] text [SEP]` to 24 tokens, long ones cut, short ones
right-padded (tokenizer parity is `tests/tokenizers/test_tokenizer_json.py`'s). Bar: max |difference| <= 1e-5 in float32 on the logits of real
positions.

DeBERTa's enhanced mask decoder (`enhanced_mask_decoder=True`) has no HF counterpart (HF's `DebertaV2ForMaskedLM`
puts the head on the last layer), so its reference is DeBERTa's own `EnhancedMaskDecoder.emd_context_layer`
(microsoft/DeBERTa, `apps/models/masked_language_model.py`) written on HF's modules: the input of the last layer
(`hidden_states[-2]`), queries = that + the raw absolute position embeddings, the last `DebertaV2Layer` run twice
with `query_states` (HF's layer keeps DeBERTa's argument), then HF's `lm_predictions` head; the folder holds a
seeded position table under the published checkpoints' name, `deberta.embeddings.position_embeddings.weight`.
"""


import keras
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import kerasbert
from kerasbert.families import DebertaV2Backbone, DebertaV2Tokenizer

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-5
TINY = {"vocab_size": 3001, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 64, "max_position_embeddings": 64, "relative_attention": True,
        "pos_att_type": ["p2c", "c2p"], "position_buckets": 8, "max_relative_positions": 16,
        "norm_rel_ebd": "layer_norm", "share_att_key": True, "position_biased_input": False, "type_vocab_size": 0}
SEQUENCE_LENGTH = 24
TASKS = {  # HF class: (kerasbert task, the HF config's settings, the task's from_preset arguments)
    "DebertaV2ForSequenceClassification": (kerasbert.BertClassifier, {"num_labels": 3}, {}),
    "DebertaV2ForTokenClassification": (kerasbert.BertTokenClassifier, {"num_labels": 5}, {}),
    "DebertaV2ForQuestionAnswering": (kerasbert.BertQuestionAnswerer, {},
                                      {"doc_stride": 8, "max_question_length": 8}),
    "DebertaV2ForMultipleChoice": (kerasbert.BertMultipleChoice, {}, {}),
}


@pytest.fixture(scope="module")
def hf_task_folder(deberta_spm_model, seeded_task_folder):
    """`hf_task_folder(class_name, folder, **settings)` -> `(HF model in eval mode, folder)`: HF `class_name` of
    `TINY` and `settings` (`seeded_task_folder`), saved with the `spm.model`."""
    def build(class_name, folder, **settings):
        return seeded_task_folder(transformers.DebertaV2Config(**TINY, **settings), class_name, folder,
                                  {"spm.model": deberta_spm_model})

    return build


@pytest.fixture(scope="module")
def real_ids(deberta_spm_model, uci_reviews, tmp_path_factory):
    """`real_ids(rows)`: `[rows, 24]` ids of the first UCI test reviews (see the module docstring); padding 0."""
    spm = tmp_path_factory.mktemp("deberta_tokenizer") / "spm.model"
    spm.write_bytes(deberta_spm_model)
    preprocessor = kerasbert.BertPreprocessor(DebertaV2Tokenizer(str(spm)), sequence_length=SEQUENCE_LENGTH)
    token_ids = keras.ops.convert_to_numpy(preprocessor(uci_reviews[1]["text"].tolist()[:6])["token_ids"])
    lengths = (token_ids != 0).sum(axis=1)
    assert lengths.min() < SEQUENCE_LENGTH == lengths.max()  # padded rows and a cut one
    return lambda rows=3: token_ids[:rows].astype("int32")


def hf_logits(model, token_ids):
    with torch.no_grad():
        out = model(input_ids=torch.tensor(token_ids, dtype=torch.long),
                    attention_mask=torch.tensor(token_ids != 0, dtype=torch.long))
    if hasattr(out, "start_logits"):
        return np.stack([out.start_logits.numpy(), out.end_logits.numpy()], axis=-1)
    return out.logits.numpy()


@pytest.mark.parametrize("class_name", list(TASKS))
def test_task_logits_equal_hf_deberta_task_models(class_name, hf_task_folder, real_ids, tmp_path):
    task_class, settings, task_arguments = TASKS[class_name]
    model, folder = hf_task_folder(class_name, tmp_path, **settings)
    task = task_class.from_preset(str(folder), sequence_length=32, **task_arguments)
    assert isinstance(task.backbone, DebertaV2Backbone)
    if class_name == "DebertaV2ForMultipleChoice":
        token_ids = real_ids(6).reshape(2, 3, -1)  # two questions, three choices each
    else:
        token_ids = real_ids()
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": (token_ids != 0).astype("int32")}
    ours = keras.ops.convert_to_numpy(task(inputs))
    theirs = hf_logits(model, token_ids)
    assert ours.shape == theirs.shape
    real = token_ids != 0 if ours.ndim == 3 else np.ones(ours.shape, bool)
    difference = float(np.abs(ours - theirs)[real].max())
    print(f"{task_class.__name__} on DeBERTa-v3 vs transformers {class_name}: max |difference| {difference:.1e}")
    assert difference <= TOLERANCE


def test_fine_tuned_classifier_reads_raw_text_and_reloads(hf_task_folder, uci_reviews, tmp_path, fresh_python):
    _, folder = hf_task_folder("DebertaV2ForSequenceClassification", tmp_path / "hf",
                               id2label={0: "negative", 1: "positive"})
    classifier = kerasbert.BertClassifier.from_preset(str(folder), sequence_length=32)
    assert classifier.labels == ["negative", "positive"]
    texts = uci_reviews[1]["text"].tolist()[:4]
    expected = classifier.predict(texts, verbose=0)
    classifier.save(tmp_path / "deberta_classifier.keras")
    got = fresh_python.predict(tmp_path / "deberta_classifier.keras", texts)  # raw text, a new process
    np.testing.assert_array_equal(np.stack(got["probabilities"]), np.stack(expected["probabilities"]))
    exported = transformers.AutoModel.from_pretrained(str(classifier.backbone.export_to_hf(tmp_path / "base")),
                                                      output_loading_info=True)[1]
    assert not exported["unexpected_keys"] and not exported["missing_keys"]  # no pooler in DebertaV2Model


def test_base_checkpoint_pooler_starts_fresh_and_unknown_activation_is_named(hf_task_folder, tmp_path):
    _, folder = hf_task_folder("DebertaV2Model", tmp_path)
    backbone = DebertaV2Backbone.from_preset(str(folder))
    assert backbone.pooler is not None and backbone.get_config()["pooler_activation"] == "gelu"
    with pytest.raises(ValueError, match="pooler_activation='gelu_new'"):
        DebertaV2Backbone(vocabulary_size=100, num_layers=1, num_heads=4, hidden_dim=32, intermediate_dim=64,
                          pooler_activation="gelu_new")


@pytest.mark.parametrize("legacy", [False, True])  # `lm_predictions.lm_head.*` (the published layout), `cls.*`
def test_masked_lm_logits_equal_hf_deberta_for_masked_lm(legacy, hf_task_folder, real_ids, tmp_path):
    model, folder = hf_task_folder("DebertaV2ForMaskedLM", tmp_path, legacy=legacy)
    fill = kerasbert.BertMaskedLM.from_preset(str(folder), sequence_length=32)
    token_ids = real_ids()
    positions = np.tile(np.arange(token_ids.shape[1], dtype="int32"), (len(token_ids), 1))
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": (token_ids != 0).astype("int32"), "mask_positions": positions}
    ours = keras.ops.convert_to_numpy(fill(inputs))
    theirs = hf_logits(model, token_ids)
    difference = float(np.abs(ours - theirs)[token_ids != 0].max())
    print(f"BertMaskedLM on DeBERTa-v3 vs transformers DebertaV2ForMaskedLM (legacy={legacy}): {difference:.1e}")
    assert difference <= TOLERANCE
    assert len(fill.predict(["She was [MASK] of it."], top_k=2, verbose=0)["tokens"][0]) == 2


POSITION_TABLE = "deberta.embeddings.position_embeddings.weight"
EMD = {"enhanced_mask_decoder": True}


@pytest.fixture(scope="module")
def emd_folder(tmp_path_factory, hf_task_folder):
    """`(HF DebertaV2ForMaskedLM in eval mode, the position table, folder)`: the folder holds the table too."""
    model, folder = hf_task_folder("DebertaV2ForMaskedLM", tmp_path_factory.mktemp("deberta_emd"), legacy=False)
    weights = load_file(str(folder / "model.safetensors"))
    shape = (TINY["max_position_embeddings"], TINY["hidden_size"])
    weights[POSITION_TABLE] = (np.random.default_rng(1).standard_normal(shape) * 0.5).astype("float32")
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    return model, torch.tensor(weights[POSITION_TABLE]), folder


def masked_lm_inputs(token_ids):
    """`token_ids` with every position asked (`mask_positions`)."""
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
            "padding_mask": (token_ids != 0).astype("int32"),
            "mask_positions": np.tile(np.arange(token_ids.shape[1], dtype="int32"), (len(token_ids), 1))}


def deberta_emd_logits(model, table, token_ids):
    """DeBERTa's `emd_context_layer` + `lm_predictions` on HF's modules (see the module docstring)."""
    mask = torch.tensor(token_ids != 0, dtype=torch.long)
    encoder = model.deberta.encoder
    with torch.no_grad():
        hidden = model.deberta(input_ids=torch.tensor(token_ids, dtype=torch.long), attention_mask=mask,
                               output_hidden_states=True).hidden_states[-2]
        query = hidden + table[:hidden.shape[1]][None]
        for layer in [encoder.layer[-1]] * 2:
            query = layer(hidden, encoder.get_attention_mask(mask), query_states=query,
                          relative_pos=encoder.get_rel_pos(hidden), rel_embeddings=encoder.get_rel_embedding())[0]
        return model.lm_predictions(query, model.deberta.embeddings.word_embeddings).numpy()


def max_difference(ours, theirs, token_ids):
    return float(np.abs(keras.ops.convert_to_numpy(ours) - theirs)[token_ids != 0].max())


@pytest.mark.all_backends
def test_masked_lm_with_the_mask_decoder_equals_debertas_decoder_on_hf_modules(emd_folder, real_ids):
    model, table, folder = emd_folder
    fill = kerasbert.BertMaskedLM.from_preset(str(folder), sequence_length=32, backbone_overrides=EMD)
    inputs = masked_lm_inputs(real_ids())
    theirs = deberta_emd_logits(model, table, inputs["token_ids"])
    difference = max_difference(fill(inputs), theirs, inputs["token_ids"])
    without = kerasbert.BertMaskedLM.from_preset(str(folder), sequence_length=32)  # HF's head on the last layer
    print(f"BertMaskedLM with the enhanced mask decoder vs DeBERTa's decoder on HF modules: {difference:.1e} "
          f"(without it: {max_difference(without(inputs), theirs, inputs['token_ids']):.1e})")
    assert difference <= TOLERANCE
    assert max_difference(without(inputs), model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                                                 attention_mask=torch.tensor(inputs["padding_mask"])).logits.detach()
                          .numpy(), inputs["token_ids"]) <= TOLERANCE
    outputs = fill.backbone({name: inputs[name] for name in ("token_ids", "segment_ids", "padding_mask")})
    assert sorted(outputs) == ["mask_decoder_output", "pooled_output", "sequence_output"]


def test_decoder_saves_reloads_exports_and_refuses_what_it_cannot_be(emd_folder, real_ids, tmp_path):
    model, table, folder = emd_folder
    fill = kerasbert.BertMaskedLM.from_preset(str(folder), sequence_length=32, backbone_overrides=EMD)
    inputs = masked_lm_inputs(real_ids())
    expected = keras.ops.convert_to_numpy(fill(inputs))
    fill.save(tmp_path / "fill.keras")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(keras.saving.load_model(tmp_path / "fill.keras")(inputs)),
                                  expected)
    reloaded = kerasbert.BertMaskedLM.from_preset(str(fill.save_to_preset(tmp_path / "preset")), sequence_length=32)
    assert reloaded.backbone.mask_decoder is not None
    np.testing.assert_allclose(keras.ops.convert_to_numpy(reloaded(inputs)), expected, atol=1e-6)
    exported = fill.backbone.export_to_hf(tmp_path / "hf")  # the table under its published name, beside HF's weights
    np.testing.assert_array_equal(load_file(str(exported / "model.safetensors"))["embeddings.position_embeddings.weight"],
                                  table.numpy())
    hf_model, info = transformers.AutoModel.from_pretrained(str(exported), output_loading_info=True)
    assert not info["missing_keys"]  # HF passes over the table, as it does for the published checkpoints
    sequence = hf_model.eval()(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                               attention_mask=torch.tensor(inputs["padding_mask"])).last_hidden_state.detach().numpy()
    ours = fill.backbone({name: inputs[name] for name in ("token_ids", "segment_ids", "padding_mask")})
    assert max_difference(ours["sequence_output"], sequence, inputs["token_ids"]) <= TOLERANCE

    hf_only = tmp_path / "hf_only"  # what transformers' save_pretrained writes: no table
    model.save_pretrained(str(hf_only))
    with pytest.raises(ValueError, match="no embeddings.position_embeddings.weight, the enhanced mask decoder's"):
        DebertaV2Backbone.from_preset(str(hf_only), **EMD)
    with pytest.raises(ValueError, match="position_biased_input=True"):
        DebertaV2Backbone(vocabulary_size=100, num_layers=1, num_heads=4, hidden_dim=32, intermediate_dim=64,
                          position_biased_input=True, enhanced_mask_decoder=True)
