"""Task weight files: only what a task trained (adapters or LoRA factors, trained LayerNorms, the head)
and the task's settings (labels, fine-tuning mode, sizes), so one backbone serves many small task files.

A `.safetensors` file: the weights under their Keras paths, and in its metadata the task class, the task
arguments and the backbone's shape, checked when it loads.

Examples:
    >>> classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", fine_tuning="lora")
    >>> classifier.fit(train_df)
    >>> classifier.save_task_weights("sentiment.safetensors")        # ~0.2 MB instead of 91 MB
    >>> again = BertClassifier.from_task_weights("sentiment.safetensors", "all_minilm_l6_v2_en")
"""

import json
from pathlib import Path

import numpy as np

from kerasbert.atomic_files import atomic_path
from kerasbert.fine_tuning.modes import FineTuningConfig
from kerasbert.json_records import plain_value

FORMAT = "kerasbert-task-weights"
# The task-head settings a family's backbone keeps (ModernBERT's), which a task file sets on its preset's backbone.
HEAD_KEYS = ("classifier_pooling", "classifier_activation", "classifier_bias")
# Backbone settings a task file must agree with: the stock shape, the adapters / LoRA it trained, its head's.
BACKBONE_KEYS = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
                 "max_sequence_length", "num_segments", "normalize_first", "adapter_size", "lora_rank",
                 "lora_alpha", "lora_targets", "output_hidden_states", *HEAD_KEYS)


def task_weights(task):
    """`{path: variable}` of what the task trained or added to the stock backbone (every weight outside the
    backbone's frozen stock ones)."""
    backbone_paths = {id(weight) for weight in task.backbone.weights}
    trainable = {id(weight) for weight in task.trainable_weights}
    chosen = [weight for weight in task.weights if id(weight) in trainable or id(weight) not in backbone_paths]
    paths = [weight.path for weight in chosen]
    if len(set(paths)) != len(paths):
        raise ValueError("Two of the task's weights share a path; give its layers distinct names.")
    return dict(zip(paths, chosen))


def task_settings(task):
    """The task arguments that rebuild it on a preset (no backbone, no preprocessor), and its backbone shape."""
    config = task.get_config()
    arguments = {name: value for name, value in config.items()
                 if name not in ("backbone", "preprocessor", "head", "name", "trainable")}
    if config.get("head") is not None:
        raise ValueError("A task with head= of your own cannot be rebuilt from a task file; save it with "
                         "task.save(path.keras).")
    backbone = task.backbone.get_config()
    return {"task": type(task).__name__, "arguments": plain_value(arguments),
            "sequence_length": task.sequence_length,
            "backbone": plain_value({key: backbone.get(key) for key in BACKBONE_KEYS})}


def save_task_weights(task, path):
    """Write `task`'s trained weights and settings to `path` (`.safetensors`), atomically; returns the path."""
    from safetensors.numpy import save_file

    path = Path(path)
    if path.suffix != ".safetensors":
        raise ValueError(f"{path}: task weight files end in .safetensors, e.g. sentiment.safetensors.")
    task.check_outputs_known()
    tensors = {name: np.ascontiguousarray(np.asarray(weight)) for name, weight in task_weights(task).items()}
    metadata = {"format": FORMAT, "version": "1", "settings": json.dumps(task_settings(task))}
    with atomic_path(path) as temporary:
        save_file(tensors, str(temporary), metadata=metadata)
    return path


def read_task_file(path):
    """`(settings, tensors)` of a task weight file, or a ValueError naming what is wrong with it."""
    from safetensors import SafetensorError, safe_open

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such task weight file (save_task_weights writes one).")
    try:
        with safe_open(str(path), framework="numpy") as handle:
            metadata = handle.metadata() or {}
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
    except (SafetensorError, OSError) as error:
        raise ValueError(f"{path} is not a readable safetensors file ({error}); save the task weights again.") from None
    if metadata.get("format") != FORMAT:
        raise ValueError(f"{path} is a safetensors file but not kerasbert task weights (no {FORMAT!r} metadata).")
    return json.loads(metadata["settings"]), tensors


def check_fits(task, settings, path):
    """A ValueError when the file's task class or backbone shape differs from `task`'s, naming each difference."""
    if settings["task"] != type(task).__name__:
        raise ValueError(f"{path} holds the weights of a {settings['task']}, not of a {type(task).__name__}: "
                         f"load it with {settings['task']}.from_task_weights(path, preset).")
    mine = plain_value({key: task.backbone.get_config().get(key) for key in BACKBONE_KEYS})
    differences = [f"{key} {settings['backbone'].get(key)!r} there, {mine[key]!r} here" for key in BACKBONE_KEYS
                   if settings["backbone"].get(key) != mine[key]]
    if differences:
        raise ValueError(f"{path} was trained on another backbone: {'; '.join(differences)}. Load it into a task "
                         "built on the same preset with the same fine_tuning settings (from_task_weights does).")


def load_task_weights(task, path):
    """Assign the weights of the task file at `path` to `task` (same class, backbone shape and labels)."""
    settings, tensors = read_task_file(path)
    check_fits(task, settings, path)
    stored_labels = settings["arguments"].get("labels")
    if stored_labels is not None and getattr(task, "labels", None) is None and hasattr(task, "set_output_count"):
        raise ValueError(f"{path} holds a head for labels {stored_labels}; build the task with those labels, or use "
                         f"{type(task).__name__}.from_task_weights(path, preset).")
    if stored_labels is not None and plain_value(list(task.labels)) != stored_labels:
        raise ValueError(f"{path} was trained for the labels {stored_labels}; this task has {list(task.labels)}.")
    weights = task_weights(task)
    missing = sorted(set(tensors) - set(weights))
    if missing:
        raise ValueError(f"{path} has weights this task lacks ({', '.join(missing[:4])}); build it with the same "
                         "fine_tuning settings (from_task_weights does).")
    for name, value in tensors.items():
        if tuple(weights[name].shape) != value.shape:
            raise ValueError(f"{path}: {name} has shape {value.shape} there and {tuple(weights[name].shape)} here.")
    for name, value in tensors.items():
        weights[name].assign(value)
    return task


def task_from_weights(task_class, path, preset, load_weights=True):
    """A `task_class` built on `preset` with the settings stored at `path`, its trained weights loaded."""
    settings, _ = read_task_file(path)
    if settings["task"] != task_class.__name__:
        raise ValueError(f"{path} holds the weights of a {settings['task']}, not of a {task_class.__name__}: "
                         f"load it with {settings['task']}.from_task_weights(path, preset).")
    arguments = task_class.upgrade_config(dict(settings["arguments"]))
    fine_tuning = FineTuningConfig.of_backbone(arguments.pop("fine_tuning", "full"), settings["backbone"])
    head_settings = {key: settings["backbone"][key] for key in HEAD_KEYS if settings["backbone"].get(key) is not None}
    task = task_class.from_preset(preset, load_weights=load_weights, sequence_length=settings["sequence_length"],
                                  fine_tuning=fine_tuning, backbone_overrides=head_settings or None, **arguments)
    return load_task_weights(task, path)
