"""DataFrames of predictions as plain JSON records (numpy arrays and scalars made Python values).

Shared by the command line's writers and the model server; no TensorFlow here.

Examples:
    >>> records(pd.DataFrame({"label": ["pos"], "probabilities": [np.array([0.25, 0.75])]}))
    [{'label': 'pos', 'probabilities': [0.25, 0.75]}]
"""

import dataclasses
import math

import numpy as np


def plain_value(value):
    """A JSON-ready Python value: numpy scalars and arrays, nested in lists and dicts, become Python ones;
    NaN becomes None."""
    if isinstance(value, np.ndarray):
        return [plain_value(item) for item in value.tolist()]
    if isinstance(value, np.generic):
        return plain_value(value.item())
    if isinstance(value, dict):
        return {str(key): plain_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def as_config(value):
    """An option object (`LongInputs`, `MaskingConfig`, ...) as the dict of its fields, for a Keras config; other
    values as they are."""
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value


def records(frame):
    """The rows of `frame` as a list of `{column: plain value}` dicts."""
    columns = [str(column) for column in frame.columns]
    return [dict(zip(columns, map(plain_value, row))) for row in frame.itertuples(index=False, name=None)]
