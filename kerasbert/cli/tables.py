"""Data in and out of the command line: CSV, TSV, JSON lines, Parquet, shipped data sets, stdin lines.

Example:
>>> read_table("uci_sentiment:test").columns.tolist()
['text', 'label', 'source']
>>> write_table(predictions, "out.csv")        # nested cells (probabilities, entities) as JSON
"""

import csv
import gzip
import json
import sys
from pathlib import Path

import pandas as pd

from kerasbert.atomic_files import write_text_atomically
from kerasbert.json_records import records

SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet", ".txt")
# Columns that hold lists; in CSV/TSV their cells are JSON lists (`["EU", "rejects"]`) and are read as lists.
LIST_COLUMNS = ("tokens", "tags", "endings", "answer_texts", "answer_starts", "label", "labels")


def read_table(source, default_split="train"):
    """A DataFrame from a file (by its suffix, `.gz` allowed), a shipped data set `name` or `name:split`,
    or `-`: one text per line on stdin, as in a `.txt` file (a tab separates a text pair).

    Only empty CSV cells are missing values: "NA", "null" or "None" stay the texts they are.
    """
    if source == "-":
        return lines_table(sys.stdin.read().split("\n"))
    path = Path(source)
    if path.is_file():
        return read_file(path)
    if path.exists():
        raise ValueError(f"{source} is a folder; give a data file ({', '.join(SUFFIXES)}) or a shipped data set name.")
    return read_shipped(source, default_split)


def is_lines(source):
    """True for sources of text lines (`-` for stdin, a `.txt` file): their table's columns are text, text_pair."""
    return source == "-" or [s for s in Path(source).suffixes if s != ".gz"][-1:] == [".txt"]


def lines_table(lines):
    """Text lines -> a `text` column; lines with a tab -> `text` and `text_pair`. Blank last line dropped."""
    if lines and lines[-1] == "":
        lines = lines[:-1]
    pairs = [line.split("\t", 1) for line in lines]
    if pairs and all(len(pair) == 2 for pair in pairs):
        return pd.DataFrame(pairs, columns=["text", "text_pair"])
    return pd.DataFrame({"text": lines})


def read_file(path):
    suffixes = [s for s in path.suffixes if s != ".gz"]
    suffix = suffixes[-1].lower() if suffixes else ""
    if suffix in (".csv", ".tsv"):
        options = {"sep": "," if suffix == ".csv" else "\t",
                   "quoting": csv.QUOTE_MINIMAL if suffix == ".csv" else csv.QUOTE_NONE}
        try:
            check_unique_header(path, pd.read_csv(path, header=None, nrows=1, dtype=str, **options))
        except pd.errors.EmptyDataError:
            raise ValueError(f"{path} is empty; it needs a header row naming the columns, e.g. text,label.") from None
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""], **options)
        return with_list_columns(frame)
    if suffix in (".jsonl", ".json"):
        return read_json(path, lines=suffix == ".jsonl")
    if suffix == ".parquet":
        return read_parquet(path)
    if suffix == ".txt":
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as lines:
            return lines_table(lines.read().split("\n"))
    raise ValueError(f"{path}: unknown file type {suffix or '(no suffix)'!r}. Use one of {', '.join(SUFFIXES)}.")


def check_unique_header(path, first_row):
    """pandas renames a repeated column `text` to `text.1`: refuse the file instead, naming the column."""
    names = [str(name) for name in first_row.iloc[0].tolist()] if len(first_row) else []
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{path} has more than one column named {', '.join(map(repr, repeated))}; "
                         "rename or drop the extra ones so each column has one name.")


def read_json(path, lines):
    try:
        return pd.read_json(path, lines=lines, orient=None if lines else "records", dtype=False)
    except ValueError as error:
        shape = "one JSON object per line" if lines else "a JSON list of objects"
        raise ValueError(f"{path} is not valid {'JSON lines' if lines else 'JSON'} ({error}); it must hold {shape}.") \
            from None


def read_parquet(path):
    try:
        return pd.read_parquet(path)
    except ImportError:
        raise ImportError("Reading Parquet needs pyarrow: pip install 'kerasbert[cli]'.") from None


def read_shipped(source, default_split):
    from kerasbert.dataset_folder import available_datasets

    name, _, split = source.partition(":")
    if name not in available_datasets():
        raise FileNotFoundError(
            f"No file {source!r}, and no shipped data set of that name. Give a {'/'.join(SUFFIXES)} file, `-` "
            f"for lines on stdin, or one of: {', '.join(available_datasets())} (name or name:split).")
    from kerasbert.data.shipped import load_dataset

    return load_dataset(name, split or default_split)


def with_list_columns(frame):
    """Parse the JSON-list cells of `LIST_COLUMNS` (every non-missing cell a JSON list), other cells untouched."""
    frame = frame.copy()
    for column in set(LIST_COLUMNS) & set(frame.columns):
        cells = frame[column]
        texts = cells.dropna()
        if len(texts) and all(isinstance(v, str) and v.startswith("[") and v.endswith("]") for v in texts):
            try:
                frame[column] = [json.loads(v) if isinstance(v, str) else v for v in cells]
            except json.JSONDecodeError as error:
                raise ValueError(f"Column {column!r} holds a cell that is not a JSON list ({error}).") from None
    return frame


def write_table(frame, output=None, fmt=None):
    """Write `frame` as JSON lines or CSV (nested cells as JSON) to `output` (a path; None: stdout).
    The format comes from `fmt`, else the suffix, else JSON lines."""
    fmt = fmt or ("csv" if output and str(output).endswith((".csv", ".tsv")) else "jsonl")
    rows = records(frame)
    if fmt == "jsonl":
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    else:
        flat = pd.DataFrame([{key: json.dumps(value, ensure_ascii=False) if isinstance(value, (list, dict)) else value
                              for key, value in row.items()} for row in rows], columns=[str(c) for c in frame.columns])
        text = flat.to_csv(index=False, sep="\t" if str(output or "").endswith(".tsv") else ",")
    if output is None:
        sys.stdout.write(text)
    else:
        write_text_atomically(output, text)
