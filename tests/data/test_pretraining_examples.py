"""Pre-training examples from Austen chapters with the real MiniLM tokenizer: packing, where A and B
really come from, label and short-sequence rates, determinism, and the errors for bad input."""

import bisect

import numpy as np
import pandas as pd
import pytest

from kerasbert.data.pretraining_examples import pretraining_examples, tokenize_documents
from kerasbert.data.sentences import split_sentences
from kerasbert.data.shipped import load_dataset
from kerasbert.families import BertTokenizer

MAX_LENGTH = 128
LONG = 12  # segments this long are located in the text unambiguously


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer.from_preset("all_minilm_l6_v2_en")


@pytest.fixture(scope="module")
def chapters():
    """Every 8th chapter of the training novels (31 chapters, 5 books), one document per chapter."""
    paragraphs = load_dataset("jane_austen")["train"]
    prose = paragraphs[~paragraphs["is_heading"] & (paragraphs["chapter"] > 0)]
    documents = prose.groupby(["book", "chapter"])["text"].agg("\n".join).iloc[::8]
    return documents.reset_index()


class Source:
    """The chapters' token ids as one string (a character per token), to find where a segment is from."""

    def __init__(self, texts, tokenizer):
        documents = tokenize_documents(texts, tokenizer)
        self.document_starts, self.sentence_starts, tokens = [], set(), []
        for document in documents:
            self.document_starts.append(len(tokens))
            for sentence in document:
                self.sentence_starts.add(len(tokens))
                tokens += sentence
        self.num_tokens = len(tokens)
        self.text = self.encode(tokens)

    @staticmethod
    def encode(ids):
        return "".join(chr(0x10000 + int(i)) for i in ids)

    def find(self, ids, start=0):
        return self.text.find(self.encode(ids), start)

    def document(self, position):
        return bisect.bisect_right(self.document_starts, position) - 1


@pytest.fixture(scope="module")
def source(chapters, tokenizer):
    return Source(chapters["text"].tolist(), tokenizer)


def segments(examples):
    """Each example's text segments (without [CLS]/[SEP]), split by segment id."""
    result = []
    for ids, seg in zip(examples["token_ids"].to_list(), examples["segment_ids"].to_list()):
        ids, seg = np.array(ids), np.array(seg)
        result.append(tuple(ids[seg == s][(s == 0):-1].tolist() for s in range(seg.max() + 1)))
    return result


def test_sentence_rule():
    assert split_sentences('Mr. Darcy bowed, i.e. politely. "Indeed!" said she.\n\nJ. Smith came.') == [
        "Mr. Darcy bowed, i.e. politely.", '"Indeed!" said she.', "J. Smith came."]
    assert split_sentences("Tea, cake, etc. were served. So did I. Then 12 came? (Yes.) It   was\tlate.") == [
        "Tea, cake, etc. were served.", "So did I.", "Then 12 came?", "(Yes.)", "It was late."]
    assert split_sentences("One line without a stop\nSecond line. 'Quoted' next.\n   \n") == [
        "One line without a stop", "Second line.", "'Quoted' next."]
    assert split_sentences("Dr. St. John and Mrs. E. Watson, e.g. Bath folk, wait. no split here.") == [
        "Dr. St. John and Mrs. E. Watson, e.g. Bath folk, wait. no split here."]


@pytest.mark.parametrize("next_sentence", ["nsp", "sop", None])
def test_examples_are_packed_as_bert_expects(chapters, tokenizer, next_sentence):
    examples = pretraining_examples(chapters, tokenizer, MAX_LENGTH, next_sentence=next_sentence, seed=0)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    token_ids, segment_ids = examples["token_ids"].to_list(), examples["segment_ids"].to_list()
    assert examples["token_ids"].dtype == examples["segment_ids"].dtype == "int32"
    assert len(token_ids) > 700
    num_segments = 1 if next_sentence is None else 2
    for ids, seg in zip(token_ids, segment_ids):
        ids, seg = np.array(ids), np.array(seg)
        assert len(ids) == len(seg) <= MAX_LENGTH
        assert ids[0] == cls and (ids == cls).sum() == 1
        seps = np.flatnonzero(ids == sep)
        assert len(seps) == num_segments and seps[-1] == len(ids) - 1 and np.all(np.diff(seps) > 1)
        assert seps[0] >= 2  # every segment has text
        expected = np.zeros(len(ids), dtype=int)
        expected[seps[0] + 1:] = 1
        np.testing.assert_array_equal(seg, expected)
    if next_sentence is None:
        assert "next_sentence_label" not in examples
    else:
        labels = examples["next_sentence_label"]
        assert labels.dtype == np.int32 and labels.shape == (len(token_ids),)


def test_next_sentence_pairs_come_from_where_the_label_says(chapters, tokenizer, source):
    examples = pretraining_examples(chapters, tokenizer, MAX_LENGTH, seed=0)
    labels = examples["next_sentence_label"]
    assert abs(labels.mean() - 0.5) < 0.05  # ~1,000 examples: 0.5 +- 3 standard deviations
    checked = {0: 0, 1: 0}
    untruncated_next = 0
    for (a, b), label in zip(segments(examples), labels):
        if len(a) < LONG or len(b) < LONG:
            continue
        a_at = source.find(a)
        assert a_at >= 0, "A is contiguous text of one chapter"
        if label == 0:
            b_at = source.find(b, a_at + len(a))
            assert b_at >= 0 and source.document(b_at) == source.document(a_at), "B follows A"
            if len(a) + len(b) < MAX_LENGTH - 3:  # nothing was cut: A then B exactly, whole sentences
                assert b_at == a_at + len(a)
                assert a_at in source.sentence_starts and b_at in source.sentence_starts
                untruncated_next += 1
        else:
            b_at = source.find(b)
            assert b_at >= 0 and source.document(b_at) != source.document(a_at), "B is from another chapter"
        checked[label] += 1
    assert checked[0] > 300 and checked[1] > 300 and untruncated_next > 5


def test_sentence_order_pairs_are_consecutive_and_swapped_half_the_time(chapters, tokenizer, source):
    examples = pretraining_examples(chapters, tokenizer, MAX_LENGTH, next_sentence="sop", seed=0)
    labels = examples["next_sentence_label"]
    assert abs(labels.mean() - 0.5) < 0.06  # ~770 examples: 0.5 +- 3 standard deviations
    checked = 0
    for (first, second), label in zip(segments(examples), labels):
        if len(first) < LONG or len(second) < LONG:
            continue
        earlier, later = (first, second) if label == 0 else (second, first)
        at = source.find(earlier)
        later_at = source.find(later, at + len(earlier))
        assert at >= 0 and later_at >= 0 and source.document(at) == source.document(later_at)
        if len(first) + len(second) < MAX_LENGTH - 3:
            assert later_at == at + len(earlier)
        checked += 1
    assert checked > 0.8 * len(labels)


def test_single_segment_windows_cover_each_document_in_full(chapters, tokenizer, source):
    examples = pretraining_examples(chapters, tokenizer, MAX_LENGTH, next_sentence=None, short_seq_prob=0)
    lengths = examples["token_ids"].row_lengths().numpy()
    assert set(examples["segment_ids"].flat_values.numpy()) == {0}
    assert np.sum(lengths - 2) == source.num_tokens  # every token once, none lost
    assert np.sum(lengths < MAX_LENGTH) <= len(chapters)  # only each chapter's last window is short
    windows = [window for (window,) in segments(examples)]
    starts = [source.find(window) for window in windows]
    assert min(starts) >= 0
    assert any(start not in source.sentence_starts for start in starts)  # windows cross sentences


def test_short_sequences_are_drawn_at_short_seq_prob(chapters, tokenizer):
    num_documents = len(chapters)
    examples = pretraining_examples(chapters, tokenizer, MAX_LENGTH, next_sentence=None, dupe_factor=2,
                                    short_seq_prob=0.1, seed=3)
    lengths = examples["token_ids"].row_lengths().numpy()
    # Each document pass ends with one short window; the others are short only by a short target.
    short = (np.sum(lengths < MAX_LENGTH) - 2 * num_documents) / (len(lengths) - 2 * num_documents)
    assert abs(short - 0.1) < 0.035  # ~1,800 windows: 0.1 +- 5 standard deviations
    full = pretraining_examples(chapters, tokenizer, MAX_LENGTH, short_seq_prob=0, seed=3)
    mixed = pretraining_examples(chapters, tokenizer, MAX_LENGTH, short_seq_prob=0.1, seed=3)
    short_full, short_mixed = (np.mean(examples["token_ids"].row_lengths().numpy() < MAX_LENGTH)
                               for examples in (full, mixed))
    assert short_full < 0.04 and 0.03 < short_mixed - short_full < 0.1


def test_seed_makes_it_deterministic_and_dupe_factor_repeats(chapters, tokenizer):
    one = pretraining_examples(chapters, tokenizer, 64, seed=7)
    again = pretraining_examples(chapters, tokenizer, 64, seed=7)
    other = pretraining_examples(chapters, tokenizer, 64, seed=8)
    assert one["token_ids"].to_list() == again["token_ids"].to_list()
    np.testing.assert_array_equal(one["next_sentence_label"], again["next_sentence_label"])
    assert one["token_ids"].to_list() != other["token_ids"].to_list()
    three = pretraining_examples(chapters, tokenizer, 64, dupe_factor=3, seed=7)
    assert 2.8 < len(three["next_sentence_label"]) / len(one["next_sentence_label"]) < 3.2
    windows = [pretraining_examples(chapters, tokenizer, 64, next_sentence=None, short_seq_prob=0,
                                    dupe_factor=dupe_factor) for dupe_factor in (1, 3)]
    assert windows[1]["token_ids"].nrows() == 3 * windows[0]["token_ids"].nrows()


def test_inputs_can_be_a_list_a_series_or_files(chapters, tokenizer, tmp_path):
    texts = chapters["text"].iloc[:3].tolist()
    from_list = pretraining_examples(texts, tokenizer, seed=1)
    from_series = pretraining_examples(pd.Series(texts), tokenizer, seed=1)
    for i, text in enumerate(texts):
        (tmp_path / f"{i}.txt").write_text(text)
    from_folder = pretraining_examples(str(tmp_path), tokenizer, seed=1)
    for other in (from_series, from_folder):
        assert other["token_ids"].to_list() == from_list["token_ids"].to_list()
    renamed = chapters.rename(columns={"text": "chapter_text"})
    before = renamed.copy()
    pretraining_examples(renamed, tokenizer, text_column="chapter_text")
    pd.testing.assert_frame_equal(renamed, before)


@pytest.mark.parametrize(("documents", "kwargs", "error", "message"), [
    (pd.DataFrame({"txt": ["A. B.", "C. D."]}), {}, ValueError, r"Column 'text' not found.*text_column='txt'"),
    (pd.DataFrame({"text": ["A. B.", None]}, index=[10, 11]), {}, ValueError, r"missing.*row 11"),
    (pd.DataFrame({"text": ["A. B.", 3.5]}, index=["x", "y"]), {}, ValueError, r"float.*row 'y'"),
    (["Only one document. It has two sentences."], {}, ValueError, r"fewer than 2 non-empty documents"),
    (["A. B.", "C. D."], {"max_sequence_length": 4}, ValueError, r"max_sequence_length.*at least 5"),
    (["A. B.", "C. D."], {"next_sentence": "mlm"}, ValueError, r"next_sentence='mlm'.*'nsp'.*'sop'.*None"),
    (["A. B.", "C. D."], {"short_seq_prob": 1.5}, ValueError, r"short_seq_prob"),
    (["A. B.", "C. D."], {"dupe_factor": 0}, ValueError, r"dupe_factor"),
    (["  ", "\n\n"], {"next_sentence": None}, ValueError, r"no text"),
    (["  ", "A. B."], {}, ValueError, r"fewer than 2 non-empty documents \(2 given\)"),
    ("no/such/folder", {}, FileNotFoundError, r"no such file or folder.*list of document strings"),
    (42, {}, TypeError, r"Cannot read examples from a int"),
])
def test_bad_input_is_named_before_any_tokenising(documents, kwargs, error, message):
    with pytest.raises(error, match=message):
        pretraining_examples(documents, tokenizer=None, **kwargs)  # no tokenizer is needed to see it


def test_text_without_tokens_and_a_wrong_tokenizer_are_reported(tokenizer):
    with pytest.raises(ValueError, match="no tokens"):
        pretraining_examples(["\x00\x01", "\x02"], tokenizer)
    with pytest.raises(ValueError, match="Only 1 document has tokens"):
        pretraining_examples(["Some text. More text.", "\x02"], tokenizer)
    with pytest.raises(TypeError, match="BertTokenizer"):
        pretraining_examples(["A. B.", "C. D."], tokenizer="bert-base-uncased")
