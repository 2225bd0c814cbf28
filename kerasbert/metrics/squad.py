"""SQuAD v1.1 / v2.0 exact match and F1, as the official evaluation script computes them, as fractions.

Examples:
    >>> evaluate_squad(["Broncos"], [["Denver Broncos", "Broncos"]])["exact"]
    1.0
"""

import collections
import re
import string

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text):
    """Lower-case, drop punctuation and the articles a/an/the, collapse whitespace (official SQuAD).

    Examples:
        >>> normalize_answer("The  Denver-Broncos!")
        'denverbroncos'
    """
    text = "".join(character for character in text.lower() if character not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction, gold_answers):
    """1.0 if the normalised prediction equals a normalised gold answer, else 0.0.

    `gold_answers` is a str or a list; an empty list (or only answers that normalise to "") means
    "no answer", matched only by an empty prediction.

    Examples:
        >>> exact_match("the Broncos", ["Denver Broncos", "Broncos"])
        1.0
    """
    return max(float(normalize_answer(prediction) == normalize_answer(gold))
               for gold in _gold_list(gold_answers))


def f1(prediction, gold_answers):
    """The best token-overlap F1 of the normalised prediction against the gold answers (0 to 1).

    Examples:
        >>> f1("the cat sat", ["a cat sat down"])  # precision 2/2, recall 2/3
        0.8
    """
    return max(_f1(normalize_answer(prediction).split(), normalize_answer(gold).split())
               for gold in _gold_list(gold_answers))


def _f1(predicted_tokens, gold_tokens):
    if not predicted_tokens or not gold_tokens:
        return float(predicted_tokens == gold_tokens)
    common = sum((collections.Counter(predicted_tokens) & collections.Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _gold_list(gold_answers):
    """The gold answers as the official script scores them: [""] when none normalises to text."""
    return [gold for gold in as_answer_list(gold_answers) if normalize_answer(gold)] or [""]


def evaluate_squad(predictions, gold_answers):
    """Official SQuAD scores as fractions (the official script prints them times 100): `exact`, `f1`, `total`,
    and the `HasAns_*`/`NoAns_*` breakdown for the questions with and without gold answers (each where there
    are any).

    Args:
        predictions: one predicted text per question ("" for no answer).
        gold_answers: one list of gold texts per question (empty for a v2.0 unanswerable one).

    Examples:
        >>> evaluate_squad(["Broncos", ""], [["Denver Broncos"], []])
        {'exact': 0.5, 'f1': 0.833..., 'total': 2, 'HasAns_exact': 0.0, 'HasAns_f1': 0.666...,
         'HasAns_total': 1, 'NoAns_exact': 1.0, 'NoAns_f1': 1.0, 'NoAns_total': 1}
    """
    predictions, gold_answers = list(predictions), list(gold_answers)
    if len(predictions) != len(gold_answers):
        raise ValueError(f"Got {len(predictions)} predictions for {len(gold_answers)} questions; give "
                         "one prediction per question.")
    exact = np.array([exact_match(p, g) for p, g in zip(predictions, gold_answers)])
    overlap = np.array([f1(p, g) for p, g in zip(predictions, gold_answers)])
    has_answer = np.array([len(as_answer_list(g)) > 0 for g in gold_answers], dtype=bool)
    scores = _scores("", exact, overlap)
    for prefix, subset in (("HasAns_", has_answer), ("NoAns_", ~has_answer)):
        if subset.any():
            scores.update(_scores(prefix, exact[subset], overlap[subset]))
    return scores


def as_answer_list(gold_answers):
    return [gold_answers] if isinstance(gold_answers, str) else list(gold_answers)


def _scores(prefix, exact, overlap):
    return {f"{prefix}exact": float(exact.mean()) if len(exact) else 0.0,
            f"{prefix}f1": float(overlap.mean()) if len(overlap) else 0.0,
            f"{prefix}total": int(len(exact))}
