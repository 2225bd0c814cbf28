"""Check columns that hold a list per row: pre-split words and their tags (token classification), and a
multiple-choice example's endings or a training row's hard negatives.

Every check only reads; problems raise a `ValueError` naming the column, the first offending row and the fix.

Examples:
    >>> words = pd.DataFrame({"tokens": [["EU", "rejects"]], "tags": [["B-ORG", "O"]]})
    >>> validate_token_columns(words, "tokens", "tags")
    >>> validate_endings(pd.Series([["a", "b"], ["c", "d"]]), "endings")
    2
"""

import numpy as np

from kerasbert.data.label_validation import LIST_TYPES, label_kind
from kerasbert.data.validation import is_missing, preview, require_columns, row_label


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
        row = row_label(tokens, position)
        if not isinstance(words, LIST_TYPES) or isinstance(words, (set, frozenset)):
            raise ValueError(
                f"Column {tokens_column!r} must hold a list of words per row; row {row!r} "
                f"holds {preview(words)}. Split sentences into words first, "
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
                    f"{preview(word)}; every word must be a non-empty string."
                )
    if tags_column is not None:
        _check_tags(df[tags_column], tokens, tags_column, tokens_column)


def _check_tags(tags, tokens, tags_column, tokens_column):
    tag_kinds = {}
    for position, (row_tags, words) in enumerate(zip(tags.tolist(), tokens.tolist())):
        row = row_label(tags, position)
        if not isinstance(row_tags, LIST_TYPES) or isinstance(row_tags, (set, frozenset)):
            raise ValueError(
                f"Column {tags_column!r} must hold a list of tags per row; row {row!r} "
                f"holds {preview(row_tags)}."
            )
        if len(row_tags) != len(words):
            raise ValueError(
                f"Row {row!r} has {len(words)} words in {tokens_column!r} but "
                f"{len(row_tags)} tags in {tags_column!r}; give exactly one tag per word."
            )
        for tag in row_tags:
            kind = label_kind(tag)
            if kind not in ("str", "int"):
                raise ValueError(
                    f"Row {row!r} of column {tags_column!r} holds the tag "
                    f"{preview(tag)}; tags must be strings (e.g. 'B-PER') or ints."
                )
            tag_kinds.setdefault(kind, (tag, row))
    if len(tag_kinds) > 1:
        examples = " and ".join(
            f"{kind} (e.g. {preview(tag)} at row {row!r})"
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
        label = row_label(endings, position)
        if not isinstance(row, (list, tuple, np.ndarray)) or np.ndim(row) != 1:
            raise ValueError(
                f"Column {column!r} must hold a list of {item}s per row; row {label!r} holds "
                f"{preview(row)}. Gather each example's {item}s in one list, e.g. df[{column!r}] = "
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
                elif is_missing(ending):
                    problem = "is missing (NaN/None)"
                else:
                    problem = f"is a {type(ending).__name__}, not str"
                raise ValueError(
                    f"Row {label!r} of column {column!r}: {item} {index} ({preview(ending)}) {problem}. "
                    f"Every {item} must be non-empty text: fill it in or drop the row."
                )
    if expected is None:
        raise ValueError(f"Column {column!r} has no rows; there is nothing to read.")
    return expected
