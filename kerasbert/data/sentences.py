"""Sentences of a document, by one deterministic rule (pre-training pairs and next-sentence questions use it).

Examples:
    >>> split_sentences('Mr. Darcy bowed, i.e. politely. "Indeed!" said she.\\n\\nJ. Smith came.')
    ['Mr. Darcy bowed, i.e. politely.', '"Indeed!" said she.', 'J. Smith came.']
"""

import re

# A sentence ends with . ! or ? (and any closing quotes or brackets) when whitespace and then a
# capital letter, a digit, or an opening quote or bracket follow.
SENTENCE_END = re.compile(r"""[.!?]+["'\u201d\u2019)\]]*(?=\s+["'\u201c\u2018(\[A-Z0-9])""")
# Words that end with a full stop but do not end a sentence ("Mr. Darcy", "e.g. London").
ABBREVIATIONS = frozenset({
    "Mr", "Mrs", "Ms", "Messrs", "Dr", "St", "Prof", "Rev", "Hon", "Esq", "Col", "Capt", "Gen",
    "Lt", "Sgt", "Jr", "Sr", "Mt", "vs", "etc", "e.g", "i.e", "cf", "viz", "approx",
})


def split_sentences(text):
    """Split a document into sentences; whitespace inside a sentence becomes one space.

    Each non-empty line is a paragraph, and no sentence crosses a line break, so text in BERT's
    one-sentence-per-line format keeps its sentences. Inside a line, a sentence ends at `.`, `!`
    or `?` (with any closing quotes or brackets right after) followed by whitespace and then a
    capital letter, a digit, or an opening quote or bracket. A full stop after a word in
    `ABBREVIATIONS` or after a single capital letter other than "I" (an initial) does not end one.

    Examples:
        >>> split_sentences('Mr. Darcy bowed, i.e. politely. "Indeed!" said she.\\n\\nJ. Smith came.')
        ['Mr. Darcy bowed, i.e. politely.', '"Indeed!" said she.', 'J. Smith came.']
    """
    sentences = []
    for line in text.splitlines():
        start = 0
        for match in SENTENCE_END.finditer(line):
            if not _follows_abbreviation(line, match):
                sentences.append(line[start:match.end()])
                start = match.end()
        sentences.append(line[start:])
    return [" ".join(sentence.split()) for sentence in sentences if sentence.strip()]


def _follows_abbreviation(text, match):
    """Whether the sentence end `match` is the full stop of an abbreviation or initial ("Mr.", "F.")."""
    words = text[:match.start()].rsplit(None, 1)
    word = words[-1].lstrip("\"'([\u201c\u2018") if words else ""
    is_initial = len(word) == 1 and word.isupper() and word != "I"
    return match.group().startswith(".") and (word in ABBREVIATIONS or is_initial)
