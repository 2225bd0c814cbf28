"""A task model's head on the backbone: the default (dropout + a float32 Dense, optionally on a learned mix of
every layer) or a user's `head=` layer checked against the shape the task needs.

Examples:
    >>> outputs, logits_layer, head_inputs = task_outputs(backbone, backbone.input, None, 2, "pooled_output",
    ...                                                   (None, 2), "BertClassifier", dropout=0.1)
"""

import keras

from kerasbert.fine_tuning.modes import FineTuningConfig
from kerasbert.layers.deferred_dense import DeferredDense
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.scalar_mix import ScalarMix

TRANSFORM_NAME = "task_transform"  # the name of a family's layer before the logits layer (`family_transform`)


def head_features(backbone, inputs):
    """What a task head reads: the backbone's outputs on `inputs` (`sequence_output`,
    `pooled_output`, ...) and the `padding_mask` (for pooling over real tokens)."""
    return {**backbone(inputs), "padding_mask": inputs["padding_mask"]}


def task_outputs(backbone, inputs, head, units, output_name, expected_shape, task_name, dropout=None,
                 layer_name="logits", layer_mix=False):
    """`(outputs, logits_layer, head_inputs)` of a task on `backbone` called on `inputs` (`TaskOutputs`).

    With `head` (the user's layer): `head(features)`, checked against `expected_shape` (None: any
    size), and no logits layer. Without: HF's head: on the backbone output `output_name`, the family's
    transform where it has one (`family_transform`), dropout (if given), then a float32 Dense of `units` named
    `layer_name` (HF's `classifier` or `qa_outputs`, which `heads_from_checkpoint` fills from a checkpoint);
    `units=None` defers its weights until the task knows its labels (`DeferredDense.set_units`).
    `layer_mix=True`: the head reads a `ScalarMix` of every hidden state instead (at `[CLS]` where it reads the
    pooled output); the backbone must output its hidden states.

    Examples:
        >>> outputs, logits_layer, head_inputs = task_outputs(backbone, backbone.input, None, 2, "pooled_output",
        ...                                      (None, 2), "BertClassifier", dropout=0.1)
    """
    features = head_features(backbone, inputs)
    if head is not None:
        if layer_mix:
            raise ValueError("layer_mix=True mixes the layers for the default head; a head= of your own reads "
                             "features['hidden_states'] itself (build the backbone with output_hidden_states=True).")
        return TaskOutputs(checked_head_outputs(head, features, expected_shape, task_name), None, None)
    dropout_layer = None if dropout is None else keras.layers.Dropout(dropout, name="classifier_dropout")
    logits_layer = DeferredDense(units, name=layer_name, dtype="float32",  # units=None: set by the first fit
                                 kernel_initializer=weight_initializer(backbone.initializer_range))
    head_inputs = layers_to_mix(features, output_name) if layer_mix else [features[output_name]]
    hidden = ScalarMix(len(head_inputs), name="layer_mix")(head_inputs) if layer_mix else head_inputs[0]
    transform = family_transform(backbone, task_name, output_name, layer_mix)
    if transform is not None:
        if transform.pooling is None:
            hidden = transform(hidden)
        else:  # pools every token: no one vector to cache before it (frozen features)
            hidden, head_inputs = transform(features["sequence_output"], features["padding_mask"]), None
    outputs = logits_layer(hidden if dropout_layer is None else dropout_layer(hidden))
    return TaskOutputs(outputs, logits_layer, head_inputs)


def family_transform(backbone, task_name, output_name, layer_mix):
    """The layer a family's HF task model of `task_name` puts between the backbone and the logits layer (its
    backbone's `task_transform`: ModernBERT's `PredictionHead`), or None (BERT and most families)."""
    make_transform = getattr(backbone, "task_transform", None)
    transform = make_transform(task_name, output_name, name=TRANSFORM_NAME) if make_transform else None
    if transform is not None and transform.pooling and layer_mix:
        raise ValueError("layer_mix=True reads each layer's [CLS] vector, and this backbone's task head pools by "
                         f"{transform.pooling!r} (classifier_pooling): build the backbone with "
                         "classifier_pooling='cls' to mix layers, or leave layer_mix off.")
    return transform


class TaskOutputs(tuple):
    """`(outputs, logits_layer, head_inputs)` of `task_outputs`: `head_inputs` are the backbone tensors the
    default head reads (None for a head of your own), where frozen features can be cached."""

    def __new__(cls, outputs, logits_layer, head_inputs):
        return super().__new__(cls, (outputs, logits_layer, head_inputs))


def mixes_layers(task_kwargs):
    """Whether a task constructor's keyword arguments ask for a layer mix (`fine_tuning`'s `layer_mix`)."""
    return FineTuningConfig.coerce(task_kwargs.get("fine_tuning")).layer_mix


def layers_to_mix(features, output_name):
    """The hidden states a `ScalarMix` head reads: whole sequences, or their `[CLS]` vectors for a head that
    reads `pooled_output` (the mix is the same per position, and a cache of frozen features stays small)."""
    if "hidden_states" not in features:
        raise ValueError("layer_mix=True needs a backbone built with output_hidden_states=True (from_preset does "
                         "that for you); this one outputs only " + ", ".join(sorted(features)) + ".")
    if output_name == "pooled_output":
        return [hidden[:, 0, :] for hidden in features["hidden_states"]]
    return list(features["hidden_states"])


def checked_head_outputs(head, features, expected_shape, task_name):
    """`head(features)`, or a ValueError naming the shape `task_name` needs: a tuple (None: any
    size), or a dict of them when the task has several outputs."""
    outputs = head(features)
    if isinstance(expected_shape, dict):
        shape = {name: shape_of(value) for name, value in outputs.items()} if isinstance(outputs, dict) else None
        fits = shape is not None and set(shape) == set(expected_shape) and all(
            shape_fits(shape[name], want) for name, want in expected_shape.items())
    else:
        shape = shape_of(outputs)
        fits = shape_fits(shape, expected_shape)
    if not fits:
        raise ValueError(
            f"The head {type(head).__name__} of {task_name} returns shape {shape}; {task_name} needs "
            f"logits of shape {expected_shape} (None: any size). The head is called on a dict of "
            f"{sorted(features)} and must end in a Dense layer of that many units."
        )
    return outputs


def shape_of(value):
    return tuple(getattr(value, "shape", ()))


def shape_fits(shape, expected):
    return len(shape) == len(expected) and all(want is None or got == want for got, want in zip(shape, expected))
