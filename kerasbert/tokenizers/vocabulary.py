"""Reading and checking a WordPiece vocabulary (a `vocab.txt`: one token a line, id = line number; or the
WordPiece model of a fast tokenizer's `tokenizer.json`, which transformers 5 saves instead of `vocab.txt`)."""

import os

from kerasbert.tokenizers.tokenizer_json import read_tokenizer_json, wordpiece_tokens
from kerasbert.tokenizers.unicode_tables import SPLIT_WHITESPACE_RANGES

CONTINUATION_PREFIX = "##"  # WordPiece marks a piece that continues a word: play ##ing

# HF's Rust reader trims each line's trailing whitespace (`str::trim_end`, Unicode White_Space).
TRAILING_WHITESPACE = "".join(
    chr(c) for first, last in SPLIT_WHITESPACE_RANGES for c in range(first, last + 1)
)


def read_vocabulary_file(path):
    """The tokens of a `vocab.txt`, in id order, read as HF `tokenizers` reads them.

    Examples:
        >>> tokens = read_vocabulary_file("my_bert/vocab.txt")  # doctest: +SKIP
    """
    path = os.fspath(path)
    if os.path.isdir(path) and os.path.isfile(os.path.join(path, "vocab.txt")):
        path = os.path.join(path, "vocab.txt")
    if os.path.basename(path) == "tokenizer.json" and os.path.isfile(path):
        return read_tokenizer_json_vocabulary(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"No vocabulary file at '{path}'. BertTokenizer needs a WordPiece vocab.txt (one token "
            "a line, as in a BERT checkpoint folder): pass its path, the folder holding it, or a list "
            "of tokens."
        )
    with open(path, encoding="utf-8") as file:
        lines = file.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip(TRAILING_WHITESPACE) for line in lines]


def read_tokenizer_json_vocabulary(path):
    """The tokens, in id order, of the WordPiece model in a HF `tokenizer.json`; a `TokenizerJsonError` (a
    ValueError) for another kind."""
    return wordpiece_tokens(read_tokenizer_json(path), os.fspath(path))


def load_vocabulary(vocabulary):
    """A list of token strings from a list/tuple of strings or a path to a `vocab.txt`."""
    if isinstance(vocabulary, (str, os.PathLike)):
        return read_vocabulary_file(vocabulary)
    if not isinstance(vocabulary, (list, tuple)) or not all(isinstance(token, str) for token in vocabulary):
        raise TypeError(
            "`vocabulary` must be a list of token strings or the path to a vocab.txt, "
            f"got {type(vocabulary).__name__}."
        )
    return list(vocabulary)


def check_vocabulary(tokens, required_tokens):
    """Raises ValueError if `tokens` is empty, repeats a token, or lacks one of `required_tokens`."""
    if not tokens:
        raise ValueError("The vocabulary is empty: BertTokenizer needs the tokens of a WordPiece vocab.txt.")
    seen = set()
    for index, token in enumerate(tokens):
        if token in seen:
            raise ValueError(
                f"The vocabulary lists the token {token!r} twice (again on line {index + 1}); every "
                "token must appear once, so that each has a single id."
            )
        seen.add(token)
    missing = [f"{name}={token!r}" for name, token in required_tokens.items() if token not in seen]
    if missing:
        raise ValueError(
            f"The vocabulary lacks the special tokens {', '.join(missing)}. Use a BERT vocab.txt that "
            "has them, or pass the names your vocabulary uses (e.g. special_tokens={'unk_token': '<unk>'})."
        )
