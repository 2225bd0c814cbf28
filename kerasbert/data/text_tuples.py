"""The training rows of a text encoder: (anchor, positive, hard negatives) or scored pairs (text, text_pair, score),
validated and laid out example-major for `BertTextEncoder.fit`.

Examples:
    >>> rows = text_tuples(pd.DataFrame({"anchor": ["a cat"], "positive": ["a kitten"]}), ENCODER_ROLES)
    >>> rows.texts, rows.texts_per_example, rows.scored
    (['a cat', 'a kitten'], 2, False)
"""

import dataclasses

import numpy as np
import pandas as pd

from kerasbert.data.label_validation import validate_label_values
from kerasbert.data.list_validation import validate_endings
from kerasbert.data.validation import validate_text_columns
from kerasbert.doors import column_hint

# {role: default column} of the encoder's data: texts to encode, and the two layouts of training rows.
ENCODER_ROLES = {"text": "text", "anchor": "anchor", "positive": "positive", "negative": "negative",
                 "text_pair": "text_pair", "score": "score"}
PAIR_ROLES, SCORED_ROLES = ("anchor", "positive"), ("text", "text_pair", "score")


@dataclasses.dataclass
class TextTuples:
    """Training rows, example-major.

    Attributes:
        texts: every text, an example's `texts_per_example` texts one after the other.
        texts_per_example: 2 (a pair), or 2 + the hard negatives of each row.
        scores: float32 `[examples]`, each scored pair's score (zeros for (anchor, positive) rows).
        scored: whether the rows are scored pairs.
        text_ids: int64 `[examples, texts_per_example]`, one number per distinct text (for no-duplicate batches).
    """

    texts: list
    texts_per_example: int
    scores: np.ndarray
    scored: bool
    text_ids: np.ndarray


def text_tuples(frame, columns):
    """The training rows of `frame`, read through `columns` ({role: column}, as `ENCODER_ROLES`): (anchor, positive)
    with an optional `negative` column (a text, or a list of texts with the same count in every row), else
    (text, text_pair, score)."""
    present = {role for role, column in columns.items() if column is not None and column in frame.columns}
    if set(PAIR_ROLES) <= present:
        arguments = {f"columns[{role!r}]": columns[role] for role in PAIR_ROLES}
        validate_text_columns(frame, arguments)
        parts = [frame[columns[role]].tolist() for role in PAIR_ROLES] + negatives_of(frame, columns["negative"])
        scores, scored = np.zeros(len(frame), np.float32), False
    elif set(SCORED_ROLES) <= present:
        roles = SCORED_ROLES[:2]
        validate_text_columns(frame, {f"columns[{role!r}]": columns[role] for role in roles})
        validate_label_values(frame[columns["score"]], name=columns["score"], problem_type="regression")
        parts = [frame[columns[role]].tolist() for role in roles]
        scores, scored = frame[columns["score"]].to_numpy(np.float32), True
    else:
        raise ValueError(
            "Training an encoder takes rows of (anchor, positive[, negative]) or scored pairs (text, text_pair, "
            f"score); these columns are missing: {missing_of(columns, present)} (columns: {list(frame.columns)}). "
            f"Rename yours, or name them: {column_hint('anchor', '...')}.")
    if not len(frame):
        raise ValueError("The training data has no rows; give at least one.")
    texts = [text for example in zip(*parts) for text in example]
    ids = pd.factorize(pd.Series(texts, dtype=object))[0].reshape(len(frame), len(parts))
    return TextTuples(texts=texts, texts_per_example=len(parts), scores=scores, scored=scored, text_ids=ids)


def negatives_of(frame, column):
    """The hard negatives of each row as a list of columns (lists of texts), none without the `column`: its cells are
    each a text, or each a list of texts with the same count in every row."""
    if column is None or column not in frame.columns:
        return []
    if frame[column].map(lambda cell: isinstance(cell, str)).all():
        validate_text_columns(frame, {"columns['negative']": column})
        return [frame[column].tolist()]
    validate_endings(frame[column], column, min_count=1, item="negative")
    return [list(texts) for texts in zip(*frame[column].tolist())]


def missing_of(columns, present):
    """The missing columns of the layout that lacks the fewest."""
    missing = [[columns[role] for role in roles if role not in present] for roles in (PAIR_ROLES, SCORED_ROLES)]
    return min(missing, key=len)
