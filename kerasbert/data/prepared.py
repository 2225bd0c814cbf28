"""`Prepared`: validated, tokenised data, what a task model hands to its batching."""

import dataclasses

import pandas as pd


@dataclasses.dataclass
class Prepared:
    """Validated, tokenised data: what a task hands to `make_batched_dataset`.

    Attributes:
        frame: the validated copy of the user's data (the user's object is never modified).
        features: per-token arrays (ragged), at least `token_ids` and `segment_ids`.
        labels: targets (per example or per token), or None when predicting.
        sample_weight: per-example or per-token weights, or None.
        extras: anything the task needs to decode (offsets, word ids, windows, ...).
    """

    frame: pd.DataFrame
    features: dict
    labels: object = None
    sample_weight: object = None
    extras: dict = dataclasses.field(default_factory=dict)
