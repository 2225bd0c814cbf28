"""The door a call came through (Python, the command line, HTTP), so that an error names its fix in that door's
syntax: `columns={'text': 'review'}` in Python, `--column text=review` on the command line, `"columns":
{"text": "review"}` in a request body. Every door accepts what its messages propose.

Examples:
    >>> column_hint("text", "review")
    "columns={'text': 'review'}"
    >>> with entered_through("cli"):
    ...     column_hint("text", "review")
    '--column text=review'
    >>> argument_hint("long_inputs", {"doc_stride": 64})
    "long_inputs={'doc_stride': 64}"
"""

import contextlib
import contextvars
import json
import os
import sys
import warnings

DOORS = ("python", "cli", "http")
_DOOR = contextvars.ContextVar("kerasbert_door", default="python")


@contextlib.contextmanager
def entered_through(door):
    """Within this block, errors speak the syntax of `door` ("python", "cli" or "http")."""
    if door not in DOORS:
        raise ValueError(f"door={door!r}: one of {DOORS}.")
    token = _DOOR.set(door)
    try:
        yield
    finally:
        _DOOR.reset(token)


def column_hint(role, column):
    """How the caller names `column` as the task's `role` column, in the syntax of the current door."""
    door = _DOOR.get()
    if door == "cli":
        return f"--column {role}={column}"
    if door == "http":
        return f'"columns": {json.dumps({role: column})} in the request body'
    return f"columns={{{role!r}: {column!r}}}"


def argument_hint(name, value):
    """How the caller passes a task argument: `problem_type='regression'` in Python, `--task-arg
    'problem_type="regression"'` on the command line (the value as JSON; `columns` as `--column` flags)."""
    if name == "columns" and isinstance(value, dict) and _DOOR.get() == "cli":
        return " ".join(column_hint(role, column) for role, column in value.items())
    if _DOOR.get() == "cli":
        return f"--task-arg '{name}={json.dumps(value)}'"
    return f"{name}={value!r}"


def option_hint(name, value):
    """How the caller sets a training option: `learning_rate=0.001` in Python, `--learning-rate 0.001` on the
    command line."""
    if _DOOR.get() == "cli":
        return f"--{name.replace('_', '-')} {value}"
    return f"{name}={value}"


def warn_the_caller(message, category=UserWarning):
    """`warnings.warn` pointed at the user's line that called into kerasbert (the first frame outside the
    package), however deep inside kerasbert the warning arises."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
