"""Word-level tags <-> WordPiece tokens for token classification (NER, POS), and entity spans.

`encode_words` tokenises pre-split words (all words of a batch in one tokenizer call) and packs each
sentence as `[CLS] pieces... [SEP]`, cut to `sequence_length`. A word's label goes on its FIRST
piece; later pieces, `[CLS]`, `[SEP]` get `ignore_label` and a 0 in `label_mask`. This is what HF
`BertTokenizerFast(words, is_split_into_words=True, truncation=True)` with run_ner's `word_ids()`
alignment (`label_all_tokens=False`) produces. `word_predictions` maps token predictions back to
one prediction per word; `entity_spans` and `entity_char_spans` turn word tags into entities.

Examples:
    >>> features = encode_words(tokenizer, [["EU", "rejects", "German"]], [["B-ORG", "O", "B-MISC"]],
    ...                         tag_vocabulary=["O", "B-ORG", "B-MISC"])
    >>> features.token_ids.to_list(), features.word_ids.to_list(), features.labels.to_list()
    ([[101, 7327, 19164, 2446, 102]], [[-1, 0, 1, 2, -1]], [[-100, 1, 0, 2, -100]])
"""

import dataclasses

import numpy as np
import tensorflow as tf

from kerasbert.arguments import check_count

IGNORE_LABEL = -100
NO_WORD = -1


@dataclasses.dataclass(frozen=True)
class WordPieceFeatures:
    """What `encode_words` returns. Per-token fields are int32 `tf.RaggedTensor`s, one row per sentence.

    Attributes:
        token_ids: `[CLS] pieces... [SEP]`.
        segment_ids: all 0.
        word_ids: the index of the word each token came from; -1 for `[CLS]` and `[SEP]`.
        label_mask: 1 on each word's first piece, else 0 (float32; use it as the sample weight).
        labels: the word's label id on its first piece, `ignore_label` elsewhere; None without tags.
        num_words: words per sentence (int array).
        truncated_words: per sentence, how many words lost all their pieces to `sequence_length`.
        empty_words: `(sentence, word)` pairs of words that tokenise to nothing (e.g. a lone control
            character): they have no token, so `word_predictions` gives them its `fill_value`.
    """

    token_ids: tf.RaggedTensor
    segment_ids: tf.RaggedTensor
    word_ids: tf.RaggedTensor
    label_mask: tf.RaggedTensor
    labels: tf.RaggedTensor | None
    num_words: np.ndarray
    truncated_words: np.ndarray
    empty_words: np.ndarray

    @property
    def inputs(self):
        """The model inputs: `{"token_ids", "segment_ids"}` (batching adds `padding_mask`)."""
        return {"token_ids": self.token_ids, "segment_ids": self.segment_ids}


def encode_words(tokenizer, words, tags=None, *, tag_vocabulary=None, sequence_length=128,
                 ignore_label=IGNORE_LABEL):
    """Tokenise pre-split sentences and align word tags with the first piece of each word.

    Args:
        tokenizer: a kerasbert tokenizer (BERT, RoBERTa or ALBERT: `tokenize_words` cuts each word as HF's
            `is_split_into_words=True` does; `[CLS]`/`<s>` and `[SEP]`/`</s>` around each sentence).
        words: one list of words (str) per sentence (a list, or a pandas Series).
        tags: optional, one tag per word: label ids (int), or names looked up in `tag_vocabulary`.
        tag_vocabulary: the tag names (id = position) or a `{name: id}` dict; needed for str tags.
        sequence_length: the longest packed sequence, `[CLS]` and `[SEP]` included; the pieces past
            it are cut (see `truncated_words`).
        ignore_label: the label of tokens that carry no word label. -100 suits
            `SparseCategoricalCrossentropy(ignore_class=-100)`; with `label_mask` as the sample
            weight use 0, because Keras losses reject negative class ids.

    Returns:
        A `WordPieceFeatures`.

    Examples:
        >>> features = encode_words(tokenizer, [["Ångström", "\\x00", "lab"]], sequence_length=8)
        >>> features.word_ids.to_list(), features.empty_words.tolist()
        ([[-1, 0, 0, 2, -1]], [[0, 1]])
    """
    check_count("sequence_length", sequence_length, 3, hint=" [CLS], one piece, [SEP] need 3.")
    sentences, row_names = _rows(words, "words")
    word_counts = np.array([len(sentence) for sentence in sentences], dtype=np.int64)
    flat_words = [word for sentence in sentences for word in sentence]
    if not all(isinstance(word, str) for word in flat_words):
        raise TypeError("words must hold lists of str, one list per sentence, e.g. "
                        "[['EU', 'rejects', 'German']].")
    flat_labels = None if tags is None else _tag_ids(tags, sentences, row_names, tag_vocabulary)

    pieces = tokenizer.tokenize_words(tf.constant(flat_words, tf.string, shape=[len(flat_words)]))
    piece_counts = pieces.row_lengths().numpy()
    piece_ids = pieces.flat_values.numpy()
    layout = _PieceLayout(word_counts, piece_counts, sequence_length - 2)

    token_count = int(layout.row_token_counts.sum())
    token_ids = np.zeros(token_count, np.int32)
    word_ids = np.full(token_count, NO_WORD, np.int32)
    label_mask = np.zeros(token_count, np.float32)
    token_ids[layout.row_starts] = tokenizer.cls_token_id
    token_ids[layout.row_starts + layout.row_token_counts - 1] = tokenizer.sep_token_id
    kept = layout.kept_pieces
    token_ids[layout.kept_targets] = piece_ids[kept]
    word_ids[layout.kept_targets] = layout.piece_word_in_row[kept]
    first_targets = layout.kept_targets[layout.piece_is_first[kept]]
    label_mask[first_targets] = 1.0
    row_lengths = layout.row_token_counts
    labels = None
    if flat_labels is not None:
        label_values = np.full(token_count, ignore_label, np.int32)
        label_values[first_targets] = flat_labels[layout.piece_word[kept][layout.piece_is_first[kept]]]
        labels = tf.RaggedTensor.from_row_lengths(label_values, row_lengths)
    return WordPieceFeatures(
        token_ids=tf.RaggedTensor.from_row_lengths(token_ids, row_lengths),
        segment_ids=tf.RaggedTensor.from_row_lengths(np.zeros(token_count, np.int32), row_lengths),
        word_ids=tf.RaggedTensor.from_row_lengths(word_ids, row_lengths),
        label_mask=tf.RaggedTensor.from_row_lengths(label_mask, row_lengths),
        labels=labels,
        num_words=word_counts,
        truncated_words=layout.truncated_words_per_row,
        empty_words=layout.empty_words,
    )


class _PieceLayout:
    """Where each word piece of a flattened batch lands in the packed `[CLS] ... [SEP]` rows."""

    def __init__(self, word_counts, piece_counts, piece_budget):
        word_row = np.repeat(np.arange(len(word_counts)), word_counts)
        row_first_word = np.cumsum(word_counts) - word_counts
        word_first_piece = np.cumsum(piece_counts) - piece_counts
        row_piece_counts = np.bincount(word_row, weights=piece_counts, minlength=len(word_counts))
        row_piece_counts = row_piece_counts.astype(np.int64)
        row_first_piece = np.cumsum(row_piece_counts) - row_piece_counts

        self.piece_word = np.repeat(np.arange(len(piece_counts)), piece_counts)
        piece_row = word_row[self.piece_word]
        piece_position = np.arange(len(self.piece_word)) - row_first_piece[piece_row]
        self.piece_word_in_row = self.piece_word - row_first_word[piece_row]
        self.piece_is_first = np.arange(len(self.piece_word)) == word_first_piece[self.piece_word]
        self.kept_pieces = piece_position < piece_budget

        self.row_token_counts = np.minimum(row_piece_counts, piece_budget) + 2
        self.row_starts = np.cumsum(self.row_token_counts) - self.row_token_counts
        self.kept_targets = (self.row_starts[piece_row] + 1 + piece_position)[self.kept_pieces]

        is_empty = piece_counts == 0
        word_position = word_first_piece - row_first_piece[word_row]
        is_truncated = ~is_empty & (word_position >= piece_budget)
        self.truncated_words_per_row = np.bincount(word_row[is_truncated], minlength=len(word_counts))
        empty = np.flatnonzero(is_empty)
        self.empty_words = np.stack([word_row[empty], empty - row_first_word[word_row[empty]]], axis=1)


def _rows(values, name):
    """`values` as a list of rows, and the names of the rows for error messages (index or position)."""
    if hasattr(values, "index") and hasattr(values, "tolist"):
        return values.tolist(), list(values.index)
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a list with one list per sentence, got a {type(values).__name__}.")
    rows = list(values)
    return rows, list(range(len(rows)))


def _tag_ids(tags, sentences, row_names, tag_vocabulary):
    """The flat int label id of every word; ValueError naming the row of any mismatch."""
    tag_rows, _ = _rows(tags, "tags")
    if len(tag_rows) != len(sentences):
        raise ValueError(f"Got {len(sentences)} sentences of words but {len(tag_rows)} of tags; "
                         "give one list of tags per sentence.")
    for name, sentence, row_tags in zip(row_names, sentences, tag_rows):
        if len(row_tags) != len(sentence):
            raise ValueError(f"Row {name!r} has {len(sentence)} words but {len(row_tags)} tags; "
                             "give exactly one tag per word.")
    flat_tags = [tag for row_tags in tag_rows for tag in row_tags]
    if all(isinstance(tag, (int, np.integer)) and not isinstance(tag, bool) for tag in flat_tags):
        return np.array(flat_tags, dtype=np.int32)
    if tag_vocabulary is None:
        raise ValueError("tags are names (e.g. 'B-PER'): pass tag_vocabulary=[...] (id = position) or "
                         "a {name: id} dict, or give label ids instead.")
    tag_to_id = (dict(tag_vocabulary) if isinstance(tag_vocabulary, dict)
                 else {tag: index for index, tag in enumerate(tag_vocabulary)})
    unknown = {tag for tag in flat_tags if tag not in tag_to_id}
    if unknown:
        tag = min(unknown, key=str)
        name = next(name for name, row_tags in zip(row_names, tag_rows) if tag in row_tags)
        raise ValueError(f"Row {name!r} has the tag {tag!r}, which is not in tag_vocabulary "
                         f"{sorted(tag_to_id, key=str)}; add it to the vocabulary.")
    return np.array([tag_to_id[tag] for tag in flat_tags], dtype=np.int32)


def word_predictions(token_predictions, word_ids, num_words, fill_value=0):
    """One prediction per word: the prediction at the word's first piece.

    Words without a token (tokenised to nothing, or cut by `sequence_length`) get `fill_value`;
    give the id of your "outside" tag (e.g. the index of "O") so they read as no entity.

    Args:
        token_predictions: `(sentences, tokens, ...)` class ids or scores, padded or ragged.
        word_ids: `WordPieceFeatures.word_ids` (ragged, or padded with -1).
        num_words: `WordPieceFeatures.num_words`.
        fill_value: the prediction of a word that has no token.

    Returns:
        A list with one array per sentence, of shape `(num_words[i], ...)`.

    Examples:
        >>> word_predictions([[0, 3, 4, 4, 0]], [[-1, 0, 1, 1, -1]], [3], fill_value=0)
        [array([3, 4, 0])]
    """
    predictions = _padded(token_predictions, 0)
    word_ids = _padded(word_ids, NO_WORD)
    num_words = np.asarray(num_words, dtype=np.int64)
    if word_ids.shape[0] != predictions.shape[0] or len(num_words) != predictions.shape[0]:
        raise ValueError(f"token_predictions has {predictions.shape[0]} rows, word_ids "
                         f"{word_ids.shape[0]} and num_words {len(num_words)}; they must match.")
    if word_ids.shape[1] > predictions.shape[1]:
        if (word_ids[:, predictions.shape[1]:] != NO_WORD).any():
            raise ValueError(f"token_predictions has {predictions.shape[1]} tokens per row, fewer than "
                             "word_ids; predict on the same features the word_ids came from.")
        word_ids = word_ids[:, :predictions.shape[1]]
    word_ids = np.pad(word_ids, [(0, 0), (0, predictions.shape[1] - word_ids.shape[1])],
                      constant_values=NO_WORD)
    if (word_ids >= num_words[:, None]).any():
        raise ValueError("word_ids point past num_words; pass the num_words of the same features.")
    previous = np.pad(word_ids[:, :-1], [(0, 0), (1, 0)], constant_values=NO_WORD)
    rows, columns = np.nonzero((word_ids != NO_WORD) & (word_ids != previous))
    words = np.full((len(num_words), int(num_words.max(initial=0))) + predictions.shape[2:],
                    fill_value, dtype=np.result_type(predictions.dtype, np.min_scalar_type(fill_value)))
    words[rows, word_ids[rows, columns]] = predictions[rows, columns]
    return [words[row, :count] for row, count in enumerate(num_words)]


def _padded(values, padding_value):
    """A NumPy array from a padded array-like or a (tf) ragged batch padded with `padding_value`."""
    if isinstance(values, tf.RaggedTensor):
        return values.to_tensor(default_value=padding_value).numpy()
    if isinstance(values, (list, tuple)) and len({len(np.atleast_1d(row)) for row in values}) > 1:
        return tf.ragged.constant(values).to_tensor(default_value=padding_value).numpy()
    return np.asarray(values)


def entity_char_spans(words, entities, word_starts=None):
    """Entity word spans -> `[(type, char_start, char_end)]` (end exclusive) in a text.

    The text is `" ".join(words)` unless `word_starts` gives each word's character offset in the
    original text.

    Examples:
        >>> words = ["EU", "rejects", "German", "call"]
        >>> entity_char_spans(words, [("ORG", 0, 1), ("MISC", 2, 3)])
        [('ORG', 0, 2), ('MISC', 11, 17)]
    """
    if word_starts is None:
        widths = np.array([len(word) + 1 for word in words], dtype=np.int64)
        word_starts = np.cumsum(widths) - widths
    elif len(word_starts) != len(words):
        raise ValueError(f"Got {len(words)} words but {len(word_starts)} word_starts; give one "
                         "character offset per word.")
    spans = []
    for entity_type, start, end in entities:
        if not 0 <= start < end <= len(words):
            raise ValueError(f"Entity ({entity_type!r}, {start}, {end}) is not a word span of a "
                             f"{len(words)}-word sentence (end is exclusive).")
        spans.append((entity_type, int(word_starts[start]), int(word_starts[end - 1]) + len(words[end - 1])))
    return spans
