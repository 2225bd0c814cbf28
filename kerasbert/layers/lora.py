"""LoRA (Hu et al. 2021): a trainable low-rank update beside a frozen projection, as HF peft computes it.

kerasbert has its own rather than Keras' `Dense.enable_lora`: the attention's query, key and value share
one fused kernel, and peft adapts them separately (BERT's default: query and value only); and a Keras
Dense saves its LoRA merged into the kernel and restarts the factors at zero on load, so a reloaded model
could not go on training its adapters.
"""

import dataclasses
import math

import keras
from keras import ops

# Projections of an encoder block that take a LoRA update, as peft's target_modules name them in HF BERT.
LORA_TARGETS = ("query", "key", "value", "attention_output", "intermediate", "output")
DEFAULT_LORA_TARGETS = ("query", "value")  # peft's default for BERT
LEGACY_KEYS = {"lora_rank": "rank", "lora_alpha": "alpha", "lora_targets": "targets", "lora_dropout": "dropout"}


@dataclasses.dataclass(frozen=True)
class LoraConfig:
    """The LoRA updates of an encoder block or attention layer, as one object (peft's `LoraConfig` fields).

    Args:
        rank: r, the rank of every update.
        alpha: the update is scaled by `alpha / rank` (None: alpha = rank).
        targets: the projections updated, among `LORA_TARGETS` (default query and value, as peft).
        dropout: dropout on each update's input.

    Examples:
        >>> block = TransformerEncoderBlock(num_heads=2, intermediate_dim=32, lora_config=LoraConfig(rank=4))
    """

    rank: int
    alpha: float = None
    targets: tuple = DEFAULT_LORA_TARGETS
    dropout: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "targets", tuple(check_lora_targets(self.targets)))

    def get_config(self):
        return {**dataclasses.asdict(self), "targets": list(self.targets)}

    @classmethod
    def coerce(cls, value):
        """`value` as a `LoraConfig`: itself, one from a dict of its fields (a saved config), or None (no LoRA)."""
        return cls(**value) if isinstance(value, dict) else value


def lora_config_from_legacy(config):
    """A layer config saved with `lora_rank`, `lora_alpha`, ... keys -> one with `lora_config`."""
    if not LEGACY_KEYS.keys() & config.keys():
        return config
    config = dict(config)
    fields = {new: config.pop(old) for old, new in LEGACY_KEYS.items() if old in config}
    config["lora_config"] = fields if fields.get("rank") else None
    return config


@keras.saving.register_keras_serializable(package="kerasbert")
class LowRankUpdate(keras.layers.Layer):
    """`dropout(x) @ A @ B * alpha / rank`: the update LoRA adds to a frozen projection `x @ W`.

    `A` (`[in, rank]`) starts uniform in +-1/sqrt(in) (peft's kaiming-uniform), `B` (`[rank, units]`) at
    zero, so the adapted projection equals the frozen one at step 0. `merged_kernel(kernel)` is
    `kernel + A @ B * alpha / rank`: the one matrix that serves the same outputs without the update.

    Args:
        units: the projection's output width.
        rank: r, the rank of the update.
        alpha: peft's `lora_alpha`; the update is scaled by `alpha / rank` (default alpha = rank: scale 1).
        dropout: dropout on the update's input (peft's `lora_dropout`).

    Examples:
        >>> update = LowRankUpdate(units=8, rank=2, alpha=4)
        >>> x = ops.ones((3, 8))
        >>> projection = ops.matmul(x, kernel) + update(x)     # equal to x @ kernel at step 0
    """

    def __init__(self, units, rank, alpha=None, dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.rank = rank
        self.alpha = rank if alpha is None else alpha
        self.dropout = dropout
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    @property
    def scale(self):
        return self.alpha / self.rank

    def build(self, input_shape):
        bound = 1 / math.sqrt(input_shape[-1])
        self.lora_a = self.add_weight(shape=(input_shape[-1], self.rank), name="lora_a",
                                      initializer=keras.initializers.RandomUniform(-bound, bound))
        self.lora_b = self.add_weight(shape=(self.rank, self.units), initializer="zeros", name="lora_b")
        self.built = True

    def call(self, x, training=None):
        x = self.dropout_layer(x, training=training)
        return ops.matmul(ops.matmul(x, self.lora_a), self.lora_b) * ops.cast(self.scale, x.dtype)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.units,)

    def delta(self):
        """`A @ B * alpha / rank`, the `[in, units]` matrix this update adds to the kernel."""
        return ops.matmul(self.lora_a, self.lora_b) * self.scale

    def get_config(self):
        return {**super().get_config(), "units": self.units, "rank": self.rank, "alpha": self.alpha,
                "dropout": self.dropout}


def check_lora_targets(targets):
    """A tuple of known target names, or a ValueError naming the unknown ones and the valid choices."""
    targets = (targets,) if isinstance(targets, str) else tuple(targets)
    unknown = [target for target in targets if target not in LORA_TARGETS]
    if unknown or not targets:
        raise ValueError(f"lora_targets {list(targets)}: {'unknown ' + str(unknown) if unknown else 'none given'}; "
                         f"choose from {list(LORA_TARGETS)} (peft's BERT default: {list(DEFAULT_LORA_TARGETS)}).")
    return targets
