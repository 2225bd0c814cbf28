"""A classifier's labels: how many outputs its head has, and the class names it learns from its first labelled data.

Examples:
    >>> resolve_num_classes(None, LabelEncoder(labels=["neg", "pos"]))
    2
"""

import numpy as np

from kerasbert.arguments import check_count


def learn_labels(encoder, label_series, num_classes, label_column="label"):
    """Fit `encoder` (a `LabelEncoder`) on `label_series` and return its class count. Int labels within
    `num_classes` mean ids 0..n-1; other labels are sorted. Labels that disagree with `num_classes` are an error
    naming the column."""
    if encoder.labels is None and encoder.problem_type != "regression":
        values = label_series.dropna()
        is_int = len(values) and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values)
        if is_int and num_classes is not None and values.min() >= 0 and values.max() < num_classes:
            encoder.labels = list(range(num_classes))
    encoder.fit(label_series)
    if num_classes is not None and encoder.num_classes != num_classes:
        raise ValueError(
            f"The {label_column!r} column has {encoder.num_classes} classes "
            f"({encoder.labels if encoder.labels else 'regression'}), but the classifier was built "
            f"with num_classes={num_classes}. Pass labels=[...] listing every class."
        )
    return encoder.num_classes


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
