"""Check a DataFrame's columns and cells before any tokenisation or TensorFlow work.

Every check only reads: the user's DataFrame is never modified. Problems raise a `ValueError` (or a
`TypeError` for an input that is not tabular at all) that names the column, the first offending
row's index label, how many rows are affected, and the fix.

Examples:
    >>> df = to_dataframe(["a lovely film", "dull"])   # list -> DataFrame copy, column "text"
    >>> validate_text_columns(df, "text")

Labels are checked in `kerasbert.data.label_validation`, lists of words and tags or of endings in
`kerasbert.data.list_validation`; the message helpers below (`rows_where`, `row_label`, `preview`) serve all three.
"""

import difflib
from collections.abc import Mapping

import numpy as np
import pandas as pd

from kerasbert.doors import column_hint


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
    if all(type(value) is str and (allow_empty or value.strip()) for value in values):  # usable: one pass
        return []
    missing = pd.isna(series).to_numpy()
    is_bytes = np.array([isinstance(v, (bytes, bytearray)) for v in values], dtype=bool)
    is_str = np.array([isinstance(v, str) for v in values], dtype=bool)
    other = ~(missing | is_bytes | is_str)
    empty = np.array([isinstance(v, str) and not v.strip() for v in values], dtype=bool)
    problems = []
    if missing.any():
        problems.append(
            f"- {rows_where(series, missing, 'missing (NaN/None)')}. Drop them with "
            f"df.dropna(subset=[{column!r}]) or fill them with text."
        )
    if is_bytes.any():
        problems.append(
            f"- {rows_where(series, is_bytes, 'bytes, not str')}. Decode them first, e.g. "
            f"df[{column!r}] = df[{column!r}].map(lambda v: v.decode('utf-8') "
            "if isinstance(v, bytes) else v)."
        )
    if other.any():
        types = "/".join(sorted({type(v).__name__ for v, bad in zip(values, other) if bad}))
        problems.append(
            f"- {rows_where(series, other, f'of type {types}, not str')}. If this is "
            f"the text column, convert it with df[{column!r}] = df[{column!r}].astype(str); "
            "otherwise pass the right column name."
        )
    if empty.any() and not allow_empty:
        problems.append(
            f"- {rows_where(series, empty, 'empty or only whitespace')}. Drop them with "
            f"df = df[df[{column!r}].str.strip() != '']."
        )
    return problems


def rows_where(series, mask, what):
    """'3 rows are <what>, first at row 7 (value)' for the rows where `mask` is true."""
    positions = np.flatnonzero(mask)
    first = positions[0]
    count = "1 row is" if len(positions) == 1 else f"{len(positions)} rows are"
    return (
        f"{count} {what}, first at row {row_label(series, first)!r} ({preview(series.iloc[first])})"
    )


def row_label(series, position):
    """The index label of the row at `position`, as a plain Python value for messages."""
    label = series.index[position]
    return label.item() if isinstance(label, np.generic) else label


def preview(value, limit=40):
    """`repr(value)` cut to `limit` characters, for messages.

    Examples:
        >>> preview("x" * 100, limit=10)
        "'xxxxxx..."
    """
    text = repr(value.item() if isinstance(value, np.generic) else value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_missing(value):
    """None or a float NaN: a missing cell inside a list (pandas' `isna` reads a list as many cells)."""
    return value is None or (isinstance(value, (float, np.floating)) and np.isnan(value))
