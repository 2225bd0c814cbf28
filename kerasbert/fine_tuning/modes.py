"""How much of BERT a task trains: `fine_tuning="full"`, `"frozen"`, `"adapters"` or `"lora"`.

- full: every weight (BERT's fine-tuning);
- frozen: the backbone is fixed, only the head trains (feature-based use; with
  `FineTuningConfig("frozen", layer_mix=True)` the head reads a learned mix of every layer, as ELMo);
- adapters: Houlsby adapters in every block, the LayerNorms and the head train (Houlsby et al. 2019);
- lora: low-rank updates of the attention projections (and any `lora_targets`) and the head train (Hu
  et al. 2021, as HF peft).
The pooler, embeddings and every pre-trained projection stay fixed in the last three. Any mode can train
quantisation-aware (`quantization_aware=True`, Q8BERT: `kerasbert.fine_tuning.quantization_aware`).

Examples:
    >>> lora = FineTuningConfig("lora", lora_rank=8)
    >>> classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2, fine_tuning=lora)
"""

import dataclasses

from kerasbert.arguments import check_count, check_number

FINE_TUNING_MODES = ("full", "frozen", "adapters", "lora")
DEFAULT_ADAPTER_SIZE = 64
DEFAULT_LORA_RANK, DEFAULT_LORA_ALPHA = 8, 16
PEFT_FIELDS = ("adapter_size", "lora_rank", "lora_alpha", "lora_targets")


def check_fine_tuning(fine_tuning):
    if fine_tuning not in FINE_TUNING_MODES:
        raise ValueError(f"fine_tuning={fine_tuning!r} is not one of {list(FINE_TUNING_MODES)}.")


@dataclasses.dataclass(frozen=True)
class FineTuningConfig:
    """The fine-tuning mode and its sizes, as one object; `fine_tuning="lora"` is short for
    `FineTuningConfig("lora")`.

    Args:
        mode: "full", "frozen", "adapters" or "lora".
        adapter_size: the adapters' bottleneck width ("adapters"; default 64, at most the hidden width).
        lora_rank, lora_alpha, lora_targets: the LoRA rank (8), scale numerator (16) and the projections it
            updates (default query and value; see `BertBackbone`) ("lora").
        layer_mix: the default head reads a learned mix of every layer (ELMo's scalar mix), in any mode; a task
            built by `from_preset` gets a backbone that returns every layer.
        quantization_aware: train on the int8 grid that `quantize("int8")` will use (Q8BERT), in any mode.

    Examples:
        >>> config = FineTuningConfig("lora", lora_rank=4, lora_targets=("query", "value", "output"))
        >>> BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2, fine_tuning=config)
    """

    mode: str = "full"
    adapter_size: int = None
    lora_rank: int = None
    lora_alpha: float = None
    lora_targets: tuple = None
    layer_mix: bool = False
    quantization_aware: bool = False

    def __post_init__(self):
        check_fine_tuning(self.mode)
        if self.mode != "adapters" and self.adapter_size is not None:
            raise ValueError(f"adapter_size applies to mode 'adapters'; this config has mode {self.mode!r}.")
        if self.mode != "lora" and any(getattr(self, name) is not None for name in PEFT_FIELDS[1:]):
            raise ValueError(f"lora_rank, lora_alpha and lora_targets apply to mode 'lora'; this config has mode "
                             f"{self.mode!r}.")
        for name in ("adapter_size", "lora_rank"):
            if getattr(self, name) is not None:
                check_count(name, getattr(self, name))
        if self.lora_alpha is not None:
            check_number("lora_alpha", self.lora_alpha, 0, low_open=True)
        if self.lora_targets is not None:
            object.__setattr__(self, "lora_targets", tuple(self.lora_targets))
        for name in ("layer_mix", "quantization_aware"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {getattr(self, name)!r}.")

    @classmethod
    def coerce(cls, value):
        """`value` as a `FineTuningConfig`: itself, one for a mode name, one from a dict of its fields (a saved
        config), or the default ("full") for None."""
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, dict):
            return cls(**value)
        if not isinstance(value, cls):
            raise TypeError(f"fine_tuning takes a mode name ({', '.join(FINE_TUNING_MODES)}) or a "
                            f"FineTuningConfig, got {type(value).__name__} {value!r}.")
        return value

    def backbone_overrides(self, hidden_dim):
        """The backbone config values this config needs: adapter or LoRA sizes (defaults filled in), every layer's
        output for `layer_mix`."""
        overrides = {"output_hidden_states": True} if self.layer_mix else {}
        if self.mode == "adapters":
            overrides["adapter_size"] = min(DEFAULT_ADAPTER_SIZE, hidden_dim) if self.adapter_size is None \
                else self.adapter_size
        if self.mode == "lora":
            overrides["lora_rank"] = min(DEFAULT_LORA_RANK, hidden_dim) if self.lora_rank is None else self.lora_rank
            overrides["lora_alpha"] = DEFAULT_LORA_ALPHA if self.lora_alpha is None else self.lora_alpha
            if self.lora_targets is not None:
                overrides["lora_targets"] = list(self.lora_targets)
        return overrides

    def saved(self):
        """What a task's config keeps of it: the mode name, or `{"mode", ...}` with `layer_mix` or
        `quantization_aware` when set (the sizes are the backbone's)."""
        switches = {name: True for name in ("layer_mix", "quantization_aware") if getattr(self, name)}
        return {"mode": self.mode, **switches} if switches else self.mode

    @classmethod
    def of_backbone(cls, fine_tuning, backbone_config):
        """The config that built a backbone with `backbone_config` for `fine_tuning` (a mode name or a saved
        config; the sizes read back from the backbone)."""
        config = cls.coerce(fine_tuning)
        if config.mode == "adapters":
            return dataclasses.replace(config, adapter_size=backbone_config["adapter_size"])
        if config.mode == "lora":
            return dataclasses.replace(config, lora_rank=backbone_config["lora_rank"],
                                       lora_alpha=backbone_config["lora_alpha"],
                                       lora_targets=backbone_config["lora_targets"])
        return config


def fine_tuning_from_legacy(config):
    """A task config saved with a `layer_mix` key of its own -> one whose `fine_tuning` holds it."""
    if "layer_mix" not in config:
        return config
    config = dict(config)
    mode = FineTuningConfig.coerce(config.get("fine_tuning")).mode
    config["fine_tuning"] = FineTuningConfig(mode, layer_mix=config.pop("layer_mix")).saved()
    return config


def check_fields_given_apart(task_args, fine_tuning):
    """A TypeError for the adapter / LoRA sizes or `layer_mix` given as task arguments of their own (they are
    `FineTuningConfig` fields)."""
    given = [name for name in (*PEFT_FIELDS, "layer_mix") if name in task_args]
    if given:
        example = ", ".join(f"{name}={task_args[name]!r}" for name in given)
        modes = {"adapter_size": "adapters", "layer_mix": FineTuningConfig.coerce(fine_tuning).mode}
        mode = modes.get(given[0], "lora")
        raise TypeError(f"{', '.join(given)} belong to the fine-tuning config: pass "
                        f"fine_tuning=FineTuningConfig({mode!r}, {example}).")


def apply_fine_tuning(task, fine_tuning):
    """Freeze what `fine_tuning` (a mode name) leaves fixed in `task`'s backbone (see the module docstring)."""
    check_fine_tuning(fine_tuning)
    backbone = task.backbone
    if fine_tuning == "full":
        return
    if fine_tuning == "adapters" and not backbone.adapter_size:
        raise ValueError("fine_tuning='adapters' needs a backbone with adapters: build it with adapter_size=... "
                         "(from_preset(..., fine_tuning='adapters') does).")
    if fine_tuning == "lora" and not backbone.lora_rank:
        raise ValueError("fine_tuning='lora' needs a backbone with LoRA updates: build it with lora_rank=... "
                         "(from_preset(..., fine_tuning='lora') does).")
    if fine_tuning == "frozen":
        # Each layer, not only the backbone: a backbone built with trainable=False (as one reloaded from its
        # config is) would not pass a second `trainable = False` on to its layers' variables.
        for layer in backbone.layers:
            layer.trainable = False
        backbone.trainable = False
        return
    fixed = [layer for layer in (backbone.embedding, getattr(backbone, "embedding_projection", None), backbone.pooler)
             if layer is not None]
    for block in backbone.encoder_blocks:
        fixed += [block.attention.qkv_dense, block.attention.output_dense, block.intermediate_dense, block.output_dense]
        if fine_tuning == "lora":
            fixed += [block.attention_layer_norm, block.output_layer_norm]
    if backbone.final_layer_norm is not None and fine_tuning == "lora":
        fixed.append(backbone.final_layer_norm)
    for layer in fixed:
        layer.trainable = False
