"""Load a CoNLL-style column file (one token per line, blank lines between sentences) into a DataFrame.

This reads CoNLL-2003 (`token POS chunk NER`, with `-DOCSTART-` lines) and the Chinese BIO files
that have one character per line (`char<TAB>tag` for MSRA and Weibo, `char<SPACE>tag` for People's
Daily). Columns are split on tabs or spaces. The first column is the token and the last column is the
tag. Any columns in between (POS, chunk) are not kept.

Examples:
    >>> from kerasbert.data.conll import load_conll
    >>> train = load_conll("conll2003/train.txt")
    >>> train.iloc[0].tokens[:3], train.iloc[0].tags[:3]
    (['EU', 'rejects', 'German'], ['B-ORG', 'O', 'B-MISC'])
"""

import re

import pandas as pd

from kerasbert.data._files import read_text

FIELD_SEPARATOR = re.compile(r"[ \t]+")
DOCUMENT_START = "-DOCSTART-"


def load_conll(path):
    """Read a token-per-line file into one row per sentence: `tokens` and `tags` (lists of str).

    A blank line or a `-DOCSTART-` line ends a sentence, and `-DOCSTART-` lines are not tokens. Every
    token line needs at least 2 columns, and all token lines in a file need the same number of columns.
    A `.gz` file is read decompressed. Tokens are returned exactly as in the file. Weibo NER writes
    each character followed by its word-position digit (`科0`); drop it with
    `frame.tokens.map(lambda chars: [c[:-1] for c in chars])`.

    Examples:
        >>> first = load_conll("msra_ner/msra_test_bio.txt").iloc[0]
        >>> first.tokens[:4], first.tags[:4]
        (['中', '共', '中', '央'], ['B-ORG', 'I-ORG', 'I-ORG', 'I-ORG'])
    """
    sentences, tokens, tags = [], [], []
    width = first_line = None
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        content = line.strip(" \t")
        fields = FIELD_SEPARATOR.split(content) if content else []
        if not fields or fields[0] == DOCUMENT_START:
            if tokens:
                sentences.append((tokens, tags))
            tokens, tags = [], []
            continue
        if width is None:
            if len(fields) < 2:
                raise ValueError(f"{path}, line {number}: expected a token and a tag separated by a tab "
                                 f"or space, found {line!r}.")
            width, first_line = len(fields), number
        elif len(fields) != width:
            raise ValueError(f"{path}, line {number}: expected {width} columns like line {first_line}, "
                             f"found {len(fields)} in {line!r}.")
        tokens.append(fields[0])
        tags.append(fields[-1])
    if tokens:
        sentences.append((tokens, tags))
    return pd.DataFrame(sentences, columns=["tokens", "tags"])
