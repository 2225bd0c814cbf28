"""Extractive QA: question + context windows with answer token positions, decoding, SQuAD scoring.

`prepare_qa_features` packs `[CLS] question [SEP] context-window [SEP]` (XLNet's `question <sep> context-window
<sep> <cls>` for a packer with `cls_last`), sliding overlapping windows
over long contexts, as HF's `prepare_train_features` (run_qa.py) does with `truncation="only_second"`,
`stride=doc_stride` and `return_overflowing_tokens=True`. `best_spans` turns start/end logits back
into answer texts (the standard SQuAD post-processing, with the v2.0 null score), and
The official SQuAD v1.1/v2.0 EM and F1 are `kerasbert.metrics.squad.evaluate_squad`.

Examples:
    >>> features = prepare_qa_features(tokenizer, dev.question, dev.context, dev.answer_starts,
    ...                                dev.answer_texts, question_ids=dev.id)
    >>> windows = make_batched_dataset(features.inputs, bucket_boundaries=[384], max_length=384)
    >>> start_logits, end_logits = model.predict(windows)  # (windows, 384) each
    >>> predictions = best_spans(start_logits, end_logits, features)
    >>> evaluate_squad([p.text for p in predictions], dev.answer_texts)["f1"]
"""

import collections
import dataclasses

import numpy as np
import tensorflow as tf

from kerasbert.metrics.squad import as_answer_list, f1

OUTSIDE_CONTEXT = -1


@dataclasses.dataclass(frozen=True)
class QuestionAnswerFeatures:
    """What `prepare_qa_features` returns: one row per window; per-token fields are int32 ragged.

    Attributes:
        token_ids: `[CLS] question [SEP] context-window [SEP]`.
        segment_ids: 0 for `[CLS] question [SEP]`, 1 for the context window and its `[SEP]`.
        char_starts, char_ends: each context token's character span in its context (end exclusive);
            -1 for question and special tokens.
        example_index: the example (question) each window belongs to.
        start_positions, end_positions: the answer's first and last token in the window, or 0
            (`[CLS]`) when the window does not hold the whole answer or there is none; None when no
            answers were given.
        contexts: the context of each example, for decoding answer texts.
        question_ids: the id of each example.
        cls_positions: each window's `[CLS]` position, where a null answer points: 0, or the window's last
            token for a packer with `cls_last` (XLNet); None: 0.
    """

    token_ids: tf.RaggedTensor
    segment_ids: tf.RaggedTensor
    char_starts: tf.RaggedTensor
    char_ends: tf.RaggedTensor
    example_index: np.ndarray
    start_positions: np.ndarray | None
    end_positions: np.ndarray | None
    contexts: list
    question_ids: list
    cls_positions: np.ndarray | None = None

    @property
    def inputs(self):
        """The model inputs: `{"token_ids", "segment_ids"}` (batching adds `padding_mask`)."""
        return {"token_ids": self.token_ids, "segment_ids": self.segment_ids}


def prepare_qa_features(tokenizer, questions, contexts, answer_starts=None, answer_texts=None, *,
                        question_ids=None, max_sequence_length=384, doc_stride=128,
                        max_question_length=64):
    """Tokenise questions and contexts into overlapping windows with answer token positions.

    The question is cut to its first `max_question_length` pieces (HF does not cut it; the longest
    SQuAD dev question has 38). Each window holds `max_sequence_length - len(question) - 3` context
    pieces; consecutive windows share `doc_stride` pieces, HF's meaning of `stride` (in Google's
    original run_squad.py `doc_stride` was the step between window starts instead).

    Args:
        tokenizer: a kerasbert tokenizer; windows are packed as its `packer_class` packs pairs
            (`[CLS] Q [SEP] C [SEP]`, RoBERTa's `<s> Q </s></s> C </s>` with one more special token, XLNet's
            `Q <sep> C <sep> <cls>`).
        questions, contexts: one str each per example.
        answer_starts, answer_texts: per example, the answer's character offset in its context and
            its text: a value, or a list whose first entry is used (an empty list: no answer, as in
            SQuAD v2.0). Leave both None at prediction time.
        question_ids: names for error messages and predictions; default the positions.
        max_sequence_length: tokens per window, specials included.
        doc_stride: context tokens shared by consecutive windows.
        max_question_length: the most question pieces kept.

    Returns:
        A `QuestionAnswerFeatures`.

    Examples:
        >>> features = prepare_qa_features(tokenizer, ["Who?"], ["Ada wrote it."], [[0]], [["Ada"]])
        >>> features.token_ids.to_list()
        [[101, 2040, 1029, 102, 15262, 2626, 2009, 1012, 102]]
        >>> features.start_positions.tolist(), features.end_positions.tolist()
        ([4], [4])
    """
    questions, contexts = _texts(questions, "questions"), _texts(contexts, "contexts")
    if len(questions) != len(contexts):
        raise ValueError(f"Got {len(questions)} questions but {len(contexts)} contexts; give one "
                         "context per question.")
    question_ids = list(range(len(questions))) if question_ids is None else list(question_ids)
    if len(question_ids) != len(questions):
        raise ValueError(f"Got {len(questions)} questions but {len(question_ids)} question_ids.")
    _check_lengths(max_sequence_length, doc_stride, max_question_length)
    answers = None
    if answer_starts is not None or answer_texts is not None:
        answers = _answer_char_spans(answer_starts, answer_texts, contexts, question_ids)

    question_pieces = tokenizer.tokenize(tf.constant(questions, tf.string, shape=[len(questions)]))
    question_pieces = question_pieces[:, :max_question_length]
    unique_contexts, context_of_example = np.unique(np.array(contexts, dtype=object), return_inverse=True)
    context_pieces, piece_starts, piece_ends = tokenizer.tokenize_with_offsets(
        tf.constant(unique_contexts.tolist(), tf.string, shape=[len(unique_contexts)]))
    windows = _Windows(question_pieces.row_lengths().numpy(),
                       context_pieces.row_lengths().numpy()[context_of_example],
                       context_pieces.row_splits.numpy()[:-1][context_of_example],
                       max_sequence_length, doc_stride, question_ids, tokenizer.packer_class)
    token_ids, segment_ids, char_starts, char_ends = windows.pack(
        question_pieces, context_pieces.flat_values.numpy(), piece_starts.flat_values.numpy(),
        piece_ends.flat_values.numpy(), tokenizer.cls_token_id, tokenizer.sep_token_id)
    start_positions = end_positions = None
    if answers is not None:
        start_positions, end_positions = windows.answer_positions(
            *answers, piece_starts.flat_values.numpy(), piece_ends.flat_values.numpy(),
            context_pieces.value_rowids().numpy())
    return QuestionAnswerFeatures(
        token_ids=token_ids, segment_ids=segment_ids, char_starts=char_starts, char_ends=char_ends,
        example_index=windows.example, start_positions=start_positions, end_positions=end_positions,
        contexts=contexts, question_ids=question_ids, cls_positions=windows.cls_positions())


class _Windows:
    """The context windows of every example: which context pieces each holds, and where they go."""

    def __init__(self, question_lengths, context_lengths, context_offsets, max_sequence_length,
                 doc_stride, question_ids, packer_class):
        self.separators = packer_class.pair_separators  # between question and context
        self.second_segment_id = packer_class.second_segment_id
        self.cls_last = packer_class.cls_last  # XLNet: `Q <sep> C <sep> <cls>`, the BERT layout turned by one
        self.cls_segment_id = packer_class.cls_segment_id
        capacity = max_sequence_length - question_lengths - 2 - self.separators
        if (capacity <= doc_stride).any():
            example = int(np.flatnonzero(capacity <= doc_stride)[0])
            raise ValueError(f"Question {question_ids[example]!r} leaves {capacity[example]} context "
                             f"tokens per window, not more than doc_stride={doc_stride}; lower "
                             "doc_stride or max_question_length, or raise max_sequence_length.")
        step = capacity - doc_stride
        counts = 1 + np.maximum(0, -(-(context_lengths - capacity) // step))
        self.example = np.repeat(np.arange(len(counts)), counts)
        window_rank = np.arange(len(self.example)) - np.repeat(np.cumsum(counts) - counts, counts)
        self.context_start = window_rank * step[self.example]
        self.context_length = np.minimum(capacity[self.example],
                                         context_lengths[self.example] - self.context_start)
        self.question_length = question_lengths[self.example]
        self.first_piece = context_offsets[self.example] + self.context_start  # in the flat pieces
        self.lengths = self.question_length + self.context_length + 2 + self.separators

    def pack(self, question_pieces, piece_ids, piece_starts, piece_ends, cls_id, sep_id):
        """token_ids, segment_ids, char_starts, char_ends (ragged) of every window."""
        window = np.repeat(np.arange(len(self.lengths)), self.lengths)
        position = np.arange(len(window)) - np.repeat(np.cumsum(self.lengths) - self.lengths, self.lengths)
        question_length = self.question_length[window]
        is_question = (position >= 1) & (position <= question_length)
        context_position = position - question_length - 1 - self.separators
        is_context = (context_position >= 0) & (context_position < self.context_length[window])
        question_flat = question_pieces.flat_values.numpy()
        question_first = question_pieces.row_splits.numpy()[:-1][self.example]
        question_index = np.where(is_question, question_first[window] + position - 1, 0)
        piece_index = np.where(is_context, self.first_piece[window] + context_position, 0)

        token_ids = np.where(position == 0, cls_id, sep_id).astype(np.int32)
        token_ids[is_question] = question_flat[question_index[is_question]]
        token_ids[is_context] = piece_ids[piece_index[is_context]]
        segment_ids = (context_position >= 0).astype(np.int32) * self.second_segment_id
        char_starts = np.full(len(window), OUTSIDE_CONTEXT, np.int32)
        char_ends = np.full(len(window), OUTSIDE_CONTEXT, np.int32)
        char_starts[is_context] = piece_starts[piece_index[is_context]]
        char_ends[is_context] = piece_ends[piece_index[is_context]]
        if self.cls_last:  # every window turned left by one token: `[CLS]` moves to its end
            segment_ids[position == 0] = self.cls_segment_id
            turned = np.arange(len(window)) - position + (position + 1) % self.lengths[window]
            token_ids, segment_ids, char_starts, char_ends = (
                values[turned] for values in (token_ids, segment_ids, char_starts, char_ends))
        return tuple(tf.RaggedTensor.from_row_lengths(values, self.lengths)
                     for values in (token_ids, segment_ids, char_starts, char_ends))

    def cls_positions(self):
        """Each window's `[CLS]` position: 0, or its last token with `cls_last`."""
        return self.lengths - 1 if self.cls_last else np.zeros(len(self.lengths), np.int64)

    def answer_positions(self, answer_start, answer_end, has_answer, piece_starts, piece_ends,
                         piece_context):
        """Each window's answer start/end token, or 0 ([CLS]) when the window lacks the whole answer.

        As run_qa.py: the start is the window's last piece starting at or before the answer's first
        character, the end its first piece ending at or after the answer's end.
        """
        start_positions = np.zeros(len(self.example), np.int32)
        end_positions = np.zeros(len(self.example), np.int32)
        window = np.flatnonzero(has_answer[self.example] & (self.context_length > 0))
        first = self.first_piece[window]
        last = first + self.context_length[window] - 1
        start_char, end_char = answer_start[self.example[window]], answer_end[self.example[window]]
        inside = (piece_starts[first] <= start_char) & (piece_ends[last] >= end_char)
        # Offsets never decrease within a context, so keys (context, offset) sort all pieces at once.
        scale = int(max(piece_ends.max(initial=0), end_char.max(initial=0))) + 1
        window_context = piece_context[first] * scale
        start_piece = np.searchsorted(piece_context * scale + piece_starts, window_context + start_char,
                                      side="right") - 1
        end_piece = np.searchsorted(piece_context * scale + piece_ends, window_context + end_char,
                                    side="left")
        offset = self.question_length[window] + 2 - first
        start_positions[window[inside]] = (np.minimum(start_piece, last) + offset)[inside]
        end_positions[window[inside]] = (np.maximum(end_piece, first) + offset)[inside]
        if self.cls_last:  # the layout turned by one: answers one token earlier, none at the last token
            return tuple(np.where(positions == 0, self.lengths - 1, positions - 1).astype(np.int32)
                         for positions in (start_positions, end_positions))
        return start_positions, end_positions


def _texts(values, name):
    values = values.tolist() if hasattr(values, "tolist") else list(values)
    for position, value in enumerate(values):
        if not isinstance(value, str):
            raise TypeError(f"{name}[{position}] is a {type(value).__name__}; {name} must be str.")
    return values


def _check_lengths(max_sequence_length, doc_stride, max_question_length):
    for name, value in (("max_sequence_length", max_sequence_length), ("doc_stride", doc_stride),
                        ("max_question_length", max_question_length)):
        lowest = 0 if name == "doc_stride" else 1
        if not isinstance(value, (int, np.integer)) or value < lowest:
            raise ValueError(f"{name} must be an int >= {lowest}, got {value!r}.")


def _answer_char_spans(answer_starts, answer_texts, contexts, question_ids):
    """(start, end, has_answer) arrays from the first answer of each example, checked in its context."""
    if answer_starts is None or answer_texts is None:
        raise ValueError("Give both answer_starts and answer_texts (or neither, to predict).")
    starts, texts = list(answer_starts), list(answer_texts)
    if not len(starts) == len(texts) == len(contexts):
        raise ValueError(f"Got {len(contexts)} contexts, {len(starts)} answer_starts and "
                         f"{len(texts)} answer_texts; give one of each per question.")
    answer_start = np.zeros(len(contexts), np.int64)
    answer_end = np.zeros(len(contexts), np.int64)
    has_answer = np.zeros(len(contexts), bool)
    for example, (start, text, context) in enumerate(zip(starts, texts, contexts)):
        start, text = _first_answer(start), _first_answer(text)
        if (start is None) != (text is None):
            raise ValueError(f"Question {question_ids[example]!r} has answer_starts {starts[example]!r} "
                             f"but answer_texts {texts[example]!r}; give both or neither.")
        if start is None:
            continue
        if not text or context[start:start + len(text)] != text:
            raise ValueError(f"Question {question_ids[example]!r}: the answer {text!r} is not in its "
                             f"context at character {start} (the context reads "
                             f"{context[start:start + len(text)]!r} there); fix the answer start.")
        answer_start[example], answer_end[example], has_answer[example] = start, start + len(text), True
    return answer_start, answer_end, has_answer


def _first_answer(value):
    if isinstance(value, (list, tuple, np.ndarray)):
        return value[0] if len(value) else None
    return value


AnswerSpan = collections.namedtuple("AnswerSpan", ["text", "char_start", "char_end", "score"])


@dataclasses.dataclass(frozen=True)
class AnswerPrediction:
    """One example's answer: `text` ("" for no answer), its `n_best` spans and the `null_score`."""

    text: str
    n_best: list
    null_score: float


def best_spans(start_logits, end_logits, features, n_best=20, max_answer_length=30,
               null_score_threshold=None):
    """The n best answer spans of every example, across all its windows (SQuAD post-processing).

    A span scores `start_logit + end_logit`; the `n_best` highest starts and ends of each window are
    paired, skipping spans outside the context, ending before they start, or longer than
    `max_answer_length` tokens. A span found in two overlapping windows is listed once, with its
    better score. The null score is the lowest `[CLS]` start + end score among the windows (`[CLS]` at
    `features.cls_positions`).

    Args:
        start_logits, end_logits: `(windows, tokens)` scores, tokens padded as in the model's input.
        features: the `QuestionAnswerFeatures` the logits were computed on.
        n_best: spans kept per example.
        max_answer_length: the longest answer, in tokens.
        null_score_threshold: None for SQuAD v1.1 (always answer). For v2.0, answer "" when
            `null_score - best_span_score > null_score_threshold` (0.0 is the usual start).

    Returns:
        One `AnswerPrediction` per example; its `n_best` holds `AnswerSpan(text, char_start,
        char_end, score)` tuples, best first.

    Examples:
        >>> predictions = best_spans(start_logits, end_logits, features)
        >>> predictions[0].text, predictions[0].n_best[0]
        ('Denver Broncos', AnswerSpan(text='Denver Broncos', char_start=177, char_end=191, score=...))
    """
    start_logits = np.asarray(start_logits, np.float32)
    end_logits = np.asarray(end_logits, np.float32)
    window_count = len(features.example_index)
    if start_logits.ndim != 2 or start_logits.shape != end_logits.shape or len(start_logits) != window_count:
        raise ValueError(f"start_logits and end_logits must both be (windows, tokens) with "
                         f"{window_count} windows; got {start_logits.shape} and {end_logits.shape}.")
    token_count = start_logits.shape[1]
    if int(features.token_ids.row_lengths().numpy().max(initial=0)) > token_count:
        raise ValueError(f"The logits have {token_count} tokens per window, fewer than the features; "
                         "predict on these same features.")
    char_starts = features.char_starts.to_tensor(OUTSIDE_CONTEXT, shape=[None, token_count]).numpy()
    char_ends = features.char_ends.to_tensor(OUTSIDE_CONTEXT, shape=[None, token_count]).numpy()
    candidates = _window_candidates(start_logits, end_logits, char_starts, char_ends, n_best,
                                    max_answer_length)
    null_scores = np.full(len(features.contexts), np.inf, np.float32)
    windows = np.arange(window_count)
    cls = np.zeros(window_count, np.int64) if features.cls_positions is None else features.cls_positions
    np.minimum.at(null_scores, features.example_index, start_logits[windows, cls] + end_logits[windows, cls])
    return [_prediction(features.contexts[example], spans, float(null_scores[example]), null_score_threshold)
            for example, spans in enumerate(_n_best_per_example(candidates, features.example_index,
                                                                  len(features.contexts), n_best))]


def _window_candidates(start_logits, end_logits, char_starts, char_ends, n_best, max_answer_length):
    """(window, char_start, char_end, score) arrays of the valid pairs of top starts and top ends."""
    top = min(n_best, start_logits.shape[1])
    windows = np.arange(len(start_logits))[:, None, None]
    starts = np.argsort(-start_logits, axis=1, kind="stable")[:, :top, None]
    ends = np.argsort(-end_logits, axis=1, kind="stable")[:, None, :top]
    valid = ((char_starts[windows, starts] != OUTSIDE_CONTEXT) & (char_ends[windows, ends] != OUTSIDE_CONTEXT)
             & (ends >= starts) & (ends - starts + 1 <= max_answer_length))
    window, start_rank, end_rank = np.nonzero(valid)
    start, end = starts[window, start_rank, 0], ends[window, 0, end_rank]
    return (window, char_starts[window, start], char_ends[window, end],
            start_logits[window, start] + end_logits[window, end])


def _n_best_per_example(candidates, example_index, example_count, n_best):
    """Per example, its candidates as (char_start, char_end, score) rows: unique spans, best first."""
    window, char_start, char_end, score = candidates
    example = example_index[window]
    order = np.lexsort((-score, example))
    example, char_start, char_end, score = example[order], char_start[order], char_end[order], score[order]
    _, first = np.unique(np.stack([example, char_start, char_end], axis=1), axis=0, return_index=True)
    first = np.sort(first)
    example, char_start, char_end, score = example[first], char_start[first], char_end[first], score[first]
    rank = np.arange(len(example)) - np.searchsorted(example, example, side="left")
    keep = rank < n_best
    boundaries = np.searchsorted(example[keep], np.arange(example_count + 1))
    rows = np.stack([char_start[keep], char_end[keep]], axis=1)
    scores = score[keep]
    return [(rows[boundaries[e]:boundaries[e + 1]], scores[boundaries[e]:boundaries[e + 1]])
            for e in range(example_count)]


def _prediction(context, spans, null_score, null_score_threshold):
    rows, scores = spans
    n_best = [AnswerSpan(context[start:end], int(start), int(end), float(score))
              for (start, end), score in zip(rows.tolist(), scores.tolist())]
    answers = bool(n_best) and (null_score_threshold is None
                                or null_score - n_best[0].score <= null_score_threshold)
    return AnswerPrediction(text=n_best[0].text if answers else "", n_best=n_best, null_score=null_score)


# The official SQuAD evaluation (evaluate-v2.0.py; on v1.1 data it gives v1.1's numbers).

def best_null_score_threshold(predictions, gold_answers):
    """The SQuAD v2.0 null-score threshold that maximises F1 on questions with known answers.

    The official evaluation's `find_best_thresh`: questions are taken in order of how strongly they
    lean to "answer" (null score minus best span score, lowest first); answering one more question
    gains the F1 of its best span if it has gold answers and loses 1 if it has none. The threshold is
    the margin of the last question whose answering still raised the total; answering nothing
    (threshold -inf) is the start, so the F1 found is never below always-no-answer.

    Args:
        predictions: `AnswerPrediction`s from `best_spans(..., null_score_threshold=None)`.
        gold_answers: one list of gold texts per question (empty when it has none).

    Returns:
        `(threshold, f1)`: the threshold to pass as `null_score_threshold` and the F1 (fraction) it
        gives on these questions.

    Examples:
        >>> threshold, score = best_null_score_threshold(predictions, dev["answer_texts"])
    """
    predictions, gold_answers = list(predictions), list(gold_answers)
    if len(predictions) != len(gold_answers) or not predictions:
        raise ValueError(f"Got {len(predictions)} predictions for {len(gold_answers)} questions; give "
                         "one prediction per question (at least one).")
    margins = np.array([p.null_score - p.n_best[0].score if p.n_best else np.inf for p in predictions])
    gains = np.array([f1(p.n_best[0].text if p.n_best else "", gold) if len(as_answer_list(gold)) else -1.0
                      for p, gold in zip(predictions, gold_answers)])
    order = np.argsort(margins, kind="stable")
    totals = np.cumsum(gains[order])
    unanswerable = sum(1 for gold in gold_answers if not len(as_answer_list(gold)))
    best = int(np.argmax(totals))
    if totals[best] <= 0 or not np.isfinite(margins[order[best]]):
        return -np.inf, unanswerable / len(predictions)
    return float(margins[order[best]]), (unanswerable + float(totals[best])) / len(predictions)
