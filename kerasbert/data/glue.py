"""Load a GLUE task's `.tsv` file (as written by GLUE's `download_glue_data.py`) into a DataFrame.

Every task gives the same columns: `text`, `text_pair` (pair tasks), `label` (absent in unlabelled
test files), then the ids the file has. Fields are split on tabs with no quoting, so a bare `"` (QNLI,
MRPC) is ordinary text.

Examples:
    >>> from kerasbert.data.glue import load_glue_tsv
    >>> dev = load_glue_tsv("glue_data/RTE/dev.tsv", task="RTE")
    >>> dev.columns.tolist()
    ['text', 'text_pair', 'label', 'idx']
    >>> dev.label[0]
    'not_entailment'
"""

from dataclasses import dataclass

import pandas as pd

from kerasbert.data._files import data_lines, read_text

BINARY = (0, 1)
NLI_TWO_WAY = ("entailment", "not_entailment")
NLI_THREE_WAY = ("contradiction", "entailment", "neutral")


@dataclass(frozen=True)
class GlueTask:
    """Where a task's fields are: header names of the texts and label, allowed labels, kept ids."""

    text: str
    text_pair: str | None
    label: str
    labels: tuple | None  # allowed label values; None means a float score (STS-B)
    ids: dict  # header name -> output column


GLUE_TASKS = {
    "CoLA": GlueTask("sentence", None, "label", BINARY, {"index": "idx", "source": "source"}),
    "SST-2": GlueTask("sentence", None, "label", BINARY, {"index": "idx"}),
    "MRPC": GlueTask("#1 String", "#2 String", "Quality", BINARY,
                     {"index": "idx", "#1 ID": "id1", "#2 ID": "id2"}),
    "STS-B": GlueTask("sentence1", "sentence2", "score", None, {"index": "idx"}),
    "QNLI": GlueTask("question", "sentence", "label", NLI_TWO_WAY, {"index": "idx"}),
    "RTE": GlueTask("sentence1", "sentence2", "label", NLI_TWO_WAY, {"index": "idx"}),
    "WNLI": GlueTask("sentence1", "sentence2", "label", BINARY, {"index": "idx"}),
    "MNLI": GlueTask("sentence1", "sentence2", "gold_label", NLI_THREE_WAY,
                     {"index": "idx", "pairID": "pair_id"}),
    "QQP": GlueTask("question1", "question2", "is_duplicate", BINARY,
                    {"id": "idx", "qid1": "qid1", "qid2": "qid2"}),
}
# CoLA's train and dev files have no header line; its test file has "index<TAB>sentence".
COLA_COLUMNS = ("source", "label", "original_label", "sentence")
INTEGER_IDS = {"idx", "id1", "id2", "qid1", "qid2"}


def load_glue_tsv(path, task):
    """Read one GLUE `.tsv` file (train, dev, dev_matched/mismatched or test) of `task`.

    Args:
        path: the file, e.g. "glue_data/MRPC/dev.tsv".
        task: "CoLA", "SST-2", "MRPC", "STS-B", "QNLI", "RTE", "WNLI", "MNLI" or "QQP"
            (case, "-" and "_" are ignored: "sst2" works).

    Returns:
        A DataFrame, one row per example: `text`, `text_pair` (pair tasks only), `label` (int 0/1 for
        CoLA, SST-2, MRPC, WNLI, QQP; float for STS-B; "entailment"/"not_entailment" for RTE and QNLI;
        "entailment"/"neutral"/"contradiction" for MNLI; no column when the file has no labels), then the
        file's ids: `idx` (int), `source` (CoLA), `id1`/`id2` (MRPC), `qid1`/`qid2` (QQP), `pair_id` (MNLI).

    Examples:
        >>> load_glue_tsv("glue_data/CoLA/dev.tsv", "cola").iloc[0].tolist()
        ['The sailors rode the breeze clear of the rocks.', 1, 'gj04']
    """
    name, spec = _find_task(task)
    lines = data_lines(read_text(path))
    if name == "CoLA" and lines and not lines[0].startswith("index\t"):
        header, body_start = list(COLA_COLUMNS), 0
    else:
        if not lines:
            raise ValueError(f"{path}: empty file; a GLUE {name} file starts with a header line.")
        header, body_start = lines[0].split("\t"), 1
    wanted = _wanted_columns(path, name, spec, header)
    columns = {output: [] for output in wanted.values()}
    for number, line in enumerate(lines[body_start:], start=body_start + 1):
        fields = line.split("\t")
        if len(fields) != len(header):
            raise ValueError(f"{path}, line {number}: expected {len(header)} tab-separated fields "
                             f"({', '.join(header)}) for GLUE {name}, found {len(fields)}.")
        for position, output in wanted.items():
            columns[output].append(_convert(fields[position], output, spec, f"{path}, line {number}"))
    return pd.DataFrame(columns)


def _find_task(task):
    key = str(task).lower().replace("-", "").replace("_", "")
    for name, spec in GLUE_TASKS.items():
        if name.lower().replace("-", "") == key:
            return name, spec
    raise ValueError(f"Unknown GLUE task {task!r}. Known tasks: {', '.join(GLUE_TASKS)}.")


def _wanted_columns(path, name, spec, header):
    """{field position: output column}, in output order: text, text_pair, label, ids."""
    sources = {spec.text: "text", spec.text_pair: "text_pair", spec.label: "label", **spec.ids}
    for required in (spec.text, spec.text_pair):
        if required is not None and required not in header:
            raise ValueError(f"{path}: the header has no {required!r} column, which GLUE {name} files "
                             f"have (found: {', '.join(header)}). Is task={name!r} right for this file?")
    return {header.index(source): output for source, output in sources.items()
            if source is not None and source in header}


def _convert(value, column, spec, where):
    if column == "label":
        if spec.labels is None:
            return _number(value, float, where, "score")
        label = _number(value, int, where, "label") if spec.labels == BINARY else value
        if label not in spec.labels:
            raise ValueError(f"{where}: label {value!r} is not one of {', '.join(map(str, spec.labels))}.")
        return label
    return _number(value, int, where, column) if column in INTEGER_IDS else value


def _number(value, kind, where, what):
    try:
        return kind(value)
    except ValueError:
        noun = "an integer" if kind is int else "a number"
        raise ValueError(f"{where}: {what} {value!r} is not {noun}.") from None
