"""Map BertBackbone variables to HF BERT state-dict names (the canonical checkpoint names).

Every checkpoint reader in `kerasbert.presets` hands over weights under HF `BertModel`
names in torch layout (`Linear.weight` is `[out, in]`); this module moves them into a
backbone and back out, so the presets package never needs to know a model class.
"""

import warnings

import numpy as np


def weight_links(backbone):
    """Yield `(variable, hf_names, kind)` for every backbone weight.

    kind: "copy" (same layout), "kernel" (transpose), "qkv_kernel"/"qkv_bias" (three HF
    tensors fused into one variable along the output axis).
    """
    embedding = backbone.embedding
    yield embedding.token_embedding.embeddings, ["embeddings.word_embeddings.weight"], "copy"
    yield embedding.segment_embedding.embeddings, ["embeddings.token_type_embeddings.weight"], "copy"
    yield embedding.position_embedding.embeddings, ["embeddings.position_embeddings.weight"], "copy"
    yield embedding.layer_norm.gamma, ["embeddings.LayerNorm.weight"], "copy"
    yield embedding.layer_norm.beta, ["embeddings.LayerNorm.bias"], "copy"
    for i, block in enumerate(backbone.encoder_blocks):
        prefix = f"encoder.layer.{i}"
        qkv = [f"{prefix}.attention.self.{part}" for part in ("query", "key", "value")]
        attention = block.attention
        yield attention.qkv_dense.kernel, [f"{n}.weight" for n in qkv], "qkv_kernel"
        yield attention.qkv_dense.bias, [f"{n}.bias" for n in qkv], "qkv_bias"
        dense_layers = [
            (attention.output_dense, f"{prefix}.attention.output.dense"),
            (block.intermediate_dense, f"{prefix}.intermediate.dense"),
            (block.output_dense, f"{prefix}.output.dense"),
        ]
        for layer, name in dense_layers:
            yield layer.kernel, [f"{name}.weight"], "kernel"
            yield layer.bias, [f"{name}.bias"], "copy"
        norms = [
            (block.attention_layer_norm, f"{prefix}.attention.output.LayerNorm"),
            (block.output_layer_norm, f"{prefix}.output.LayerNorm"),
        ]
        for layer, name in norms:
            yield layer.gamma, [f"{name}.weight"], "copy"
            yield layer.beta, [f"{name}.bias"], "copy"
    if backbone.final_layer_norm is not None:
        yield backbone.final_layer_norm.gamma, ["encoder.final_layer_norm.weight"], "copy"
        yield backbone.final_layer_norm.beta, ["encoder.final_layer_norm.bias"], "copy"
    yield backbone.pooler.kernel, ["pooler.dense.weight"], "kernel"
    yield backbone.pooler.bias, ["pooler.dense.bias"], "copy"


def to_keras_layout(arrays, kind):
    if kind == "copy":
        return arrays[0]
    if kind == "kernel":
        return arrays[0].T
    if kind == "qkv_kernel":
        return np.concatenate([a.T for a in arrays], axis=1)
    return np.concatenate(arrays, axis=0)  # qkv_bias


def to_hf_layout(value, kind):
    if kind == "copy":
        return [value]
    if kind == "kernel":
        return [value.T]
    if kind == "qkv_kernel":
        return [part.T for part in np.split(value, 3, axis=1)]
    return np.split(value, 3, axis=0)  # qkv_bias


OPTIONAL_WEIGHTS = ("pooler.dense.weight", "pooler.dense.bias")


def assign_hf_weights(backbone, state_dict, source):
    """Copy HF-named arrays into `backbone`; returns the names that were not used.

    Raises ValueError naming `source`, the weight and both shapes when a shape does not
    match the config, or listing the weights the checkpoint lacks. A checkpoint without
    a pooler (e.g. exported sentence encoders) keeps the pooler's fresh initialisation,
    reported in the returned `missing_optional` list.

    Example:
    >>> unused, missing = assign_hf_weights(backbone, state_dict, "model.safetensors")
    """
    missing = [
        name for _, names, _ in weight_links(backbone) for name in names if name not in state_dict
    ]
    missing_required = [name for name in missing if name not in OPTIONAL_WEIGHTS]
    if missing_required:
        raise ValueError(
            f"{source} lacks {len(missing_required)} weight(s) the backbone needs, e.g. "
            f"{missing_required[:5]}. Is this a BERT checkpoint with the same number of layers?"
        )
    used = set()
    for variable, names, kind in weight_links(backbone):
        if any(name in missing for name in names):
            continue
        value = to_keras_layout([np.asarray(state_dict[name]) for name in names], kind)
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{source}: weight {names[0]} has shape {tuple(state_dict[names[0]].shape)}, which "
                f"does not fit the config (the backbone expects {tuple(variable.shape)} for "
                f"{variable.path}). The config and the weights do not belong together."
            )
        variable.assign(value.astype(variable.dtype))
        used.update(names)
    return sorted(set(state_dict) - used), missing


def export_hf_weights(backbone):
    """Return the backbone's weights as a dict of HF `BertModel` names -> numpy arrays."""
    state = {}
    for variable, names, kind in weight_links(backbone):
        for name, array in zip(names, to_hf_layout(np.asarray(variable.numpy()), kind)):
            state[name] = np.ascontiguousarray(array)
    return state


def apply_checkpoint(backbone, checkpoint):
    """Load a `kerasbert.presets.Checkpoint`'s weights into `backbone` (any format)."""
    from kerasbert.presets.checkpoint import CheckpointError

    if checkpoint.keras_weights_path is not None:
        try:
            backbone.load_weights(str(checkpoint.keras_weights_path))
        except Exception as error:  # h5py/keras raise many types for corrupt or mismatched files
            raise CheckpointError(
                f"{checkpoint.keras_weights_path} does not load into the backbone described by its "
                f"kerasbert.json ({type(error).__name__}: {error}). The file is corrupt or belongs to "
                "another config."
            ) from None
        return
    _, missing = assign_hf_weights(backbone, checkpoint.state_dict, checkpoint.source)
    if missing:
        warnings.warn(
            f"{checkpoint.source} has no {', '.join(missing)}: the pooler keeps its fresh "
            "initialisation (pooled_output is untrained; sequence_output is exact).",
            stacklevel=3,
        )
