"""HF transformers BERT folders: `config.json`, `model.safetensors`, `vocab.txt`, tokenizer files."""

import json
from pathlib import Path

import numpy as np

from kerasbert.atomic_files import atomic_path, write_text_atomically
from kerasbert.presets.checkpoint import Checkpoint, CheckpointError

# HF `hidden_act` -> kerasbert activation. "gelu" in HF is the exact erf GELU.
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

# HF config key -> BertBackbone argument.
CONFIG_KEYS = {
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
HEAD_ARCHITECTURES = [
    ("qa_outputs.", "BertForQuestionAnswering"),
    ("classifier.", "BertForSequenceClassification"),
    ("cls.seq_relationship.", "BertForPreTraining"),
    ("cls.predictions.", "BertForMaskedLM"),
]


def read_json(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{path} is not valid JSON ({error}); the file is corrupt.") from None


def backbone_config_from_hf(hf_config, source, activation_names=HF_ACTIVATIONS):
    """Translate a HF/Google BERT config dict into `BertBackbone` arguments.

    Example:
    >>> backbone_config_from_hf({"hidden_size": 384, ...}, "config.json")["hidden_dim"]
    384
    """
    model_type = hf_config.get("model_type", "bert")
    if model_type != "bert":
        raise CheckpointError(f"{source} describes a {model_type!r} model; kerasbert reads BERT checkpoints.")
    position_type = hf_config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise CheckpointError(
            f"{source}: position_embedding_type={position_type!r} is not supported; BERT uses "
            "learned absolute positions."
        )
    missing = [key for key in CONFIG_KEYS if key not in hf_config and key != "layer_norm_eps"]
    if missing:
        raise CheckpointError(f"{source} lacks the BERT config keys {missing}.")
    config = {ours: hf_config[theirs] for theirs, ours in CONFIG_KEYS.items() if theirs in hf_config}
    config.setdefault("layer_norm_epsilon", 1e-12)
    activation = hf_config.get("hidden_act", "gelu")
    if activation not in activation_names:
        raise CheckpointError(
            f"{source}: hidden_act={activation!r} is not supported; expected one of "
            f"{sorted(activation_names)}."
        )
    config["activation"] = activation_names[activation]
    return config


def hf_config_from_backbone(config, id2label=None, architecture="BertModel"):
    """The HF `config.json` dict of a `BertBackbone` config."""
    if config.get("normalize_first"):
        raise ValueError("A pre-LN backbone (normalize_first=True) has no HF BERT equivalent.")
    hf = {theirs: config[ours] for theirs, ours in CONFIG_KEYS.items()}
    hf.update(
        {
            "architectures": [architecture],
            "model_type": "bert",
            "hidden_act": KERASBERT_TO_HF_ACTIVATION[config["activation"]],
            "position_embedding_type": "absolute",
            "pad_token_id": 0,
        }
    )
    if id2label:
        hf["id2label"] = {str(i): label for i, label in id2label.items()}
        hf["label2id"] = {label: int(i) for i, label in id2label.items()}
    return hf


def canonical_name(name):
    """Strip the `bert.` prefix of task checkpoints and rename old LayerNorm gamma/beta."""
    if name.startswith("bert."):
        name = name[len("bert."):]
    return name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")


def read_weights(folder, allow_pickle):
    """Read `model.safetensors` (or, with `allow_pickle=True`, `pytorch_model.bin`)."""
    safetensors_path = folder / "model.safetensors"
    pickle_path = folder / "pytorch_model.bin"
    if safetensors_path.is_file():
        from safetensors import SafetensorError
        from safetensors.numpy import load_file

        try:
            raw = load_file(str(safetensors_path))
        except (SafetensorError, OSError, ValueError) as error:
            raise CheckpointError(
                f"{safetensors_path} cannot be read ({error}); the file is truncated or corrupt. "
                "Download it again."
            ) from None
    elif pickle_path.is_file():
        if not allow_pickle:
            raise CheckpointError(
                f"{folder} has only pytorch_model.bin, a pickle that can run code when loaded. "
                "Pass allow_pickle=True if you trust it, or convert it to model.safetensors."
            )
        raw = read_pickled_weights(pickle_path)
    else:
        raise CheckpointError(f"{folder} has no model.safetensors (or pytorch_model.bin).")
    return {canonical_name(name): np.asarray(value) for name, value in raw.items()}


def read_pickled_weights(path):
    try:
        import torch
    except ImportError:
        raise CheckpointError(
            f"Reading {path} needs torch (`pip install torch`); or convert it to safetensors."
        ) from None
    try:
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as error:  # torch raises many types for corrupt pickles
        raise CheckpointError(f"{path} cannot be read ({error}); the file is corrupt.") from None
    return {name: tensor.float().numpy() for name, tensor in state.items()}


def tokenizer_config_from_hf(folder):
    """Casing settings from `tokenizer.json` (the fast tokenizer's normalizer) or `tokenizer_config.json`."""
    tokenizer_json = folder / "tokenizer.json"
    if tokenizer_json.is_file():
        normalizer = read_json(tokenizer_json).get("normalizer") or {}
        if normalizer.get("type") == "BertNormalizer":
            return {
                "lowercase": bool(normalizer.get("lowercase", True)),
                "strip_accents": normalizer.get("strip_accents"),
                "tokenize_chinese_chars": bool(normalizer.get("handle_chinese_chars", True)),
            }
    settings = {}
    config_path = folder / "tokenizer_config.json"
    if config_path.is_file():
        settings = read_json(config_path)
    return {
        "lowercase": bool(settings.get("do_lower_case", True)),
        "strip_accents": settings.get("strip_accents"),
        "tokenize_chinese_chars": bool(settings.get("tokenize_chinese_chars", True)),
    }


def read_hf_folder(folder, load_weights=True, allow_pickle=False):
    """Read a HF BERT folder into a `Checkpoint`.

    Example:
    >>> checkpoint = read_hf_folder(Path("all-MiniLM-L6-v2"))
    >>> checkpoint.backbone_config["num_layers"]
    6
    """
    folder = Path(folder)
    hf_config = read_json(folder / "config.json")
    id2label = hf_config.get("id2label")
    if id2label:
        id2label = {int(i): label for i, label in id2label.items()}
    vocabulary = folder / "vocab.txt"
    return Checkpoint(
        source=str(folder),
        format="hf",
        backbone_config=backbone_config_from_hf(hf_config, folder / "config.json"),
        tokenizer_config=tokenizer_config_from_hf(folder),
        vocabulary_path=vocabulary if vocabulary.is_file() else None,
        state_dict=read_weights(folder, allow_pickle) if load_weights else None,
        id2label=id2label,
        architectures=tuple(hf_config.get("architectures") or ()),
    )


def write_hf_folder(folder, backbone_config, state_dict, vocabulary, tokenizer_config, id2label=None):
    """Write a folder that `transformers.AutoModel.from_pretrained` and `BertTokenizerFast` load.

    `state_dict` uses HF `BertModel` names; head weights (`cls.*`, `classifier.*`,
    `qa_outputs.*`) are written with the `bert.` prefix convention of HF task models.
    """
    from safetensors.numpy import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    architecture = next(
        (arch for prefix, arch in HEAD_ARCHITECTURES if any(k.startswith(prefix) for k in state_dict)),
        "BertModel",
    )
    if architecture != "BertModel":
        head_prefixes = ("cls.", "classifier.", "qa_outputs.")
        state_dict = {
            (name if name.startswith(head_prefixes) else f"bert.{name}"): value
            for name, value in state_dict.items()
        }
    # Each file is written beside its name and renamed (a kill never leaves a torn one), config.json last:
    # a new folder is a checkpoint only once it is complete.
    with atomic_path(folder / "model.safetensors") as temporary:
        save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in state_dict.items()},
                  str(temporary), metadata={"format": "pt"})
    if vocabulary is not None:
        write_text_atomically(folder / "vocab.txt", "\n".join(vocabulary) + "\n")
    tokenizer_json = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": tokenizer_config.get("lowercase", True),
        "strip_accents": tokenizer_config.get("strip_accents"),
        "tokenize_chinese_chars": tokenizer_config.get("tokenize_chinese_chars", True),
        "model_max_length": backbone_config["max_sequence_length"],
    }
    write_text_atomically(folder / "tokenizer_config.json", json.dumps(tokenizer_json, indent=2))
    hf_config = hf_config_from_backbone(backbone_config, id2label, architecture)
    write_text_atomically(folder / "config.json", json.dumps(hf_config, indent=2))
    return folder
