"""Turn a label column into training targets, and model outputs back into class names.

The problem type is inferred from the labels unless `problem_type=` says it:

- lists, tuples or sets of labels per row -> "multilabel" (multi-hot targets);
- floats with any fractional value -> "regression" (float targets);
- strings, bools, ints, or floats that are all whole numbers -> "binary" (2 classes) or
  "multiclass".

A float column holding only whole numbers (such as 0.0/1.0) is read as classes, stored as ints
(0, 1): pandas turns an int column into floats as soon as one value is missing, so after `dropna`
such columns are nearly always class ids. For whole-number scores you want regressed (star
ratings, say), pass `problem_type="regression"`.

Examples:
    >>> encoder = LabelEncoder().fit(train_df["label"])        # e.g. "neg"/"pos" -> "binary"
    >>> y = encoder.encode(train_df["label"])                   # int32 class indices
    >>> encoder.decode(model_probabilities)                     # -> array of "neg"/"pos"
    >>> LabelEncoder.from_config(encoder.get_config())          # plain dict, stored in .keras files
"""

import numpy as np
import pandas as pd

from kerasbert.arguments import check_number
from kerasbert.data.label_validation import PROBLEM_TYPES, validate_label_values
from kerasbert.metrics.probabilities import above_threshold


class LabelEncoder:
    """Maps labels to class indices (or multi-hot rows, or floats) and back.

    Args:
        labels: the class names in the order of the model's outputs. None: the sorted distinct
            labels seen by `fit`.
        problem_type: "binary", "multiclass", "multilabel" or "regression"; None infers it in `fit`.

    Examples:
        >>> encoder = LabelEncoder(labels=["neg", "pos"]).fit(["pos", "neg", "pos"])
        >>> encoder.problem_type, encoder.encode(["pos", "neg"]).tolist()
        ('binary', [1, 0])
        >>> encoder.decode(np.array([[0.9, 0.1]])).tolist()
        ['neg']
    """

    def __init__(self, labels=None, problem_type=None):
        if problem_type is not None and problem_type not in PROBLEM_TYPES:
            raise ValueError(
                f"Unknown problem_type={problem_type!r}. Use one of "
                f"{list(PROBLEM_TYPES)}, or None to infer it from the labels."
            )
        if problem_type == "regression" and labels is not None:
            raise ValueError(
                "Regression has no classes: leave labels=None with problem_type='regression'."
            )
        self.labels = None if labels is None else _class_names(labels)
        self.problem_type = problem_type
        if problem_type == "binary" and self.labels is not None:
            _require_two_classes(self.labels)
        self._class_counts = None

    @property
    def is_fitted(self):
        """True once the problem type and the classes are known (from `fit` or the constructor)."""
        return self.problem_type == "regression" or (
            self.problem_type is not None and self.labels is not None
        )

    @property
    def num_classes(self):
        """Number of model outputs: the class count, or 1 for regression."""
        self._require_fitted("num_classes")
        return 1 if self.problem_type == "regression" else len(self.labels)

    def fit(self, values):
        """Infer what the constructor left open from training labels, and count each class.

        Examples:
            >>> LabelEncoder().fit([["a", "b"], ["b"]]).labels
            ['a', 'b']
        """
        series, name = _as_series(values)
        kind = validate_label_values(series, name=name, problem_type=self.problem_type)
        if self.problem_type is None and kind == "list":
            self.problem_type = "multilabel"
        elif self.problem_type is None and kind == "float" and not _all_whole(series):
            self.problem_type = "regression"
        if self.problem_type == "regression":
            return self
        if self.labels is None:
            self.labels = _distinct_labels(series, kind)
        if self.problem_type is None:
            self.problem_type = "binary" if len(self.labels) == 2 else "multiclass"
        self._check_class_count(name)
        encoded = self.encode(series)
        if self.problem_type != "multilabel":
            self._class_counts = np.bincount(encoded, minlength=len(self.labels))
        return self

    def encode(self, values):
        """Labels -> int32 class indices, float32 multi-hot rows (multilabel) or float32 targets.

        Examples:
            >>> LabelEncoder(["a", "b", "c"], "multilabel").encode([["a", "c"]]).tolist()
            [[1.0, 0.0, 1.0]]
        """
        self._require_fitted("encode")
        series, name = _as_series(values)
        validate_label_values(series, name=name, problem_type=self.problem_type)
        if self.problem_type == "regression":
            return series.to_numpy(dtype=np.float32)
        index = {label: position for position, label in enumerate(self.labels)}
        rows = series.tolist()
        if self.problem_type == "multilabel":
            self._raise_on_unseen(
                series, name, [[item for item in row if item not in index] for row in rows]
            )
            multi_hot = np.zeros((len(rows), len(self.labels)), dtype=np.float32)
            for row, items in enumerate(rows):
                multi_hot[row, [index[item] for item in items]] = 1.0
            return multi_hot
        self._raise_on_unseen(series, name, [[] if label in index else [label] for label in rows])
        return np.array([index[label] for label in rows], dtype=np.int32)

    def decode(self, outputs, threshold=0.5):
        """Model outputs or class indices -> class names (regression: the float predictions).

        Accepts int class indices (n,); probabilities or logits (n, num_classes), decoded by argmax;
        for "binary", also the positive-class probability (n,) or (n, 1), decoded by `threshold`;
        for "multilabel", scores (n, num_classes): each row becomes the list of classes above
        `threshold`.

        Examples:
            >>> LabelEncoder(["neg", "pos"], "binary").decode(np.array([0.2, 0.7])).tolist()
            ['neg', 'pos']
        """
        self._require_fitted("decode")
        outputs = np.asarray(outputs)
        if self.problem_type == "regression":
            return outputs.reshape(len(outputs)).astype(np.float32)
        names = np.array(self.labels, dtype=object)
        if self.problem_type == "multilabel":
            self._require_shape(
                outputs,
                outputs.ndim == 2 and outputs.shape[1] == len(names),
                "(n, num_classes) scores",
            )
            return [names[row].tolist() for row in above_threshold(outputs, threshold)]
        if np.issubdtype(outputs.dtype, np.integer) and outputs.ndim == 1:
            if outputs.size and (outputs.min() < 0 or outputs.max() >= len(names)):
                raise ValueError(
                    f"Class indices must be in [0, {len(names)}); got "
                    f"{outputs.min()}..{outputs.max()}."
                )
            return names[outputs]
        if outputs.ndim == 2 and outputs.shape[1] == len(names):
            return names[outputs.argmax(axis=1)]
        positive_scores = self.problem_type == "binary" and (
            outputs.ndim == 1 or (outputs.ndim == 2 and outputs.shape[1] == 1)
        )
        self._require_shape(
            outputs,
            positive_scores,
            "int class indices (n,) or (n, num_classes) scores, or for binary the "
            "positive-class probability (n,) or (n, 1)",
        )
        return names[above_threshold(outputs.reshape(len(outputs)), threshold).astype(int)]

    def class_weight(self, strategy="balanced"):
        """Keras `class_weight` dict from the counts seen by `fit`: n_samples / (n_classes * count).

        The same weights as scikit-learn's `compute_class_weight("balanced", ...)`.

        Examples:
            >>> LabelEncoder().fit(["a", "a", "a", "b"]).class_weight("balanced")
            {0: 0.6666666666666666, 1: 2.0}
        """
        if strategy != "balanced":
            raise ValueError(
                f"Unknown class weight strategy {strategy!r}; the one supported is 'balanced'."
            )
        if self.problem_type not in ("binary", "multiclass") or self._class_counts is None:
            raise ValueError(
                "class_weight needs single-label classes counted by fit(train labels); "
                f"this encoder is {self.problem_type!r} and "
                f"{'was' if self._class_counts is not None else 'was not'} fitted."
            )
        absent = [label for label, count in zip(self.labels, self._class_counts) if count == 0]
        if absent:
            raise ValueError(
                f"Classes {absent} never occur in the labels given to fit, so they "
                "have no balanced weight. Fit on labels that include every class."
            )
        total, num_classes = self._class_counts.sum(), len(self.labels)
        return {
            index: float(total / (num_classes * count))
            for index, count in enumerate(self._class_counts)
        }

    def class_weight_by_index(self, class_weight):
        """`{label: weight}` (label names, or class indices 0..n-1) -> Keras' `{index: weight}`.

        Examples:
            >>> LabelEncoder(["ham", "spam"], problem_type="binary").class_weight_by_index({"spam": 5.0, 0: 1.0})
            {1: 5.0, 0: 1.0}
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
            by_index[index] = check_number(f"class_weight[{key!r}]", weight, 0)
        return by_index

    def get_config(self):
        """A plain dict: `LabelEncoder.from_config(config)` rebuilds a ready encoder."""
        return {
            "labels": None if self.labels is None else list(self.labels),
            "problem_type": self.problem_type,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def _require_fitted(self, what):
        if not self.is_fitted:
            raise ValueError(
                f"LabelEncoder.{what} needs the classes: call fit(train labels) first, "
                "or create it with labels=[...] and problem_type=..."
            )

    def _check_class_count(self, name):
        if self.problem_type == "binary":
            _require_two_classes(self.labels)
        elif self.problem_type == "multiclass" and len(self.labels) < 2:
            raise ValueError(
                f"Label column {name!r} has only one class, {self.labels}. Pass "
                "labels=[...] naming every class, or check the data was not filtered."
            )
        elif self.problem_type == "multilabel" and not self.labels:
            raise ValueError(f"Label column {name!r} has no labels at all: every list is empty.")

    def _raise_on_unseen(self, series, name, unseen_per_row):
        bad_rows = [position for position, unseen in enumerate(unseen_per_row) if unseen]
        if bad_rows:
            first = bad_rows[0]
            label, row = _plain(unseen_per_row[first][0]), _plain(series.index[first])
            raise ValueError(
                f"Label {label!r} at row {row!r} of {name!r} is not a known label "
                f"({len(bad_rows)} row(s) have unknown labels). Known labels: {self.labels}. Drop "
                "or relabel those rows, or build the encoder with labels=[...] listing every class."
            )

    def _require_shape(self, outputs, ok, expected):
        if not ok:
            raise ValueError(
                f"Cannot decode outputs of shape {outputs.shape} and dtype "
                f"{outputs.dtype} for {self.problem_type!r} with {len(self.labels)} "
                f"classes; expected {expected}."
            )


def _as_series(values):
    if isinstance(values, pd.Series):
        return values, "label" if values.name is None else values.name
    return pd.Series(list(values), dtype=object), "label"


def _all_whole(series):
    return all(float(value).is_integer() for value in series.tolist())


def _distinct_labels(series, kind):
    if kind == "list":
        values = {_plain(item) for row in series.tolist() for item in row}
    else:
        values = {_plain(value) for value in series.tolist()}
    if kind == "float":
        values = {int(value) for value in values}
    return sorted(values)


def _class_names(labels):
    names = [_plain(label) for label in labels]
    duplicates = sorted({repr(name) for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(
            f"labels lists {', '.join(duplicates)} more than once; give each class once."
        )
    if not names:
        raise ValueError("labels is empty; give the class names, e.g. labels=['neg', 'pos'].")
    return names


def _require_two_classes(labels):
    if len(labels) != 2:
        raise ValueError(
            f"problem_type='binary' needs exactly 2 classes, got {len(labels)}: "
            f"{labels}. Use problem_type='multiclass' (or None to infer it)."
        )


def _plain(value):
    """NumPy scalars -> Python scalars, so class names serialise to JSON."""
    return value.item() if isinstance(value, np.generic) else value
