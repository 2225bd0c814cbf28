"""Entity-level scores of BIO/IOB tags, with seqeval's conventions (its default, non-strict mode), as fractions.

Examples:
    >>> entity_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "O"]])["f1"]
    0.666...
"""


def entity_scores(gold, predicted):
    """Entity-level micro precision, recall and F1, and per type (`per_type_f1`, and `per_type`: precision,
    recall and F1), with seqeval's conventions.

    An entity counts as found when its type and word span match exactly. `gold` and `predicted`
    are lists of tag lists (BIO/IOB, repaired as `entity_spans` does).

    Examples:
        >>> entity_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "O"]])
        {'precision': 1.0, 'recall': 0.5, 'f1': 0.666..., 'per_type_f1': {'LOC': 0.0, 'PER': 1.0}, 'per_type': {...}}
    """
    gold_entities = {(row, *span) for row, tags in enumerate(gold) for span in entity_spans(tags)}
    found_entities = {(row, *span) for row, tags in enumerate(predicted) for span in entity_spans(tags)}
    results = f1_counts(gold_entities, found_entities)
    types = sorted({entity[1] for entity in gold_entities | found_entities})
    per_type = {kind: f1_counts({e for e in gold_entities if e[1] == kind}, {e for e in found_entities if e[1] == kind})
                for kind in types}
    results["per_type_f1"] = {kind: scores["f1"] for kind, scores in per_type.items()}
    results["per_type"] = per_type
    return results


def f1_counts(gold, found):
    """Precision, recall and F1 of the set `found` against `gold` (0 where undefined)."""
    correct = len(gold & found)
    precision = correct / len(found) if found else 0.0
    recall = correct / len(gold) if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def entity_spans(tags):
    """BIO / IOB1 / IOB2 tags -> `[(type, start_word, end_word)]`, `end_word` exclusive.

    Invalid sequences are repaired as seqeval's default (non-strict) mode does: an `I-X` that does
    not continue an entity of type X (after `O`, at the start, or after another type) starts a new
    entity; a `B-X` always starts one.

    Examples:
        >>> entity_spans(["B-PER", "I-PER", "O", "I-LOC", "I-ORG", "B-ORG"])
        [('PER', 0, 2), ('LOC', 3, 4), ('ORG', 4, 5), ('ORG', 5, 6)]
    """
    spans, current_type, current_start = [], None, 0
    for position, tag in enumerate(tags):
        prefix, entity_type = _split_tag(tag, position)
        if current_type is not None and (prefix != "I" or entity_type != current_type):
            spans.append((current_type, current_start, position))
            current_type = None
        if prefix != "O" and current_type is None:
            current_type, current_start = entity_type, position
    if current_type is not None:
        spans.append((current_type, current_start, len(tags)))
    return spans


def _split_tag(tag, position):
    if tag == "O":
        return "O", None
    if isinstance(tag, str) and tag[:2] in ("B-", "I-") and len(tag) > 2:
        return tag[0], tag[2:]
    raise ValueError(f"Tag {tag!r} at word {position} is not 'O', 'B-<type>' or 'I-<type>'; "
                     "entity_spans reads BIO/IOB1/IOB2 tags (decode label ids to names first).")
