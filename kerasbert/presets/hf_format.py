"""HF transformers folders of BERT and its family (ALBERT, RoBERTa, DistilBERT, ELECTRA): `config.json`,
`model.safetensors`, `vocab.txt`, tokenizer files."""

import json
from pathlib import Path

import numpy as np

from kerasbert.atomic_files import atomic_path, write_text_atomically
from kerasbert.presets.checkpoint import Checkpoint, CheckpointError, FamilyMismatchError, tokenizer_location
from kerasbert.presets.hf_families import (
    FAMILIES,
    backbone_config_from_hf,
    family_of,
    hf_config_from_backbone,
)

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


def canonical_name(name, prefix="bert."):
    """Strip the base model's prefix of task checkpoints (`bert.`, `albert.`, ...) and rename old LayerNorm
    gamma/beta."""
    if name.startswith(prefix):
        name = name[len(prefix):]
    return name.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")


def read_weights(folder, allow_pickle, prefix="bert."):
    """Read `model.safetensors` (or, with `allow_pickle=True`, `pytorch_model.bin`), names without `prefix`."""
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
    return {canonical_name(name, prefix): np.asarray(value) for name, value in raw.items()}


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


def tokenizer_config_from_hf(folder, family="bert"):
    """The family's tokenizer settings from `tokenizer.json` (the fast tokenizer) or `tokenizer_config.json`."""
    tokenizer_json = folder / "tokenizer.json"
    fast = read_json(tokenizer_json) if tokenizer_json.is_file() else None
    config_path = folder / "tokenizer_config.json"
    settings = read_json(config_path) if config_path.is_file() else {}
    reader = FAMILIES[family].tokenizer_settings
    return (reader or wordpiece_settings)(fast, settings)


def wordpiece_settings(fast, settings):
    """`BertTokenizer` settings: casing, accents and CJK splitting from the fast tokenizer's normaliser, else
    `tokenizer_config.json`."""
    normalizer = (fast or {}).get("normalizer") or {}
    if normalizer.get("type") == "BertNormalizer":
        return {
            "lowercase": bool(normalizer.get("lowercase", True)),
            "strip_accents": normalizer.get("strip_accents"),
            "tokenize_chinese_chars": bool(normalizer.get("handle_chinese_chars", True)),
        }
    return {
        "lowercase": bool(settings.get("do_lower_case", True)),
        "strip_accents": settings.get("strip_accents"),
        "tokenize_chinese_chars": bool(settings.get("tokenize_chinese_chars", True)),
    }


def added_token(fast, content):
    """The `added_tokens` entry of `content` in a `tokenizer.json`, or None."""
    return next((token for token in (fast or {}).get("added_tokens", []) if token.get("content") == content), None)


def check_weights_fit_the_config(state_dict, config, model_type, source):
    """A CheckpointError, before any model is built, when the weights belong to another family (a
    `FamilyMismatchError`: the family's marker weight is missing; the message names the family they look
    like) or the embedding tables do not have the config's shapes (e.g. a RoBERTa config, 514 positions,
    over BERT weights, 512)."""
    marker = FAMILIES[model_type].marker_weight
    if marker not in state_dict:
        look_alikes = [name for name, family in FAMILIES.items() if family.marker_weight in state_dict]
        raise FamilyMismatchError(
            f"{source}: config.json describes a {model_type!r} model, but the weights have no {marker}"
            + (f"; they are named as in a {' / '.join(look_alikes)} checkpoint" if look_alikes else "")
            + ". The config and the weights do not belong together."
        )
    width = config.get("embedding_dim") or config["hidden_dim"]  # XLNet has no embedding_dim
    position_width = config["hidden_dim"] if FAMILIES[model_type].hidden_wide_positions else width
    expected = {"embeddings.word_embeddings.weight": (config["vocabulary_size"], width),
                "embeddings.position_embeddings.weight": (config.get("max_sequence_length"), position_width)}
    for name, shape in expected.items():
        if name in state_dict and tuple(state_dict[name].shape) != shape:
            raise CheckpointError(
                f"{source}: weight {name} has shape {tuple(state_dict[name].shape)}, but its config.json "
                f"({model_type}) asks for {shape}. The config and the weights do not belong together."
            )


def read_hf_folder(folder, load_weights=True, allow_pickle=False):
    """Read a HF folder of any supported family (`config.json`'s `model_type`) into a `Checkpoint`.

    Examples:
        >>> checkpoint = read_hf_folder(Path("all-MiniLM-L6-v2"))
        >>> checkpoint.backbone_config["num_layers"], checkpoint.family
        (6, 'bert')
    """
    folder = Path(folder)
    hf_config = read_json(folder / "config.json")
    model_type = family_of(hf_config, folder / "config.json")
    backbone_config = backbone_config_from_hf(hf_config, folder / "config.json")
    state_dict = None
    if load_weights:
        state_dict = read_weights(folder, allow_pickle, FAMILIES[model_type].weight_prefix)
        check_weights_fit_the_config(state_dict, backbone_config, model_type, folder)
    id2label = hf_config.get("id2label")
    if id2label:
        id2label = {int(i): label for i, label in id2label.items()}
    return Checkpoint(
        source=str(folder),
        format="hf",
        backbone_config=backbone_config,
        tokenizer_config=tokenizer_config_from_hf(folder, model_type),
        vocabulary_path=tokenizer_location(folder, model_type),
        state_dict=state_dict,
        id2label=id2label,
        architectures=tuple(hf_config.get("architectures") or ()),
        family=model_type,
    )


def write_hf_folder(folder, backbone_config, state_dict, tokenizer=None, id2label=None, model_type="bert"):
    """Write a folder that `transformers.AutoModel.from_pretrained` and `AutoTokenizer` load.

    `state_dict` uses the HF base model's names of `model_type` (`BertModel`, `AlbertModel`, ...); BERT head
    weights (`cls.*`, `classifier.*`, `qa_outputs.*`) are written with the `bert.` prefix convention of HF
    task models (the other families are written without heads). `tokenizer`: a kerasbert tokenizer, whose
    files (`vocab.txt`, `vocab.json` + `merges.txt`, `spiece.model`) and HF settings are written too.
    """
    from safetensors.numpy import save_file

    folder = Path(folder)
    architecture = FAMILIES[model_type].architecture
    if model_type == "bert":
        architecture = next(
            (arch for prefix, arch in HEAD_ARCHITECTURES if any(k.startswith(prefix) for k in state_dict)),
            architecture,
        )
    hf_config = hf_config_from_backbone(backbone_config, model_type, architecture)
    if id2label:
        hf_config["id2label"] = {str(i): label for i, label in id2label.items()}
        hf_config["label2id"] = {label: int(i) for i, label in id2label.items()}
    folder.mkdir(parents=True, exist_ok=True)
    if architecture != "BertModel" and model_type == "bert":
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
    if tokenizer is not None:
        tokenizer.write_files(folder)
        settings = {**tokenizer.hf_tokenizer_config(), "model_max_length": backbone_config["max_sequence_length"]}
        write_text_atomically(folder / "tokenizer_config.json", json.dumps(settings, indent=2))
    write_text_atomically(folder / "config.json", json.dumps(hf_config, indent=2))
    return folder
