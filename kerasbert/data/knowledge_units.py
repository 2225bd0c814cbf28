"""Knowledge units for ERNIE's masking (Sun et al. 2019): the named entities and phrases of each document, found
in its token ids so that masking can treat each as one word.

The data names the units: a column holding, per document, the entities or phrases it contains (as a tagger or a
chunker would give them, e.g. the person, place and organisation names of an NER set). Every occurrence of a
unit's tokens in a sentence of that document becomes one unit: its tokens after the first are marked as joined to
the one before. Until the examples are packed, a joined token travels as `id + JOINED` in the token lists, so the
sentence grouping, pairing and truncation of `pretraining_examples` carry the marks without knowing of them.

Examples:
    >>> documents = pd.DataFrame({"text": ["Anne Elliot walked to Kellynch Hall."],
    ...                           "entities": [["Anne Elliot", "Kellynch Hall"]]})
    >>> examples = pretraining_examples(documents, tokenizer, next_sentence=None, units_column="entities")
    >>> examples["joined"][0].numpy().tolist()   # [CLS] anne elliot walked to kelly ##nch hall . [SEP]
    [0, 0, 1, 0, 0, 0, 1, 1, 0, 0]
"""

import numpy as np
import pandas as pd

JOINED = 1 << 30  # added to a joined token's id until packing (vocabulary ids stay far below)


def document_units(documents, units_column):
    """Each document's units (a list of non-empty strings) from `units_column` of the `documents` DataFrame."""
    if not isinstance(documents, pd.DataFrame):
        raise TypeError(f"units_column={units_column!r} reads the units from a DataFrame column; pass the documents "
                        f"as a DataFrame with a text column and a {units_column!r} column, not a "
                        f"{type(documents).__name__}.")
    if units_column not in documents.columns:
        raise ValueError(f"No column {units_column!r} (the knowledge units) in the documents; they have "
                         f"{list(documents.columns)}.")
    units = []
    for row, cell in zip(documents.index, documents[units_column]):
        if isinstance(cell, str) or not isinstance(cell, (list, tuple, np.ndarray)):
            raise TypeError(f"Row {row!r} of {units_column!r}: each cell is a list of the entity or phrase strings "
                            f"of its document, got {type(cell).__name__} {str(cell)[:40]!r}. Use [] for none.")
        if not all(isinstance(unit, str) and unit.strip() for unit in cell):
            raise ValueError(f"Row {row!r} of {units_column!r} holds a unit that is not a non-empty string: "
                             f"{[unit for unit in cell if not (isinstance(unit, str) and unit.strip())][:3]!r}.")
        units.append(list(cell))
    return units


def mark_units(documents, units, tokenizer):
    """`documents` (per document, per sentence, token ids) with every occurrence of the document's `units` marked:
    the unit's tokens after its first become `id + JOINED`. Units of one token change nothing."""
    flat = sorted({unit for document_units in units for unit in document_units})
    if not flat:
        return documents
    tokenized = tokenizer.tokenize(flat)
    ids_of = dict(zip(flat, (tuple(ids) for ids in tokenized.to_list())))
    marked = []
    for sentences, document_units in zip(documents, units):
        patterns = {ids_of[unit] for unit in document_units if len(ids_of[unit]) > 1}
        marked.append([join_occurrences(sentence, patterns) for sentence in sentences])
    return marked


def join_occurrences(sentence, patterns):
    """`sentence` (token ids) with the tokens after the first of each occurrence of each pattern joined."""
    joined = list(sentence)
    for pattern in patterns:
        width = len(pattern)
        for start in range(len(sentence) - width + 1):
            if tuple(sentence[start:start + width]) == pattern:
                for i in range(start + 1, start + width):
                    joined[i] = sentence[i] + JOINED
    return joined


def unit_start(segment):
    """`segment` (token ids, maybe marked) with its first token unmarked: a window or a truncation may cut a unit,
    and its remaining tokens are then a unit of their own."""
    return [segment[0] % JOINED, *segment[1:]] if segment else segment


def split_joined(token_ids):
    """`(token ids, joined flags)` of packed ids that may carry `JOINED` marks (int32 arrays)."""
    joined = token_ids >= JOINED
    return np.where(joined, token_ids - JOINED, token_ids).astype(np.int32), joined.astype(np.int32)
