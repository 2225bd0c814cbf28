"""Map BertBackbone variables to HF BERT state-dict names (the canonical checkpoint names).

Every checkpoint reader in `kerasbert.presets` hands over weights under HF `BertModel`
names in torch layout (`Linear.weight` is `[out, in]`); this module moves them into a
backbone and back out, so the presets package never needs to know a model class.
"""

import warnings

import numpy as np

from kerasbert.presets.checkpoint import CheckpointError


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
            yield from dense_links(layer, name)
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
    yield from dense_links(backbone.pooler, "pooler.dense")


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


def masked_lm_head_links(head):
    """`(variable, hf_names, kind)` of a `MaskedLMHead` (`cls.predictions.*`).

    A tied head has no decoder weight of its own: HF ties `cls.predictions.decoder.weight`
    to the word embeddings the same way.
    """
    prefix = "cls.predictions"
    yield from dense_links(head.dense, f"{prefix}.transform.dense")
    yield head.layer_norm.gamma, [f"{prefix}.transform.LayerNorm.weight"], "copy"
    yield head.layer_norm.beta, [f"{prefix}.transform.LayerNorm.bias"], "copy"
    yield head.output_bias, [f"{prefix}.bias"], "copy"
    if head.token_embedding is None:
        yield head.decoder_kernel, [f"{prefix}.decoder.weight"], "kernel"


def dense_links(layer, name):
    """`(variable, hf_names, kind)` of a Dense layer stored as a torch Linear called `name`."""
    yield layer.kernel, [f"{name}.weight"], "kernel"
    yield layer.bias, [f"{name}.bias"], "copy"


def assign_links(links, state_dict, source, optional=()):
    """Copy HF-named arrays into the linked variables.

    Raises ValueError naming `source`, the weight and both shapes when a shape does not
    match the config, or listing the weights the checkpoint lacks. Names in `optional`
    may be absent (their variables keep their initialisation); returns those missing.

    Example:
    >>> missing = assign_links(weight_links(backbone), state_dict, "model.safetensors")
    """
    links = list(links)
    missing = [name for _, names, _ in links for name in names if name not in state_dict]
    missing_required = [name for name in missing if name not in optional]
    if missing_required:
        raise ValueError(
            f"{source} lacks {len(missing_required)} weight(s) the model needs, e.g. "
            f"{missing_required[:5]}. Is this a BERT checkpoint with the same number of layers?"
        )
    for variable, names, kind in links:
        if any(name in missing for name in names):
            continue
        value = to_keras_layout([np.asarray(state_dict[name]) for name in names], kind)
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{source}: weight {names[0]} has shape {tuple(state_dict[names[0]].shape)}, which "
                f"does not fit the config (expected {tuple(variable.shape)} for {variable.path}). "
                "The config and the weights do not belong together."
            )
        variable.assign(value.astype(variable.dtype))
    return missing


def export_links(links):
    """The linked variables as a dict of HF names -> numpy arrays (torch layout)."""
    state = {}
    for variable, names, kind in links:
        for name, array in zip(names, to_hf_layout(np.asarray(variable.numpy()), kind)):
            state[name] = np.ascontiguousarray(array)
    return state


def export_hf_weights(backbone):
    """Return the backbone's weights as a dict of HF `BertModel` names -> numpy arrays."""
    return export_links(weight_links(backbone))


def apply_checkpoint(backbone, checkpoint):
    """Load a `kerasbert.presets.Checkpoint`'s weights into `backbone` (any format)."""
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
    missing = assign_links(
        weight_links(backbone), checkpoint.state_dict, checkpoint.source,
        optional=("pooler.dense.weight", "pooler.dense.bias"),
    )
    if missing:
        warnings.warn(
            f"{checkpoint.source} has no {', '.join(missing)}: the pooler keeps its fresh "
            "initialisation (pooled_output is untrained; sequence_output is exact).",
            stacklevel=3,
        )
