"""Texts longer than the model's window: overlapping windows of pieces, the window where each piece has the most
context, windowed word features for tagging, and a count of what truncation cuts.

Windows follow HF's `stride` (as `BertQuestionAnswerer` does): a text of `n` pieces is read in windows of `room`
pieces, and consecutive windows share `doc_stride` pieces, so window `k` starts at `k * (room - doc_stride)`;
the last window ends at the text's end. Everything here is TensorFlow ops on ragged tensors, so the same
functions make the windows at `prepare` time and inside an exported SavedModel.

Examples:
    >>> windows, text, start, length = cut_windows(tf.ragged.constant([[1, 2, 3, 4, 5, 6, 7]]), room=4, doc_stride=2)
    >>> windows.to_list(), start.numpy().tolist()
    ([[1, 2, 3, 4], [3, 4, 5, 6], [5, 6, 7]], [0, 2, 4])
"""

import dataclasses

import numpy as np
import tensorflow as tf

from kerasbert.data.batch_order import BatchOrder
from kerasbert.data.batching import length_buckets
from kerasbert.data.token_alignment import NO_WORD

# `[CLS] text [SEP]` (BERT, ALBERT, ELECTRA) and `<s> text </s>` (RoBERTa): one text is packed with two tokens.
SINGLE_TEXT_SPECIAL_TOKENS = 2
WINDOW_TEXT = "window_text"  # the batch key of each window's text, numbered from 0 within the batch


def text_room(window_length):
    """Text pieces per window: the window's tokens less `[CLS]` and `[SEP]`.

    Examples:
        >>> text_room(128)
        126
    """
    return window_length - SINGLE_TEXT_SPECIAL_TOKENS


def check_doc_stride(doc_stride, window_length):
    """`doc_stride` (None: no windows) if every window moves on by at least one piece; a ValueError naming the
    argument, the numbers and the fix otherwise.

    Examples:
        >>> check_doc_stride(32, 128)
        32
    """
    if doc_stride is None:
        return None
    if isinstance(doc_stride, bool) or not isinstance(doc_stride, (int, np.integer)) or doc_stride < 0:
        raise ValueError(f"doc_stride must be an int >= 0 (the pieces consecutive windows share) or None (cut long "
                         f"texts at sequence_length), got {doc_stride!r}.")
    room = text_room(window_length)
    if doc_stride >= room:
        raise ValueError(
            f"doc_stride={doc_stride} leaves no room to slide: a window of sequence_length={window_length} tokens "
            f"holds {room} text pieces beside its {SINGLE_TEXT_SPECIAL_TOKENS} special tokens, and consecutive "
            f"windows share doc_stride of them, so each next window would start no further on. Use doc_stride < "
            f"{room} (e.g. {room // 4}), or raise sequence_length.")
    return int(doc_stride)


def window_spans(lengths, room, doc_stride):
    """Where the windows of texts of `lengths` pieces lie: `(text, start, length)` int64 tensors, one entry per
    window, the windows of a text consecutive and in order. A text of at most `room` pieces (an empty one too)
    has one window.

    Examples:
        >>> [t.numpy().tolist() for t in window_spans([7, 2], room=4, doc_stride=2)]
        [[0, 0, 0, 1], [0, 2, 4, 0], [4, 4, 3, 2]]
    """
    lengths = tf.cast(lengths, tf.int64)
    step = room - doc_stride
    counts = 1 + tf.maximum(tf.constant(0, tf.int64), (lengths - room + step - 1) // step)
    text = tf.repeat(tf.range(tf.size(lengths, out_type=tf.int64)), counts)
    start = tf.ragged.range(counts).flat_values * step
    return text, start, tf.minimum(tf.constant(room, tf.int64), tf.gather(lengths, text) - start)


def cut_windows(pieces, room, doc_stride):
    """The windows of ragged `pieces` (`[texts, (pieces)]`): `(windows, text, start, length)`, `windows` ragged
    `[windows, (pieces)]` and the rest as `window_spans` gives them.

    Examples:
        >>> cut_windows(tf.ragged.constant([[1, 2, 3, 4, 5, 6, 7]]), room=4, doc_stride=2)[0].to_list()
        [[1, 2, 3, 4], [3, 4, 5, 6], [5, 6, 7]]
    """
    text, start, length = window_spans(pieces.row_lengths(), room, doc_stride)
    first = tf.gather(pieces.row_splits[:-1], text) + start
    return tf.gather(pieces.flat_values, tf.ragged.range(first, first + length)), text, start, length


def window_piece_index(lengths, text, start, length):
    """For every piece of every window, its index among all pieces of all texts (texts of `lengths` pieces, one
    after the other): ragged `[windows, (pieces)]`.

    Examples:
        >>> window_piece_index([7, 2], *window_spans([7, 2], room=4, doc_stride=2)).to_list()
        [[0, 1, 2, 3], [2, 3, 4, 5], [4, 5, 6], [7, 8]]
    """
    lengths = tf.cast(lengths, tf.int64)
    text_first = tf.cumsum(lengths, exclusive=True)
    first = tf.gather(text_first, text) + start
    return tf.ragged.range(first, first + length)


def max_context(lengths, text, start, length):
    """True where a window is the piece's window with the most context: ragged bool `[windows, (pieces)]`,
    True exactly once per piece.

    HF's rule for QA (`_check_is_max_context`): a piece scores `min(pieces left of it, pieces right of it) +
    0.01 * window length` in each window that holds it; the highest score wins, the first window on a tie.

    Examples:
        >>> max_context([7], *window_spans([7], room=4, doc_stride=2)).to_list()
        [[True, True, True, False], [False, True, True, False], [False, True, True]]
    """
    pieces = window_piece_index(lengths, text, start, length).flat_values
    position = tf.ragged.range(length)
    window_length = tf.gather(length, position.value_rowids())
    offset = position.flat_values
    score = 100 * tf.minimum(offset, window_length - 1 - offset) + window_length  # HF's score, times 100
    total = tf.reduce_sum(tf.cast(lengths, tf.int64))
    is_best = tf.equal(score, tf.gather(tf.math.unsorted_segment_max(score, pieces, total), pieces))
    order = tf.range(tf.size(pieces, out_type=tf.int64))
    first_best = tf.math.unsorted_segment_min(tf.where(is_best, order, tf.int64.max), pieces, total)
    return position.with_flat_values(tf.equal(order, tf.gather(first_best, pieces)))


@dataclasses.dataclass(frozen=True)
class WordWindows:
    """What `window_words` returns: one row per window, the model inputs, and where each word's tag is read.

    Attributes:
        token_ids, segment_ids: `[CLS] window [SEP]`, int32 ragged.
        chosen_word_ids: the word of a token on a word's first piece in the window where that piece has the most
            context (`max_context`), -1 elsewhere: every word with a piece appears exactly once in its sentence.
        label_mask: 1.0 where `chosen_word_ids` names a word (the sample weight: each word counts once).
        labels: the word labels on those tokens, `ignore_label` elsewhere; None without tags.
        window_sentence: the sentence of each window.
    """

    token_ids: tf.RaggedTensor
    segment_ids: tf.RaggedTensor
    chosen_word_ids: tf.RaggedTensor
    label_mask: tf.RaggedTensor
    labels: tf.RaggedTensor | None
    window_sentence: np.ndarray

    @property
    def inputs(self):
        """The model inputs: `{"token_ids", "segment_ids"}` (batching adds `padding_mask`)."""
        return {"token_ids": self.token_ids, "segment_ids": self.segment_ids}


def window_words(features, room, doc_stride, cls_token_id, sep_token_id, ignore_label):
    """Cut whole sentences (`WordPieceFeatures` of `encode_words` with a `sequence_length` that cuts nothing)
    into overlapping windows of `room` pieces sharing `doc_stride`, each packed `[CLS] window [SEP]`.

    Examples:
        >>> whole = encode_words(tokenizer, words, tags, sequence_length=2**31 - 1, ignore_label=0)
        >>> windows = window_words(whole, 126, 32, tokenizer.cls_token_id, tokenizer.sep_token_id, ignore_label=0)
        >>> int(windows.label_mask.flat_values.numpy().sum()) == sum(map(len, words))  # no empty words
        True
    """
    lengths = features.token_ids.row_lengths() - 2
    windows, sentence, start, length = cut_windows(features.token_ids[:, 1:-1], room, doc_stride)
    places = window_piece_index(lengths, sentence, start, length)

    def packed(values, edge):  # the window's values between two `edge` values, where [CLS] and [SEP] go
        inner = tf.gather(values[:, 1:-1].flat_values, places)
        edges = tf.fill([inner.nrows(), 1], tf.constant(edge, inner.dtype))
        return tf.concat([edges, inner, edges], axis=1)

    def where_chosen(values, other):
        return values.with_flat_values(tf.where(is_chosen, values.flat_values, tf.constant(other, values.dtype)))

    edges = tf.zeros([windows.nrows(), 1], tf.bool)
    at_max_context = tf.concat([edges, max_context(lengths, sentence, start, length), edges], axis=1).flat_values
    is_chosen = at_max_context & (packed(features.label_mask, 0.0).flat_values > 0)
    token_ids = tf.concat([tf.fill([windows.nrows(), 1], tf.constant(cls_token_id, windows.dtype)), windows,
                           tf.fill([windows.nrows(), 1], tf.constant(sep_token_id, windows.dtype))], axis=1)
    word_ids = packed(features.word_ids, NO_WORD)
    return WordWindows(
        token_ids=token_ids,
        segment_ids=tf.zeros_like(token_ids),
        chosen_word_ids=where_chosen(word_ids, NO_WORD),
        label_mask=word_ids.with_flat_values(tf.cast(is_chosen, tf.float32)),
        labels=None if features.labels is None else where_chosen(packed(features.labels, ignore_label), ignore_label),
        window_sentence=sentence.numpy())


def window_word_predictions(token_predictions, windows, num_words, fill_value=0):
    """One prediction per word of each sentence, read from the window where the word has the most context.

    Words without a piece get `fill_value`, as in `kerasbert.data.word_predictions`.

    Args:
        token_predictions: `(windows, tokens, ...)` class ids or scores, padded.
        windows: the `WordWindows` the predictions were computed on.
        num_words: words per sentence.
        fill_value: the prediction of a word without a token.

    Returns:
        A list with one array per sentence, of shape `(num_words[i], ...)`.

    Examples:
        >>> tags = window_word_predictions(logits.argmax(-1), windows, [len(w) for w in words], fill_value=outside)
    """
    predictions = np.asarray(token_predictions)
    chosen = windows.chosen_word_ids.to_tensor(NO_WORD, shape=[None, predictions.shape[1]]).numpy()
    rows, columns = np.nonzero(chosen != NO_WORD)
    num_words = np.asarray(num_words, np.int64)
    word_first = np.cumsum(num_words) - num_words
    words = np.full((int(num_words.sum()),) + predictions.shape[2:], fill_value,
                    dtype=np.result_type(predictions.dtype, np.min_scalar_type(fill_value)))
    words[word_first[windows.window_sentence[rows]] + chosen[rows, columns]] = predictions[rows, columns]
    return np.split(words, word_first[1:])


def make_text_window_dataset(features, window_text, labels=None, *, batch_size=32, max_length=512, pad_token_id=0,
                             batch_order=BatchOrder()):
    """Batches of whole texts, each with all its windows: `x` holds the windows' `token_ids`, `segment_ids`,
    `padding_mask` (`[windows, tokens]`, padded to a length bucket) and `window_text` (each window's text,
    numbered from 0 in the batch); `y` repeats each text's label on its windows.

    `batch_size` counts texts. `batch_order` (a `BatchOrder`; grouping by a text's tokens over all its windows)
    works as in `kerasbert.data.batching.make_batched_dataset`.

    Examples:
        >>> features = {"token_ids": tf.ragged.constant([[101, 7, 102], [101, 8, 102], [101, 9, 9, 102]]),
        ...             "segment_ids": tf.ragged.constant([[0, 0, 0], [0, 0, 0], [0, 0, 0, 0]])}
        >>> x, y = next(iter(make_text_window_dataset(features, [0, 0, 1], labels=np.array([3, 5]))))
        >>> x["window_text"].numpy().tolist(), y.numpy().tolist()
        ([0, 0, 1], [3, 3, 5])
    """
    window_text = np.asarray(window_text, np.int64)
    num_texts = int(window_text[-1]) + 1 if len(window_text) else 0
    token_lengths = features["token_ids"].row_lengths().numpy()
    text_lengths = np.bincount(window_text, weights=token_lengths, minlength=num_texts).astype(np.int64)
    windows_of_text = tf.RaggedTensor.from_value_rowids(tf.range(len(window_text), dtype=tf.int64), window_text,
                                                        nrows=num_texts)
    parts = {name: tf.cast(features[name], tf.int32) for name in ("token_ids", "segment_ids")}
    buckets = tf.constant(length_buckets(max_length), tf.int32)
    labels = None if labels is None else tf.constant(np.asarray(labels))

    def batch_of(texts):
        rows = tf.gather(windows_of_text, texts)
        windows = rows.flat_values
        token_ids = tf.gather(parts["token_ids"], windows)
        longest = tf.cast(tf.reduce_max(token_ids.row_lengths()), tf.int32)
        width = buckets[tf.reduce_sum(tf.cast(buckets < longest, tf.int32))]
        def padded(values, value):
            dense = values.to_tensor(value)
            return tf.pad(dense, [[0, 0], [0, width - tf.shape(dense)[1]]], constant_values=value)

        x = {"token_ids": padded(token_ids, pad_token_id),
             "segment_ids": padded(tf.gather(parts["segment_ids"], windows), 0),
             "padding_mask": tf.sequence_mask(token_ids.row_lengths(), width, dtype=tf.int32),
             WINDOW_TEXT: tf.cast(rows.value_rowids(), tf.int32)}
        if labels is None:
            return x
        return x, tf.gather(labels, tf.gather(texts, rows.value_rowids()))

    def batched(indices):
        return indices.batch(batch_size).map(batch_of, num_parallel_calls=tf.data.AUTOTUNE)

    return batch_order.batches(batched, text_lengths, batch_size, -(-num_texts // batch_size))


@dataclasses.dataclass(frozen=True)
class Truncation:
    """How much cutting texts at `sequence_length` dropped: per row, the pieces cut (`room`: the pieces a row
    keeps at most).

    Examples:
        >>> Truncation(np.array([0, 40, 10]), sequence_length=128, room=126).message()
        '2 of 3 rows were longer than sequence_length=128 (126 pieces beside the special tokens) and were cut: ...'
    """

    cut_pieces: np.ndarray
    sequence_length: int
    room: int

    @property
    def rows(self):
        """How many rows lost pieces."""
        return int(np.count_nonzero(self.cut_pieces))

    def summary(self):
        """`{"truncated_rows", "mean_cut_pieces", "longest_cut_pieces"}` (the mean over the cut rows)."""
        cut = self.cut_pieces[self.cut_pieces > 0]
        return {"truncated_rows": self.rows, "mean_cut_pieces": float(cut.mean()) if len(cut) else 0.0,
                "longest_cut_pieces": int(cut.max(initial=0))}

    def message(self):
        summary = self.summary()
        return (f"{self.rows} of {len(self.cut_pieces)} rows were longer than sequence_length={self.sequence_length} "
                f"({self.room} pieces beside the special tokens) and were cut: "
                f"{summary['mean_cut_pieces']:.1f} pieces cut on average, {summary['longest_cut_pieces']} at most. "
                "Pass long_inputs=LongInputs(doc_stride=N) to read long texts in overlapping windows, or raise "
                "sequence_length.")
