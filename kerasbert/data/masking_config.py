"""`MaskingConfig`: the masked-LM masking options as one object, read by `MaskedLMMasker` and the pre-trainers.

Examples:
    >>> MaskingConfig(strategy="whole_word").selection_rate
    0.15
    >>> MaskingConfig(mask_token_rate=0.9, random_token_rate=0.2)
    Traceback (most recent call last):
    ValueError: mask_token_rate + random_token_rate must be at most 1 (the rest stay unchanged), got 0.9 + 0.2: ...
"""

import dataclasses

from kerasbert.arguments import check_count, check_number

STRATEGIES = ("token", "whole_word", "span")
# The keys `BertPretrainer` and `ElectraPretrainer` saved before the options became one object.
LEGACY_KEYS = {"mask_selection_rate": "selection_rate", "mask_token_rate": "mask_token_rate",
               "random_token_rate": "random_token_rate", "max_selections": "max_selections",
               "mask_strategy": "strategy"}


@dataclasses.dataclass(frozen=True)
class MaskingConfig:
    """Which tokens masked-LM pre-training chooses and what it puts there (see `kerasbert.data.masking`).

    Args:
        selection_rate: fraction of the maskable tokens chosen per sequence (BERT: 0.15).
        mask_token_rate, random_token_rate: fractions of the chosen tokens replaced by `[MASK]` and by a random
            token; the rest stay unchanged (BERT: 0.8 and 0.1; ELECTRA: 0.85 and 0).
        max_selections: the most tokens chosen per sequence (BERT: 20 for 128 tokens).
        strategy: "token" (BERT), "whole_word" or "span" (SpanBERT).
        span_geometric_p, max_span_length: the span length distribution, in words ("span"; SpanBERT: 0.2, 10).
        dynamic: True draws a new mask each time an example is read (RoBERTa); False draws once per `fit`.

    Examples:
        >>> BertPretrainer.from_preset("bert_mini_en_uncased", masking=MaskingConfig(strategy="span"))
        >>> MaskedLMMasker.from_tokenizer(tokenizer, masking=MaskingConfig(dynamic=False), seed=0)
    """

    selection_rate: float = 0.15
    mask_token_rate: float = 0.8
    random_token_rate: float = 0.1
    max_selections: int = 20
    strategy: str = "token"
    span_geometric_p: float = 0.2
    max_span_length: int = 10
    dynamic: bool = True

    def __post_init__(self):
        for name in ("selection_rate", "mask_token_rate", "random_token_rate"):
            check_number(name, getattr(self, name), 0, 1)
        if self.mask_token_rate + self.random_token_rate > 1 + 1e-9:
            raise ValueError(
                f"mask_token_rate + random_token_rate must be at most 1 (the rest stay unchanged), got "
                f"{self.mask_token_rate} + {self.random_token_rate}: lower one of them."
            )
        check_count("max_selections", self.max_selections, hint=" BERT chooses at most 20 of 128 tokens.")
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}.")
        check_number("span_geometric_p", self.span_geometric_p, 0, 1, low_open=True, hint=" SpanBERT uses 0.2.")
        check_count("max_span_length", self.max_span_length, hint=" SpanBERT uses 10.")
        if not isinstance(self.dynamic, bool):
            raise TypeError(f"dynamic must be True (a new mask each epoch) or False (drawn once), got "
                            f"{self.dynamic!r}.")

    def get_config(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    @classmethod
    def coerce(cls, value, default=None):
        """`value` as a `MaskingConfig`: itself, one from a dict of its fields (a saved config), or `default`
        (or the defaults) for None."""
        if value is None:
            return default or cls()
        if isinstance(value, dict):
            return cls(**value)
        if not isinstance(value, cls):
            raise TypeError(
                f"masking takes a MaskingConfig, got {type(value).__name__} {value!r}: e.g. "
                "masking=MaskingConfig(strategy='whole_word'), or MaskingConfig(dynamic=False) for masks drawn once."
            )
        return value


def masking_from_legacy_options(options):
    """Pre-training options saved with the masking as separate keys (`masking="dynamic"`, `mask_strategy`, ...)
    -> the same options with one `masking` dict; options saved since pass unchanged."""
    if not isinstance(options.get("masking"), str) and not LEGACY_KEYS.keys() & options.keys():
        return options
    options = dict(options)
    fields = {new: options.pop(old) for old, new in LEGACY_KEYS.items() if old in options}
    schedule = options.pop("masking", None)
    if schedule is not None:
        if schedule not in ("dynamic", "static"):
            raise ValueError(f"masking must be 'dynamic' or 'static' in a saved config, got {schedule!r}.")
        fields["dynamic"] = schedule == "dynamic"
    options["masking"] = fields
    return options
