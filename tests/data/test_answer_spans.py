"""Extractive QA features, decoding and scoring on real SQuAD.

References: HF transformers examples/pytorch/question-answering (run_qa.py `prepare_train_features`,
utils_qa.py `postprocess_qa_predictions`) and the official SQuAD evaluate-v2.0.py.
"""

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from kerasbert.data.answer_spans import best_null_score_threshold, best_spans, prepare_qa_features
from kerasbert.data.squad import load_squad
from kerasbert.families.bert.bert_tokenizer import BertTokenizer
from kerasbert.metrics.squad import evaluate_squad, exact_match, f1, normalize_answer

SHARED_DATA = Path(os.environ.get("KERASBERT_SHARED_DATA")
                   or Path(__file__).resolve().parents[2].parent / "shared" / "data")


@pytest.fixture(scope="module")
def tokenizer(minilm_path):
    return BertTokenizer.from_preset(minilm_path)


@pytest.fixture(scope="module")
def hf_tokenizer(minilm_path):
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(minilm_path)


def squad_file(name):
    path = SHARED_DATA / "squad" / name
    if not path.is_file():
        pytest.skip(f"SQuAD not found at {path} (set KERASBERT_SHARED_DATA)")
    return load_squad(path)


@pytest.fixture(scope="module")
def dev_v11():
    return squad_file("dev-v1.1.json")


@pytest.fixture(scope="module")
def dev_sample(dev_v11):
    """600 real questions: the 300 with the longest contexts (several windows) and 300 at random."""
    longest = dev_v11.context.str.len().sort_values(kind="stable").index[-300:]
    others = dev_v11.index.difference(longest)
    chosen = np.random.default_rng(0).choice(others, 300, replace=False)
    return dev_v11.loc[sorted([*longest, *chosen])].reset_index(drop=True)


def hf_prepare_train_features(hf_tokenizer, data, max_length, stride):
    """run_qa.py `prepare_train_features`, verbatim but for the column names."""
    encoding = hf_tokenizer([q.lstrip() for q in data.question], data.context.tolist(),
                            truncation="only_second", max_length=max_length, stride=stride,
                            return_overflowing_tokens=True, return_offsets_mapping=True,
                            padding="max_length")
    starts, ends = [], []
    for i, offsets in enumerate(encoding["offset_mapping"]):
        input_ids = encoding["input_ids"][i]
        cls_index = input_ids.index(hf_tokenizer.cls_token_id)
        sequence_ids = encoding.sequence_ids(i)
        example = data.iloc[encoding["overflow_to_sample_mapping"][i]]
        if len(example.answer_starts) == 0:
            starts.append(cls_index)
            ends.append(cls_index)
            continue
        start_char = example.answer_starts[0]
        end_char = start_char + len(example.answer_texts[0])
        token_start_index = 0
        while sequence_ids[token_start_index] != 1:
            token_start_index += 1
        token_end_index = len(input_ids) - 1
        while sequence_ids[token_end_index] != 1:
            token_end_index -= 1
        if not (offsets[token_start_index][0] <= start_char and offsets[token_end_index][1] >= end_char):
            starts.append(cls_index)
            ends.append(cls_index)
        else:
            while token_start_index < len(offsets) and offsets[token_start_index][0] <= start_char:
                token_start_index += 1
            starts.append(token_start_index - 1)
            while offsets[token_end_index][1] >= end_char:
                token_end_index -= 1
            ends.append(token_end_index + 1)
    return encoding, starts, ends


def assert_same_as_hf(features, encoding, starts, ends, max_length):
    assert features.example_index.tolist() == encoding["overflow_to_sample_mapping"]
    lengths = features.token_ids.row_lengths().numpy()
    padding = [[0] * (max_length - length) for length in lengths]
    assert [ids + pad for ids, pad in zip(features.token_ids.to_list(), padding)] == encoding["input_ids"]
    segment_ids = features.segment_ids.to_list()
    assert [ids + pad for ids, pad in zip(segment_ids, padding)] == encoding["token_type_ids"]
    hf_offsets = [[tuple(span) if sequence == 1 else (-1, -1)
                   for span, sequence in zip(spans, encoding.sequence_ids(w))][:length]
                  for w, (spans, length) in enumerate(zip(encoding["offset_mapping"], lengths))]
    offsets = [list(zip(s, e)) for s, e in zip(features.char_starts.to_list(), features.char_ends.to_list())]
    assert offsets == hf_offsets
    assert features.start_positions.tolist() == starts
    assert features.end_positions.tolist() == ends


@pytest.mark.parametrize("max_length, stride", [(384, 128), (256, 128)])
def test_matches_hf_prepare_train_features_on_squad_v11(tokenizer, hf_tokenizer, dev_sample, max_length,
                                                        stride):
    features = prepare_qa_features(tokenizer, dev_sample.question, dev_sample.context,
                                   dev_sample.answer_starts, dev_sample.answer_texts,
                                   question_ids=dev_sample.id, max_sequence_length=max_length,
                                   doc_stride=stride)
    assert_same_as_hf(features, *hf_prepare_train_features(hf_tokenizer, dev_sample, max_length, stride),
                      max_length)
    windows = np.bincount(features.example_index)
    assert (windows >= 2).sum() >= 50 and windows.max() >= 3
    assert (features.start_positions > 0).sum() >= 600  # the answer is in at least one window of each
    assert features.question_ids == dev_sample.id.tolist() and len(features.contexts) == 600


def test_matches_hf_on_squad_v2_unanswerable(tokenizer, hf_tokenizer):
    data = squad_file("cs224n-squad2-dev-half.json").iloc[:400]
    assert data.is_impossible.sum() > 100
    features = prepare_qa_features(tokenizer, data.question, data.context, data.answer_starts,
                                   data.answer_texts, max_sequence_length=256, doc_stride=128)
    assert_same_as_hf(features, *hf_prepare_train_features(hf_tokenizer, data, 256, 128), 256)
    impossible = data.is_impossible.to_numpy()[features.example_index]
    assert not features.start_positions[impossible].any() and not features.end_positions[impossible].any()


def test_answer_in_the_last_token_of_a_window(tokenizer, hf_tokenizer):
    # run_qa.py's start scan runs past the window's last token into [SEP] here (start 9 > end 8);
    # we give the answer's own token.
    data = pd.DataFrame({"question": ["Who?"], "context": ["one two three four five six seven"],
                         "answer_starts": [[19]], "answer_texts": [["five"]]})
    features = prepare_qa_features(tokenizer, data.question, data.context, data.answer_starts,
                                   data.answer_texts, max_sequence_length=10, doc_stride=2)
    _, hf_starts, hf_ends = hf_prepare_train_features(hf_tokenizer, data, 10, 2)
    assert (hf_starts, hf_ends) == ([9, 5], [8, 5])
    assert features.start_positions.tolist() == [8, 5] and features.end_positions.tolist() == [8, 5]
    assert features.token_ids.to_list()[0][8] == tokenizer.token_to_id("five")


def test_errors_name_the_question_and_the_fix(tokenizer):
    with pytest.raises(ValueError, match=r"Question 'q7': the answer 'Bob' is not in its context at "
                                         r"character 0"):
        prepare_qa_features(tokenizer, ["Who?"], ["Ada wrote it."], [[0]], [["Bob"]], question_ids=["q7"])
    with pytest.raises(ValueError, match=r"Question 'q7' leaves 5 context tokens per window, not more than "
                                         r"doc_stride=128; lower doc_stride"):
        prepare_qa_features(tokenizer, ["Who?"], ["Ada wrote it."], question_ids=["q7"],
                            max_sequence_length=10)
    with pytest.raises(ValueError, match="Got 1 questions but 2 contexts"):
        prepare_qa_features(tokenizer, ["Who?"], ["Ada wrote it.", "Bob did."])
    with pytest.raises(ValueError, match="Give both answer_starts and answer_texts"):
        prepare_qa_features(tokenizer, ["Who?"], ["Ada wrote it."], answer_starts=[[0]])


def hf_postprocess(start_logits, end_logits, features, n_best, max_answer_length):
    """utils_qa.py `postprocess_qa_predictions` (v1.1 branch): every example's scored spans, best first."""
    char_starts, char_ends = features.char_starts.to_list(), features.char_ends.to_list()
    per_example = {}
    for window, example in enumerate(features.example_index):
        offsets = [None if s < 0 else (s, e) for s, e in zip(char_starts[window], char_ends[window])]
        start_indexes = np.argsort(start_logits[window])[-1: -n_best - 1: -1].tolist()
        end_indexes = np.argsort(end_logits[window])[-1: -n_best - 1: -1].tolist()
        for start_index in start_indexes:
            for end_index in end_indexes:
                if (start_index >= len(offsets) or end_index >= len(offsets) or offsets[start_index] is None
                        or offsets[end_index] is None):
                    continue
                if end_index < start_index or end_index - start_index + 1 > max_answer_length:
                    continue
                per_example.setdefault(example, []).append(
                    ((offsets[start_index][0], offsets[end_index][1]),
                     start_logits[window][start_index] + end_logits[window][end_index]))
    return {example: sorted(spans, key=lambda span: span[1], reverse=True)
            for example, spans in per_example.items()}


def test_best_spans_match_hf_postprocessing(tokenizer, dev_sample):
    data = dev_sample.iloc[::2]
    features = prepare_qa_features(tokenizer, data.question, data.context, max_sequence_length=256)
    rng = np.random.default_rng(1)
    start_logits, end_logits = rng.normal(size=(2, len(features.example_index), 256)).astype(np.float32)
    predictions = best_spans(start_logits, end_logits, features, n_best=20, max_answer_length=30)
    reference = hf_postprocess(start_logits, end_logits, features, n_best=20, max_answer_length=30)
    assert len(predictions) == len(data)
    without_span = [not prediction.n_best and prediction.text == "" for prediction in predictions]
    assert sum(without_span) == len(data) - len(reference)
    for example, prediction in enumerate(predictions):
        if example not in reference:
            continue
        unique = list({span: score for span, score in reversed(reference[example])}.items())[::-1]
        unique = sorted(unique, key=lambda item: item[1], reverse=True)[:20]
        assert [(s.char_start, s.char_end) for s in prediction.n_best] == [span for span, _ in unique]
        np.testing.assert_allclose([s.score for s in prediction.n_best], [score for _, score in unique],
                                   rtol=1e-6)
        context = data.context.iloc[example]
        assert prediction.text == prediction.n_best[0].text == context[slice(*unique[0][0])]
        windows = np.flatnonzero(features.example_index == example)
        assert prediction.null_score == pytest.approx(min(start_logits[windows, 0] + end_logits[windows, 0]))


def oracle_logits(features, width):
    """Logits that point at each window's labelled start and end ([CLS] where it has no answer)."""
    start_logits = np.full((len(features.example_index), width), -10.0, np.float32)
    end_logits = start_logits.copy()
    rows = np.arange(len(start_logits))
    start_logits[rows, features.start_positions] = 10.0
    end_logits[rows, features.end_positions] = 10.0
    return start_logits, end_logits


def test_oracle_logits_decode_to_the_gold_answers(tokenizer, dev_sample):
    features = prepare_qa_features(tokenizer, dev_sample.question, dev_sample.context,
                                   dev_sample.answer_starts, dev_sample.answer_texts, max_sequence_length=256)
    predictions = best_spans(*oracle_logits(features, 320), features)  # padded past the longest window
    texts = [prediction.text for prediction in predictions]
    first_gold = dev_sample.answer_texts.str[0].tolist()
    starts = dev_sample.answer_starts.str[0].to_numpy()
    predicted_starts = np.array([prediction.n_best[0].char_start for prediction in predictions])
    assert (predicted_starts == starts).mean() > 0.99  # the rest start inside a word ("1990s" vs "990s")
    scores = evaluate_squad(texts, dev_sample.answer_texts)
    assert scores["exact"] > 0.97 and scores["f1"] > 0.99 and scores["total"] == 600
    assert sum(text == gold for text, gold in zip(texts, first_gold)) > 570


def test_null_score_threshold_on_squad_v2(tokenizer):
    data = squad_file("cs224n-squad2-dev-half.json").iloc[:300]
    features = prepare_qa_features(tokenizer, data.question, data.context, data.answer_starts,
                                   data.answer_texts, max_sequence_length=384)
    start_logits, end_logits = oracle_logits(features, 384)
    impossible = data.is_impossible.to_numpy()
    answered = best_spans(start_logits, end_logits, features)
    assert all(p.text == p.n_best[0].text for p, no in zip(answered, impossible) if not no)  # v1.1: best span
    predictions = best_spans(start_logits, end_logits, features, null_score_threshold=0.0)
    assert [prediction.text == "" for prediction in predictions] == impossible.tolist()
    assert all(p.null_score == 20.0 for p, no in zip(predictions, impossible) if no)
    scores = evaluate_squad([p.text for p in predictions], data.answer_texts)
    assert scores["NoAns_exact"] == 1.0 and scores["NoAns_total"] == impossible.sum()
    assert scores["HasAns_f1"] > 0.99 and scores["HasAns_total"] == (~impossible).sum()


def test_best_null_score_threshold_is_the_best_of_every_threshold(tokenizer):
    """Equal to trying every margin as the threshold with the official scores (find_best_thresh)."""
    data = squad_file("cs224n-squad2-dev-half.json").iloc[:200]
    features = prepare_qa_features(tokenizer, data.question, data.context, data.answer_starts,
                                   data.answer_texts, max_sequence_length=384)
    start_logits, end_logits = oracle_logits(features, 384)
    noise = np.random.default_rng(0).normal(0.0, 8.0, (2, *start_logits.shape)).astype(np.float32)
    start_logits, end_logits = start_logits + noise[0], end_logits + noise[1]
    predictions = best_spans(start_logits, end_logits, features)
    threshold, score = best_null_score_threshold(predictions, data.answer_texts)

    def f1_at(value):
        decoded = best_spans(start_logits, end_logits, features, null_score_threshold=value)
        return evaluate_squad([p.text for p in decoded], data.answer_texts)["f1"]

    margins = sorted({p.null_score - p.n_best[0].score for p in predictions if p.n_best})
    best_by_search = max([f1_at(-np.inf)] + [f1_at(margin) for margin in margins])
    assert score == pytest.approx(best_by_search) == pytest.approx(f1_at(threshold))
    assert f1_at(-np.inf) < score < 1.0 and f1_at(0.0) < score  # noisy logits: tuning helps
    with pytest.raises(ValueError, match="one prediction per question"):
        best_null_score_threshold(predictions[:3], data.answer_texts)


def test_null_score_threshold_by_hand(tokenizer):
    features = prepare_qa_features(tokenizer, ["Who?"], ["Ada wrote it."])  # [CLS] who ? [SEP] ada ...
    start_logits, end_logits = np.zeros((2, 1, 9), np.float32)
    start_logits[0, [0, 4]] = [2.0, 1.5]
    end_logits[0, [0, 4]] = [2.0, 1.5]
    # null score 4.0, best span "Ada" 3.0: the difference 1.0 is weighed against the threshold.
    assert best_spans(start_logits, end_logits, features)[0].text == "Ada"
    assert best_spans(start_logits, end_logits, features, null_score_threshold=1.0)[0].text == "Ada"
    prediction = best_spans(start_logits, end_logits, features, null_score_threshold=0.0)[0]
    assert (prediction.text, prediction.null_score) == ("", 4.0)
    assert prediction.n_best[0] == ("Ada", 0, 3, 3.0)


def test_best_spans_rejects_logits_of_other_features(tokenizer):
    features = prepare_qa_features(tokenizer, ["Who?"], ["Ada wrote it."])
    with pytest.raises(ValueError, match=r"\(windows, tokens\) with 1 windows"):
        best_spans(np.zeros((2, 16)), np.zeros((2, 16)), features)
    with pytest.raises(ValueError, match="fewer than the features"):
        best_spans(np.zeros((1, 4)), np.zeros((1, 4)), features)


def test_normalize_answer():
    assert normalize_answer("  The Quick,  brown fox!! ") == "quick brown fox"
    assert normalize_answer("An apple a day") == "apple day"
    assert normalize_answer("Theater-goers") == "theatergoers"


def test_exact_match_and_f1_by_hand():
    assert exact_match("Denver Broncos", ["denver broncos."]) == 1.0
    assert exact_match("Broncos", "Denver Broncos") == 0.0
    assert f1("Denver Broncos won", ["The Denver Broncos"]) == pytest.approx(0.8)  # p 2/3, r 1
    assert f1("go go stop", ["go stop stop"]) == pytest.approx(2 / 3)  # counts clip: 1 go + 1 stop
    assert f1("Denver", ["Broncos", "Denver Broncos"]) == pytest.approx(2 / 3)  # the best gold
    assert f1("", []) == exact_match("", []) == 1.0  # v2.0: no answer predicted and none expected
    assert f1("Paris", []) == exact_match("Paris", []) == 0.0
    assert f1("the", ["Denver"]) == 0.0


def test_evaluate_squad_breakdown_by_hand():
    scores = evaluate_squad(["Denver Broncos", "Broncos", "", "Paris"],
                            [["Denver Broncos"], ["Denver Broncos"], [], []])
    assert scores == pytest.approx({"exact": 0.5, "f1": (1 + 2 / 3 + 1 + 0) / 4, "total": 4,
                                    "HasAns_exact": 0.5, "HasAns_f1": (1 + 2 / 3) / 2,
                                    "HasAns_total": 2,
                                    "NoAns_exact": 0.5, "NoAns_f1": 0.5, "NoAns_total": 2})
    with pytest.raises(ValueError, match="Got 1 predictions for 2 questions"):
        evaluate_squad(["x"], [["x"], ["y"]])


def test_first_gold_answer_scores_1_on_dev_v11(dev_v11):
    scores = evaluate_squad(dev_v11.answer_texts.str[0], dev_v11.answer_texts)
    assert scores == {"exact": 1.0, "f1": 1.0, "total": 10570, "HasAns_exact": 1.0, "HasAns_f1": 1.0,
                      "HasAns_total": 10570}
