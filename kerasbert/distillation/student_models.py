"""Students for knowledge distillation, and the views of a task that the `Distiller` reads.

`student_from_teacher` is DistilBERT's initialisation (Sanh et al. 2019): a smaller model of the teacher's
class that starts from some of the teacher's blocks (every other one by default), its embeddings, pooler and
head. A student from any preset is an ordinary task built with the teacher's labels:
`BertClassifier.from_preset("bert_mini_en_uncased", labels=teacher.labels)`.

Examples:
    >>> student = student_from_teacher(teacher)                  # a 6-layer teacher -> blocks 0, 2, 4
    >>> student = student_from_teacher(teacher, layers=[1, 3, 5], output_hidden_states=True)
"""

import keras

from kerasbert.tasks.bert_classifier import BertClassifier
from kerasbert.tasks.bert_token_classifier import BertTokenClassifier

DISTILLABLE_TASKS = (BertClassifier, BertTokenClassifier)


def student_from_teacher(teacher, layers=None, **backbone_overrides):
    """A student of the teacher's class and labels whose backbone holds the teacher's blocks `layers` (default
    every other block from the first: 0, 2, 4, ...), with the teacher's embeddings, pooler and head (DistilBERT's
    initialisation). It is a new, fully trainable model; the teacher is not changed.

    `backbone_overrides` replace values of the teacher's backbone config, e.g. `dropout=0.0` or
    `output_hidden_states=True` (which `Distiller(hidden_weight=...)` needs).

    Examples:
        >>> student = student_from_teacher(teacher, layers=[0, 2, 4])
        >>> student.count_params() < teacher.count_params()
        True
    """
    if not isinstance(teacher, DISTILLABLE_TASKS):
        raise TypeError(f"student_from_teacher takes a BertClassifier or BertTokenClassifier, got "
                        f"{type(teacher).__name__}.")
    backbone = teacher.backbone
    layers = checked_layers(layers, backbone.num_layers)
    if backbone.num_block_groups is not None:
        raise ValueError("This teacher shares its blocks across layers (ALBERT), so there are no separate layers to "
                         "take; build the student from a preset instead.")
    if teacher.fine_tuning in ("adapters", "lora"):
        raise ValueError(f"This teacher has fine_tuning={teacher.fine_tuning!r}: its blocks carry adapters or LoRA "
                         "factors. Take layers from a teacher fine-tuned with fine_tuning='full' (or 'frozen'), or "
                         "build the student from a preset.")
    if getattr(teacher, "layer_mix", False):
        raise ValueError("This teacher's head mixes all its layers (layer_mix=True), which a student with fewer "
                         "layers cannot copy; build the student from a preset instead.")
    backbone_config = {**without_identity(backbone.get_config()), "num_layers": len(layers), **backbone_overrides}
    task_config = {**without_identity(teacher.get_config()), "backbone": type(backbone).from_config(backbone_config),
                   "preprocessor": teacher.preprocessor, "fine_tuning": "full"}
    student = type(teacher).from_config(task_config)
    copy_weights(teacher, student, layers)
    return student


def without_identity(config):
    """A layer config without its name and trainable flag (a copy gets its own name and trains fully)."""
    return {key: value for key, value in config.items() if key not in ("name", "trainable")}


def checked_layers(layers, num_layers):
    """The teacher blocks to take: default every other one; else distinct increasing ints in [0, num_layers)."""
    if layers is None:
        return list(range(0, num_layers, 2))
    if not isinstance(layers, (list, tuple)) or not layers or not all(
            isinstance(layer, int) and not isinstance(layer, bool) for layer in layers):
        raise TypeError(f"layers must be a non-empty list of block indices, e.g. [0, 2, 4]; got {layers!r}.")
    if any(a >= b for a, b in zip(layers, layers[1:])) or layers[0] < 0 or layers[-1] >= num_layers:
        raise ValueError(f"layers must be increasing block indices in [0, {num_layers}) (the teacher has "
                         f"{num_layers} blocks); got {list(layers)}.")
    return list(layers)


def copy_weights(teacher, student, layers):
    """Teacher -> student: embeddings, the blocks `layers` (in order), the final LayerNorm and pooler, and every
    task-level layer (the head)."""
    source, target = teacher.backbone, student.backbone
    pairs = [(getattr(source, name), getattr(target, name))
             for name in ("embedding", "embedding_projection", "final_layer_norm", "pooler")]
    pairs += [(source.encoder_blocks[layer], target.encoder_blocks[index]) for index, layer in enumerate(layers)]
    pairs += zip(task_layers(teacher), task_layers(student))
    for origin, copy in pairs:
        if origin is not None:
            copy.set_weights(origin.get_weights())


def task_layers(task):
    """The layers of a task outside its backbone (dropout, the head), in the order the task built them."""
    return [layer for layer in task.layers if layer is not task.backbone]


def backbone_outputs_in(task):
    """The outputs of `task.backbone` inside the task's functional graph (a dict like `backbone.output`), found
    by walking back from the task's outputs, so that a model reading them shares the task's one backbone call."""
    pending, seen = list(keras.tree.flatten(task.output)), set()
    while pending:
        operation, node_index, _ = pending.pop()._keras_history
        node = operation._inbound_nodes[node_index]
        if operation is task.backbone:
            return keras.tree.pack_sequence_as(task.backbone.output, node.outputs)
        if id(node) not in seen:
            seen.add(id(node))
            pending.extend(node.input_tensors)
    raise ValueError(f"{type(task).__name__} {task.name!r} does not call its backbone in its graph.")


def distillation_view(task, hidden_states=False, attentions=False):
    """A functional model on `task`'s layers: the task's inputs -> `{"logits"}`, plus the backbone's
    `hidden_states` and `attentions` when asked (one pass through the task; its weights, not copies)."""
    outputs = {"logits": task.output}
    wanted = [name for name, asked in (("hidden_states", hidden_states), ("attentions", attentions)) if asked]
    if wanted:
        features = backbone_outputs_in(task)
        outputs.update({name: features[name] for name in wanted})
    return keras.Model(task.input, outputs, name=f"{task.name}_distillation_view")


def with_backbone_outputs(task, hidden_states=False, attentions=False):
    """`task` itself when its backbone already outputs what is asked; else a copy (same weights) whose backbone
    also outputs its `hidden_states` / `attentions`. For the frozen teacher, which is never trained."""
    backbone = task.backbone
    if (backbone.output_hidden_states or not hidden_states) and (backbone.output_attentions or not attentions):
        return task
    backbone_config = {**backbone.get_config(), "output_hidden_states": backbone.output_hidden_states or hidden_states,
                       "output_attentions": backbone.output_attentions or attentions}
    copy = type(task).from_config({**task.get_config(), "backbone": type(backbone).from_config(backbone_config),
                                   "preprocessor": task.preprocessor})
    copy.set_weights(task.get_weights())
    return copy
