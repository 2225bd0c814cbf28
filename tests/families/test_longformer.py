"""Longformer against HF transformers (CPU torch).

Reference: HF `LongformerModel` of a seeded, randomly initialised tiny config (hidden 32, 3 layers with
`attention_window` 4, 8 and 4, so that each token sees 2 or 4 either side; 4 heads, inner width 48), its
LayerNorms moved off their initial ones so that every weight matters, saved with `save_pretrained` (no real
Longformer weights can be downloaded here). The folder holds a tiny byte-level BPE (`vocab.json` +
`merges.txt`, written here), so the batch is real text packed by `BertPreprocessor` and right-padded (HF pads
it further, to a multiple of 8). Bar: max |difference| <= 1e-4 in float32 on sequence_output, pooled_output
and every hidden state at real positions, without and with global tokens (measured: 9.5e-7 on TensorFlow and
torch, 1.2e-6 on JAX); HF's classification and question-answering models with the task's heads copied in:
the same bar (measured on TensorFlow: 5.6e-9 and 6.0e-8 on the logits).
"""

import json
import warnings

import keras
import numpy as np
import pytest

import kerasbert
from kerasbert.families import LongformerBackbone, tokenizer_from_preset
from kerasbert.families.family import backbone_class_for
from kerasbert.families.roberta.byte_level_bpe import bytes_to_unicode
from kerasbert.layers.longformer_attention import global_picks
from kerasbert.presets.loading import load_checkpoint

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-4
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
MERGES = ["Ġ t", "Ġ a", "t h", "e r", "i n", "o n", "a n", "Ġt h", "e d", "Ġ s", "o u", "i t"]
VOCABULARY = [*SPECIALS, *bytes_to_unicode().values(), *(merge.replace(" ", "") for merge in MERGES)]
TINY = {"vocab_size": len(VOCABULARY), "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 3,
        "num_attention_heads": 4, "attention_window": [4, 8, 4], "max_position_embeddings": 66,
        "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2, "sep_token_id": 2, "type_vocab_size": 1}
TEXTS = ["The battery lasts all day and the screen is sharp.", "Works fine.", "Not worth the money at all."]
SEQUENCE_LENGTH = 36  # the first text is cut there; the others are padded
GLOBAL = {0: (0, 5, 17), 1: (3,)}  # row -> global positions (row 2 has none)
# HF LongformerModel of allenai/longformer-base-4096's config: num_parameters()
LONGFORMER_BASE = {"vocab_size": 50265, "max_position_embeddings": 4098, "type_vocab_size": 1, "layer_norm_eps": 1e-5}
LONGFORMER_BASE_PARAMETERS = 148_659_456


@pytest.fixture(scope="module")
def longformer_folder(tmp_path_factory):
    """(HF folder with the model and a tiny byte-level BPE, HF model in eval mode), built once."""
    torch.manual_seed(0)
    model = transformers.LongformerModel(transformers.LongformerConfig(**TINY)).eval()
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "LayerNorm" in name:
                weight.add_(torch.randn_like(weight) * 0.1)
    folder = tmp_path_factory.mktemp("longformer")
    model.save_pretrained(str(folder))
    (folder / "vocab.json").write_text(json.dumps({token: i for i, token in enumerate(VOCABULARY)}), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n", encoding="utf-8")
    return folder, model


def packed_texts(folder):
    """`BertPreprocessor` inputs of `TEXTS` (numpy), right-padded with `<pad>`."""
    preprocessor = kerasbert.BertPreprocessor(tokenizer_from_preset(str(folder)), sequence_length=SEQUENCE_LENGTH)
    return {key: keras.ops.convert_to_numpy(value).astype("int32") for key, value in preprocessor(TEXTS).items()}


def global_mask(inputs):
    mask = np.zeros_like(inputs["token_ids"])
    for row, positions in GLOBAL.items():
        mask[row, list(positions)] = 1
    return mask


def hf_outputs(model, inputs, global_attention_mask=None):
    with torch.no_grad():
        return model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
                     global_attention_mask=None if global_attention_mask is None
                     else torch.tensor(global_attention_mask, dtype=torch.long), output_hidden_states=True)


def max_diff(ours, theirs, mask):
    return float(np.max(np.abs(keras.ops.convert_to_numpy(ours) - theirs.numpy()) * mask[..., None]))


def parity(backbone, model, inputs, global_attention_mask=None):
    """Max |difference| over sequence_output, every hidden state (real positions) and pooled_output."""
    theirs = hf_outputs(model, inputs, global_attention_mask)
    ours = backbone(inputs if global_attention_mask is None
                    else {**inputs, "global_attention_mask": global_attention_mask})
    mask = inputs["padding_mask"]
    assert len(ours["hidden_states"]) == len(theirs.hidden_states)
    diffs = [max_diff(ours["sequence_output"], theirs.last_hidden_state, mask),
             max_diff(ours["pooled_output"], theirs.pooler_output, np.ones(len(mask)))]
    diffs += [max_diff(a, b, mask) for a, b in zip(ours["hidden_states"], theirs.hidden_states)]
    return max(diffs), ours


def test_matches_hf_longformer_on_padded_text_with_the_window_cutting(longformer_folder):
    folder, model = longformer_folder
    checkpoint = load_checkpoint(folder)
    assert backbone_class_for(checkpoint) is LongformerBackbone
    backbone = LongformerBackbone.from_checkpoint(checkpoint, output_hidden_states=True)
    inputs = packed_texts(folder)
    lengths = inputs["padding_mask"].sum(axis=1)
    assert lengths[0] == SEQUENCE_LENGTH and min(lengths) < SEQUENCE_LENGTH  # cut and padded rows
    worst, ours = parity(backbone, model, inputs)
    assert worst <= TOLERANCE, worst
    # the window cuts: a window over the whole input changes the long row
    unwindowed = LongformerBackbone.from_checkpoint(checkpoint, attention_window=64)
    changed = np.abs(keras.ops.convert_to_numpy(unwindowed(inputs)["sequence_output"] - ours["sequence_output"]))
    assert changed.max() > 1e-3


def test_matches_hf_longformer_with_global_tokens(longformer_folder):
    folder, model = longformer_folder
    backbone = LongformerBackbone.from_preset(str(folder), output_hidden_states=True, max_global_tokens=4)
    inputs = packed_texts(folder)
    worst, ours = parity(backbone, model, inputs, global_mask(inputs))
    assert worst <= TOLERANCE, worst
    plain = keras.ops.convert_to_numpy(backbone(inputs)["sequence_output"])
    assert np.abs(plain - keras.ops.convert_to_numpy(ours["sequence_output"])).max() > 1e-3  # they count


def test_global_tokens_past_max_global_tokens_are_local_ones(longformer_folder):
    folder, _ = longformer_folder
    backbone = LongformerBackbone.from_preset(str(folder), max_global_tokens=1)
    inputs = packed_texts(folder)
    first_only = np.zeros_like(inputs["token_ids"])
    first_only[0, GLOBAL[0][0]] = first_only[1, GLOBAL[1][0]] = 1
    over, kept = (keras.ops.convert_to_numpy(backbone({**inputs, "global_attention_mask": mask})["sequence_output"])
                  for mask in (global_mask(inputs), first_only))
    np.testing.assert_allclose(over, kept, atol=1e-6)


@pytest.mark.on_request  # the base preset's count is test_family_backbones' (same HF number)
def test_parameter_count_equals_hf_longformer_base():
    with torch.device("meta"):  # no memory, no initialisation: only the shapes
        reference = transformers.LongformerModel(transformers.LongformerConfig(**LONGFORMER_BASE)).num_parameters()
    assert reference == LONGFORMER_BASE_PARAMETERS
    assert LongformerBackbone().count_params() == LONGFORMER_BASE_PARAMETERS


def test_global_picks_takes_each_rows_first_global_positions_in_order():
    picks, found = global_picks(np.array([[0, 1, 0, 1, 1], [0, 0, 0, 0, 0]], "bool"), 2)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(keras.ops.argmax(picks, axis=-1))[0], [1, 3])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(found), [[True, True], [False, False]])
    assert not keras.ops.convert_to_numpy(picks)[1].any()


def test_keras_file_and_hf_export_give_the_outputs_again(longformer_folder, tmp_path):
    folder, model = longformer_folder
    backbone = LongformerBackbone.from_preset(str(folder))
    path = tmp_path / "longformer.keras"
    backbone.save(path)
    reloaded = keras.saving.load_model(path)
    inputs = packed_texts(folder)
    inputs["global_attention_mask"] = global_mask(inputs)
    expected, got = backbone(inputs), reloaded(inputs)
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(got[key]), keras.ops.convert_to_numpy(expected[key]))
    exported, loading = transformers.AutoModel.from_pretrained(str(backbone.export_to_hf(tmp_path / "hf")),
                                                               output_loading_info=True)
    assert type(exported) is transformers.LongformerModel
    assert not loading["missing_keys"] and not loading["unexpected_keys"]
    assert list(exported.config.attention_window) == TINY["attention_window"]
    original = hf_outputs(model, inputs, inputs["global_attention_mask"]).last_hidden_state
    copy = hf_outputs(exported.eval(), inputs, inputs["global_attention_mask"]).last_hidden_state
    np.testing.assert_array_equal(copy.numpy(), original.numpy())


def numpy_inputs(packed):
    return {key: keras.ops.convert_to_numpy(value).astype("int32") for key, value in packed.items()}


def hf_task_model(model, hf_class, **config):
    """An HF Longformer task model in eval mode holding `model`'s encoder (its heads HF's random ones)."""
    reference = hf_class(transformers.LongformerConfig(**TINY, **config)).eval()
    held = reference.longformer.state_dict()  # with the pooler only where the task model has one (multiple choice)
    reference.longformer.load_state_dict({name: value for name, value in model.state_dict().items() if name in held})
    return reference


def test_classifier_reads_hf_classifier_folders_makes_s_global_and_equals_hf(longformer_folder, tmp_path):
    folder, model = longformer_folder
    # HF's LongformerClassificationHead (dense + tanh on <s>, then out_proj) is the pooler and the logits layer
    reference = hf_task_model(model, transformers.LongformerForSequenceClassification,
                              id2label={0: "bad", 1: "fine", 2: "great"})
    hf_folder_of(reference, folder, tmp_path)  # a fine-tuned HF folder: `longformer.*` and `classifier.*`
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "pooler keeps its fresh initialisation": classifier.dense is it
        classifier = kerasbert.BertClassifier.from_preset(str(tmp_path), sequence_length=SEQUENCE_LENGTH)
    assert classifier.backbone.global_tokens == "cls" and classifier.labels == ["bad", "fine", "great"]
    inputs = packed_texts(folder)
    with torch.no_grad():
        theirs = reference(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                           attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long)).logits
    ours = keras.ops.convert_to_numpy(classifier(inputs))
    assert np.abs(ours - theirs.numpy()).max() <= TOLERANCE


def test_question_answerer_reads_hf_qa_folders_makes_the_question_global_and_equals_hf(longformer_folder, tmp_path):
    folder, model = longformer_folder
    reference = hf_task_model(model, transformers.LongformerForQuestionAnswering, num_labels=2)
    hf_folder_of(reference, folder, tmp_path)  # a fine-tuned HF QA folder: `longformer.*` and `qa_outputs.*`
    qa = kerasbert.BertQuestionAnswerer.from_preset(str(tmp_path), sequence_length=48, max_question_length=8,
                                                     doc_stride=8)
    assert qa.backbone.global_tokens == "question"
    inputs = numpy_inputs(qa.preprocessor((["Does it last?", "Why?"], TEXTS[:2])))
    with torch.no_grad():
        theirs = reference(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                           attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long))
    ours = keras.ops.convert_to_numpy(qa(inputs))
    mask = inputs["padding_mask"]
    for index, logits in enumerate((theirs.start_logits, theirs.end_logits)):
        assert np.abs((ours[..., index] - logits.numpy()) * mask).max() <= TOLERANCE


def hf_folder_of(reference, folder, tmp_path):
    """Save the HF task model `reference` in `tmp_path` with the tokenizer files of `folder`."""
    reference.save_pretrained(str(tmp_path))
    for name in ("vocab.json", "merges.txt"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    return tmp_path


def test_token_classifier_reads_hf_folders_and_equals_hf(longformer_folder, tmp_path):
    folder, model = longformer_folder
    reference = hf_task_model(model, transformers.LongformerForTokenClassification, num_labels=5)
    tagger = kerasbert.BertTokenClassifier.from_preset(str(hf_folder_of(reference, folder, tmp_path)),
                                                      sequence_length=SEQUENCE_LENGTH)
    assert tagger.backbone.global_tokens == "none"  # HF's token classifier sets no global token
    inputs = packed_texts(folder)
    with torch.no_grad():
        theirs = reference(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                           attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long)).logits
    ours = keras.ops.convert_to_numpy(tagger(inputs))
    assert np.abs((ours - theirs.numpy()) * inputs["padding_mask"][..., None]).max() <= TOLERANCE


def test_multiple_choice_reads_hf_folders_makes_each_choice_global_and_equals_hf(longformer_folder, tmp_path):
    folder, model = longformer_folder
    reference = hf_task_model(model, transformers.LongformerForMultipleChoice)
    chooser = kerasbert.BertMultipleChoice.from_preset(str(hf_folder_of(reference, folder, tmp_path)),
                                                       sequence_length=SEQUENCE_LENGTH)
    assert chooser.backbone.global_tokens == "after_question"  # HF: every token after the first </s></s>
    preprocessor = kerasbert.BertPreprocessor(tokenizer_from_preset(str(folder)), sequence_length=SEQUENCE_LENGTH)
    contexts = ["Does the battery last?"] * 3 + ["Is it worth it?"] * 3
    inputs = numpy_inputs(preprocessor((contexts, TEXTS * 2)))
    inputs = {key: value.reshape(2, 3, -1) for key, value in inputs.items()}  # two questions, three choices
    with torch.no_grad():  # HF's own global tokens (its default: after the question's </s></s>)
        theirs = reference(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                           attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long)).logits
    difference = np.abs(keras.ops.convert_to_numpy(chooser(inputs)) - theirs.numpy()).max()
    no_globals = kerasbert.BertMultipleChoice.from_preset(str(tmp_path), sequence_length=SEQUENCE_LENGTH,
                                                          backbone_overrides={"global_tokens": "none"})
    without = np.abs(keras.ops.convert_to_numpy(no_globals(inputs)) - theirs.numpy()).max()
    print(f"BertMultipleChoice on Longformer vs HF: {difference:.1e} (without its global tokens: {without:.1e})")
    assert difference <= 1e-6 < without  # the random-init weights are small: global tokens move the logits little


def test_classifier_fits_saves_and_reloads_with_identical_predictions(longformer_folder, uci_reviews, tmp_path,
                                                                      fresh_python):
    classifier = kerasbert.BertClassifier.from_preset(str(longformer_folder[0]), num_classes=2, sequence_length=24)
    before = [keras.ops.convert_to_numpy(weight) for weight in classifier.backbone.trainable_weights]
    # two steps: the first one's learning rate is warmup's 0, as in HF Trainer
    history = classifier.fit(uci_reviews[0].iloc[:8], epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    after = [keras.ops.convert_to_numpy(weight) for weight in classifier.backbone.trainable_weights]
    assert any(not np.array_equal(b, a) for b, a in zip(before, after))
    path = tmp_path / "longformer_classifier.keras"
    classifier.save(path)
    reloaded = keras.saving.load_model(path)
    assert reloaded.backbone.global_tokens == "cls"
    texts = uci_reviews[1]["text"].tolist()[:4]
    expected, got = classifier.predict(texts, verbose=0), fresh_python.predict(path, texts)  # raw text, new process
    np.testing.assert_array_equal(np.stack(got["probabilities"]), np.stack(expected["probabilities"]))


def test_bad_configs_and_missing_parts_are_named_errors(longformer_folder):
    with pytest.raises(ValueError, match="attention_window must be an even int"):
        LongformerBackbone(num_layers=1, attention_window=5)
    with pytest.raises(ValueError, match="one window per layer"):
        LongformerBackbone(num_layers=2, attention_window=[4])
    with pytest.raises(ValueError, match="global_tokens='first'"):
        LongformerBackbone(num_layers=1, global_tokens="first")
    with pytest.raises(ValueError, match="fine_tuning='full'"):
        LongformerBackbone(num_layers=1, lora_rank=4)
    with pytest.raises(ValueError, match="output_attentions=False"):
        LongformerBackbone(num_layers=1, output_attentions=True)


def test_masked_lm_equals_hf_longformer_for_masked_lm(longformer_folder, tmp_path):
    folder, base = longformer_folder
    model = hf_task_model(base, transformers.LongformerForMaskedLM)
    with torch.no_grad():
        model.lm_head.bias.add_(torch.randn_like(model.lm_head.bias))
    model.save_pretrained(str(tmp_path))
    for name in ("vocab.json", "merges.txt"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    fill = kerasbert.BertMaskedLM.from_preset(str(tmp_path), sequence_length=SEQUENCE_LENGTH)
    inputs = packed_texts(folder)
    positions = np.tile(np.arange(SEQUENCE_LENGTH, dtype="int32"), (len(TEXTS), 1))
    ours = fill({**inputs, "mask_positions": positions})
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                       attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long)).logits
    difference = max_diff(ours, theirs, inputs["padding_mask"])
    print(f"Longformer masked-LM logits vs transformers LongformerForMaskedLM: max |diff| {difference:.1e}")
    assert difference <= TOLERANCE
    assert len(fill.predict(["The screen <mask> sharp."], top_k=2, verbose=0)["tokens"][0]) == 2
