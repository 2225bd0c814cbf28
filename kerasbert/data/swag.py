"""Load a SWAG CSV file (the "regular" `train.csv` / `val.csv` / `test.csv` of rowanz/swagaf).

The official header is `,video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,
ending3,label`. The first column has no name and holds the row number. `startphrase` is `sent1` followed
by `sent2`. The task is to choose which ending completes `sent2`.

Examples:
    >>> from kerasbert.data.swag import load_swag
    >>> val = load_swag("swagaf/data/val.csv")
    >>> val.columns.tolist()
    ['context', 'question', 'endings', 'label', 'idx', 'video_id', 'fold_ind']
"""

import csv
import io

import pandas as pd

from kerasbert.data._files import read_text

ENDINGS = ["ending0", "ending1", "ending2", "ending3"]
REQUIRED = ["sent1", "sent2", *ENDINGS]
IDS = {"": "idx", "video-id": "video_id", "fold-ind": "fold_ind"}


def load_swag(path):
    """Read a SWAG CSV into one row per question.

    Returns:
        A DataFrame with `context` (sent1: the first sentence), `question` (sent2: the start of the
        next sentence), `endings` (list of the 4 candidate endings), `label` (int 0-3, the correct
        ending; not present when the file has no `label` column, as in test.csv), then the ids the
        file has: `idx` (int, the unnamed first column), `video_id` (str), `fold_ind` (str).
        `startphrase` and `gold-source` are not kept.

    Examples:
        >>> row = load_swag("swagaf/data/val.csv").iloc[0]
        >>> completed = f"{row.question} {row.endings[row.label]}"   # sent2 and its right ending
    """
    reader = csv.reader(io.StringIO(read_text(path), newline=""))
    try:
        header = next(reader, [])
        missing = [name for name in REQUIRED if name not in header]
        if missing:
            raise ValueError(f"{path}: not a SWAG file: the header has no {', '.join(missing)} "
                             f"(found: {', '.join(header) or 'nothing'}). Expected the regular SWAG "
                             f"columns {', '.join(REQUIRED)} (+ label).")
        position = {name: header.index(name) for name in header}
        rows = [_row(fields, header, position, f"{path}, line {reader.line_num}") for fields in reader]
    except csv.Error as error:
        raise ValueError(f"{path}, line {reader.line_num}: malformed CSV ({error}).") from None
    columns = ["context", "question", "endings"]
    columns += [name for name in ["label", *IDS] if name in position]
    return pd.DataFrame(rows, columns=columns).rename(columns=IDS)


def _row(fields, header, position, where):
    if len(fields) != len(header):
        raise ValueError(f"{where}: expected {len(header)} comma-separated fields like the header, "
                         f"found {len(fields)}.")
    row = [fields[position["sent1"]], fields[position["sent2"]],
           [fields[position[name]] for name in ENDINGS]]
    if "label" in position:
        label = fields[position["label"]]
        if label not in {"0", "1", "2", "3"}:
            raise ValueError(f"{where}: label {label!r} is not one of 0, 1, 2, 3.")
        row.append(int(label))
    for name in IDS:
        if name in position:
            value = fields[position[name]]
            row.append(_integer(value, where) if name == "" else value)
    return row


def _integer(value, where):
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{where}: row number {value!r} in the first column is not an integer.") from None
