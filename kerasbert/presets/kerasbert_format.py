"""kerasbert preset folders: `kerasbert.json`, `model.weights.h5`, the tokenizer files, `heads.safetensors`.

Written by `save_to_preset(folder)`; they hold any kerasbert backbone (also pre-LN or a
custom encoder block), its tokenizer settings and, for applications, the task config and
task head weights (under HF names such as `cls.predictions.*`, so that every application
reads them from `Checkpoint.heads` as it reads a HF checkpoint's heads).
"""

import json
from pathlib import Path

import numpy as np

from kerasbert.atomic_files import atomic_path, write_text_atomically
from kerasbert.presets.checkpoint import Checkpoint, CheckpointError, tokenizer_location
from kerasbert.presets.model_card import model_card

MANIFEST = "kerasbert.json"
WEIGHTS = "model.weights.h5"
HEADS = "heads.safetensors"
FORMAT_VERSION = 1


def write_kerasbert_folder(folder, model, tokenizer=None, task_config=None, heads=None, card=None):
    """Save `model`'s config and weights, and the tokenizer's files and settings, into `folder`.

    `model` is any Keras model whose `get_config()` holds the backbone arguments (the
    backbone itself, or a task's backbone). `tokenizer`: a kerasbert tokenizer of the backbone's family
    (its files keep their HF names: `vocab.txt`, `vocab.json` + `merges.txt`, `spiece.model`). `heads`: task
    head weights, a dict of HF names
    -> arrays in torch layout (a folder saved without heads loses any it held before). `card`: the
    `README.md` text (default: `model_card(model)`).

    Examples:
        >>> write_kerasbert_folder("my_bert", backbone, tokenizer)
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = dict(model.get_config())
    for key in ("name", "trainable"):
        config.pop(key, None)
    manifest = {
        "format": "kerasbert",
        "format_version": FORMAT_VERSION,
        "family": getattr(model, "family", "bert"),  # the backbone class: BertBackbone, RobertaBackbone, ...
        "backbone": config,
        "tokenizer": None if tokenizer is None else tokenizer.folder_settings(),
        "task": task_config,
    }
    # Each file is written beside its name and renamed (a kill never leaves a torn one), the manifest last:
    # a new folder is a preset only once it is complete.
    with atomic_path(folder / WEIGHTS) as temporary:
        model.save_weights(str(temporary))
    if tokenizer is not None:
        tokenizer.write_files(folder)
    if heads:
        from safetensors.numpy import save_file

        with atomic_path(folder / HEADS) as temporary:
            save_file({name: np.ascontiguousarray(value) for name, value in heads.items()}, str(temporary))
    else:
        (folder / HEADS).unlink(missing_ok=True)
    write_text_atomically(folder / "README.md", card or model_card(model))
    write_text_atomically(folder / MANIFEST, json.dumps(manifest, indent=2))
    return folder


def read_heads(folder):
    """The task head weights of a kerasbert preset folder (HF names), or None when it has none."""
    path = Path(folder) / HEADS
    if not path.is_file():
        return None
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as error:
        raise CheckpointError(f"{path} cannot be read ({error}); the file is truncated or corrupt.") from None


def read_kerasbert_folder(folder, load_weights=True):
    """Read a folder written by `write_kerasbert_folder` into a `Checkpoint`."""
    folder = Path(folder)
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise CheckpointError(f"{folder / MANIFEST} is not valid JSON ({error}); the file is corrupt.") from None
    if manifest.get("format") != "kerasbert" or "backbone" not in manifest:
        raise CheckpointError(f"{folder / MANIFEST} is not a kerasbert preset manifest.")
    weights = folder / WEIGHTS
    if load_weights and not weights.is_file():
        raise CheckpointError(f"{folder} has {MANIFEST} but no {WEIGHTS}; the preset is incomplete.")
    return Checkpoint(
        source=str(folder),
        format="kerasbert",
        backbone_config=manifest["backbone"],
        tokenizer_config=manifest.get("tokenizer") or {},
        vocabulary_path=tokenizer_location(folder, manifest.get("family")),
        keras_weights_path=weights if load_weights else None,
        state_dict=read_heads(folder) if load_weights else None,
        task_config=manifest.get("task"),
        family=manifest.get("family"),
    )
