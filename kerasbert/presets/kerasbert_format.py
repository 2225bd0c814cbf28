"""kerasbert preset folders: `kerasbert.json`, `model.weights.h5`, `vocab.txt`.

Written by `save_to_preset(folder)`; they hold any kerasbert backbone (also pre-LN or a
custom encoder block), its tokenizer settings and, for applications, the task config.
"""

import json
from pathlib import Path

from kerasbert.presets.checkpoint import Checkpoint, CheckpointError

MANIFEST = "kerasbert.json"
WEIGHTS = "model.weights.h5"
VOCABULARY = "vocab.txt"
FORMAT_VERSION = 1


def write_kerasbert_folder(folder, model, vocabulary=None, tokenizer_config=None, task_config=None):
    """Save `model`'s config and weights, and the vocabulary, into `folder`.

    `model` is any Keras model whose `get_config()` holds the backbone arguments (the
    backbone itself, or a task's backbone).

    Example:
    >>> write_kerasbert_folder("my_bert", backbone, tokenizer.get_vocabulary(), {"lowercase": True})
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = dict(model.get_config())
    for key in ("name", "trainable"):
        config.pop(key, None)
    manifest = {
        "format": "kerasbert",
        "format_version": FORMAT_VERSION,
        "backbone": config,
        "tokenizer": tokenizer_config,
        "task": task_config,
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    model.save_weights(str(folder / WEIGHTS))
    if vocabulary is not None:
        (folder / VOCABULARY).write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    return folder


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
    vocabulary = folder / VOCABULARY
    return Checkpoint(
        source=str(folder),
        format="kerasbert",
        backbone_config=manifest["backbone"],
        tokenizer_config=manifest.get("tokenizer") or {},
        vocabulary_path=vocabulary if vocabulary.is_file() else None,
        keras_weights_path=weights if load_weights else None,
        task_config=manifest.get("task"),
    )
