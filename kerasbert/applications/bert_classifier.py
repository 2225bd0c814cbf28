"""BertClassifier: one label (or several, or a score) per text or text pair."""

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kerasbert.applications import metrics
from kerasbert.applications.fit_arguments import check_rate
from kerasbert.applications.task import Prepared, Task, task_outputs
from kerasbert.data.labels import LabelEncoder
from kerasbert.data.validation import check_count, require_columns, to_dataframe, validate_text_columns


def softmax(logits):
    shifted = np.exp(logits - logits.max(-1, keepdims=True))
    return shifted / shifted.sum(-1, keepdims=True)


def sigmoid(logits):
    return 1.0 / (1.0 + np.exp(-logits))


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
        text_column, text_pair_column, label_column: DataFrame column names.
        uses_pairs: whether inputs are text pairs; None decides on the first `fit` (a
            `text_pair_column` present means pairs).
        thresholds: multilabel decision thresholds, one per label (default 0.5 each).
        head: a Keras layer in place of dropout + dense on the pooled output: called on
            `{"sequence_output", "pooled_output", "padding_mask"}`, it returns `[batch, num_classes]`
            logits (see `Task`); e.g. mean pooling and a two-layer MLP.

    Example:
    >>> clf = BertClassifier.from_preset("all_minilm_l6_v2_en", labels=["neg", "pos"])
    >>> clf.fit(train_df, validation_data=dev_df, epochs=2)   # columns "text", "label"
    >>> clf.evaluate(test_df)                                  # {"loss", "accuracy", "f1", "mcc"}
    >>> clf.predict(["what a lovely film"])                     # DataFrame: label, score, probabilities
    """

    hf_head = ("classifier", "BertForSequenceClassification")  # a fine-tuned HF model's head
    hf_labels_argument = "num_classes"
    config_names = (
        "num_classes", "labels", "problem_type", "dropout", "text_column", "text_pair_column",
        "label_column", "uses_pairs", "thresholds", "layer_mix",
    )

    def __init__(
        self,
        backbone,
        preprocessor,
        num_classes=None,
        labels=None,
        problem_type=None,
        dropout=0.1,
        text_column="text",
        text_pair_column="text_pair",
        label_column="label",
        uses_pairs=None,
        thresholds=None,
        head=None,
        layer_mix=False,
        **kwargs,
    ):
        check_rate("dropout", dropout)
        encoder = LabelEncoder(labels=labels, problem_type=problem_type)
        num_classes = resolve_num_classes(num_classes, encoder, has_head=head is not None)

        # === Functional model ===
        inputs = backbone.input
        outputs, logits_layer, head_inputs = task_outputs(
            backbone, inputs, head, num_classes, "pooled_output", (None, num_classes), "BertClassifier",
            dropout=dropout, layer_mix=layer_mix)
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor,
                         head=head, head_inputs=head_inputs, **kwargs)

        # === Config ===
        self.layer_mix = layer_mix
        self.num_classes = num_classes
        self.label_encoder = encoder
        self.dropout = dropout
        self.text_column = text_column
        self.text_pair_column = text_pair_column
        self.label_column = label_column
        self.uses_pairs = uses_pairs
        self.thresholds = None if thresholds is None else [float(t) for t in thresholds]
        self.logits_layer = logits_layer

    @property
    def class_names(self):
        return self.label_encoder.labels

    labels = class_names

    @property
    def problem_type(self):
        return self.label_encoder.problem_type

    # === Data ===

    def text_columns(self, frame, training):
        """{argument name: column} of the text columns this classifier reads."""
        uses_pairs = self.uses_pairs
        if uses_pairs is None:  # untrained: read what the data holds; the first fit decides for good
            uses_pairs = self.text_pair_column in frame.columns
            if training:
                self.uses_pairs = uses_pairs
        if not uses_pairs and self.text_pair_column in frame.columns:
            raise ValueError(
                f"The data has a {self.text_pair_column!r} column, but this classifier reads single "
                f"texts. Drop the column, or build a new classifier for text pairs."
            )
        columns = {"text_column": self.text_column}
        if uses_pairs:
            columns["text_pair_column"] = self.text_pair_column
        return columns

    def prepare(self, data, with_labels, training=False):
        frame = to_dataframe(data, text_column=self.text_column)
        columns = self.text_columns(frame, training)
        require_columns(frame, {**columns, **({"label_column": self.label_column} if with_labels else {})})
        validate_text_columns(frame, columns, allow_empty=not training)  # an empty text is predicted as "[CLS] [SEP]"
        labels = None
        if with_labels:
            if not self.label_encoder.is_fitted:
                self.fit_label_encoder(frame[self.label_column])
            labels = self.label_encoder.encode(frame[self.label_column])
            if self.problem_type == "regression":
                labels = labels.reshape(-1, 1)
        features = self.pack_texts(*[frame[c].tolist() for c in columns.values()])
        return Prepared(frame=frame, features=features, labels=labels)

    def fit_label_encoder(self, label_series):
        """Learn class names from the first labelled data; int labels with `num_classes` mean ids
        0..n-1, other labels are sorted."""
        encoder = self.label_encoder
        if encoder.labels is None and encoder.problem_type != "regression":
            values = label_series.dropna()
            is_int = len(values) and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                         for v in values)
            if is_int and self.num_classes is not None and values.min() >= 0 and values.max() < self.num_classes:
                encoder.labels = list(range(self.num_classes))
        encoder.fit(label_series)
        if self.num_classes is None:  # built without labels: the head gets its width now
            self.num_classes = encoder.num_classes
            self.set_output_count(self.num_classes)
        if encoder.num_classes != self.num_classes:
            raise ValueError(
                f"The {self.label_column!r} column has {encoder.num_classes} classes "
                f"({encoder.labels if encoder.labels else 'regression'}), but the classifier was built "
                f"with num_classes={self.num_classes}. Pass labels=[...] listing every class."
            )

    def balanced_class_weight(self, prepared):
        if self.problem_type not in ("binary", "multiclass"):
            raise ValueError('class_weight="balanced" needs single-label classification.')
        return self.label_encoder.class_weight("balanced")

    def class_weight_by_index(self, class_weight):
        """`{label: weight}` (label names, or class indices 0..n-1) -> Keras' `{index: weight}`.

        Example:
        >>> classifier.fit(df, class_weight={"spam": 5.0, "ham": 1.0})
        """
        if self.problem_type not in ("binary", "multiclass"):
            raise ValueError("class_weight needs single-label classification; this classifier is "
                             f"{self.problem_type!r}.")
        if not isinstance(class_weight, dict):
            raise TypeError(f'class_weight must be a dict of label -> weight or "balanced", got '
                            f"{type(class_weight).__name__} {class_weight!r}.")
        labels = list(self.labels)
        by_index = {}
        for key, weight in class_weight.items():
            if key in labels:
                index = labels.index(key)
            elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) and 0 <= key < len(labels):
                index = int(key)
            else:
                raise ValueError(f"class_weight has the key {key!r}, which is not a label; the labels are {labels} "
                                 f"(or their indices 0..{len(labels) - 1}).")
            if isinstance(weight, bool) or not isinstance(weight, (int, float, np.number)) or not weight >= 0:
                raise ValueError(f"class_weight[{key!r}] must be a number >= 0, got {weight!r}.")
            by_index[index] = float(weight)
        return by_index

    # === Training ===

    def default_loss(self):
        if self.problem_type == "regression":
            return keras.losses.MeanSquaredError()
        if self.problem_type == "multilabel":
            return keras.losses.BinaryCrossentropy(from_logits=True)
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        if self.problem_type == "regression":
            return [keras.metrics.MeanAbsoluteError(name="mae")]
        if self.problem_type == "multilabel":
            return [keras.metrics.BinaryAccuracy(name="accuracy", threshold=0.0)]
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    # === Decoding and metrics ===

    def decode(self, outputs, prepared):
        index = prepared.frame.index
        if self.problem_type == "regression":
            return pd.DataFrame({"prediction": outputs[:, 0]}, index=index)
        if self.problem_type == "multilabel":
            probabilities = sigmoid(outputs)
            chosen = probabilities >= np.asarray(self.thresholds or [0.5] * self.num_classes)
            labels = [[name for name, keep in zip(self.class_names, row) if keep] for row in chosen]
            return pd.DataFrame({"labels": labels, "probabilities": list(probabilities)}, index=index)
        probabilities = softmax(outputs)
        best = probabilities.argmax(-1)
        return pd.DataFrame(
            {
                "label": [self.class_names[i] for i in best],
                "score": probabilities.max(-1),
                "probabilities": list(probabilities),
            },
            index=index,
        )

    def score(self, outputs, prepared):
        gold = prepared.labels
        if self.problem_type == "regression":
            predicted = outputs[:, 0]
            gold = gold[:, 0]
            results = {
                "loss": float(np.mean((predicted - gold) ** 2)),
                "pearson": metrics.pearson(gold, predicted),
                "spearman": metrics.spearman(gold, predicted),
            }
            wrong = np.zeros(len(gold), bool)
        elif self.problem_type == "multilabel":
            probabilities = sigmoid(outputs)
            predicted = probabilities >= np.asarray(self.thresholds or [0.5] * self.num_classes)
            eps = 1e-7
            loss = -np.mean(gold * np.log(probabilities + eps) + (1 - gold) * np.log(1 - probabilities + eps))
            micro, macro = metrics.multilabel_f1(gold, predicted)
            results = {"loss": float(loss), "subset_accuracy": float(np.mean((predicted == gold).all(1))),
                       "micro_f1": micro, "macro_f1": macro}
            wrong = (predicted != gold.astype(bool)).any(1)
        else:
            probabilities = softmax(outputs)
            predicted = probabilities.argmax(-1)
            loss = -np.mean(np.log(probabilities[np.arange(len(gold)), gold] + 1e-12))
            results = {
                "loss": float(loss),
                "accuracy": metrics.accuracy(gold, predicted),
                "macro_f1": metrics.macro_f1(gold, predicted, self.num_classes),
                "mcc": metrics.matthews_corrcoef(gold, predicted, self.num_classes),
            }
            if self.problem_type == "binary":
                results["f1"] = float(metrics.f1_per_class(gold, predicted, 2)[1])
            wrong = predicted != gold
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
            f1s = [metrics.multilabel_f1(gold[:, [j]], probabilities[:, [j]] >= t)[0] for t in grid]
            best.append(float(grid[int(np.argmax(f1s))]))
        self.thresholds = best
        return best

    # === Serving ===

    def serving_signature(self):
        names = ["text", "text_pair"] if self.uses_pairs else ["text"]
        return [tf.TensorSpec([None], tf.string, name=name) for name in names]

    def serve(self, *texts):
        inputs = self.preprocessor(texts if len(texts) == 2 else texts[0])
        logits = self(inputs, training=False)
        if self.problem_type == "regression":
            return {"prediction": logits[:, 0]}
        if self.problem_type == "multilabel":
            return {"probabilities": tf.sigmoid(logits)}
        best = tf.argmax(logits, axis=-1, output_type=tf.int32)
        names = tf.constant([str(name) for name in self.class_names])
        return {"probabilities": tf.nn.softmax(logits), "label_id": best, "label": tf.gather(names, best)}


def resolve_num_classes(num_classes, encoder, has_head=False):
    """The output count from `num_classes`, the labels, or the problem type; None (learned on the first
    fit) when none of them is given, unless a custom head needs it now."""
    if num_classes is not None:
        num_classes = check_count("num_classes", num_classes)
    if encoder.problem_type == "regression":
        if num_classes not in (None, 1):
            raise ValueError(f"Regression has one output; got num_classes={num_classes}.")
        return 1
    if encoder.labels is not None:
        if num_classes is not None and num_classes != len(encoder.labels):
            raise ValueError(
                f"num_classes={num_classes} but {len(encoder.labels)} labels were given: "
                f"{encoder.labels}. Pass one of the two."
            )
        return len(encoder.labels)
    if num_classes is None and has_head:
        raise ValueError(
            "Tell a classifier with a custom head its outputs: num_classes=N, labels=[...] or "
            "problem_type='regression'."
        )
    return num_classes
