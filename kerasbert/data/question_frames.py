"""Question-answering data checked before any computation: questions and contexts from the shapes users give
(`to_question_frame`), and their answers (`validate_answers`: texts, character starts, each inside its context).

Examples:
    >>> to_question_frame([{"question": "Who wrote it?", "context": "Ada wrote it."}]).columns.tolist()
    ['question', 'context']
"""

from collections.abc import Mapping

import numpy as np
import pandas as pd

from kerasbert.data.validation import to_dataframe


def to_question_frame(data, question_column="question", context_column="context"):
    """A new DataFrame of questions and contexts from a DataFrame (copied), a dict of columns, a list
    of `{question, context}` dicts, or a `(questions, contexts)` tuple of lists (or of two strings).

    Examples:
        >>> to_question_frame(("Who?", "Ada wrote it.")).to_dict("records")
        [{'question': 'Who?', 'context': 'Ada wrote it.'}]
    """
    if isinstance(data, pd.DataFrame):
        return data.copy()
    if isinstance(data, Mapping):
        if any(isinstance(value, str) for value in data.values()):  # one example
            return pd.DataFrame([dict(data)])
        return to_dataframe(data)
    if isinstance(data, tuple) and len(data) == 2 and not any(isinstance(part, Mapping) for part in data):
        questions, contexts = ([part] if isinstance(part, str) else list(part) for part in data)
        if len(questions) != len(contexts):
            raise ValueError(f"Got {len(questions)} questions but {len(contexts)} contexts; give one "
                             "context per question.")
        return pd.DataFrame({question_column: questions, context_column: contexts})
    if isinstance(data, (list, tuple)) and data and all(isinstance(row, Mapping) for row in data):
        return pd.DataFrame([dict(row) for row in data])
    raise TypeError(
        f"Cannot read questions and contexts from a {type(data).__name__}. Pass a DataFrame with "
        f"{question_column!r} and {context_column!r} columns, a list of {{{question_column!r}: ..., "
        f"{context_column!r}: ...}} dicts, or a (questions, contexts) tuple."
    )


def validate_answers(frame, question_ids, context_column, answer_texts_column, answer_starts_column):
    """Each row's answers as `(texts, starts)` lists of lists, every answer checked in its context.

    A cell holds a list (one entry per reference answer; empty: no answer) or a single value.
    Raises ValueError naming the column, the row, the question id and the fix.

    Examples:
        >>> validate_answers(pd.DataFrame({"context": ["Ada wrote it."], "answer_texts": [["Ada"]],
        ...                  "answer_starts": [[0]]}), ["q1"], "context", "answer_texts", "answer_starts")
        ([['Ada']], [[0]])
    """
    all_texts, all_starts = [], []
    rows = zip(frame.index, question_ids, frame[context_column], frame[answer_texts_column],
               frame[answer_starts_column])
    for row, question_id, context, texts, starts in rows:
        where = f"row {row!r} (question {question_id!r})"
        texts = answer_list(texts, answer_texts_column, where, str)
        starts = answer_list(starts, answer_starts_column, where, int)
        if len(texts) != len(starts):
            raise ValueError(
                f"Columns {answer_texts_column!r} and {answer_starts_column!r}, {where}: {len(texts)} "
                f"answer texts but {len(starts)} answer starts; give one character offset per answer."
            )
        for text, start in zip(texts, starts):
            if not text.strip():
                raise ValueError(f"Column {answer_texts_column!r}, {where}: an answer text is empty; "
                                 "for a question without an answer give empty lists [] instead.")
            if context.find(text) < 0:
                raise ValueError(f"Column {answer_texts_column!r}, {where}: the answer {text!r} does not "
                                 "occur in the context at all; fix the answer text or the context.")
            if context[start:start + len(text)] != text:
                raise ValueError(
                    f"Column {answer_starts_column!r}, {where}: the answer {text!r} is not in its context "
                    f"at character {start} (the context reads {context[start:start + len(text)]!r} "
                    f"there); it occurs at character {context.find(text)}: fix the offset."
                )
        all_texts.append(texts)
        all_starts.append(starts)
    return all_texts, all_starts


def answer_list(value, column, where, kind):
    """A cell's answers as a list of `kind` (str texts or int offsets)."""
    values = list(value) if isinstance(value, (list, tuple, np.ndarray)) else [value]
    for item in values:
        is_kind = isinstance(item, str) if kind is str else (
            isinstance(item, (int, np.integer)) and not isinstance(item, (bool, np.bool_)) and item >= 0)
        if not is_kind:
            expected = "answer texts (str)" if kind is str else "character offsets (int >= 0)"
            raise ValueError(
                f"Column {column!r}, {where} holds {item!r}; it must hold a list of {expected}, one per "
                "answer, or an empty list for a question without an answer."
            )
    return [item if kind is str else int(item) for item in values]

