"""BertTokenClassifier: one tag per word (NER, POS), from pre-split words or raw text."""


import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kerasbert.arguments import check_count
from kerasbert.data.list_validation import validate_token_columns
from kerasbert.data.prepared import Prepared
from kerasbert.data.text_windows import (
    cut_windows,
    max_context,
    text_room,
    window_piece_index,
    window_word_predictions,
    window_words,
)
from kerasbert.data.token_alignment import encode_words, entity_char_spans, word_predictions
from kerasbert.data.validation import to_dataframe, validate_text_columns
from kerasbert.doors import column_hint, warn_the_caller
from kerasbert.families.sequence_length import longest_input, packed_input_length
from kerasbert.metrics.entities import entity_scores, entity_spans
from kerasbert.metrics.probabilities import softmax
from kerasbert.tasks.columns import column_argument
from kerasbert.tasks.heads import mixes_layers, task_outputs
from kerasbert.tasks.long_inputs import LongInputs
from kerasbert.tasks.task import Task
from kerasbert.training.fit_arguments import check_rate

OUTSIDE_TAG = "O"
UNCUT = 2**31 - 1  # a sequence_length for `encode_words` that keeps every piece (windows are cut afterwards)


@keras.saving.register_keras_serializable(package="kerasbert")
class BertTokenClassifier(Task):
    """Sequence output -> dropout -> dense on every token: one tag per word, as HF
    `BertForTokenClassification`.

    Data is either words (a column of word lists, as `load_conll` reads them, with a column of
    tag lists to train) or raw text (a column of strings, split where BERT splits words:
    whitespace, punctuation and CJK characters). A word's tag is predicted on its first WordPiece;
    the loss (cross-entropy, averaged over words) leaves out the other pieces, `[CLS]`, `[SEP]`
    and padding. Words past `sequence_length` pieces are cut off, with a warning, and tagged "O",
    unless `long_inputs` is given: then a longer sentence or document is read in overlapping windows of
    `sequence_length` tokens whose neighbours share `long_inputs.doc_stride` pieces, and each word takes its tag
    from the window where its first piece has the most context (HF's max-context rule for QA: the most pieces on its
    shorter side); training counts each word once, in that window.

    `predict` returns a DataFrame with `words`, `tags` (one per word) and `entities`: a list of
    `{"type", "text", "start", "end", "score"}` per row, read from BIO/IOB tags (invalid sequences
    repaired as seqeval does), `start`/`end` character offsets (end exclusive) into the text and
    `score` the mean probability of the entity's word tags. For word input the text is the words
    joined with single spaces. `evaluate` returns entity-level `precision`, `recall` and `f1`
    (seqeval's micro average), `per_type_f1`, word `accuracy` and `loss` (and `errors`, the
    sentences with a wrong tag, when `return_errors=True`). A tag set that is not BIO (e.g. POS
    tags) gives no entities and only `accuracy` and `loss`. `export(path)` writes a SavedModel that
    tags raw strings piece by piece, with character offsets (see `serve`).

    Args:
        backbone: a `BertBackbone`. preprocessor: a `BertPreprocessor`.
        num_tags: number of tags; may be left out when `labels` is given.
        labels: tag names in output order; None learns them on the first `fit` (sorted, with "O"
            added to BIO tags that lack it).
        dropout: dropout before the dense layer.
        columns: DataFrame column names by role, "tokens", "tags" and "text" (the defaults), e.g.
            `{"tags": "ner_tags"}`; words are read from the tokens column when the data has it, else text
            from the text column.
        long_inputs: None cuts at `sequence_length`; a `LongInputs(doc_stride)` tags every word of a long text
            through overlapping windows (also in `export`).

    Examples:
        >>> ner = BertTokenClassifier.from_preset("all_minilm_l6_v2_en", num_tags=9)
        >>> ner.fit(load_conll("conll2003/train.txt"), epochs=3)    # columns "tokens", "tags"
        >>> ner.evaluate(load_conll("conll2003/test.txt"))          # {"precision", "recall", "f1", ...}
        >>> ner.predict(["EU rejects German call."])["entities"][0][0]
        {'type': 'ORG', 'text': 'EU', 'start': 0, 'end': 2, 'score': 0.99...}
    """

    hf_head = ("classifier", "BertForTokenClassification")  # a fine-tuned HF model's head
    hf_labels_argument = "num_tags"
    config_names = ("num_tags", "labels", "dropout", "long_inputs")
    default_columns = {"tokens": "tokens", "tags": "tags", "text": "text"}

    def __init__(self, backbone, preprocessor, num_tags=None, labels=None, dropout=0.1, head=None, long_inputs=None,
                 **kwargs):
        check_rate("dropout", dropout)
        long_inputs = LongInputs.for_windows_of(long_inputs, packed_input_length(backbone, preprocessor))
        if long_inputs is not None and long_inputs.window_pooling is not None:
            raise ValueError("A token classifier tags each word from the window where it has the most context; "
                             "it pools nothing. Leave window_pooling out of its LongInputs.")
        labels = None if labels is None else [plain(label) for label in labels]
        num_tags = resolve_num_tags(num_tags, labels, has_head=head is not None)

        # === Functional model ===
        inputs = backbone.input
        outputs, logits_layer, _ = task_outputs(backbone, inputs, head, num_tags, "sequence_output",
                                                (None, None, num_tags), "BertTokenClassifier", dropout=dropout,
                                                layer_mix=mixes_layers(kwargs))
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor,
                         head=head, **kwargs)
        self.num_tags, self.labels, self.dropout, self.long_inputs = num_tags, labels, dropout, long_inputs
        self.logits_layer = logits_layer

    @property
    def packed_length(self):
        """The longest packed input, `[CLS]` and `[SEP]` included."""
        return packed_input_length(self.backbone, self.preprocessor)

    @property
    def outside_id(self):
        """The id of "O" (the tag of words cut off by `sequence_length`), or -1 without one."""
        return self.labels.index(OUTSIDE_TAG) if self.labels and OUTSIDE_TAG in self.labels else -1

    @property
    def uses_entities(self):
        """Whether the tags are BIO/IOB tags ("O", "B-<type>", "I-<type>"), which name entities."""
        return self.outside_id >= 0 and all(is_bio_tag(tag) for tag in self.labels)

    # === Data ===

    def as_frame(self, data):
        """A DataFrame copy of `data`; a list (or Series) of word lists becomes the tokens column."""
        if isinstance(data, (list, tuple, pd.Series)) and len(data) and \
                isinstance(next(iter(data)), (list, tuple, np.ndarray)):
            index = data.index if isinstance(data, pd.Series) else None
            return pd.DataFrame({self.columns["tokens"]: list(data)}, index=index)
        return to_dataframe(data, text_column=self.columns["text"])

    def prepare(self, data, with_labels, training=False):
        frame = self.as_frame(data)
        tokens, tags, text = (self.columns[role] for role in ("tokens", "tags", "text"))
        if with_labels or tokens in frame.columns:
            validate_token_columns(frame, tokens, tags if with_labels else None,
                                   (column_argument("tokens"), column_argument("tags")))
            words = [list(row) for row in frame[tokens]]
            texts, word_starts = [" ".join(row) for row in words], None
        else:
            self.require_text_column(frame)
            validate_text_columns(frame, {column_argument("text"): text}, allow_empty=not training)
            texts = frame[text].tolist()
            words, word_starts = split_words(self.tokenizer, texts)
        if training and self.labels is None:
            self.learn_labels(frame[tags])
        self.require_labels()
        tag_ids = self.encode_tags(frame[tags]) if with_labels else None
        extras = {"words": words, "texts": texts, "word_starts": word_starts}
        if self.long_inputs is not None:
            whole = encode_words(self.tokenizer, words, tag_ids, sequence_length=UNCUT, ignore_label=0)
            windows = window_words(whole, text_room(self.packed_length), self.long_inputs.doc_stride,
                                   self.tokenizer.cls_token_id, self.tokenizer.sep_token_id, ignore_label=0)
            return Prepared(frame=frame, features=windows.inputs, labels=windows.labels,
                            sample_weight=windows.label_mask,
                            extras={**extras, "windows": windows, "num_words": whole.num_words})
        features = encode_words(self.tokenizer, words, tag_ids, sequence_length=self.packed_length,
                                ignore_label=0)
        warn_truncated(features.truncated_words, frame.index, self.packed_length,
                       longest_input(self.backbone))
        return Prepared(frame=frame, features=features.inputs, labels=features.labels,
                        sample_weight=features.label_mask,
                        extras={**extras, "word_ids": features.word_ids, "num_words": features.num_words})

    def require_text_column(self, frame):
        """Data without the tokens column must have the text column."""
        if self.columns["text"] not in frame.columns:
            raise ValueError(
                f"Neither {self.columns['tokens']!r} (lists of words) nor {self.columns['text']!r} (strings) "
                f"is a column; the data has columns {list(frame.columns)}. Name yours: "
                f"{column_hint('tokens', '...')} or {column_hint('text', '...')}."
            )

    def require_labels(self):
        if self.labels is None:
            raise ValueError(
                "This model has not been trained yet, so it does not know its tag names: call "
                "fit(...) first, or build it with labels=[...]."
            )

    def learn_labels(self, tag_series):
        """Learn tag names on the first fit: sorted, with "O" added to BIO tags."""
        tags = {plain(tag) for row in tag_series for tag in row}
        if all(isinstance(tag, str) and is_bio_tag(tag) for tag in tags):
            tags.add(OUTSIDE_TAG)
        labels = sorted(tags)
        if self.num_tags is None:  # built without tags: the head gets its width now
            self.num_tags = len(labels)
            self.set_output_count(self.num_tags)
        if len(labels) != self.num_tags:
            raise ValueError(
                f"The {self.columns['tags']!r} column has {len(labels)} tags ({labels}), but the model was "
                f"built with num_tags={self.num_tags}. Pass labels=[...] listing every tag."
            )
        self.labels = labels

    def encode_tags(self, tag_series):
        """Tag names -> flat-per-row int ids; an unknown tag raises, naming its row."""
        tag_to_id = {tag: index for index, tag in enumerate(self.labels)}
        for row, row_tags in tag_series.items():
            for tag in row_tags:
                if plain(tag) not in tag_to_id:
                    raise ValueError(
                        f"Row {row!r} of column {self.columns['tags']!r} has the tag {plain(tag)!r}, which "
                        f"this model does not know; its tags are {self.labels}. Map it to one of "
                        f"them, or train a new model with labels=[...] listing every tag."
                    )
        return [[tag_to_id[plain(tag)] for tag in row_tags] for row_tags in tag_series]

    # === Training ===

    def default_loss(self):
        # Sample weights are 1 on each word's first piece: the mean runs over words, as in HF.
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                          reduction="mean_with_sample_weight")

    def default_weighted_metrics(self):
        # Weighted like the loss: only each word's first piece counts.
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    # === Decoding and metrics ===

    def word_tags(self, outputs, prepared):
        """Per row: the tag names and tag probabilities of the words."""
        probabilities = softmax(outputs)
        num_words = prepared.extras["num_words"]
        if "windows" in prepared.extras:  # each word from the window where it has the most context
            windows = prepared.extras["windows"]
            ids = window_word_predictions(probabilities.argmax(-1), windows, num_words, fill_value=self.outside_id)
            scores = window_word_predictions(probabilities.max(-1), windows, num_words, fill_value=0.0)
        else:
            word_ids = prepared.extras["word_ids"]
            ids = word_predictions(probabilities.argmax(-1), word_ids, num_words, fill_value=self.outside_id)
            scores = word_predictions(probabilities.max(-1), word_ids, num_words, fill_value=0.0)
        names = [[self.labels[i] if i >= 0 else None for i in row] for row in ids]
        return names, scores

    def entities(self, tags, scores, words, text, word_starts):
        """Entity dicts of one sentence (empty when the tags are not BIO)."""
        if not self.uses_entities:
            return []
        spans = entity_spans(tags)
        char_spans = entity_char_spans(words, spans, word_starts)
        return [
            {"type": kind, "text": text[start:end], "start": start, "end": end,
             "score": float(np.mean(scores[first:last]))}
            for (kind, first, last), (_, start, end) in zip(spans, char_spans)
        ]

    def decode(self, outputs, prepared):
        tags, scores = self.word_tags(outputs, prepared)
        extras = prepared.extras
        starts = extras["word_starts"] or [None] * len(tags)
        rows = zip(tags, scores, extras["words"], extras["texts"], starts)
        entities = [self.entities(*row) for row in rows]
        return pd.DataFrame({"words": extras["words"], "tags": tags, "entities": entities},
                            index=prepared.frame.index)

    def score(self, outputs, prepared):
        decoded = self.decode(outputs, prepared)
        gold = [[plain(tag) for tag in row] for row in prepared.frame[self.columns["tags"]]]
        predicted = decoded["tags"].tolist()
        results = {"loss": masked_cross_entropy(outputs, prepared.labels, prepared.sample_weight)}
        if self.uses_entities:
            results.update(entity_scores(gold, predicted))
        flat_gold = [tag for row in gold for tag in row]
        flat_predicted = [tag for row in predicted for tag in row]
        results["accuracy"] = float(np.mean([g == p for g, p in zip(flat_gold, flat_predicted)]))
        wrong = np.array([g != p for g, p in zip(gold, predicted)], dtype=bool)
        predictions = decoded[["tags", "entities"]].add_prefix("predicted_")
        results["errors"] = prepared.frame.join(predictions)[wrong]
        return results

    # === Serving ===

    def serving_signature(self):
        self.require_labels()
        return [tf.TensorSpec([None], tf.string, name="text")]

    def serve(self, texts):
        """Texts -> per WordPiece (padded): `tag_ids` (-1 on padding), `tags`, the character offsets
        `starts`/`ends` (-1 on padding) and `word_starts` (True on a word's first piece, which
        carries the word's tag). Pieces past `sequence_length` are left out; with `long_inputs` none are, each
        piece tagged in the window where it has the most context."""
        ids, starts, ends = self.tokenizer.tokenize_with_offsets(texts)
        room = text_room(self.packed_length)
        if self.long_inputs is None:
            ids, starts, ends = ids[:, :room], starts[:, :room], ends[:, :room]
            logits = self(self.preprocessor.packer(ids), training=False)
            piece_logits = tf.RaggedTensor.from_tensor(logits[:, 1:], lengths=ids.row_lengths())  # [CLS] left out
        else:
            piece_logits = self.piece_logits_over_windows(ids, room)
        tag_ids = tf.ragged.map_flat_values(tf.argmax, piece_logits, axis=-1, output_type=tf.int32)
        names = tf.constant([str(label) for label in self.labels])
        continues = tf.constant(self.tokenizer.continuation_flags())
        inside_word = ids.with_flat_values(tf.gather(continues, ids.flat_values))
        first = tf.ragged.range(ids.row_lengths()) == 0  # a text's first piece starts a word (RoBERTa: no `Ġ`)
        return {
            "tag_ids": tag_ids.to_tensor(-1),
            "tags": tag_ids.with_flat_values(tf.gather(names, tag_ids.flat_values)).to_tensor(""),
            "starts": tf.cast(starts, tf.int64).to_tensor(-1),
            "ends": tf.cast(ends, tf.int64).to_tensor(-1),
            "word_starts": tf.ragged.map_flat_values(tf.logical_or, ~inside_word, first).to_tensor(False),
        }


    def piece_logits_over_windows(self, ids, room):
        """Ragged `[texts, (pieces), tags]` logits of every piece, from the window where it has the most context."""
        windows, text, start, length = cut_windows(ids, room, self.long_inputs.doc_stride)
        logits = self(self.preprocessor.packer(windows), training=False)
        window_logits = tf.RaggedTensor.from_tensor(logits[:, 1:], lengths=length)  # [CLS] left out
        lengths = ids.row_lengths()
        chosen = max_context(lengths, text, start, length).flat_values
        pieces = tf.boolean_mask(window_piece_index(lengths, text, start, length).flat_values, chosen)
        flat = tf.math.unsorted_segment_sum(tf.boolean_mask(window_logits.flat_values, chosen), pieces,
                                            tf.reduce_sum(lengths))  # each piece is chosen in one window
        return tf.RaggedTensor.from_row_lengths(flat, lengths)


def resolve_num_tags(num_tags, labels, has_head=False):
    """The output count from `num_tags` or the labels; None (learned on the first fit) when neither is
    given, unless a custom head needs it now."""
    if num_tags is not None:
        num_tags = check_count("num_tags", num_tags)
    if labels is not None:
        if num_tags is not None and num_tags != len(labels):
            raise ValueError(
                f"num_tags={num_tags} but {len(labels)} labels were given: {labels}. Pass one of the two."
            )
        return len(labels)
    if num_tags is None and has_head:
        raise ValueError(
            "Tell a token classifier with a custom head its tags: labels=['O', 'B-PER', ...] or num_tags=N "
            "(the names are then learned on the first fit). CoNLL-2003 NER has num_tags=9."
        )
    return num_tags


def split_words(tokenizer, texts):
    """Split texts where the tokenizer splits words (whitespace, punctuation, CJK characters).

    Returns the words of each text and their character offsets in it.

    Examples:
        >>> split_words(tokenizer, ["Ångström's lab."])
        ([['Ångström', "'", 's', 'lab', '.']], [[0, 8, 9, 11, 14]])
    """
    ids, starts, ends = tokenizer.tokenize_with_offsets(tf.constant(texts, tf.string, shape=[len(texts)]))
    row_splits = ids.row_splits.numpy()
    ids, starts, ends = (values.flat_values.numpy() for values in (ids, starts, ends))
    word_first = np.flatnonzero(~tokenizer.continuation_flags()[ids] | np.isin(np.arange(len(ids)), row_splits))
    words, word_starts = [], []
    for text, row_start, row_end in zip(texts, row_splits[:-1], row_splits[1:]):
        first = word_first[(word_first >= row_start) & (word_first < row_end)]
        last = np.append(first[1:], row_end)[:len(first)] - 1  # no words: no last pieces
        words.append([text[start:end] for start, end in zip(starts[first], ends[last])])
        word_starts.append(starts[first].tolist())
    return words, word_starts


def warn_truncated(truncated_words, index, packed_length, max_length):
    """Warn that words past `packed_length` pieces were cut off, and how to avoid it."""
    if not truncated_words.any():
        return
    rows = np.flatnonzero(truncated_words)
    warn_the_caller(
        f"{int(truncated_words.sum())} words in {len(rows)} sentences (first at row "
        f"{plain(index[rows[0]])!r}) do not fit in sequence_length={packed_length} WordPiece tokens and "
        f"were cut off: they are not trained on and are tagged 'O'. Raise sequence_length "
        f"(from_preset(..., sequence_length=N), up to {max_length}), read long texts in windows "
        f"(long_inputs=LongInputs(doc_stride=N)) or split long sentences.")


def masked_cross_entropy(logits, labels, weights):
    """Mean cross-entropy over the weighted tokens (each word's first piece)."""
    shape = logits.shape[:2]
    labels = labels.to_tensor(0, shape=shape).numpy()
    weights = weights.to_tensor(0.0, shape=shape).numpy()
    shifted = logits - logits.max(-1, keepdims=True)
    log_probabilities = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probabilities, labels[..., None], axis=-1)[..., 0]
    return float(-(picked * weights).sum() / weights.sum())


def is_bio_tag(tag):
    return tag == OUTSIDE_TAG or (isinstance(tag, str) and tag[:2] in ("B-", "I-") and len(tag) > 2)


def plain(value):
    """NumPy scalars as Python values (for JSON configs and messages)."""
    return value.item() if isinstance(value, np.generic) else value
