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

from pathlib import Path

import pandas as pd

from kerasbert.data.corpus_files import checked_separator, corpus_files, iter_documents


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
    checked_separator(document_separator)
    path = Path(path)
    rows = []
    for file in corpus_files(path, pattern):
        source = file.relative_to(path).as_posix() if path.is_dir() else path.name
        rows += [(document, source) for document in iter_documents(file, document_separator)]
    return pd.DataFrame(rows, columns=["text", "source"])
