"""ELECTRA's heads under HF names: the discriminator's `ReplacedTokenHead` (`ElectraForPreTraining`) and the
`ElectraGenerator` (`ElectraForMaskedLM`, its embeddings being the discriminator's).

Examples:
    >>> load_replaced_token_head(head, load_checkpoint("electra-small-discriminator"))
    True
    >>> sorted(export_links(generator_links(generator)))[0]
    'embeddings_project.bias'
"""

import warnings

import numpy as np

from kerasbert.families.checkpoint_weights import (
    assign_links,
    block_links,
    dense_links,
    masked_lm_head_links,
)
from kerasbert.families.family import family_named
from kerasbert.families.family_heads import masked_lm_head_names

# ELECTRA's discriminator head (`ReplacedTokenHead`) in HF `ElectraForPreTraining`; its activation is hidden_act.
REPLACED_TOKEN_HEAD = "discriminator_predictions"

# What an ElectraGenerator takes from a checkpoint's backbone config (the embedding settings are the discriminator's).
GENERATOR_ARGUMENTS = ("num_layers", "num_heads", "hidden_dim", "intermediate_dim", "activation", "dropout",
                       "attention_dropout", "layer_norm_epsilon", "initializer_range")
# Embedding settings a generator checkpoint must share with its discriminator.
SHARED_EMBEDDING_SETTINGS = ("vocabulary_size", "max_sequence_length", "num_segments")


def replaced_token_head_links(head):
    """`(variable, hf_names, kind)` of a `ReplacedTokenHead` (`discriminator_predictions.*`)."""
    yield from dense_links(head.dense, f"{REPLACED_TOKEN_HEAD}.dense")
    yield from dense_links(head.dense_prediction, f"{REPLACED_TOKEN_HEAD}.dense_prediction")


def load_replaced_token_head(head, checkpoint):
    """Load `discriminator_predictions.*` (HF `ElectraForPreTraining`) into `head`; returns whether the
    checkpoint had them."""
    weights = checkpoint.heads(f"{REPLACED_TOKEN_HEAD}.")
    if weights:
        assign_links(replaced_token_head_links(head), weights, checkpoint.source)
    return bool(weights)


def generator_links(generator):
    """`(variable, hf_names, kind)` of an `ElectraGenerator` under HF `ElectraForMaskedLM` names (the base model's
    prefix `electra.` stripped), except the embeddings, which are the discriminator's."""
    names = family_named("electra").weights
    if generator.embedding_projection is not None:
        yield from dense_links(generator.embedding_projection, names.projection)
    for index, block in enumerate(generator.encoder_blocks):
        prefix = names.block_prefix.format(index=index)
        yield from block_links(block, {part: f"{prefix}.{name}" for part, name in names.block.items()})
    yield from masked_lm_head_links(generator.mlm_head, "electra")


def generator_config_from_checkpoint(checkpoint, backbone_config):
    """The `ElectraGenerator` arguments of an ELECTRA generator checkpoint (HF `ElectraForMaskedLM` folder), or a
    ValueError, before any model is built, when it is no ELECTRA masked LM or its embeddings cannot be those
    of the discriminator whose config is `backbone_config`."""
    if checkpoint.family != "electra":
        raise ValueError(f"The generator {checkpoint.source} holds a {checkpoint.family or 'bert'!r} model; an "
                         "ELECTRA generator is an HF ElectraForMaskedLM folder (model_type 'electra').")
    if checkpoint.state_dict is not None and not checkpoint.heads(masked_lm_head_names("electra").prefix):
        raise ValueError(f"The generator {checkpoint.source} has no masked-LM head (generator_predictions.*, "
                         "generator_lm_head.*): pass an HF ElectraForMaskedLM folder, e.g. "
                         "google/electra-small-generator.")
    config = checkpoint.backbone_config
    width = config["embedding_dim"] or config["hidden_dim"]
    discriminator_width = backbone_config["embedding_dim"] or backbone_config["hidden_dim"]
    differing = [f"{key} {config[key]} vs {backbone_config[key]}" for key in SHARED_EMBEDDING_SETTINGS
                 if config[key] != backbone_config[key]]
    if width != discriminator_width:
        differing.append(f"embedding width {width} vs {discriminator_width}")
    if differing:
        raise ValueError(f"The generator {checkpoint.source} cannot share the discriminator's embeddings: "
                         f"{', '.join(differing)} (generator vs discriminator). ELECTRA's generator and "
                         "discriminator share one embedding layer; pass the generator trained with this discriminator.")
    return {name: config[name] for name in GENERATOR_ARGUMENTS}


def load_generator(generator, state_dict, source, discriminator_embeddings=None):
    """Load HF `ElectraForMaskedLM` weights (names without `electra.`) into `generator` (not its embeddings: those
    are the discriminator's). With `discriminator_embeddings` (the discriminator's word embedding table, numpy),
    warn when the checkpoint's own differ, which means the two were not trained together."""
    assign_links(generator_links(generator), state_dict, source)
    own = state_dict.get("embeddings.word_embeddings.weight")
    if discriminator_embeddings is not None and own is not None \
            and not np.allclose(own, discriminator_embeddings, atol=1e-6):
        warnings.warn(
            f"The generator {source} has other word embeddings than the discriminator (max |difference| "
            f"{np.abs(own - discriminator_embeddings).max():.3g}); ELECTRA shares them, so the generator reads the "
            "discriminator's. Were the two folders saved from one ELECTRA run?",
            stacklevel=3,
        )
