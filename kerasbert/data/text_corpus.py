"""Load raw text files as pre-training documents: one row per document, with its source file.

A pre-training document must be contiguous text, because next-sentence pairs and long windows are
drawn from inside a document. So by default each file is one document. A blank line does not end a
document, since in ordinary prose it only separates paragraphs. Use `document_separator="blank_line"`
only for files in BERT's `create_pretraining_data.py` format: one sentence per line, with a blank line
between documents.

Examples:
    >>> from kerasbert.data.text_corpus import load_text_corpus
    >>> books = load_text_corpus("corpus/")                         # every *.txt below corpus/
    >>> wiki = load_text_corpus("wiki.txt", document_separator="blank_line")
    >>> books.columns.tolist()
    ['text', 'source']
"""

import re
from pathlib import Path

import pandas as pd

from kerasbert.data._files import read_text

SEPARATORS = {"file": None, "blank_line": re.compile(r"\n(?:[ \t]*\n)+")}


def load_text_corpus(path, document_separator="file", pattern="*.txt"):
    """Read a text file, or every file matching `pattern` under a folder (recursively, sorted by path).

    Args:
        path: a UTF-8 text file (`.gz` is read decompressed) or a folder of them.
        document_separator: "file" (default): each file is one document. "blank_line": one or more
            blank lines end a document (BERT's pre-training input format). Or a compiled `re.Pattern`
            that matches the text between two documents, e.g. `re.compile(r"\\n={3,}\\n")`.
        pattern: the glob for files inside a folder.

    Returns:
        A DataFrame, one row per document in file order: `text` (the document with surrounding
        whitespace stripped; its inner line breaks are kept, since sentence-per-line files need them)
        and `source` (the file's path relative to `path`, or its name when `path` is a file).
        A document that is empty or only whitespace gives no row.

    Examples:
        >>> load_text_corpus("notes.txt").iloc[0].source
        'notes.txt'
    """
    separator = _separator(document_separator)
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.rglob(pattern) if p.is_file())
        if not files:
            raise FileNotFoundError(f"{path}: no files matching {pattern!r} in this folder. "
                                    "Pass pattern= to match your file names.")
        sources = [p.relative_to(path).as_posix() for p in files]
    else:
        files, sources = [path], [path.name]
    rows = []
    for file, source in zip(files, sources):
        text = read_text(file)
        documents = [text] if separator is None else separator.split(text)
        rows += [(document.strip(), source) for document in documents if document.strip()]
    return pd.DataFrame(rows, columns=["text", "source"])


def _separator(document_separator):
    if isinstance(document_separator, re.Pattern):
        return document_separator
    if document_separator in SEPARATORS:
        return SEPARATORS[document_separator]
    raise ValueError(f"document_separator={document_separator!r} is not supported. Use 'file' (one "
                     "document per file), 'blank_line' (BERT's format), or a compiled re.Pattern.")
