"""The HF transformers model types kerasbert reads and writes, as data: config keys and settings per family.

A family says which HF config keys hold which backbone arguments, the HF class defaults of the keys a
`config.json` may leave out, and the backbone arguments it fixes (a DistilBERT has no segments and no
pooler): a reader sets them, a writer refuses a backbone whose values differ, because HF could not hold it.

Examples:
    >>> backbone_config_from_hf({"model_type": "roberta", "pad_token_id": 1, ...}, "config.json")["padding_token_id"]
    1
    >>> hf_config_from_backbone(albert_backbone.get_config(), "albert")["num_hidden_groups"]
    1
"""

import dataclasses

from kerasbert.presets.checkpoint import TOKENIZER_FILES, CheckpointError, UnsupportedModelTypeError

# HF activation names -> kerasbert activation. "gelu" in HF is the exact erf GELU.
HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_approximate",
    "gelu_pytorch_tanh": "gelu_approximate",
    "gelu_fast": "gelu_approximate",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
}
KERASBERT_TO_HF_ACTIVATION = {"gelu": "gelu", "gelu_approximate": "gelu_new", "relu": "relu", "silu": "silu"}

# HF BERT config key -> BertBackbone argument (RoBERTa, ELECTRA and ALBERT add to these).
BERT_CONFIG_KEYS = {
    "vocab_size": "vocabulary_size",
    "num_hidden_layers": "num_layers",
    "num_attention_heads": "num_heads",
    "hidden_size": "hidden_dim",
    "intermediate_size": "intermediate_dim",
    "hidden_dropout_prob": "dropout",
    "attention_probs_dropout_prob": "attention_dropout",
    "max_position_embeddings": "max_sequence_length",
    "type_vocab_size": "num_segments",
    "layer_norm_eps": "layer_norm_epsilon",
    "initializer_range": "initializer_range",
}
# The backbone arguments of stock BERT that only some families change.
STOCK_BERT = {"normalize_first": False, "embedding_dim": None, "num_block_groups": None, "blocks_per_group": 1,
              "padding_token_id": None, "use_pooler": True, "pooler_activation": "tanh"}
# HF settings kerasbert does not compute, with the one value it reads.
REQUIRED_HF_VALUES = {"position_embedding_type": "absolute", "is_decoder": False, "add_cross_attention": False,
                      "sinusoidal_pos_embds": False}


@dataclasses.dataclass(frozen=True)
class HfFamily:
    """How one HF model type maps onto `BertBackbone` arguments.

    config_keys: HF config key -> backbone argument. hf_defaults: the HF class defaults of keys a
    `config.json` may omit. fixed: backbone arguments the family fixes. architecture: the HF base model
    class. weight_prefix: the base model's prefix in HF task checkpoints ("albert." in AlbertForMaskedLM).
    marker_weight: a weight every checkpoint of the family has, under its base-model name.
    activation_key: the config key of the activation. tokenizer_files: the tokenizer's files in a checkpoint
    folder. tokenizer_settings: `(tokenizer.json dict or None, tokenizer_config.json dict) -> settings` of the
    family's tokenizer (None: WordPiece's). projects_only_other_widths: an `embedding_dim` equal to
    the hidden width means no embedding projection. hidden_wide_positions: the position table is `hidden_dim`
    wide whatever `embedding_dim` is (MobileBERT). required_values: HF settings of this family that kerasbert
    does not compute, with the one value it reads (added to `REQUIRED_HF_VALUES`). flat_config: `hf config dict ->
    the same dict with the family's nested settings as flat `config_keys` (ModernBERT's `rope_parameters`), or
    None.
    """

    config_keys: dict
    hf_defaults: dict
    fixed: dict
    architecture: str
    weight_prefix: str
    marker_weight: str = "encoder.layer.0.attention.self.query.weight"
    activation_key: str = "hidden_act"
    tokenizer_files: tuple = ("vocab.txt",)
    tokenizer_settings: object = None
    projects_only_other_widths: bool = False
    hidden_wide_positions: bool = False
    required_values: dict = dataclasses.field(default_factory=dict)
    flat_config: object = None


# HF model_type -> HfFamily, filled by `kerasbert.families` (each family folder registers its own).
FAMILIES = {}


def register_hf_family(model_type, family):
    """Make `model_type` readable and writable: its `HfFamily` and its tokenizer files (`TOKENIZER_FILES`)."""
    FAMILIES[model_type] = family
    TOKENIZER_FILES[model_type] = family.tokenizer_files


def family_of(hf_config, source):
    """The `FAMILIES` key of an HF config (no `model_type`: BERT), or an `UnsupportedModelTypeError`."""
    model_type = hf_config.get("model_type", "bert")
    if model_type not in FAMILIES:
        raise UnsupportedModelTypeError(
            f"{source} describes a {model_type!r} model; kerasbert reads the model types "
            f"{', '.join(sorted(FAMILIES))}."
        )
    return model_type


def backbone_config_from_hf(hf_config, source, activation_names=HF_ACTIVATIONS):
    """Translate an HF (or Google BERT) config dict of any supported family into backbone arguments."""
    model_type = family_of(hf_config, source)
    family = FAMILIES[model_type]
    hf_config = {**family.hf_defaults, **(family.flat_config(hf_config) if family.flat_config else hf_config)}
    for key, value in {**REQUIRED_HF_VALUES, **family.required_values}.items():
        if hf_config.get(key, value) != value:
            raise CheckpointError(f"{source}: {key}={hf_config[key]!r} is not supported; kerasbert reads {value!r}.")
    missing = [key for key in family.config_keys if key not in hf_config]
    if missing:
        raise CheckpointError(f"{source} lacks the {model_type} config keys {missing}.")
    config = {**family.fixed, **{ours: hf_config[theirs] for theirs, ours in family.config_keys.items()}}
    if family.projects_only_other_widths and config["embedding_dim"] == config["hidden_dim"]:
        config["embedding_dim"] = None  # e.g. HF ELECTRA projects the embeddings only when the widths differ
    activation = hf_config[family.activation_key]
    if activation not in activation_names:
        raise CheckpointError(
            f"{source}: {family.activation_key}={activation!r} is not supported; expected one of "
            f"{sorted(activation_names)}."
        )
    config["activation"] = activation_names[activation]
    return config


def hf_value(config, argument):
    """A backbone argument as HF spells it: the embedding width and the block-group count are never None."""
    if argument == "embedding_dim":
        return config["embedding_dim"] or config["hidden_dim"]
    if argument == "num_block_groups":
        return config["num_block_groups"] or config["num_layers"]
    return config[argument]


def hf_config_from_backbone(config, model_type="bert", architecture=None):
    """The HF `config.json` dict of a backbone config of family `model_type`; a ValueError names each argument
    the family's HF model cannot hold (e.g. a pre-LN block, a DistilBERT with segments)."""
    family = FAMILIES[model_type]
    unexpressible = [f"{name}={config.get(name, value)!r}" for name, value in family.fixed.items()
                     if name not in family.config_keys.values() and config.get(name, value) != value]
    if unexpressible:
        raise ValueError(f"An HF {model_type} model cannot hold a backbone with {', '.join(unexpressible)} "
                         f"(HF {family.architecture} fixes them); save it with save_to_preset(folder).")
    hf = {theirs: hf_value(config, ours) for theirs, ours in family.config_keys.items()}
    hf.update({"architectures": [architecture or family.architecture], "model_type": model_type,
               family.activation_key: KERASBERT_TO_HF_ACTIVATION[config["activation"]]})
    hf.setdefault("pad_token_id", 0)
    return hf
