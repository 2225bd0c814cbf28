"""Load a SQuAD v1.1 or v2.0 JSON file into one row per question, checking every answer's offset.

Answers are stored as two parallel list columns: `answer_texts` and `answer_starts` (character
offsets into `context`). A training question has one answer, a dev question has one or more
reference answers, and a v2.0 unanswerable question has none.

Examples:
    >>> from kerasbert.data.squad import load_squad
    >>> dev = load_squad("squad/dev-v1.1.json")
    >>> row = dev.iloc[0]
    >>> row.context[row.answer_starts[0]:][:len(row.answer_texts[0])] == row.answer_texts[0]
    True
"""

import json

import pandas as pd

from kerasbert.data._files import read_text

COLUMNS = ["id", "title", "question", "context", "answer_texts", "answer_starts", "is_impossible"]


def load_squad(path):
    """Read a SQuAD JSON file: `{"data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}`.

    Returns:
        A DataFrame, one row per question, in file order: `id`, `title`, `question`, `context` (str),
        `answer_texts` (list[str]), `answer_starts` (list[int], character offsets into `context`),
        `is_impossible` (bool; False when the file has no such field, as in v1.1). v2.0's
        `plausible_answers` of unanswerable questions are not loaded.

    Raises:
        ValueError: naming the file and the record (`data[a].paragraphs[p].qas[q]`) when the JSON is
            invalid, a field is missing, or an answer's text is not at its `answer_start` in the context.

    Examples:
        >>> dev = load_squad("squad/cs224n-squad2-dev-half.json")
        >>> int(dev.is_impossible.sum()), len(dev.answer_texts[dev.is_impossible].iloc[0])
        (3168, 0)
    """
    text = read_text(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}, line {error.lineno} column {error.colno}: invalid JSON "
                         f"({error.msg}).") from None
    articles = document.get("data") if isinstance(document, dict) else None
    if not isinstance(articles, list):
        raise ValueError(f"{path}: not a SQuAD file: expected a JSON object with a \"data\" list of "
                         "articles.")
    rows = []
    for a, article in enumerate(articles):
        where = f"{path}, record data[{a}]"
        title = _field(article, "title", str, where)
        for p, paragraph in enumerate(_field(article, "paragraphs", list, where)):
            where = f"{path}, record data[{a}].paragraphs[{p}]"
            context = _field(paragraph, "context", str, where)
            for q, qa in enumerate(_field(paragraph, "qas", list, where)):
                rows.append(_question(qa, title, context, f"{where}.qas[{q}]"))
    return pd.DataFrame(rows, columns=COLUMNS)


def _question(qa, title, context, where):
    question_id = _field(qa, "id", str, where)
    where = f"{where} (id {question_id})"
    texts, starts = [], []
    for n, answer in enumerate(_field(qa, "answers", list, where)):
        answer_where = f"{where}, answers[{n}]"
        answer_text = _field(answer, "text", str, answer_where)
        start = _field(answer, "answer_start", int, answer_where)
        end = start + len(answer_text)
        if start < 0 or end > len(context):
            raise ValueError(f"{answer_where}: answer_start {start} with a {len(answer_text)}-character "
                             f"answer is outside its {len(context)}-character context.")
        if context[start:end] != answer_text:
            raise ValueError(f"{answer_where}: answer text {answer_text!r} is not at answer_start "
                             f"{start}; the context there reads {context[start:end]!r}.")
        texts.append(answer_text)
        starts.append(start)
    is_impossible = qa.get("is_impossible", False)
    if not isinstance(is_impossible, bool):
        raise ValueError(f"{where}: is_impossible is {is_impossible!r}, expected true or false.")
    return [question_id, title, _field(qa, "question", str, where), context, texts, starts, is_impossible]


def _field(record, key, kind, where):
    """record[key], checked to be of `kind` (bool is not an int here)."""
    if not isinstance(record, dict) or key not in record:
        raise ValueError(f"{where}: missing {key!r}.")
    value = record[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{where}: {key!r} is {value!r}, expected a {kind.__name__}.")
    return value
