"""The DataFrame columns a task model reads, by role: `columns={"text": "review"}` reads texts from `review`.

Each task model names its roles and their default columns in `default_columns` (e.g. `BertClassifier`: text,
text_pair, label); `columns=` renames any of them, and the model keeps the result as `model.columns`.

Examples:
    >>> resolve_columns({"text": "text", "label": "label"}, {"label": "stars"}, "BertClassifier")
    {'text': 'text', 'label': 'stars'}
    >>> resolve_columns({"text": "text"}, {"txt": "review"}, "BertClassifier")
    Traceback (most recent call last):
    ValueError: BertClassifier reads the column roles ['text']; columns= names the unknown role 'txt'. ...
"""

import contextlib
import functools
from collections.abc import Mapping

from kerasbert.doors import column_hint


def resolve_columns(defaults, columns, task_name, nullable=()):
    """`defaults` ({role: column}) with `columns` applied; an unknown role, or a name that is not a non-empty
    string (None too, for the roles in `nullable`), raises before anything is built."""
    if columns is None:
        return dict(defaults)
    if not isinstance(columns, Mapping):
        raise TypeError(f"columns must be a dict of role -> column name, e.g. columns={{'text': 'review'}}; got "
                        f"{type(columns).__name__} {columns!r}.")
    for role, name in columns.items():
        if role not in defaults:
            raise ValueError(f"{task_name} reads the column roles {list(defaults)}; columns= names the unknown role "
                             f"{role!r}. Name one of those roles, e.g. {column_hint(next(iter(defaults)), name)}.")
        if not (isinstance(name, str) and name) and not (name is None and role in nullable):
            raise TypeError(f"columns[{role!r}] must be a column name (a non-empty str), got {name!r}.")
    return {**defaults, **columns}


def columns_from_legacy(config, defaults):
    """A config saved with one `<role>_column` key per column -> one with `columns`; newer ones as they are."""
    legacy = {role: f"{role}_column" for role in defaults if f"{role}_column" in config}
    if not legacy:
        return config
    config = dict(config)
    config["columns"] = {**config.get("columns", {}), **{role: config.pop(key) for role, key in legacy.items()}}
    return config


def column_argument(role):
    """How `require_columns` and `validate_text_columns` name a task's column in their errors."""
    return f"columns[{role!r}]"


@contextlib.contextmanager
def columns_in_use(model, columns):
    """Within the block `model` (a task) reads `columns` ({role: name}) over its own; its own again after.

    Example:
        >>> with columns_in_use(classifier, {"text": "review"}):
        ...     classifier.prepare(reviews_df)
    """
    if columns is None:
        yield
        return
    own = model.columns
    model.columns = resolve_columns(own, columns, type(model).__name__, model.nullable_columns)
    try:
        yield
    finally:
        model.columns = own


def reads_columns(method):
    """A task's `predict` or `evaluate` with a `columns={role: name}` keyword: this call reads those columns.

    Example:
        >>> classifier.predict(reviews_df, columns={"text": "review"})
    """
    @functools.wraps(method)
    def call(self, *args, columns=None, **kwargs):
        with columns_in_use(self, columns):
            return method(self, *args, **kwargs)

    return call
