"""BertClassifier: one label (or several, or a score) per text or text pair."""

import dataclasses

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kerasbert.data.batch_order import training_order
from kerasbert.data.batching import EagerBatches
from kerasbert.data.labels import LabelEncoder
from kerasbert.data.output_rows import (
    empty_like_output,
    in_input_order,
    ragged_from_padded,
    traced_with_row_lengths,
)
from kerasbert.data.prepared import Prepared
from kerasbert.data.ragged_rows import row_lengths
from kerasbert.data.text_windows import (
    WINDOW_TEXT,
    Truncation,
    cut_windows,
    make_text_window_dataset,
    text_room,
)
from kerasbert.data.validation import (
    require_columns,
    to_dataframe,
    validate_text_columns,
)
from kerasbert.doors import warn_the_caller
from kerasbert.families.sequence_length import packed_input_length
from kerasbert.metrics import statistics as metrics
from kerasbert.metrics.classification import classification_scores
from kerasbert.metrics.probabilities import above_threshold, sigmoid, softmax
from kerasbert.tasks.classifier_labels import learn_labels, resolve_num_classes
from kerasbert.tasks.columns import column_argument
from kerasbert.tasks.heads import mixes_layers, task_outputs
from kerasbert.tasks.long_inputs import LongInputs
from kerasbert.tasks.run_arguments import DEFAULT_BATCH_SIZE
from kerasbert.tasks.task import Task
from kerasbert.tasks.window_pooling import (
    first_windows,
    pool_windows,
    pool_windows_in_graph,
    pooled_on_windows,
)
from kerasbert.training.chance_level import warn_if_chance_level
from kerasbert.training.fit_arguments import check_rate


@keras.saving.register_keras_serializable(package="kerasbert")
class BertClassifier(Task):
    """`[CLS]` (pooled output) -> dropout -> dense: classification of a text or a text pair.

    The problem type is inferred from the label column on the first `fit` and can be set:
    "binary" / "multiclass" (softmax, cross-entropy; metrics accuracy, macro F1, MCC),
    "multilabel" (a column of label lists: sigmoid, binary cross-entropy, per-label
    `thresholds`; micro/macro F1) and "regression" (float targets: MSE; Pearson, Spearman).

    Args:
        backbone: a `BertBackbone`. preprocessor: a `BertPreprocessor`.
        num_classes: number of outputs; may be left out when `labels` is given, or altogether: the
            first `fit` then learns the labels (names, number, problem type) from its data.
        labels: class names in output order; None learns them (sorted) on the first `fit`.
        problem_type: "binary", "multiclass", "multilabel" or "regression"; None infers it.
        dropout: dropout before the dense layer.
        columns: DataFrame column names by role, "text", "text_pair" and "label" (the defaults), e.g.
            `{"text": "review"}`.
        uses_pairs: whether inputs are text pairs; None decides on the first `fit` (a text_pair
            column present means pairs).
        thresholds: multilabel decision thresholds, one per label (default 0.5 each).
        head: a Keras layer in place of dropout + dense on the pooled output: called on
            `{"sequence_output", "pooled_output", "padding_mask"}`, it returns `[batch, num_classes]`
            logits (see `Task`); e.g. mean pooling and a two-layer MLP.
        long_inputs: None cuts a text at `sequence_length` (`fit` and `evaluate` warn how many rows were cut,
            and `evaluate` returns `truncated_rows`, `mean_cut_pieces` and `longest_cut_pieces` when any were).
            A `LongInputs(doc_stride, window_pooling)` reads every text whole, in overlapping windows of
            `sequence_length` tokens whose neighbours share `doc_stride` pieces (HF's `stride`); each window is
            one pass of the model, and a text's logits are its windows' logits pooled ("mean" or "max"), in `fit`
            (the loss is on each text's pooled logits), `evaluate`, `predict` and the exported SavedModel. Then
            `fit`'s `batch_size` counts texts, each batch holding all windows of its texts (on JAX each new number
            of windows in a batch compiles the train step once more), and the default metrics are weighted
            (`weighted_metrics`) to count each text once. Single texts only (not pairs).

    Examples:
        >>> clf = BertClassifier.from_preset("all_minilm_l6_v2_en", labels=["neg", "pos"])
        >>> clf.fit(train_df, validation_data=dev_df, epochs=2)   # columns "text", "label"
        >>> clf.evaluate(test_df)                                  # {"loss", "accuracy", "f1", "mcc"}
        >>> clf.predict(["what a lovely film"])                     # DataFrame: label, score, probabilities
        >>> long = BertClassifier.from_preset("all_minilm_l6_v2_en", sequence_length=512,
        ...                                   long_inputs=LongInputs(doc_stride=128))
        >>> long.fit(chapters_df, batch_size=4)                   # every piece of every chapter is read
    """

    hf_head = ("classifier", "BertForSequenceClassification")  # a fine-tuned HF model's head
    hf_labels_argument = "num_classes"
    config_names = (
        "num_classes", "labels", "problem_type", "dropout", "uses_pairs", "thresholds", "long_inputs",
    )
    default_columns = {"text": "text", "text_pair": "text_pair", "label": "label"}

    def __init__(
        self,
        backbone,
        preprocessor,
        num_classes=None,
        labels=None,
        problem_type=None,
        dropout=0.1,
        uses_pairs=None,
        thresholds=None,
        head=None,
        long_inputs=None,
        **kwargs,
    ):
        check_rate("dropout", dropout)
        long_inputs = LongInputs.for_windows_of(long_inputs, packed_input_length(backbone, preprocessor))
        if long_inputs is not None:
            long_inputs = dataclasses.replace(long_inputs, window_pooling=long_inputs.window_pooling or "mean")
            if uses_pairs:
                raise ValueError(windows_of_pairs_message())
        encoder = LabelEncoder(labels=labels, problem_type=problem_type)
        num_classes = resolve_num_classes(num_classes, encoder, has_head=head is not None)

        # === Functional model ===
        inputs = backbone.input
        outputs, logits_layer, head_inputs = task_outputs(
            backbone, inputs, head, num_classes, "pooled_output", (None, num_classes), "BertClassifier",
            dropout=dropout, layer_mix=mixes_layers(kwargs))
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor,
                         head=head, head_inputs=head_inputs, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.label_encoder = encoder
        self.dropout = dropout
        self.uses_pairs = uses_pairs
        self.thresholds = None if thresholds is None else [float(t) for t in thresholds]
        self.logits_layer = logits_layer
        self.long_inputs = long_inputs
        self.reading_function = None

    @property
    def class_names(self):
        return self.label_encoder.labels

    labels = class_names

    @property
    def output_labels(self):
        """What each output means in `predict` and `export`: the class names, or the class ids 0..n-1 while they
        are unknown (built with `num_classes` only and not fit yet; fit may still learn names).

        Examples:
            >>> BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=3).output_labels
            [0, 1, 2]
        """
        return list(range(self.num_classes)) if self.class_names is None else self.class_names

    @property
    def problem_type(self):
        return self.label_encoder.problem_type

    @property
    def window_length(self):
        """Tokens per packed input (per window with `long_inputs`), special tokens included."""
        return packed_input_length(self.backbone, self.preprocessor)

    def call(self, inputs, training=None, mask=None, **kwargs):
        """The model on one batch of windows (or texts); a `window_text` in a training batch is for the loss."""
        if isinstance(inputs, dict) and WINDOW_TEXT in inputs:
            inputs = {name: value for name, value in inputs.items() if name != WINDOW_TEXT}
        return super().call(inputs, training=training, mask=mask, **kwargs)

    # === Data ===

    def text_columns(self, frame, training):
        """{argument name: column} of the text columns this classifier reads."""
        uses_pairs = self.uses_pairs
        if uses_pairs is None:  # untrained: read what the data holds; the first fit decides for good
            uses_pairs = self.columns["text_pair"] in frame.columns
            if training:
                self.uses_pairs = uses_pairs
        if uses_pairs and self.long_inputs is not None:
            raise ValueError(windows_of_pairs_message(self.columns["text_pair"]))
        if not uses_pairs and self.columns["text_pair"] in frame.columns:
            raise ValueError(
                f"The data has a {self.columns['text_pair']!r} column, but this classifier reads single "
                f"texts. Drop the column, or build a new classifier for text pairs."
            )
        roles = ("text", "text_pair") if uses_pairs else ("text",)
        return {column_argument(role): self.columns[role] for role in roles}

    def prepare(self, data, with_labels, training=False):
        frame = to_dataframe(data, text_column=self.columns["text"])
        columns = self.text_columns(frame, training)
        label_column = self.columns["label"]
        require_columns(frame, {**columns, **({column_argument("label"): label_column} if with_labels else {})})
        validate_text_columns(frame, columns, allow_empty=not training)  # an empty text is predicted as "[CLS] [SEP]"
        labels = None
        if with_labels:
            if not self.label_encoder.is_fitted:
                self.fit_label_encoder(frame[label_column])
            labels = self.label_encoder.encode(frame[label_column])
            if self.problem_type == "regression":
                labels = labels.reshape(-1, 1)
        read = self.read_texts([frame[column].tolist() for column in columns.values()])
        if self.long_inputs is not None:
            return Prepared(frame=frame, features=read["features"], labels=labels,
                            extras={WINDOW_TEXT: read[WINDOW_TEXT].numpy()})
        special = self.preprocessor.packer.num_special_tokens(len(columns))
        kept = row_lengths(read["features"]["token_ids"]) - special
        truncation = Truncation(np.asarray(read["pieces"]) - kept, self.window_length, self.window_length - special)
        if with_labels and truncation.rows:
            warn_the_caller(truncation.message())
        return Prepared(frame=frame, features=read["features"], labels=labels, extras={"truncation": truncation})

    def read_texts(self, texts):
        """Texts (one list, or two for pairs) -> `{"features": ragged token_ids and segment_ids, ...}` with each
        row's `pieces` before packing cut any, or with `long_inputs` one row per window and its `window_text`; in
        one traced TensorFlow function (the tokenizer's and packer's many small ops cost ~70 ms a call eagerly), or by
        the `native_reader` where one is set (ONNX folders; not for windows: features as numpy `RaggedRows`)."""
        if self.native_reader is not None and self.long_inputs is None:
            return self.native_reader.read_rows(*texts)
        key = (self.window_length, len(texts), self.long_inputs)
        if self.reading_function is None or self.reading_function[0] != key:
            signature = [tf.TensorSpec([None], tf.string)] * len(texts)  # one trace for every number of rows
            self.reading_function = (key, traced_with_row_lengths(self.pack_or_cut, signature))
        return self.reading_function[1](*[tf.constant(part, tf.string, shape=[len(part)]) for part in texts])

    def pack_or_cut(self, *texts):
        segments = [self.tokenizer(part) for part in texts]
        if self.long_inputs is None:
            packed = self.preprocessor.packer(tuple(segments) if len(segments) == 2 else segments[0])
            return {"features": ragged_from_padded(packed), "pieces": sum(part.row_lengths() for part in segments)}
        windows, window_text, _, _ = cut_windows(segments[0], text_room(self.window_length),
                                                 self.long_inputs.doc_stride)
        return {"features": ragged_from_padded(self.preprocessor.packer(windows)), WINDOW_TEXT: window_text}

    def fit_label_encoder(self, label_series):
        """Learn class names from the first labelled data (`learn_labels`); a head built without a width gets it."""
        classes = learn_labels(self.label_encoder, label_series, self.num_classes, self.columns["label"])
        if self.num_classes is None:
            self.num_classes = classes
            self.set_output_count(classes)

    def balanced_class_weight(self, prepared):
        if self.problem_type not in ("binary", "multiclass"):
            raise ValueError('class_weight="balanced" needs single-label classification.')
        return self.label_encoder.class_weight("balanced")

    def class_weight_by_index(self, class_weight):
        """`{label: weight}` (label names, or class indices 0..n-1) -> Keras' `{index: weight}`.

        Examples:
            >>> classifier.fit(df, class_weight={"spam": 5.0, "ham": 1.0})
        """
        return self.label_encoder.class_weight_by_index(class_weight)

    # === Training ===

    def fit(self, *args, cache_features=None, **kwargs):
        """`Task.fit`; with `long_inputs`, `batch_size` counts texts and the loss is on each text's pooled logits.

        Examples:
            >>> classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", long_inputs=LongInputs(doc_stride=64))
            >>> classifier.fit(chapters_df, batch_size=4)
        """
        if self.long_inputs is not None:
            if cache_features:
                raise ValueError("cache_features=True caches one vector per text; with long_inputs a text has "
                                 "many windows. Leave cache_features out, or build the classifier without long_inputs.")
            cache_features = False
        history = super().fit(*args, cache_features=cache_features, **kwargs)
        validation, label = kwargs.get("validation_data"), self.columns["label"]
        if isinstance(validation, pd.DataFrame) and label in validation and self.problem_type in ("binary",
                                                                                                 "multiclass"):
            warn_if_chance_level(history, validation[label], self.fine_tuning)
        return history

    def batches(self, prepared, *, with_labels, training=False, batch_size=DEFAULT_BATCH_SIZE, seed=0,
                group_by_length=True, order=None, epochs=None):
        """`Task.batches`; windowed texts come in batches of whole texts (`make_text_window_dataset`)."""
        if WINDOW_TEXT not in prepared.extras:
            return super().batches(prepared, with_labels=with_labels, training=training, batch_size=batch_size,
                                   seed=seed, group_by_length=group_by_length, order=order, epochs=epochs)
        return make_text_window_dataset(
            prepared.features, prepared.extras[WINDOW_TEXT], prepared.labels if with_labels else None,
            batch_size=batch_size, max_length=self.window_length, pad_token_id=self.tokenizer.pad_token_id,
            batch_order=training_order(training, seed, group_by_length, order, epochs))

    def example_lengths(self, prepared):
        """Tokens per text (over all its windows, with `long_inputs`)."""
        if WINDOW_TEXT not in prepared.extras:
            return super().example_lengths(prepared)
        return np.bincount(prepared.extras[WINDOW_TEXT], weights=prepared.features["token_ids"].row_lengths().numpy(),
                           minlength=len(prepared.frame)).astype(np.int64)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras' loss; on a batch of windows, of each text's pooled logits, each text counted once."""
        if isinstance(x, dict) and WINDOW_TEXT in x:
            first = first_windows(x[WINDOW_TEXT])
            # Keras averages the loss over the batch's rows (windows); weighted windows / texts, over its texts.
            weights = first * (keras.ops.sum(keras.ops.ones_like(first)) / keras.ops.sum(first))
            if sample_weight is not None:
                weights = weights * keras.ops.cast(sample_weight, weights.dtype)
            y_pred, sample_weight = pooled_on_windows(y_pred, x[WINDOW_TEXT], self.long_inputs.window_pooling), weights
        return super().compute_loss(x, y, y_pred, sample_weight, training=training)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Keras' metrics; on a batch of windows, the weighted metrics (the default ones) read each text's pooled
        logits once."""
        if isinstance(x, dict) and WINDOW_TEXT in x:
            y_pred = pooled_on_windows(y_pred, x[WINDOW_TEXT], self.long_inputs.window_pooling)
            sample_weight = first_windows(x[WINDOW_TEXT])
        return super().compute_metrics(x, y, y_pred, sample_weight)

    def default_loss(self):
        if self.problem_type == "regression":
            return keras.losses.MeanSquaredError()
        if self.problem_type == "multilabel":
            return keras.losses.BinaryCrossentropy(from_logits=True)
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [] if self.long_inputs is not None else self.task_metrics()

    def default_weighted_metrics(self):
        return self.task_metrics() if self.long_inputs is not None else None  # weighted: each text counts once

    def task_metrics(self):
        if self.problem_type == "regression":
            return [keras.metrics.MeanAbsoluteError(name="mae")]
        if self.problem_type == "multilabel":
            return [keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)]
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    # === Decoding and metrics ===

    def predict_outputs(self, data, batch_size=None, with_labels=False, verbose="auto"):
        """`Task.predict_outputs`; with `long_inputs`, every window's logits (windows batched by length), pooled
        per text."""
        if self.long_inputs is None:
            return super().predict_outputs(data, batch_size, with_labels, verbose)
        self.check_outputs_known()
        prepared = self.prepare(data, with_labels=with_labels)
        if prepared.frame.empty:
            if with_labels:
                raise ValueError("The data has no rows: there is nothing to evaluate.")
            return empty_like_output(self.output), prepared
        order = np.argsort(prepared.features["token_ids"].row_lengths().numpy(), kind="stable")
        windows = EagerBatches(prepared.features, order, batch_size or DEFAULT_BATCH_SIZE,
                               max_length=self.window_length, pad_token_id=self.tokenizer.pad_token_id)
        logits = in_input_order(self.outputs_of(windows, verbose), order)
        pooling = self.long_inputs.window_pooling
        return pool_windows(logits, prepared.extras[WINDOW_TEXT], len(prepared.frame), pooling), prepared

    def decode(self, outputs, prepared):
        """Per row: `label`, `score` and `probabilities` (`labels` for multi-label, `prediction` for regression),
        and `truncated`: True where the text was cut to the window (without `long_inputs`)."""
        index = prepared.frame.index
        truncation = prepared.extras.get("truncation")
        flags = {} if truncation is None else {"truncated": truncation.cut_pieces > 0}
        if self.problem_type == "regression":
            return pd.DataFrame({"prediction": outputs[:, 0], **flags}, index=index)
        if self.problem_type == "multilabel":
            probabilities = sigmoid(outputs)
            chosen = above_threshold(probabilities, self.thresholds or 0.5)
            labels = [[name for name, keep in zip(self.output_labels, row) if keep] for row in chosen]
            return pd.DataFrame({"labels": labels, "probabilities": list(probabilities), **flags}, index=index)
        probabilities = softmax(outputs)
        best = probabilities.argmax(-1)
        return pd.DataFrame({"label": [self.output_labels[i] for i in best], "score": probabilities.max(-1),
                             "probabilities": list(probabilities), **flags}, index=index)

    def score(self, outputs, prepared):
        results, wrong = classification_scores(outputs, prepared.labels, self.problem_type, self.num_classes,
                                               self.thresholds)
        truncation = prepared.extras.get("truncation")
        if truncation is not None and truncation.rows:
            results.update(truncation.summary())
        decoded = self.decode(outputs, prepared)
        errors = prepared.frame.join(decoded.add_prefix("predicted_"))[wrong]
        results["errors"] = errors
        return results

    def tune_thresholds(self, data, grid=np.linspace(0.05, 0.95, 19)):
        """Multilabel: choose each label's threshold to maximise its F1 on `data` (a dev set)."""
        if self.problem_type != "multilabel":
            raise ValueError("tune_thresholds applies to multilabel classifiers.")
        outputs, prepared = self.predict_outputs(data, with_labels=True, verbose=0)
        probabilities, gold = sigmoid(outputs), prepared.labels.astype(bool)
        best = []
        for j in range(self.num_classes):
            f1s = [metrics.multilabel_f1(gold[:, [j]], above_threshold(probabilities[:, [j]], t))[0] for t in grid]
            best.append(float(grid[int(np.argmax(f1s))]))
        self.thresholds = best
        return best

    # === Serving ===

    def serving_signature(self):
        names = ["text", "text_pair"] if self.uses_pairs else ["text"]
        return [tf.TensorSpec([None], tf.string, name=name) for name in names]

    def serve(self, *texts):
        """Texts (and pairs) -> outputs per text; with `long_inputs`, every window of a text, pooled."""
        if self.long_inputs is None:
            logits = self(self.preprocessor(texts if len(texts) == 2 else texts[0]), training=False)
        else:
            windows, window_text, _, _ = cut_windows(self.tokenizer(texts[0]), text_room(self.window_length),
                                                     self.long_inputs.doc_stride)
            logits = pool_windows_in_graph(self(self.preprocessor.packer(windows), training=False), window_text,
                                           self.long_inputs.window_pooling)
        if self.problem_type == "regression":
            return {"prediction": logits[:, 0]}
        if self.problem_type == "multilabel":
            return {"probabilities": tf.sigmoid(logits)}
        best = tf.argmax(logits, axis=-1, output_type=tf.int32)
        names = tf.constant([str(name) for name in self.output_labels])
        return {"probabilities": tf.nn.softmax(logits), "label_id": best, "label": tf.gather(names, best)}


def windows_of_pairs_message(text_pair_column="text_pair"):
    return (f"long_inputs reads one long text in windows; it does not window text pairs (the data has a "
            f"{text_pair_column!r} column, or uses_pairs=True). Classify pairs without long_inputs, or join each pair "
            "into one text.")
