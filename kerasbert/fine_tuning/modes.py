"""How much of BERT a task trains: `fine_tuning="full"`, `"frozen"`, `"adapters"` or `"lora"`.

- full: every weight (BERT's fine-tuning);
- frozen: the backbone is fixed, only the head trains (feature-based use; with `layer_mix=True` the head
  reads a learned mix of every layer, as ELMo);
- adapters: Houlsby adapters in every block, the LayerNorms and the head train (Houlsby et al. 2019);
- lora: low-rank updates of the attention projections (and any `lora_targets`) and the head train (Hu
  et al. 2021, as HF peft).
The pooler, embeddings and every pre-trained projection stay fixed in the last three.

Examples:
    >>> classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", fine_tuning="lora", lora_rank=8)
"""

FINE_TUNING_MODES = ("full", "frozen", "adapters", "lora")
DEFAULT_ADAPTER_SIZE = 64
DEFAULT_LORA_RANK, DEFAULT_LORA_ALPHA = 8, 16


def check_fine_tuning(fine_tuning):
    if fine_tuning not in FINE_TUNING_MODES:
        raise ValueError(f"fine_tuning={fine_tuning!r} is not one of {list(FINE_TUNING_MODES)}.")


def fine_tuning_overrides(fine_tuning, hidden_dim, adapter_size=None, lora_rank=None, lora_alpha=None,
                          lora_targets=None):
    """The backbone config values `fine_tuning` needs (adapters or LoRA factors), checked: sizes belong to
    their mode and lie in [1, hidden_dim] (the backbone checks the range)."""
    check_fine_tuning(fine_tuning)
    if fine_tuning != "adapters" and adapter_size is not None:
        raise ValueError(f"adapter_size applies to fine_tuning='adapters'; this task has fine_tuning={fine_tuning!r}.")
    if fine_tuning != "lora" and any(value is not None for value in (lora_rank, lora_alpha, lora_targets)):
        raise ValueError(f"lora_rank, lora_alpha and lora_targets apply to fine_tuning='lora'; this task has "
                         f"fine_tuning={fine_tuning!r}.")
    if fine_tuning == "adapters":
        return {"adapter_size": min(DEFAULT_ADAPTER_SIZE, hidden_dim) if adapter_size is None else adapter_size}
    if fine_tuning == "lora":
        rank = min(DEFAULT_LORA_RANK, hidden_dim) if lora_rank is None else lora_rank
        overrides = {"lora_rank": rank, "lora_alpha": DEFAULT_LORA_ALPHA if lora_alpha is None else lora_alpha}
        if lora_targets is not None:
            overrides["lora_targets"] = lora_targets
        return overrides
    return {}


def apply_fine_tuning(task, fine_tuning):
    """Freeze what `fine_tuning` leaves fixed in `task`'s backbone (see the module docstring)."""
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
