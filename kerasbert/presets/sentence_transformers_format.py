"""The pooling settings of a sentence-transformers folder (`modules.json`, `1_Pooling/config.json`,
`sentence_bert_config.json`), so a text encoder built on it embeds as sentence-transformers does."""

import json
from pathlib import Path

from kerasbert.presets.checkpoint import CheckpointError

POOLING_FLAGS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max"}


def read_sentence_transformers_settings(folder):
    """`{"pooling", "normalize", "sequence_length"}` of a sentence-transformers folder; `{}` for any other
    folder (or None). A pooling kerasbert does not compute (several modes, sqrt-length) is a named error.

    Examples:
        >>> read_sentence_transformers_settings(minilm_folder)
        {'pooling': 'mean', 'normalize': True, 'sequence_length': 256}
    """
    if folder is None or not (Path(folder) / "modules.json").is_file():
        return {}
    folder = Path(folder)
    modules = read_json(folder / "modules.json")
    types = [module.get("type", "").rsplit(".", 1)[-1] for module in modules]
    settings = {"normalize": "Normalize" in types}
    pooling = next((module for module in modules if module.get("type", "").endswith(".Pooling")), None)
    if pooling is not None:
        config = read_json(folder / pooling.get("path", "") / "config.json")
        modes = [mode for flag, mode in POOLING_FLAGS.items() if config.get(flag)]
        unsupported = [flag for flag, value in config.items()
                       if flag.startswith("pooling_mode_") and value and flag not in POOLING_FLAGS]
        if len(modes) != 1 or unsupported:
            raise CheckpointError(
                f"{folder / pooling.get('path', '')} pools with {modes + unsupported}; kerasbert's text encoder "
                f"pools with exactly one of {sorted(POOLING_FLAGS.values())}: pass pooling=... to from_preset.")
        settings["pooling"] = modes[0]
    if (folder / "sentence_bert_config.json").is_file():
        max_length = read_json(folder / "sentence_bert_config.json").get("max_seq_length")
        if max_length:
            settings["sequence_length"] = int(max_length)
    return settings


def read_json(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise CheckpointError(f"Cannot read the sentence-transformers file {path}: {error}.") from None


CROSS_ENCODER_ACTIVATIONS = {"Sigmoid": "sigmoid", "Identity": "identity"}


def read_cross_encoder_activation(folder):
    """The activation a sentence-transformers `CrossEncoder` folder applies to its logits in `predict`: "sigmoid" or
    "identity", from `config_sentence_transformers.json` (v4+) or `config.json` (`sentence_transformers.activation_fn`,
    earlier `sbert_ce_default_activation_function`); None where the folder names none.

    Examples:
        >>> read_cross_encoder_activation(ms_marco_folder)     # "torch.nn.modules.linear.Identity"
        'identity'
    """
    if folder is None:
        return None
    folder, named = Path(folder), None
    if (folder / "config_sentence_transformers.json").is_file():
        named = read_json(folder / "config_sentence_transformers.json").get("activation_fn")
    if named is None and (folder / "config.json").is_file():
        config = read_json(folder / "config.json")
        named = (config.get("sentence_transformers") or {}).get("activation_fn") or config.get(
            "sbert_ce_default_activation_function")
    if named is None:
        return None
    activation = CROSS_ENCODER_ACTIVATIONS.get(str(named).rsplit(".", 1)[-1])
    if activation is None:
        raise CheckpointError(f"{folder} applies {named} to a cross-encoder's logits; kerasbert's BertCrossEncoder "
                              f"applies one of {sorted(CROSS_ENCODER_ACTIVATIONS)}: pass activation=... to "
                              "from_preset.")
    return activation
