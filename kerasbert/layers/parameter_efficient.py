"""Adapters and LoRA in a backbone: their constructor arguments, loading stock weights around them, and
merging LoRA back into the kernels.

Examples:
    >>> backbone = BertBackbone.from_preset("all_minilm_l6_v2_en", lora_rank=8, lora_alpha=16)
    >>> stock = backbone.merged()          # same outputs, plain kernels, exportable to HF
"""

from keras import ops

from kerasbert.arguments import check_count, check_number
from kerasbert.layers.lora import LoraConfig


def parameter_efficient_arguments(hidden_dim, adapter_size, lora_rank, lora_alpha, lora_targets, lora_dropout):
    """The blocks' adapter / LoRA arguments (none when neither is asked for, so research blocks with their
    own constructors keep working), after checking the sizes against `hidden_dim`."""
    arguments = {}
    if adapter_size is not None:
        arguments["adapter_size"] = check_size("adapter_size", adapter_size, hidden_dim)
    if lora_rank is not None:
        arguments["lora_config"] = LoraConfig(check_size("lora_rank", lora_rank, hidden_dim), lora_alpha, lora_targets,
                                              lora_dropout)
        if lora_alpha is not None:
            check_number("lora_alpha", lora_alpha, 0, low_open=True, hint=" The update is scaled by lora_alpha / "
                         "lora_rank.")
    return arguments


def is_parameter_efficient(config):
    """Whether a backbone config asks for adapters or LoRA."""
    return bool(config.get("adapter_size") or config.get("lora_rank"))


def copy_weights_by_path(source, target, skip_missing=False):
    """Assign every weight of `source` to the weight of `target` at the same path (each source weight must
    have one, unless `skip_missing`)."""
    targets = {weight.path: weight for weight in target.weights}
    for weight in source.weights:
        if weight.path in targets:
            targets[weight.path].assign(weight)
        elif not skip_missing:
            raise ValueError(f"{weight.path} has no counterpart in the target model.")


def check_size(name, value, hidden_dim):
    """An int in [1, hidden_dim], or a ValueError naming `name` and the range."""
    return check_count(name, value, 1, hidden_dim, hint=f" {hidden_dim} is the hidden size.")


def merge_lora_weights(backbone, merged):
    """Copy `backbone`'s weights into `merged` (the same backbone built without LoRA), adding each LoRA
    update to the kernel it adapts: the query/key/value parts of the fused QKV kernel, the attention
    output, the feed-forward's intermediate and output kernels."""
    copy_weights_by_path(backbone, merged, skip_missing=True)
    for block, merged_block in zip(backbone.encoder_blocks, merged.encoder_blocks):
        attention, merged_attention = block.attention, merged_block.attention
        hidden = attention.hidden_dim
        for index, target in enumerate(("query", "key", "value")):
            if target in attention.lora:
                kernel = merged_attention.qkv_dense.kernel
                start = index * hidden
                update = ops.pad(attention.lora[target].delta(), [[0, 0], [start, 2 * hidden - start]])
                kernel.assign(kernel + ops.cast(update, kernel.dtype))
        updates = [(attention.lora.get("attention_output"), merged_attention.output_dense),
                   (block.lora.get("intermediate"), merged_block.intermediate_dense),
                   (block.lora.get("output"), merged_block.output_dense)]
        for update, dense in updates:
            if update is not None:
                dense.kernel.assign(dense.kernel + ops.cast(update.delta(), dense.kernel.dtype))
