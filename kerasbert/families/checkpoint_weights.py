"""Map backbone variables to HF state-dict names (the canonical checkpoint names), for every family.

Every checkpoint reader in `kerasbert.presets` hands over weights under the HF base model's names
(`BertModel`, `AlbertModel`, `RobertaModel`, `DistilBertModel`, `ElectraModel`, `MobileBertModel`) in torch layout
(`Linear.weight` is `[out, in]`); this module moves them into a backbone and back out, so the presets
package never needs to know a model class. Each family's `Family.weights` says where it keeps each part.
"""

import dataclasses
import warnings

import numpy as np

from kerasbert.families.family import family_named
from kerasbert.families.family_heads import masked_lm_head_names
from kerasbert.presets.checkpoint import CheckpointError

# Where HF keeps each part of an encoder block, relative to the block's prefix.
BERT_BLOCK = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
              "attention_output": "attention.output.dense", "attention_layer_norm": "attention.output.LayerNorm",
              "intermediate": "intermediate.dense", "output": "output.dense", "output_layer_norm": "output.LayerNorm"}
@dataclasses.dataclass(frozen=True)
class HfNames:
    """A family's HF weight names: `block` (see `BERT_BLOCK`), the prefix of distinct block `index` (which is
    inner block `inner` of group `group` in ALBERT), and the embedding projection and pooler Linear layers
    (None: the family has none)."""

    block: dict
    block_prefix: str
    projection: str | None
    pooler: str | None


def weight_links(backbone):
    """Yield `(variable, hf_names, kind)` for every backbone weight HF's model of `backbone.family` names.

    kind: "copy" (same layout), "kernel" (transpose), "qkv_kernel"/"qkv_bias" (three HF
    tensors fused into one variable along the output axis). A part the family has no name for (a
    projection in a BERT, a pooler in a DistilBERT) yields nothing. A family whose layers are not BERT's
    (MobileBERT) has `weights` of its own that yield them (`weights.links(backbone)`).
    """
    names = family_named(backbone.family).weights
    if not isinstance(names, HfNames):
        yield from names.links(backbone)
        return
    yield from embedding_links(backbone.embedding)
    if backbone.embedding_projection is not None and names.projection:
        yield from dense_links(backbone.embedding_projection, names.projection)
    for index, block in enumerate(backbone.encoder_blocks):
        prefix = names.block_prefix.format(index=index, group=index // backbone.blocks_per_group,
                                           inner=index % backbone.blocks_per_group)
        yield from block_links(block, {part: f"{prefix}.{name}" for part, name in names.block.items()})
    if backbone.final_layer_norm is not None:
        yield backbone.final_layer_norm.gamma, ["encoder.final_layer_norm.weight"], "copy"
        yield backbone.final_layer_norm.beta, ["encoder.final_layer_norm.bias"], "copy"
    if backbone.pooler is not None and names.pooler:
        yield from dense_links(backbone.pooler, names.pooler)


def embedding_links(embedding):
    """`(variable, hf_names, kind)` of a `TokenSegmentPositionEmbedding` under HF BERT's `embeddings.*` names."""
    yield embedding.token_embedding.embeddings, ["embeddings.word_embeddings.weight"], "copy"
    if embedding.segment_embedding is not None:
        yield embedding.segment_embedding.embeddings, ["embeddings.token_type_embeddings.weight"], "copy"
    yield embedding.position_embedding.embeddings, ["embeddings.position_embeddings.weight"], "copy"
    yield embedding.layer_norm.gamma, ["embeddings.LayerNorm.weight"], "copy"
    yield embedding.layer_norm.beta, ["embeddings.LayerNorm.bias"], "copy"


def block_links(block, names):
    """`(variable, hf_names, kind)` of one `TransformerEncoderBlock` whose parts HF calls `names`."""
    qkv = [names[part] for part in ("query", "key", "value")]
    attention = block.attention
    yield attention.qkv_dense.kernel, [f"{n}.weight" for n in qkv], "qkv_kernel"
    yield attention.qkv_dense.bias, [f"{n}.bias" for n in qkv], "qkv_bias"
    yield from dense_links(attention.output_dense, names["attention_output"])
    yield from dense_links(block.intermediate_dense, names["intermediate"])
    yield from dense_links(block.output_dense, names["output"])
    for layer, part in ((block.attention_layer_norm, "attention_layer_norm"),
                        (block.output_layer_norm, "output_layer_norm")):
        yield layer.gamma, [f"{names[part]}.weight"], "copy"
        yield layer.beta, [f"{names[part]}.bias"], "copy"


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


def masked_lm_head_links(head, family="bert", names=None):
    """`(variable, hf_names, kind)` of a `MaskedLMHead` under the names of `family`'s HF masked-LM head
    (`kerasbert.families.family_heads`: `cls.predictions.*` in BERT, `lm_head.*` in RoBERTa, ...), or under
    `names` (a `MaskedLMHeadNames`: the family's `alternative` layout).

    A tied head has no decoder weight of its own: HF ties the decoder to the word embeddings the same way.

    Examples:
        >>> sorted(export_links(masked_lm_head_links(head, "roberta")))[:2]
        ['lm_head.bias', 'lm_head.dense.bias']
    """
    names = names or masked_lm_head_names(family)
    yield from dense_links(head.dense, names.dense)
    yield from norm_links(head.layer_norm, names.layer_norm)
    yield head.output_bias, [names.bias], "copy"
    if head.token_embedding is None:
        yield head.decoder_kernel, [f"{names.decoder}.weight"], "kernel"


def dense_links(layer, name):
    """`(variable, hf_names, kind)` of a Dense layer stored as a torch Linear called `name` (bias only where the
    layer has one)."""
    yield layer.kernel, [f"{name}.weight"], "kernel"
    if getattr(layer, "use_bias", True):
        yield layer.bias, [f"{name}.bias"], "copy"


def norm_links(layer, name):
    """`(variable, hf_names, kind)` of a LayerNormalization stored as torch's `name` (beta only where the layer has
    one: HF `norm_bias`)."""
    yield layer.gamma, [f"{name}.weight"], "copy"
    if layer.center:
        yield layer.beta, [f"{name}.bias"], "copy"


def assign_links(links, state_dict, source, optional=()):
    """Copy HF-named arrays into the linked variables.

    Raises ValueError naming `source`, the weight and both shapes when a shape does not
    match the config, or listing the weights the checkpoint lacks. Names in `optional`
    may be absent (their variables keep their initialisation); returns those missing.

    Examples:
        >>> missing = assign_links(weight_links(backbone), state_dict, "model.safetensors")
    """
    links = list(links)
    missing = [name for _, names, _ in links for name in names if name not in state_dict]
    missing_required = [name for name in missing if name not in optional]
    if missing_required:
        raise ValueError(
            f"{source} lacks {len(missing_required)} weight(s) the model needs, e.g. "
            f"{missing_required[:5]}. Is this a checkpoint of the same model family with the same number of "
            "layers?"
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
    """Return the backbone's weights as a dict of HF base-model names (`BertModel`, `AlbertModel`, ... as
    `backbone.family`) -> numpy arrays."""
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
    pooler = family_named(backbone.family).weights.pooler
    missing = assign_links(
        weight_links(backbone), checkpoint.state_dict, checkpoint.source,
        optional=(f"{pooler}.weight", f"{pooler}.bias") if pooler else (),
    )
    if missing:
        warnings.warn(
            f"{checkpoint.source} has no {', '.join(missing)}: the pooler keeps its fresh "
            "initialisation (pooled_output is untrained; sequence_output is exact).",
            stacklevel=3,
        )
