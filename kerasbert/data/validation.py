"""Check a DataFrame's columns and cells before any tokenisation or TensorFlow work.

Every check only reads: the user's DataFrame is never modified. Problems raise a `ValueError` (or a
`TypeError` for an input that is not tabular at all) that names the column, the first offending
row's index label, how many rows are affected, and the fix.

Examples:
    >>> df = to_dataframe(["a lovely film", "dull"])   # list -> DataFrame copy, column "text"
    >>> validate_text_columns(df, "text")
    >>> validate_label_column(pd.DataFrame({"label": ["pos", "neg"]}), "label")
    'str'
"""

import difflib
from collections.abc import Mapping

import numpy as np
import pandas as pd

from kerasbert.doors import column_hint

PROBLEM_TYPES = ("binary", "multiclass", "multilabel", "regression")
_LIST_TYPES = (list, tuple, set, frozenset, np.ndarray)


def to_dataframe(data, *, text_column="text"):
    """Return a new DataFrame built from the inputs applications accept.

    Args:
        data: a DataFrame (copied), a pandas Series or a list/tuple/1-D array of strings (becomes
            the `text_column` column), a single string (one row), or a dict of equal-length lists
            (one column each).
        text_column: the column name given to a Series or list of texts.

    Examples:
        >>> to_dataframe(pd.Series(["good", "bad"])).columns.tolist()
        ['text']
        >>> len(to_dataframe("one text"))
        1
    """
    if isinstance(data, pd.DataFrame):
        check_unique_columns(data)
        return data.copy()
    if isinstance(data, pd.Series):
        return data.to_frame(name=text_column).copy()
    if isinstance(data, str):
        return pd.DataFrame({text_column: [data]})
    if data is None:
        raise TypeError("Got None instead of data: pass a DataFrame, a list or Series of texts, or one text.")
    if isinstance(data, Mapping):
        lengths = {key: len(values) for key, values in data.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(
                f"The dict's columns have different lengths: {lengths}. "
                "Give every column one value per example."
            )
        return pd.DataFrame({key: list(values) for key, values in data.items()})
    if isinstance(data, (list, tuple)) or (isinstance(data, np.ndarray) and data.ndim == 1):
        return pd.DataFrame({text_column: list(data)})
    raise TypeError(
        f"Cannot read examples from a {type(data).__name__}. Pass a pandas DataFrame, a "
        "Series or list of texts, or a dict of equal-length lists."
    )


def check_unique_columns(df):
    """Raise if the DataFrame has two columns of the same name (pandas then returns a frame, not a column)."""
    repeated = sorted({str(name) for name in df.columns[df.columns.duplicated()]})
    if repeated:
        raise ValueError(
            f"The DataFrame has more than one column named {', '.join(map(repr, repeated))}; each column a task "
            "reads must be unique. Rename or drop the copies, e.g. df.loc[:, ~df.columns.duplicated()]."
        )


def require_columns(df, columns):
    """Raise if a column is missing; `columns` maps the caller's argument name (`text_column`, or `columns['text']`
    for a task model's role) to the column name. The suggested column is one no other argument reads.

    Examples:
        >>> require_columns(pd.DataFrame({"review": ["ok"]}), {"text_column": "text"})
        Traceback (most recent call last):
        ValueError: Column 'text' not found. ... e.g. text_column='review'.
    """
    existing = list(df.columns)
    for argument, column in columns.items():
        if column in existing:
            continue
        free = [name for name in existing if name not in columns.values()]
        closest = _closest_column(column, free)
        suggestion = f" Did you mean {closest!r}?" if closest is not None else ""
        example = closest if closest is not None else (free[0] if free else None)
        if example is None:
            used = "; ".join(f"{name!r} is the {role_of(other)} column" for other, name in columns.items()
                             if name in existing)
            raise ValueError(f"Column {column!r} not found. The data has columns {existing}{': ' if used else ''}"
                             f"{used}. Add the {role_of(argument)} as a {column!r} column.")
        raise ValueError(
            f"Column {column!r} not found. The data has columns {existing}."
            f"{suggestion} To read another column, pass its name, e.g. {naming(argument, example)}."
        )


def role_of(argument):
    """`columns['text']` -> "text", `text_column` -> "text_column": what an argument names, for messages."""
    if argument.startswith("columns[") and argument.endswith("]"):
        return str(argument[len("columns["):-1]).strip("'\"")
    return argument


def naming(argument, column):
    """How to pass `column` for `argument`: `text_column='review'`, or for a task model's `columns['text']` the
    current door's syntax (`columns={'text': 'review'}`, `--column text=review`, a request's `"columns"`)."""
    if argument.startswith("columns[") and argument.endswith("]"):
        return column_hint(role_of(argument), column)
    return f"{argument}={column!r}"


def validate_text_columns(df, columns, *, allow_empty=False):
    """Check that text columns exist and every cell is a non-empty Python `str`.

    Args:
        df: the DataFrame.
        columns: a column name, a list of names, or a dict {argument name: column name} so errors
            can say which argument to change (plain names are reported as `text_column`).
        allow_empty: accept empty and whitespace-only strings.

    Examples:
        >>> validate_text_columns(df, {"text_column": "premise", "text_pair_column": "hypothesis"})
    """
    for argument, column in _argument_column_pairs(columns, "text_column"):
        require_columns(df, {argument: column})
        problems = _text_problems(df[column], column, allow_empty)
        if problems:
            raise ValueError(
                f"Column {column!r} ({argument}) has cells that are not usable text:\n"
                + "\n".join(problems)
            )


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
    kinds = [_label_kind(value) for value in labels.tolist()]
    kind = _single_kind(labels, kinds, name)
    if kind == "list":
        for position, value in enumerate(labels.tolist()):
            _check_label_list(value, _row_at(labels, position), name)
    if kind == "float":
        _raise_on_infinite(labels, name)
    _check_problem_type(labels, kind, name, problem_type)
    return kind


def validate_token_columns(df, tokens_column, tags_column=None, arguments=("tokens_column", "tags_column")):
    """Check pre-split words (and their tags): lists of non-empty strings, one tag per word.

    Tags may be strings or ints (one kind for the whole column). `arguments`: how errors name the two columns.

    Examples:
        >>> df = pd.DataFrame({"tokens": [["EU", "rejects"]], "tags": [["B-ORG", "O"]]})
        >>> validate_token_columns(df, "tokens", "tags")
    """
    columns = {arguments[0]: tokens_column}
    if tags_column is not None:
        columns[arguments[1]] = tags_column
    require_columns(df, columns)
    tokens = df[tokens_column]
    for position, words in enumerate(tokens.tolist()):
        row = _row_at(tokens, position)
        if not isinstance(words, _LIST_TYPES) or isinstance(words, (set, frozenset)):
            raise ValueError(
                f"Column {tokens_column!r} must hold a list of words per row; row {row!r} "
                f"holds {_preview(words)}. Split sentences into words first, "
                "e.g. df['tokens'] = df['sentence'].str.split()."
            )
        if len(words) == 0:
            raise ValueError(
                f"Row {row!r} of column {tokens_column!r} has no words. Drop empty "
                f"sentences, e.g. df = df[df[{tokens_column!r}].map(len) > 0]."
            )
        for word in words:
            if not isinstance(word, str) or not word.strip():
                raise ValueError(
                    f"Row {row!r} of column {tokens_column!r} holds the word "
                    f"{_preview(word)}; every word must be a non-empty string."
                )
    if tags_column is not None:
        _check_tags(df[tags_column], tokens, tags_column, tokens_column)


def _check_tags(tags, tokens, tags_column, tokens_column):
    tag_kinds = {}
    for position, (row_tags, words) in enumerate(zip(tags.tolist(), tokens.tolist())):
        row = _row_at(tags, position)
        if not isinstance(row_tags, _LIST_TYPES) or isinstance(row_tags, (set, frozenset)):
            raise ValueError(
                f"Column {tags_column!r} must hold a list of tags per row; row {row!r} "
                f"holds {_preview(row_tags)}."
            )
        if len(row_tags) != len(words):
            raise ValueError(
                f"Row {row!r} has {len(words)} words in {tokens_column!r} but "
                f"{len(row_tags)} tags in {tags_column!r}; give exactly one tag per word."
            )
        for tag in row_tags:
            kind = _label_kind(tag)
            if kind not in ("str", "int"):
                raise ValueError(
                    f"Row {row!r} of column {tags_column!r} holds the tag "
                    f"{_preview(tag)}; tags must be strings (e.g. 'B-PER') or ints."
                )
            tag_kinds.setdefault(kind, (tag, row))
    if len(tag_kinds) > 1:
        examples = " and ".join(
            f"{kind} (e.g. {_preview(tag)} at row {row!r})"
            for kind, (tag, row) in tag_kinds.items()
        )
        raise ValueError(f"Column {tags_column!r} mixes tag types: {examples}. Use one type.")


def validate_endings(endings, column, num_choices=None, min_count=2, item="ending"):
    """Check that every row holds the same number (>= `min_count`, `num_choices` if given) of non-empty
    strings (a multiple-choice example's endings; with `item="negative"`, a training row's hard negatives); return
    that number.

    Examples:
        >>> validate_endings(pd.Series([["a", "b"], ["c", "d"]]), "endings")
        2
    """
    expected, first_row = num_choices, None
    for position, row in enumerate(endings.tolist()):
        label = _row_at(endings, position)
        if not isinstance(row, (list, tuple, np.ndarray)) or np.ndim(row) != 1:
            raise ValueError(
                f"Column {column!r} must hold a list of {item}s per row; row {label!r} holds "
                f"{_preview(row)}. Gather each example's {item}s in one list, e.g. df[{column!r}] = "
                f"df[['{item}0', '{item}1', '{item}2', '{item}3']].values.tolist()."
            )
        if len(row) < min_count:
            raise ValueError(
                f"Row {label!r} of column {column!r} has {len(row)} {item}(s); it needs at least {min_count} per "
                "row. Add some or drop the row."
            )
        if expected is None:
            expected, first_row = len(row), label
        elif len(row) != expected:
            where = (f"this model takes num_choices={num_choices}" if first_row is None
                     else f"row {first_row!r} has {expected}")
            raise ValueError(
                f"Row {label!r} of column {column!r} has {len(row)} {item}s, but {where}. Every row "
                f"of one call needs the same number of {item}s: split the data by "
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
                    f"Row {label!r} of column {column!r}: {item} {index} ({_preview(ending)}) {problem}. "
                    f"Every {item} must be non-empty text: fill it in or drop the row."
                )
    if expected is None:
        raise ValueError(f"Column {column!r} has no rows; there is nothing to read.")
    return expected


def validate_choice_labels(labels, column, num_choices):
    """Check that every label is a whole number in `0..num_choices-1`; return them as int32.

    Examples:
        >>> validate_choice_labels(pd.Series([0, 3.0]), "label", num_choices=4).tolist()
        [0, 3]
    """
    for position, value in enumerate(labels.tolist()):
        label = _row_at(labels, position)
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


def _argument_column_pairs(columns, argument):
    if isinstance(columns, Mapping):
        return list(columns.items())
    if isinstance(columns, str):
        return [(argument, columns)]
    return [(argument, column) for column in columns]


def _closest_column(column, existing):
    by_lower = {str(name).lower(): name for name in existing}
    matches = difflib.get_close_matches(str(column).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[matches[0]] if matches else None


def _text_problems(series, column, allow_empty):
    values = series.tolist()
    missing = pd.isna(series).to_numpy()
    is_bytes = np.array([isinstance(v, (bytes, bytearray)) for v in values], dtype=bool)
    is_str = np.array([isinstance(v, str) for v in values], dtype=bool)
    other = ~(missing | is_bytes | is_str)
    empty = np.array([isinstance(v, str) and not v.strip() for v in values], dtype=bool)
    problems = []
    if missing.any():
        problems.append(
            f"- {_rows(series, missing, 'missing (NaN/None)')}. Drop them with "
            f"df.dropna(subset=[{column!r}]) or fill them with text."
        )
    if is_bytes.any():
        problems.append(
            f"- {_rows(series, is_bytes, 'bytes, not str')}. Decode them first, e.g. "
            f"df[{column!r}] = df[{column!r}].map(lambda v: v.decode('utf-8') "
            "if isinstance(v, bytes) else v)."
        )
    if other.any():
        types = "/".join(sorted({type(v).__name__ for v, bad in zip(values, other) if bad}))
        problems.append(
            f"- {_rows(series, other, f'of type {types}, not str')}. If this is "
            f"the text column, convert it with df[{column!r}] = df[{column!r}].astype(str); "
            "otherwise pass the right column name."
        )
    if empty.any() and not allow_empty:
        problems.append(
            f"- {_rows(series, empty, 'empty or only whitespace')}. Drop them with "
            f"df = df[df[{column!r}].str.strip() != '']."
        )
    return problems


def _rows(series, mask, what):
    """'3 rows are <what>, first at row 7 (value)' for the rows where `mask` is true."""
    positions = np.flatnonzero(mask)
    first = positions[0]
    count = "1 row is" if len(positions) == 1 else f"{len(positions)} rows are"
    return (
        f"{count} {what}, first at row {_row_at(series, first)!r} ({_preview(series.iloc[first])})"
    )


def _row_at(series, position):
    """The index label of the row at `position`, as a plain Python value for messages."""
    label = series.index[position]
    return label.item() if isinstance(label, np.generic) else label


def _preview(value, limit=40):
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _label_kind(value):
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, _LIST_TYPES):
        return "list"
    return type(value).__name__


def _raise_on_missing(labels, name):
    missing = np.array(
        [not isinstance(v, _LIST_TYPES) and bool(pd.isna(v)) for v in labels.tolist()], dtype=bool
    )
    if missing.any():
        raise ValueError(
            f"Label column {name!r}: {_rows(labels, missing, 'missing (NaN/None)')}. "
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
            f"{_row_at(labels, position)!r} ({_preview(labels.iloc[position])}). Labels "
            "must be str, int, bool or float, or a list of labels for multi-label."
        )
    kinds_present = set(first_of_kind)
    if kinds_present == {"int", "float"}:
        return "float"
    if len(kinds_present) > 1:
        examples = " and ".join(
            f"{kind} (e.g. {_preview(labels.iloc[pos])} at row {_row_at(labels, pos)!r})"
            for kind, pos in first_of_kind.items()
        )
        raise ValueError(
            f"Label column {name!r} mixes label types: {examples}. Use one type, e.g. "
            f"df[{name!r}] = df[{name!r}].astype(str)."
        )
    return kinds_present.pop()


def _check_label_list(value, row, name):
    kinds = {_label_kind(item) for item in value}
    if not kinds <= {"str", "int", "bool"} or len(kinds) > 1:
        raise ValueError(
            f"Row {row!r} of label column {name!r} holds {_preview(value)}; a multi-label "
            "row must be a list of class names of one type (str, int or bool)."
        )


def _raise_on_infinite(labels, name):
    infinite = ~np.isfinite(labels.to_numpy(dtype=float))
    if infinite.any():
        raise ValueError(
            f"Label column {name!r}: {_rows(labels, infinite, 'infinite')}. Drop or fix those rows."
        )


def _check_problem_type(labels, kind, name, problem_type):
    if problem_type is None:
        return
    first = f"e.g. {_preview(labels.iloc[0])} at row {_row_at(labels, 0)!r}"
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
                    f"{_rows(labels, fractional, 'not whole numbers')}. For numeric "
                    "targets pass problem_type='regression'."
                )


def _is_missing(value):
    return value is None or (isinstance(value, (float, np.floating)) and np.isnan(value))
