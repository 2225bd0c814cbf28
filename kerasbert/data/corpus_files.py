"""Raw pre-training text, one document at a time: plain text files (`.txt`, any name; `.gz` decompressed) and
JSON Lines (`.jsonl`, `.jsonl.gz`: one object per line, its `text_field` a document), read as a stream so that a
file larger than memory is fine unless one document is.

Plain files: each file is one document (`document_separator="file"`), or one or more blank lines end a document
(`"blank_line"`, BERT's `create_pretraining_data.py` format, read line by line), or a compiled `re.Pattern`
matches the text between two documents (the file is read whole).

Examples:
    >>> files = corpus_files(["books/", "wiki.jsonl.gz"])
    >>> next(iter_documents(files[0], document_separator="blank_line"))[:40]
    'The Project Gutenberg eBook of Emma...'
"""

import gzip
import json
import re
from pathlib import Path

SEPARATORS = {"file": None, "blank_line": re.compile(r"\n(?:[ \t]*\n)+")}
JSON_LINES = (".jsonl", ".jsonl.gz")


def corpus_files(inputs, pattern="*"):
    """The files of `inputs` (a path or a list of paths: files, or folders searched recursively for `pattern`),
    in the order given, each folder's files sorted by path; hidden files (`.name`) are left out.

    Examples:
        >>> [file.name for file in corpus_files("corpus/")]
        ['a.txt', 'b.jsonl.gz']
    """
    inputs = [inputs] if isinstance(inputs, (str, Path)) else list(inputs)
    if not inputs:
        raise ValueError("No input files were given: pass a file, a folder, or a list of them.")
    files = []
    for item in map(Path, inputs):
        if item.is_dir():
            found = sorted(path for path in item.rglob(pattern) if path.is_file() and not path.name.startswith("."))
            if not found:
                raise FileNotFoundError(f"{item}: no files matching {pattern!r} in this folder.")
            files += found
        elif item.is_file():
            files.append(item)
        else:
            raise FileNotFoundError(f"{item}: no such file or folder (resolved from {Path.cwd()}).")
    return files


def iter_documents(path, document_separator="file", text_field="text"):
    """The documents of one file, stripped of surrounding whitespace; empty ones are skipped.

    Raises ValueError naming the file and line for bytes that are not UTF-8, a line that is not a JSON object,
    or an object without a string `text_field`.
    """
    path = Path(path)
    separator = checked_separator(document_separator)
    with TextLines(path) as lines:
        if path.name.endswith(JSON_LINES):
            yield from _json_documents(path, lines, text_field)
        elif document_separator == "blank_line":
            yield from _blank_line_documents(lines)
        else:
            text = "".join(lines)
            for document in [text] if separator is None else separator.split(text):
                if document.strip():
                    yield document.strip()


def checked_separator(document_separator):
    """The split pattern of `document_separator` (None: one document per file)."""
    if isinstance(document_separator, re.Pattern):
        return document_separator
    if isinstance(document_separator, str) and document_separator in SEPARATORS:
        return SEPARATORS[document_separator]
    raise ValueError(f"document_separator={document_separator!r} is not supported. Use 'file' (one document per "
                     "file), 'blank_line' (BERT's format), or a compiled re.Pattern.")


class TextLines:
    """A context manager over the lines of a UTF-8 file (a leading BOM dropped, "\\r\\n" read as "\\n", `.gz`
    decompressed), whose errors name the file and line; `line` is the number of the last line read."""

    def __init__(self, path):
        self.path = path
        self.line = 0

    def __enter__(self):
        self.stream = gzip.open(self.path, "rb") if self.path.suffix == ".gz" else open(self.path, "rb")
        return self

    def __exit__(self, *exc):
        self.stream.close()

    def __iter__(self):
        try:
            for self.line, data in enumerate(self.stream, 1):
                yield self.decoded(data)
        except (OSError, EOFError) as error:
            raise ValueError(f"{self.path}, after line {self.line}: the file is damaged ({error}).") from None

    def decoded(self, data):
        try:
            text = data.decode("utf-8-sig" if self.line == 1 else "utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(f"{self.path}, line {self.line}: not valid UTF-8 ({error.reason} at byte {error.start} "
                             "of the line). Convert the file to UTF-8.") from None
        return text[:-2] + "\n" if text.endswith("\r\n") else text


def _blank_line_documents(lines):
    document = []
    for line in lines:
        if line.strip():
            document.append(line)
        elif document:
            yield "".join(document).strip()
            document = []
    if document:
        yield "".join(document).strip()


def _json_documents(path, lines, text_field):
    for line in lines:
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}, line {lines.line}: not a JSON object ({error.msg}). JSON Lines files hold "
                             "one object per line.") from None
        text = record.get(text_field) if isinstance(record, dict) else None
        if not isinstance(text, str):
            found = sorted(record) if isinstance(record, dict) else type(record).__name__
            raise ValueError(f"{path}, line {lines.line}: no string field {text_field!r} (found {found}). Pass "
                             "text_field= to name the field holding the text.")
        if text.strip():
            yield text.strip()
