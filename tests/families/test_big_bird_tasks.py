"""BigBird task models against HF transformers (CPU torch), and a classifier from raw text to a `.keras` file.

Reference: HF `BigBirdForSequenceClassification`, `BigBirdForTokenClassification`, `BigBirdForMultipleChoice`,
`BigBirdForMaskedLM` and `BigBirdForQuestionAnswering` of a seeded
tiny config (hidden 32, 2 layers, `block_size` 4, `num_random_blocks` 1: block-sparse past 28 tokens), norms and
biases moved off HF's 1 and 0, saved with a BigBird-style `spiece.model` trained here; real text (UCI reviews)
tokenised by kerasbert's `BigBirdTokenizer` and packed to 40 tokens (so every sequence is block-sparse or
padded). Bar: logits max |difference| <= 1e-4 (measured on TensorFlow: classifier 7.5e-9, token classifier 8.9e-8,
multiple choice 3.7e-9, masked LM 1.8e-7, question answerer 1.2e-7 on question-context pairs).
"""


import keras
import numpy as np
import pytest

import kerasbert
from kerasbert.families import BigBirdBackbone, BigBirdTokenizer

torch = pytest.importorskip("torch", reason="the HF reference needs torch: pip install torch==2.13.0")
transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")

TOLERANCE = 1e-4
TINY = {"vocab_size": 3000, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "max_position_embeddings": 64, "block_size": 4, "num_random_blocks": 1}
SEQUENCE_LENGTH = 40
TASKS = {  # HF class: (kerasbert task, the HF config's settings)
    "BigBirdForSequenceClassification": (kerasbert.BertClassifier,
                                         {"id2label": {0: "bad", 1: "fine", 2: "great"}}),
    "BigBirdForTokenClassification": (kerasbert.BertTokenClassifier, {"num_labels": 5}),
    "BigBirdForMultipleChoice": (kerasbert.BertMultipleChoice, {}),
    "BigBirdForMaskedLM": (kerasbert.BertMaskedLM, {}),
}


@pytest.fixture(scope="module")
def spiece_model(tmp_path_factory, tokenizer_assets):
    """The bytes of a BigBird-style `spiece.model` (`tests/tokenizers/tokenizer_json_assets.py` trains it)."""
    return (tokenizer_assets.train_big_bird_spiece(tmp_path_factory.mktemp("spiece")) / "spiece.model").read_bytes()


@pytest.fixture(scope="module")
def hf_task_folder(spiece_model, seeded_task_folder):
    """`hf_task_folder(class_name, folder, **settings)` -> `(HF model in eval mode, folder)`: HF `class_name` of
    `TINY` and `settings` (`seeded_task_folder`), saved with the `spiece.model`."""
    def build(class_name, folder, **settings):
        return seeded_task_folder(transformers.BigBirdConfig(**TINY, **settings), class_name, folder,
                                  {"spiece.model": spiece_model})

    return build


def packed(task, texts):
    return {key: keras.ops.convert_to_numpy(value).astype("int32") for key, value in task.preprocessor(texts).items()}


def torch_inputs(inputs):
    return {"input_ids": torch.tensor(inputs["token_ids"], dtype=torch.long),
            "token_type_ids": torch.tensor(inputs["segment_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(inputs["padding_mask"], dtype=torch.long)}


@pytest.mark.parametrize("class_name", list(TASKS))
def test_task_logits_equal_hf_big_bird_task_models(class_name, hf_task_folder, uci_reviews, tmp_path):
    task_class, settings = TASKS[class_name]
    model, folder = hf_task_folder(class_name, tmp_path, **settings)
    task = task_class.from_preset(str(folder), sequence_length=SEQUENCE_LENGTH)
    assert isinstance(task.backbone, BigBirdBackbone) and isinstance(task.preprocessor.tokenizer, BigBirdTokenizer)
    texts = uci_reviews[1]["text"].tolist()[:6]
    if class_name == "BigBirdForMultipleChoice":  # two questions, three choices each
        rows = packed(kerasbert.BertClassifier(task.backbone, task.preprocessor, num_classes=2), texts)
        inputs = {key: value.reshape(2, 3, -1) for key, value in rows.items()}
    else:
        inputs = packed(task, texts)
    assert inputs["token_ids"].shape[-1] > 28  # block-sparse in both
    if class_name == "BigBirdForMaskedLM":  # the logits at every position
        positions = np.tile(np.arange(inputs["token_ids"].shape[1], dtype="int32"), (len(texts), 1))
        inputs = {**inputs, "mask_positions": positions}
    ours = keras.ops.convert_to_numpy(task(inputs))
    with torch.no_grad():
        theirs = model(**torch_inputs(inputs)).logits.numpy()
    assert ours.shape == theirs.shape
    real = inputs["padding_mask"].astype(bool) if ours.ndim == 3 else np.ones(ours.shape, bool)
    difference = float(np.abs(ours - theirs)[real].max())
    print(f"{task_class.__name__} on BigBird vs transformers {class_name}: max |difference| {difference:.1e}")
    assert difference <= TOLERANCE
    if class_name == "BigBirdForSequenceClassification":  # HF's head (dense + gelu_new, out_proj): the pooler's
        assert task.labels == ["bad", "fine", "great"] and task.backbone.pooler_activation == "gelu_approximate"
        with pytest.raises(ValueError, match="pooler_activation='gelu_approximate'"):
            task.backbone.export_to_hf(tmp_path / "base")  # BigBirdModel's pooler is tanh's
    if class_name == "BigBirdForMaskedLM":
        assert len(task.predict(["The screen [MASK] sharp."], top_k=2, verbose=0)["tokens"][0]) == 2


def test_question_answerer_gives_hf_logits_question_mask_included(hf_task_folder, uci_reviews, tmp_path):
    """HF's answerer (its `qa_classifier` block, then `qa_outputs`) takes 1e6 from the logits of the question, which
    it finds as the tokens up to the first [SEP] (`question_lengths`); kerasbert's masks the first segment."""
    model, folder = hf_task_folder("BigBirdForQuestionAnswering", tmp_path)
    answerer = kerasbert.BertQuestionAnswerer.from_preset(str(folder), sequence_length=SEQUENCE_LENGTH, doc_stride=8,
                                                          max_question_length=8)
    texts = uci_reviews[1]["text"].tolist()
    questions, contexts = [text[:30] for text in texts[:3]], texts[3:6]
    inputs = packed(answerer, (questions, contexts))
    ours = keras.ops.convert_to_numpy(answerer(inputs))
    first_sep = np.argmax(inputs["token_ids"] == answerer.tokenizer.sep_token_id, axis=1)
    with torch.no_grad():
        output = model(**torch_inputs(inputs), question_lengths=torch.tensor(first_sep + 1)[:, None])
    theirs = torch.stack([output.start_logits, output.end_logits], -1).numpy()
    real = inputs["padding_mask"].astype(bool)
    question = real & (inputs["segment_ids"] == 0) & (np.arange(real.shape[1]) > 0)
    assert question.any() and (real & ~question).any()
    difference = float(np.abs(ours - theirs)[real & ~question].max())
    print(f"BertQuestionAnswerer on BigBird vs transformers BigBirdForQuestionAnswering: max |difference| "
          f"{difference:.1e} ([CLS] and context)")
    assert difference <= TOLERANCE
    assert (ours[question] < -9e5).all() and np.abs(ours - theirs)[question].max() <= 0.25  # float32 steps at 1e6
    answers = answerer.predict([{"question": q, "context": c} for q, c in zip(questions, contexts)], verbose=0)
    for context, answer in zip(contexts, answers.itertuples()):
        assert context[answer.start:answer.end] == answer.answer
    answerer.save(tmp_path / "answerer.keras")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(keras.saving.load_model(tmp_path / "answerer.keras")(inputs)),
                                  ours)


def test_classifier_fits_raw_text_and_predicts_the_same_in_a_fresh_process(hf_task_folder, uci_reviews, tmp_path,
                                                                           fresh_python):
    _, folder = hf_task_folder("BigBirdModel", tmp_path / "hf")
    classifier = kerasbert.BertClassifier.from_preset(str(folder), sequence_length=SEQUENCE_LENGTH)
    classifier.fit(uci_reviews[0].head(16), epochs=1, batch_size=8, verbose=0)
    texts = uci_reviews[1]["text"].tolist()[:4]
    expected = classifier.predict(texts, verbose=0)
    classifier.save(tmp_path / "big_bird_classifier.keras")
    got = fresh_python.predict(tmp_path / "big_bird_classifier.keras", texts)
    np.testing.assert_array_equal(np.stack(got["probabilities"]), np.stack(expected["probabilities"]))
