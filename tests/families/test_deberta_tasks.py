"""BERT's task models on DeBERTa-v2/v3 against HF transformers' DeBERTa task models (CPU torch).

Reference: HF `DebertaV2ForSequenceClassification` and `DebertaV2ForMultipleChoice` (a `ContextPooler`: Linear
and GELU on `[CLS]`, then `classifier`), `DebertaV2ForTokenClassification` (`classifier`) and
`DebertaV2ForQuestionAnswering` (`qa_outputs`) of a seeded, randomly initialised tiny DeBERTa-v3 (hidden 32, 2
layers, 4 heads, 8 position buckets), saved with `save_pretrained` beside a DeBERTa-v3-style `spm.model` trained on
Austen paragraphs, in eval mode. Both sides read the same right-padded token ids (tokenizer parity is
`tests/tokenizers/test_tokenizer_json.py`'s). Bar: max |difference| <= 1e-5 in float32 on the logits of real
positions.
"""


import keras
import numpy as np
import pytest

import kerasbert
from kerasbert.families import DebertaV2Backbone

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-5
TINY = {"vocab_size": 3001, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 64, "max_position_embeddings": 64, "relative_attention": True,
        "pos_att_type": ["p2c", "c2p"], "position_buckets": 8, "max_relative_positions": 16,
        "norm_rel_ebd": "layer_norm", "share_att_key": True, "position_biased_input": False, "type_vocab_size": 0}
LENGTHS = (20, 13, 6)
TASKS = {  # HF class: (kerasbert task, the HF config's settings, the task's from_preset arguments)
    "DebertaV2ForSequenceClassification": (kerasbert.BertClassifier, {"num_labels": 3}, {}),
    "DebertaV2ForTokenClassification": (kerasbert.BertTokenClassifier, {"num_labels": 5}, {}),
    "DebertaV2ForQuestionAnswering": (kerasbert.BertQuestionAnswerer, {},
                                      {"doc_stride": 8, "max_question_length": 8}),
    "DebertaV2ForMultipleChoice": (kerasbert.BertMultipleChoice, {}, {}),
}


@pytest.fixture(scope="module")
def spm_model(tmp_path_factory, tokenizer_assets):
    """The bytes of a DeBERTa-v3-style `spm.model` (`tests/tokenizers/tokenizer_json_assets.py` trains it)."""
    return (tokenizer_assets.train_deberta_spm(tmp_path_factory.mktemp("spm")) / "spm.model").read_bytes()


@pytest.fixture(scope="module")
def hf_task_folder(spm_model, seeded_task_folder):
    """`hf_task_folder(class_name, folder, **settings)` -> `(HF model in eval mode, folder)`: HF `class_name` of
    `TINY` and `settings` (`seeded_task_folder`), saved with the `spm.model`."""
    def build(class_name, folder, **settings):
        return seeded_task_folder(transformers.DebertaV2Config(**TINY, **settings), class_name, folder,
                                  {"spm.model": spm_model})

    return build


def padded_ids(rows=len(LENGTHS)):
    """`rows` right-padded rows of `LENGTHS` (cycled): `[CLS]` ids... `[SEP]`, padding 0."""
    rng = np.random.default_rng(0)
    token_ids = np.zeros((rows, max(LENGTHS)), "int32")
    for row in range(rows):
        length = LENGTHS[row % len(LENGTHS)]
        token_ids[row, :length] = [1, *rng.integers(4, 3000, length - 2), 2]
    return token_ids


def hf_logits(model, token_ids):
    with torch.no_grad():
        out = model(input_ids=torch.tensor(token_ids, dtype=torch.long),
                    attention_mask=torch.tensor(token_ids != 0, dtype=torch.long))
    if hasattr(out, "start_logits"):
        return np.stack([out.start_logits.numpy(), out.end_logits.numpy()], axis=-1)
    return out.logits.numpy()


@pytest.mark.parametrize("class_name", list(TASKS))
def test_task_logits_equal_hf_deberta_task_models(class_name, hf_task_folder, tmp_path):
    task_class, settings, task_arguments = TASKS[class_name]
    model, folder = hf_task_folder(class_name, tmp_path, **settings)
    task = task_class.from_preset(str(folder), sequence_length=32, **task_arguments)
    assert isinstance(task.backbone, DebertaV2Backbone)
    if class_name == "DebertaV2ForMultipleChoice":
        token_ids = padded_ids(6).reshape(2, 3, -1)  # two questions, three choices each
    else:
        token_ids = padded_ids()
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": (token_ids != 0).astype("int32")}
    ours = keras.ops.convert_to_numpy(task(inputs))
    theirs = hf_logits(model, token_ids)
    assert ours.shape == theirs.shape
    real = token_ids != 0 if ours.ndim == 3 else np.ones(ours.shape, bool)
    difference = float(np.abs(ours - theirs)[real].max())
    print(f"{task_class.__name__} on DeBERTa-v3 vs transformers {class_name}: max |difference| {difference:.1e}")
    assert difference <= TOLERANCE


def test_fine_tuned_classifier_reads_raw_text_and_reloads(hf_task_folder, uci_reviews, tmp_path):
    _, folder = hf_task_folder("DebertaV2ForSequenceClassification", tmp_path / "hf",
                               id2label={0: "negative", 1: "positive"})
    classifier = kerasbert.BertClassifier.from_preset(str(folder), sequence_length=32)
    assert classifier.labels == ["negative", "positive"]
    texts = uci_reviews[1]["text"].tolist()[:4]
    expected = classifier.predict(texts, verbose=0)
    classifier.save(tmp_path / "deberta_classifier.keras")
    got = keras.saving.load_model(tmp_path / "deberta_classifier.keras").predict(texts, verbose=0)
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
def test_masked_lm_logits_equal_hf_deberta_for_masked_lm(legacy, hf_task_folder, tmp_path):
    model, folder = hf_task_folder("DebertaV2ForMaskedLM", tmp_path, legacy=legacy)
    fill = kerasbert.BertMaskedLM.from_preset(str(folder), sequence_length=32)
    token_ids = padded_ids()
    positions = np.tile(np.arange(token_ids.shape[1], dtype="int32"), (len(token_ids), 1))
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
              "padding_mask": (token_ids != 0).astype("int32"), "mask_positions": positions}
    ours = keras.ops.convert_to_numpy(fill(inputs))
    theirs = hf_logits(model, token_ids)
    difference = float(np.abs(ours - theirs)[token_ids != 0].max())
    print(f"BertMaskedLM on DeBERTa-v3 vs transformers DebertaV2ForMaskedLM (legacy={legacy}): {difference:.1e}")
    assert difference <= TOLERANCE
    assert len(fill.predict(["She was [MASK] of it."], top_k=2, verbose=0)["tokens"][0]) == 2
