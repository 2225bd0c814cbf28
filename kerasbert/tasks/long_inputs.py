"""`LongInputs`: how a classifier or token classifier reads texts longer than its window, as one object.

Examples:
    >>> LongInputs(doc_stride=32, window_pooling="max")
    LongInputs(doc_stride=32, window_pooling='max')
    >>> LongInputs.coerce(64)
    Traceback (most recent call last):
    TypeError: long_inputs takes a LongInputs, got int 64: e.g. long_inputs=LongInputs(doc_stride=64).
"""

import dataclasses

from kerasbert.arguments import check_count
from kerasbert.data.text_windows import check_doc_stride
from kerasbert.tasks.window_pooling import check_window_pooling

# The keys a task saved before the options became one object.
LEGACY_KEYS = ("doc_stride", "window_pooling")


@dataclasses.dataclass(frozen=True)
class LongInputs:
    """Read every piece of a long text, in overlapping windows of `sequence_length` tokens.

    Without it a task cuts a text at `sequence_length` (and says how many rows it cut). With it each window is one
    pass of the model; neighbours share `doc_stride` pieces (HF's `stride`).

    Args:
        doc_stride: the pieces consecutive windows share; less than `sequence_length - 2` (checked by the task).
        window_pooling: how `BertClassifier` makes a text's logits from its windows' logits, "mean" (None's
            meaning there) or "max", in `fit`, `evaluate`, `predict` and `export`. `BertTokenClassifier` tags each
            word from the window where it has the most context and takes none.

    Examples:
        >>> BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2, long_inputs=LongInputs(doc_stride=128))
        >>> BertTokenClassifier.from_preset("all_minilm_l6_v2_en", num_tags=9, long_inputs=LongInputs(doc_stride=64))
    """

    doc_stride: int = 128
    window_pooling: str = None

    def __post_init__(self):
        check_count("doc_stride", self.doc_stride, 0, hint=" It counts the pieces consecutive windows share.")
        if self.window_pooling is not None:
            check_window_pooling(self.window_pooling)

    def check_fits(self, window_length):
        """A ValueError unless each window moves on by at least one piece in windows of `window_length` tokens."""
        check_doc_stride(self.doc_stride, window_length)

    @classmethod
    def for_windows_of(cls, value, window_length):
        """`value` as a `LongInputs` (see `coerce`) whose windows of `window_length` tokens each move on."""
        value = cls.coerce(value)
        if value is not None:
            value.check_fits(window_length)
        return value

    def get_config(self):
        return dataclasses.asdict(self)

    @classmethod
    def coerce(cls, value):
        """`value` as a `LongInputs`: itself, one from a dict of its fields (a saved config), or None (no windows)."""
        if value is None or isinstance(value, cls):
            return value
        if isinstance(value, dict):
            return cls(**value)
        example = f"LongInputs(doc_stride={value})" if isinstance(value, int) else "LongInputs(doc_stride=128)"
        raise TypeError(f"long_inputs takes a LongInputs, got {type(value).__name__} {value!r}: e.g. "
                        f"long_inputs={example}.")


def long_inputs_from_legacy(config):
    """A task config saved with `doc_stride` / `window_pooling` keys -> one with `long_inputs`; newer ones as they
    are."""
    if not set(LEGACY_KEYS) & config.keys():
        return config
    config = dict(config)
    fields = {name: config.pop(name) for name in LEGACY_KEYS if name in config}
    config["long_inputs"] = None if fields.get("doc_stride") is None else fields
    return config
