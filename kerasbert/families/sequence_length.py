"""How many tokens a packed input may hold: the backbone's position table, less RoBERTa's offset.

Examples:
    >>> longest_input(roberta_backbone)   # 514 position rows, positions start at padding_token_id + 1 = 2
    512
"""


def longest_input(backbone):
    """The most tokens the backbone's position table holds: `max_sequence_length`, less RoBERTa's offset
    (positions start at `padding_token_id + 1`, so 514 rows hold 512 tokens); None for a backbone without a
    table (XLNet's relative positions)."""
    if backbone.max_sequence_length is None:
        return None
    offset = getattr(backbone, "padding_token_id", None)
    return backbone.max_sequence_length - (0 if offset is None else offset + 1)


def packed_input_length(backbone, preprocessor):
    """Tokens per packed input: the preprocessor's `sequence_length`, or the most the backbone's positions hold
    (no preprocessor, or one that does not fix a length).

    Examples:
        >>> packed_input_length(backbone, None)   # a BERT backbone of 512 positions
        512
    """
    sequence_length = None if preprocessor is None else preprocessor.sequence_length
    return sequence_length or longest_input(backbone)


def check_sequence_length_fits(sequence_length, backbone):
    """A ValueError when packed inputs could be longer than the backbone's position table."""
    longest = longest_input(backbone)
    if sequence_length is not None and longest is not None and sequence_length > longest:
        offset = backbone.max_sequence_length - longest_input(backbone)
        raise ValueError(
            f"sequence_length={sequence_length} is longer than the backbone's position table "
            f"(max_sequence_length={backbone.max_sequence_length}"
            + (f", of which {offset} rows precede the first position" if offset else "")
            + f"). Use sequence_length <= {longest_input(backbone)}; longer texts are truncated (QA reads them "
            "in windows)."
        )
