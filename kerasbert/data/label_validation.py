"""Check labels before any encoding: one kind per column (class names, numbers, or lists for multi-label), none
missing or infinite, suited to the problem type; and multiple-choice labels as indices of the endings.

Every check only reads; problems raise a `ValueError` naming the column, the first offending row and the fix.

Examples:
    >>> validate_label_column(pd.DataFrame({"label": ["pos", "neg"]}), "label")
    'str'
"""

import numpy as np
import pandas as pd

from kerasbert.data.validation import is_missing, preview, require_columns, row_label, rows_where

PROBLEM_TYPES = ("binary", "multiclass", "multilabel", "regression")
LIST_TYPES = (list, tuple, set, frozenset, np.ndarray)


def validate_label_column(df, column, *, problem_type=None, argument="label_column"):
    """Check a label column; return its labels' kind: "str", "int", "bool", "float" or "list".

    Labels must all be one kind (ints and floats together count as "float"); lists hold the labels
    of a multi-label example. `problem_type`, when given, must suit the labels: "regression" needs
    numbers, "multilabel" lists, "binary"/"multiclass" class names (whole-number floats allowed).

    Examples:
        >>> validate_label_column(pd.DataFrame({"label": [["a"], ["a", "b"]]}), "label")
        'list'
    """
    require_columns(df, {argument: column})
    return validate_label_values(df[column], name=column, problem_type=problem_type)


def validate_label_values(labels, *, name="label", problem_type=None):
    """`validate_label_column` for a Series (or list) of labels; `name` is used in error messages.

    Examples:
        >>> validate_label_values([0.5, 1.25], problem_type="regression")
        'float'
    """
    labels = labels if isinstance(labels, pd.Series) else pd.Series(list(labels), dtype=object)
    if problem_type is not None and problem_type not in PROBLEM_TYPES:
        raise ValueError(
            f"Unknown problem_type={problem_type!r}. Use one of {list(PROBLEM_TYPES)}, "
            "or None to infer it from the labels."
        )
    if len(labels) == 0:
        raise ValueError(f"Label column {name!r} has no rows; give at least one labelled row.")
    _raise_on_missing(labels, name)
    kinds = [label_kind(value) for value in labels.tolist()]
    kind = _single_kind(labels, kinds, name)
    if kind == "list":
        for position, value in enumerate(labels.tolist()):
            _check_label_list(value, row_label(labels, position), name)
    if kind == "float":
        _raise_on_infinite(labels, name)
    _check_problem_type(labels, kind, name, problem_type)
    return kind


def validate_choice_labels(labels, column, num_choices):
    """Check that every label is a whole number in `0..num_choices-1`; return them as int32.

    Examples:
        >>> validate_choice_labels(pd.Series([0, 3.0]), "label", num_choices=4).tolist()
        [0, 3]
    """
    for position, value in enumerate(labels.tolist()):
        label = row_label(labels, position)
        is_number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        if not is_number or not float(value).is_integer():
            raise ValueError(
                f"Label column {column!r}: row {label!r} holds {preview(value)}"
                f"{', a missing label' if is_missing(value) else ''}. A label is the index (0 to "
                f"{num_choices - 1}) of the right ending: fix or drop the row."
            )
        if not 0 <= value < num_choices:
            raise ValueError(
                f"Label column {column!r}: row {label!r} holds {preview(value)}, not an index into its "
                f"{num_choices} endings. Labels count from 0 to {num_choices - 1}; shift 1-based labels "
                f"with df[{column!r}] -= 1."
            )
    return labels.to_numpy().astype(np.int32)


def label_kind(value):
    """"bool", "int", "float", "str", "list" or the type's name of one label (numpy scalars as Python's)."""
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, LIST_TYPES):
        return "list"
    return type(value).__name__


def _raise_on_missing(labels, name):
    missing = np.array(
        [not isinstance(v, LIST_TYPES) and bool(pd.isna(v)) for v in labels.tolist()], dtype=bool
    )
    if missing.any():
        raise ValueError(
            f"Label column {name!r}: {rows_where(labels, missing, 'missing (NaN/None)')}. "
            f"Drop those rows with df.dropna(subset=[{name!r}]) or label them."
        )


def _single_kind(labels, kinds, name):
    first_of_kind = {}
    for position, kind in enumerate(kinds):
        first_of_kind.setdefault(kind, position)
    unsupported = [k for k in first_of_kind if k not in ("str", "int", "bool", "float", "list")]
    if unsupported:
        position = first_of_kind[unsupported[0]]
        raise ValueError(
            f"Label column {name!r} holds a {unsupported[0]} value at row "
            f"{row_label(labels, position)!r} ({preview(labels.iloc[position])}). Labels "
            "must be str, int, bool or float, or a list of labels for multi-label."
        )
    kinds_present = set(first_of_kind)
    if kinds_present == {"int", "float"}:
        return "float"
    if len(kinds_present) > 1:
        examples = " and ".join(
            f"{kind} (e.g. {preview(labels.iloc[pos])} at row {row_label(labels, pos)!r})"
            for kind, pos in first_of_kind.items()
        )
        raise ValueError(
            f"Label column {name!r} mixes label types: {examples}. Use one type, e.g. "
            f"df[{name!r}] = df[{name!r}].astype(str)."
        )
    return kinds_present.pop()


def _check_label_list(value, row, name):
    kinds = {label_kind(item) for item in value}
    if not kinds <= {"str", "int", "bool"} or len(kinds) > 1:
        raise ValueError(
            f"Row {row!r} of label column {name!r} holds {preview(value)}; a multi-label "
            "row must be a list of class names of one type (str, int or bool)."
        )


def _raise_on_infinite(labels, name):
    infinite = ~np.isfinite(labels.to_numpy(dtype=float))
    if infinite.any():
        raise ValueError(
            f"Label column {name!r}: {rows_where(labels, infinite, 'infinite')}. Drop or fix those rows."
        )


def _check_problem_type(labels, kind, name, problem_type):
    if problem_type is None:
        return
    first = f"e.g. {preview(labels.iloc[0])} at row {row_label(labels, 0)!r}"
    if problem_type == "regression" and kind not in ("int", "float"):
        raise ValueError(
            f"problem_type='regression' needs numeric labels, but column {name!r} "
            f"holds {kind} labels ({first})."
        )
    if problem_type == "multilabel" and kind != "list":
        raise ValueError(
            f"problem_type='multilabel' needs a list of labels per row, e.g. "
            f"['sports', 'politics'], but column {name!r} holds {kind} labels ({first})."
        )
    if problem_type in ("binary", "multiclass"):
        if kind == "list":
            raise ValueError(
                f"Column {name!r} holds lists of labels ({first}), which is multi-label "
                f"data; pass problem_type='multilabel' instead of {problem_type!r}."
            )
        if kind == "float":
            fractional = np.array([not float(v).is_integer() for v in labels.tolist()], dtype=bool)
            if fractional.any():
                raise ValueError(
                    f"problem_type={problem_type!r} needs class labels, but column "
                    f"{name!r} has fractional numbers: "
                    f"{rows_where(labels, fractional, 'not whole numbers')}. For numeric "
                    "targets pass problem_type='regression'."
                )
