"""BertMultipleChoice: choose the right ending among N candidates (SWAG), as HF BertForMultipleChoice."""

import keras
import numpy as np
import pandas as pd
import tensorflow as tf
from keras import ops

from kerasbert.applications import metrics
from kerasbert.applications.bert_classifier import softmax
from kerasbert.applications.task import DEFAULT_BATCH_SIZE, Prepared, Task, apply_head, dropout_dense_head, head_features
from kerasbert.data.batching import example_indices, finish_batches, gather_examples, length_buckets
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns
from kerasbert.models.checkpoint_weights import assign_links, dense_links

BACKBONE_INPUTS = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable(package="kerasbert")
class BertMultipleChoice(Task):
    """Each `[CLS] context [SEP] ending [SEP]` -> backbone -> pooled output -> dropout -> dense(1);
    the N scores of an example are its logits, softmax-ed across the candidates.

    Model inputs are the backbone's three inputs with a choices axis, `[batch, choices, tokens]`;
    the backbone runs on `[batch * choices, tokens]`; the output is `[batch, choices]` logits.
    A HF `BertForMultipleChoice` checkpoint's `classifier.*` head is loaded by `from_preset`.

    DataFrame columns (the ones `load_swag` returns): `context` (str), `endings` (a list of N
    candidate str per row, the same N in every row of one call), `label` (int: the index of the
    right ending) and, when the data has it, `question` (SWAG's `sent2`, the start of the ending's
    sentence: the second segment is then `f"{question} {ending}"`, as HF's `run_swag.py` builds it).
    Whether the question is read is decided on the first `fit` and then required.

    Args:
        backbone: a `BertBackbone`. preprocessor: a `BertPreprocessor`.
        num_choices: endings per example; None accepts any N >= 2 (one N per call).
        dropout: dropout before the dense layer.
        context_column, question_column, endings_column, label_column: DataFrame column names
            (`question_column=None`: never read a question).
        uses_question: whether the second segment starts with the question; None decides on the
            first `fit` (the question column present means yes).

    Example:
    >>> model = BertMultipleChoice.from_preset("all_minilm_l6_v2_en")
    >>> model.fit(load_swag("swagaf/data/train.csv"), epochs=2)
    >>> model.evaluate(load_swag("swagaf/data/val.csv"))    # {"loss", "accuracy"}
    >>> model.predict(load_swag("swagaf/data/test.csv"))    # DataFrame: choice, ending, score, probabilities
    """

    def __init__(
        self,
        backbone,
        preprocessor,
        num_choices=None,
        dropout=0.1,
        context_column="context",
        question_column="question",
        endings_column="endings",
        label_column="label",
        uses_question=None,
        head=None,
        **kwargs,
    ):
        if num_choices is not None and (not isinstance(num_choices, (int, np.integer)) or num_choices < 2):
            raise ValueError(
                f"num_choices must be an int of at least 2, or None for any number; got {num_choices!r}."
            )

        # === Layers ===
        flatten_layer = FlattenChoices(name="flatten_choices")
        logits_layer, default_head = None, None
        if head is None:
            logits_layer, default_head = dropout_dense_head(backbone, 1, dropout, "pooled_output")
        unflatten_layer = UnflattenChoices(name="choice_logits", dtype="float32")

        # === Functional model ===
        inputs = {
            name: keras.Input(shape=(num_choices, None), dtype="int32", name=name) for name in BACKBONE_INPUTS
        }
        features = head_features(backbone, flatten_layer(inputs))  # one row per (example, choice)
        scores = apply_head(head, features, default_head, (None, 1), "BertMultipleChoice")
        outputs = unflatten_layer(scores, inputs["token_ids"])
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor,
                         head=head, **kwargs)

        # === Config ===
        self.num_choices = None if num_choices is None else int(num_choices)
        self.dropout = dropout
        self.context_column = context_column
        self.question_column = question_column
        self.endings_column = endings_column
        self.label_column = label_column
        self.uses_question = uses_question
        self.logits_layer = logits_layer

    # === Checkpoint heads ===

    def heads_from_checkpoint(self, checkpoint):
        """A HF `BertForMultipleChoice` head is `classifier.*` with one output."""
        head = checkpoint.heads("classifier.")
        if head and self.logits_layer is not None and head["classifier.weight"].shape[0] == 1:
            assign_links(dense_links(self.logits_layer, "classifier"), head, checkpoint.source)

    # === Data ===

    def reads_question(self, frame, training):
        """Whether this data's second segments start with its question column."""
        present = self.question_column is not None and self.question_column in frame.columns
        if self.uses_question is None:
            if training:
                self.uses_question = present
            return present
        if self.uses_question and not present:
            raise ValueError(
                f"This model was trained with questions (column {self.question_column!r}), but the "
                f"data has no such column (columns: {list(frame.columns)}). Add it, or pass "
                f"question_column='...' naming it."
            )
        if present and not self.uses_question:
            raise ValueError(
                f"The data has a {self.question_column!r} column, but this model was trained without "
                f"questions. Drop the column, or build a new model that reads it."
            )
        return self.uses_question

    def prepare(self, data, with_labels, training=False):
        frame = to_dataframe(data, text_column=self.context_column)
        columns = {"context_column": self.context_column, "endings_column": self.endings_column}
        require_columns(frame, {**columns, **({"label_column": self.label_column} if with_labels else {})})
        validate_text_columns(frame, {"context_column": self.context_column})
        uses_question = self.reads_question(frame, training)
        if uses_question:
            validate_text_columns(frame, {"question_column": self.question_column}, allow_empty=True)
        num_choices = validate_endings(frame[self.endings_column], self.endings_column, self.num_choices)
        labels = None
        if with_labels:
            labels = validate_choice_labels(frame[self.label_column], self.label_column, num_choices)
        endings = [ending for row in frame[self.endings_column] for ending in row]
        if uses_question:
            questions = np.repeat(frame[self.question_column].to_numpy(object), num_choices)
            endings = [f"{question} {ending}" for question, ending in zip(questions, endings)]
        contexts = np.repeat(frame[self.context_column].to_numpy(object), num_choices).tolist()
        features = self.pack_texts(contexts, endings)
        return Prepared(frame=frame, features=features, labels=labels, extras={"num_choices": num_choices})

    def batches(self, prepared, *, with_labels, training=False, batch_size=DEFAULT_BATCH_SIZE, seed=0,
                group_by_length=True, order=None):
        """`[batch, choices, tokens]` batches: each example's N sequences stay together."""
        return make_choice_dataset(
            prepared.features,
            prepared.extras["num_choices"],
            labels=prepared.labels if with_labels else None,
            batch_size=batch_size,
            max_length=self.sequence_length or self.backbone.max_sequence_length,
            group_by_length=training and group_by_length,
            shuffle=training,
            seed=seed,
            pad_token_id=self.tokenizer.pad_token_id,
            order=order,
        )

    def example_lengths(self, prepared):
        lengths = prepared.features["token_ids"].row_lengths().numpy()
        return lengths.reshape(-1, prepared.extras["num_choices"]).max(axis=1)

    # === Training ===

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    # === Decoding and metrics ===

    def decode(self, outputs, prepared):
        probabilities = softmax(outputs)
        best = probabilities.argmax(-1)
        endings = prepared.frame[self.endings_column].tolist()
        return pd.DataFrame(
            {
                "choice": best,
                "ending": [row[i] for row, i in zip(endings, best)],
                "score": probabilities.max(-1),
                "probabilities": list(probabilities),
            },
            index=prepared.frame.index,
        )

    def score(self, outputs, prepared):
        gold = prepared.labels
        probabilities = softmax(outputs)
        predicted = probabilities.argmax(-1)
        decoded = self.decode(outputs, prepared)
        return {
            "loss": float(-np.mean(np.log(probabilities[np.arange(len(gold)), gold] + 1e-12))),
            "accuracy": metrics.accuracy(gold, predicted),
            "errors": prepared.frame.join(decoded.add_prefix("predicted_"))[predicted != gold],
        }

    # === Serving ===

    def serving_signature(self):
        specs = [
            tf.TensorSpec([None], tf.string, name="context"),
            tf.TensorSpec([None, self.num_choices], tf.string, name="endings"),
        ]
        if self.uses_question:
            specs.append(tf.TensorSpec([None], tf.string, name="question"))
        return specs

    def serve(self, context, endings, question=None):
        num_choices = tf.shape(endings)[1]
        seconds = tf.reshape(endings, [-1])
        if question is not None:
            seconds = tf.strings.join([tf.repeat(question, num_choices), seconds], separator=" ")
        packed = self.preprocessor((tf.repeat(context, num_choices), seconds))
        inputs = {
            name: tf.reshape(tf.cast(packed[name], tf.int32), [-1, num_choices, tf.shape(packed[name])[-1]])
            for name in BACKBONE_INPUTS
        }
        logits = self(inputs, training=False)
        best = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits),
            "choice": best,
            "ending": tf.gather(endings, best, batch_dims=1),
        }

    # === Serialisation ===

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_choices": self.num_choices,
                "dropout": self.dropout,
                "context_column": self.context_column,
                "question_column": self.question_column,
                "endings_column": self.endings_column,
                "label_column": self.label_column,
                "uses_question": self.uses_question,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="kerasbert")
class FlattenChoices(keras.layers.Layer):
    """A dict of `[batch, choices, tokens]` tensors -> the same dict as `[batch * choices, tokens]`.

    Example:
    >>> tuple(FlattenChoices()({"token_ids": ops.ones((2, 4, 7), "int32")})["token_ids"].shape)
    (8, 7)
    """

    def call(self, inputs):
        return {name: ops.reshape(value, (-1, ops.shape(value)[-1])) for name, value in inputs.items()}


@keras.saving.register_keras_serializable(package="kerasbert")
class UnflattenChoices(keras.layers.Layer):
    """Scores `[batch * choices, 1]` -> logits `[batch, choices]` (the first two axes of `reference`).

    Example:
    >>> tuple(UnflattenChoices()(ops.zeros((8, 1)), ops.ones((2, 4, 7), "int32")).shape)
    (2, 4)
    """

    def call(self, scores, reference):
        shape = ops.shape(reference)
        return ops.reshape(scores, (shape[0], shape[1]))

    def compute_output_shape(self, scores_shape, reference_shape):
        return tuple(reference_shape[:2])


# === Validation (before any tokenising) ===


def validate_endings(endings, column, num_choices=None):
    """Check that every row holds the same number (>= 2, `num_choices` if given) of non-empty
    strings; return that number.

    Example:
    >>> validate_endings(pd.Series([["a", "b"], ["c", "d"]]), "endings")
    2
    """
    expected, first_row = num_choices, None
    for position, row in enumerate(endings.tolist()):
        label = _row_label(endings, position)
        if not isinstance(row, (list, tuple, np.ndarray)) or np.ndim(row) != 1:
            raise ValueError(
                f"Column {column!r} must hold a list of candidate endings per row; row {label!r} holds "
                f"{_preview(row)}. Gather each example's endings in one list, e.g. df[{column!r}] = "
                "df[['ending0', 'ending1', 'ending2', 'ending3']].values.tolist()."
            )
        if len(row) < 2:
            raise ValueError(
                f"Row {label!r} of column {column!r} has {len(row)} ending(s); multiple choice needs "
                "at least 2 per example. Add candidates or drop the row."
            )
        if expected is None:
            expected, first_row = len(row), label
        elif len(row) != expected:
            where = (f"this model takes num_choices={num_choices}" if first_row is None
                     else f"row {first_row!r} has {expected}")
            raise ValueError(
                f"Row {label!r} of column {column!r} has {len(row)} endings, but {where}. Every example "
                "of one call needs the same number of endings: split the data by "
                f"df[{column!r}].map(len) and call once per group, or fix the row."
            )
        for index, ending in enumerate(row):
            if not isinstance(ending, str) or not ending.strip():
                if isinstance(ending, str):
                    problem = "is empty or only whitespace"
                elif _is_missing(ending):
                    problem = "is missing (NaN/None)"
                else:
                    problem = f"is a {type(ending).__name__}, not str"
                raise ValueError(
                    f"Row {label!r} of column {column!r}: ending {index} ({_preview(ending)}) {problem}. "
                    "Every ending must be non-empty text: fill it in or drop the row."
                )
    if expected is None:
        raise ValueError(f"Column {column!r} has no rows; there is nothing to choose from.")
    return expected


def validate_choice_labels(labels, column, num_choices):
    """Check that every label is a whole number in `0..num_choices-1`; return them as int32.

    Example:
    >>> validate_choice_labels(pd.Series([0, 3.0]), "label", num_choices=4).tolist()
    [0, 3]
    """
    for position, value in enumerate(labels.tolist()):
        label = _row_label(labels, position)
        is_number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        if not is_number or not float(value).is_integer():
            raise ValueError(
                f"Label column {column!r}: row {label!r} holds {_preview(value)}"
                f"{', a missing label' if _is_missing(value) else ''}. A label is the index (0 to "
                f"{num_choices - 1}) of the right ending: fix or drop the row."
            )
        if not 0 <= value < num_choices:
            raise ValueError(
                f"Label column {column!r}: row {label!r} holds {_preview(value)}, not an index into its "
                f"{num_choices} endings. Labels count from 0 to {num_choices - 1}; shift 1-based labels "
                f"with df[{column!r}] -= 1."
            )
    return labels.to_numpy().astype(np.int32)


def _is_missing(value):
    return value is None or (isinstance(value, (float, np.floating)) and np.isnan(value))


def _row_label(series, position):
    label = series.index[position]
    return label.item() if isinstance(label, np.generic) else label


def _preview(value, limit=40):
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# === Batching [batch, choices, tokens] ===


def make_choice_dataset(features, num_choices, labels=None, *, batch_size=DEFAULT_BATCH_SIZE, max_length=512,
                        group_by_length=False, shuffle=False, seed=None, pad_token_id=0, order=None):
    """Batches of whole examples `[batch, choices, tokens]` with dynamic padding.

    `features`: ragged `token_ids` and `segment_ids`, `[examples * choices, (tokens)]`, the
    choices of an example consecutive. A batch is padded to its longest sequence rounded up to a
    length bucket (`kerasbert.data.batching.length_buckets`). `shuffle`, `seed`, `group_by_length`
    (by longest choice) and `order` work as in `kerasbert.data.batching.make_batched_dataset`.

    Example:
    >>> features = {"token_ids": tf.ragged.constant([[101, 7, 102], [101, 8, 9, 102]]),
    ...             "segment_ids": tf.ragged.constant([[0, 0, 0], [0, 0, 1, 1]])}
    >>> x = next(iter(make_choice_dataset(features, num_choices=2)))
    >>> tuple(x["token_ids"].shape)     # 1 example, 2 choices, padded to the 8-token bucket
    (1, 2, 8)
    """
    per_example = {
        name: tf.RaggedTensor.from_uniform_row_length(tf.cast(features[name], tf.int32), num_choices)
        for name in ("token_ids", "segment_ids")
    }
    lengths = tf.reduce_max(per_example["token_ids"].row_lengths(axis=2), axis=1).numpy()
    buckets = length_buckets(max_length)
    x_padding = {"token_ids": pad_token_id, "segment_ids": 0, "padding_mask": 0}
    if labels is None:
        element, padding_values = per_example, x_padding
    else:
        element, padding_values = (per_example, np.asarray(labels, np.int32)), (x_padding, None)

    indices = example_indices(lengths, batch_size, order=order, shuffle=shuffle,
                              group_by_length=group_by_length, seed=seed)
    dataset = gather_examples(element, indices).map(lambda *example: _on_x(_densify, example, pad_token_id),
                                                    num_parallel_calls=tf.data.AUTOTUNE)
    dataset = dataset.padded_batch(batch_size, padding_values=padding_values)
    dataset = dataset.map(lambda *batch: _on_x(_pad_to_bucket, batch, buckets, pad_token_id),
                          num_parallel_calls=tf.data.AUTOTUNE)
    return finish_batches(dataset, len(lengths), batch_size, False, shuffle and group_by_length, seed)


def _on_x(function, element, *args):
    """Apply `function` to the features of an `x` or `(x, y)` dataset element."""
    return (function(element[0], *args), *element[1:]) if len(element) > 1 else function(element[0], *args)


def _densify(example, pad_token_id):
    """One example's ragged `[choices, (tokens)]` -> dense `[choices, longest]` plus `padding_mask`."""
    token_ids = example["token_ids"]
    return {
        "token_ids": token_ids.to_tensor(pad_token_id),
        "segment_ids": example["segment_ids"].to_tensor(0),
        "padding_mask": tf.ones_like(token_ids).to_tensor(0),
    }


def _pad_to_bucket(batch, buckets, pad_token_id):
    length = tf.shape(batch["token_ids"])[-1]
    target = tf.reduce_min(tf.boolean_mask(tf.constant(buckets), tf.constant(buckets) >= length))
    padding = [[0, 0], [0, 0], [0, target - length]]
    return {
        name: tf.pad(value, padding, constant_values=pad_token_id if name == "token_ids" else 0)
        for name, value in batch.items()
    }
