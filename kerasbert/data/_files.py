"""Reading the text of a data file, with the errors every loader shares.

Examples:
    >>> text = read_text("glue/SST-2/train.tsv")    # str, "\\n" line endings
"""

import gzip
from pathlib import Path


def read_text(path):
    """The UTF-8 text of `path` (a leading BOM dropped, "\\r\\n" turned into "\\n"; `.gz` is decompressed).

    Raises FileNotFoundError naming the path when it is not a file, and ValueError naming the
    line when the bytes are not UTF-8.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file (resolved from {Path.cwd()}). Check the path.")
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[:error.start].count(b"\n") + 1
        raise ValueError(f"{path}, line {line}: not valid UTF-8 ({error.reason} at byte {error.start}). "
                         "Convert the file to UTF-8.") from None
    return text.replace("\r\n", "\n")


def data_lines(text):
    """`text` split on "\\n" only (never on U+0085 or U+2028 inside a field), trailing blank lines dropped."""
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    return lines
