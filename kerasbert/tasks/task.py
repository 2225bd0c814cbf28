"""Task: the shared base of kerasbert applications.

A task is a plain functional `keras.Model` (backbone -> head) that also owns its
preprocessor. On top of Keras it accepts raw data: `fit`, `evaluate` and `predict` take
DataFrames, lists of strings or dicts of columns, validate them before any computation,
tokenise, batch with dynamic padding and length buckets, and decode predictions back
into a DataFrame. Tensors, arrays and `tf.data` pass straight through to Keras.

A subclass builds its graph in `__init__` and implements four hooks:
`prepare(data, with_labels)` -> `Prepared`, `default_loss()`, `decode(outputs, prepared)`
-> DataFrame and `score(outputs, prepared)` -> dict of metrics.
"""

import contextlib
import dataclasses
import os
import warnings

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kerasbert.deployment.export_under_tensorflow import export_under_tensorflow
from kerasbert.fine_tuning.modes import (
    apply_fine_tuning,
    check_fine_tuning,
    fine_tuning_overrides,
)
from kerasbert.training.fit_arguments import (
    check_callbacks,
    check_learning_rate,
    check_seed,
    split_for_validation,
)
from kerasbert.fine_tuning.frozen_features import (
    FROZEN_FEATURES,
    FrozenFeatureState,
    caches_features,
    call_on_frozen_features,
    check_cache_features,
    with_frozen_features,
)
from kerasbert.deployment.model_function import ModelFunction
from kerasbert.fine_tuning.task_weights import (
    load_task_weights,
    save_task_weights,
    task_from_weights,
)
from kerasbert.atomic_files import atomic_path
from kerasbert.data.batching import EagerBatches, make_batched_dataset
from kerasbert.data.validation import check_count
from kerasbert.layers.deferred_dense import DeferredDense
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.scalar_mix import ScalarMix
from kerasbert.families.registry import backbone_class_for
from kerasbert.families.bert.bert_backbone import check_tokenizer_fits, longest_input
from kerasbert.families.checkpoint_weights import assign_links, dense_links
from kerasbert.presets.loading import load_checkpoint
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.families.tokenizer_registry import tokenizer_from_preset
from kerasbert.training.backup import TrainingBackup
from kerasbert.training.distribution import (
    check_batches_split_evenly,
    check_dataset_splits_evenly,
    check_weights_are_trainable,
    rows_of,
)
from kerasbert.training.optimizers import create_optimizer, default_learning_rate

DEFAULT_BATCH_SIZE = 32
POOLER_ONLY_WITHOUT_GRADIENTS = r"Gradients do not exist for variables \['pooler/\w+', 'pooler/\w+'\] when"
QUIET_BATCHES = 10  # verbose="auto": no progress bar for inference over this many batches or fewer


@dataclasses.dataclass
class Prepared:
    """Validated, tokenised data: what a task hands to `make_batched_dataset`.

    Attributes:
        frame: the validated copy of the user's data (the user's object is never modified).
        features: per-token arrays (ragged), at least `token_ids` and `segment_ids`.
        labels: targets (per example or per token), or None when predicting.
        sample_weight: per-example or per-token weights, or None.
        extras: anything the task needs to decode (offsets, word ids, windows, ...).
    """

    frame: pd.DataFrame
    features: dict
    labels: object = None
    sample_weight: object = None
    extras: dict = dataclasses.field(default_factory=dict)


def is_raw(data):
    """True for user-level data (DataFrame, Series, strings, dict of columns); False for tensors."""
    if data is None or isinstance(data, tf.data.Dataset):
        return False
    if isinstance(data, dict):
        return "token_ids" not in data
    if isinstance(data, np.ndarray):
        return data.dtype.kind in "OUS"
    return isinstance(data, (pd.DataFrame, pd.Series, list, tuple, str))


def check_run_arguments(data, batch_size, epochs=1):
    """TypeError/ValueError for no data, or a `batch_size`/`epochs` that is not a positive int."""
    if data is None:
        raise TypeError("No data was given: pass a DataFrame, a list or Series of texts, one text, "
                        "or a tf.data.Dataset.")
    if isinstance(data, (bool, int, float, complex, bytes, np.number)):
        raise TypeError(f"Cannot read {type(data).__name__} {data!r} as data: pass a DataFrame, a list or Series of "
                        "texts, one text, or a tf.data.Dataset.")
    if batch_size is not None:
        check_count("batch_size", batch_size)
    check_count("epochs", epochs)


def packed_input_length(backbone, preprocessor):
    """Tokens per packed input: the preprocessor's `sequence_length`, or the most the backbone's positions hold
    (no preprocessor, or one that does not fix a length).

    Example:
    >>> packed_input_length(backbone, None)   # a BERT backbone of 512 positions
    512
    """
    sequence_length = None if preprocessor is None else preprocessor.sequence_length
    return sequence_length or longest_input(backbone)


def check_sequence_length_fits(sequence_length, backbone):
    """A ValueError when packed inputs could be longer than the backbone's position table."""
    if sequence_length is not None and sequence_length > longest_input(backbone):
        offset = backbone.max_sequence_length - longest_input(backbone)
        raise ValueError(
            f"sequence_length={sequence_length} is longer than the backbone's position table "
            f"(max_sequence_length={backbone.max_sequence_length}"
            + (f", of which {offset} rows precede the first position" if offset else "")
            + f"). Use sequence_length <= {longest_input(backbone)}; longer texts are truncated (QA reads them "
            "in windows)."
        )


def empty_like_output(output):
    """A numpy array of no rows shaped like the symbolic model `output` (unknown sizes 0), for an empty predict."""
    return np.zeros((0, *[size or 0 for size in output.shape[1:]]), output.dtype)


def ragged_from_padded(packed):
    """Dense packer outputs -> ragged `token_ids`/`segment_ids` (padding removed)."""
    lengths = tf.reduce_sum(tf.cast(packed["padding_mask"], tf.int32), axis=1)
    return {
        key: tf.RaggedTensor.from_tensor(packed[key], lengths=lengths)
        for key in ("token_ids", "segment_ids")
    }


def concatenate_padded(batches):
    """Per-batch output structures -> one structure of arrays, each leaf zero-padded along its token
    axes to the longest batch (batches of another length differ in axis 1), then concatenated.

    Example:
    >>> concatenate_padded([np.ones((2, 3)), np.ones((1, 5))]).shape
    (3, 5)
    """
    def concatenate(*arrays):
        arrays = [np.asarray(array) for array in arrays]
        widest = np.max([array.shape for array in arrays], axis=0)
        padded = [np.pad(array, [(0, 0)] + [(0, int(w - n)) for w, n in zip(widest[1:], array.shape[1:])])
                  for array in arrays]
        return np.concatenate(padded)

    return keras.tree.map_structure(concatenate, *batches)


def progress_verbosity(verbose, steps):
    """Keras' `verbose` for a progress bar over `steps` batches: "auto" is 1 for long runs, 0 for short ones.

    Example:
    >>> progress_verbosity("auto", 3), progress_verbosity("auto", 200), progress_verbosity(2, 3)
    (0, 1, 2)
    """
    if verbose == "auto":
        return 1 if steps > QUIET_BATCHES else 0
    return verbose


def batch_spec(epoch_iterator):
    """The shapes and dtypes of a batch, for Keras' symbolic build, without reading one.

    Keras reads a batch for it through a fresh iterator (JAX and torch on every first `fit`,
    TensorFlow under a `tf.distribute` strategy): with a dataset that reshuffles each iteration,
    that iterator uses up the first shuffle, so epoch 1 trained on the second order (two
    MirroredStrategy replicas took other steps than one device). The dataset's spec says as much.
    """
    return keras.tree.map_structure(lambda spec: keras.KerasTensor(spec.shape, spec.dtype.name),
                                    epoch_iterator.data_adapter.get_tf_dataset().element_spec)


def in_input_order(outputs, order):
    """Undo `order` on every array of `outputs`: row `order[i]` of the result is row `i` of the input.

    Example:
    >>> in_input_order({"logits": np.array([[0.2], [0.9]])}, np.array([1, 0]))["logits"].tolist()
    [[0.9], [0.2]]
    """
    if isinstance(outputs, dict):
        return {key: in_input_order(value, order) for key, value in outputs.items()}
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(in_input_order(value, order) for value in outputs)
    restored = np.empty_like(outputs)
    restored[order] = outputs
    return restored


def head_features(backbone, inputs):
    """What a task head reads: the backbone's outputs on `inputs` (`sequence_output`,
    `pooled_output`, ...) and the `padding_mask` (for pooling over real tokens)."""
    return {**backbone(inputs), "padding_mask": inputs["padding_mask"]}


def task_outputs(backbone, inputs, head, units, output_name, expected_shape, task_name, dropout=None,
                 layer_name="logits", layer_mix=False):
    """`(outputs, logits_layer, head_inputs)` of a task on `backbone` called on `inputs` (`TaskOutputs`).

    With `head` (the user's layer): `head(features)`, checked against `expected_shape` (None: any
    size), and no logits layer. Without: HF's head, dropout (if given) on the backbone output
    `output_name`, then a float32 Dense of `units` named `layer_name` (HF's `classifier` or
    `qa_outputs`, which `load_dense_head` fills from a checkpoint); `units=None` defers its weights
    until the task knows its labels (`DeferredDense.set_units`). `layer_mix=True`: the head reads a
    `ScalarMix` of every hidden state instead (at `[CLS]` where it reads the pooled output); the backbone
    must output its hidden states.

    Example:
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
    outputs = logits_layer(hidden if dropout_layer is None else dropout_layer(hidden))
    return TaskOutputs(outputs, logits_layer, head_inputs)


class TaskOutputs(tuple):
    """`(outputs, logits_layer, head_inputs)` of `task_outputs`: `head_inputs` are the backbone tensors the
    default head reads (None for a head of your own), where frozen features can be cached."""

    def __new__(cls, outputs, logits_layer, head_inputs):
        return super().__new__(cls, (outputs, logits_layer, head_inputs))


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


# The layer types Keras quantises (subclasses such as the deferred logits layer stay float).
QUANTIZABLE_LAYERS = (keras.layers.Dense, keras.layers.EinsumDense, keras.layers.Embedding)
WEIGHT_ONLY_INT8 = "int8_weight_only"  # the saved `quantization` of `quantize("int8", weight_only=True)`


class Task(keras.Model):
    """Base class of the applications; see the module docstring. Not used directly.

    `head`: a Keras layer that replaces the task's default head: called on the dict of
    `head_features` (the backbone's outputs and the padding mask), it returns the task's logits.
    It is saved in the `.keras` file (register its class with
    `keras.saving.register_keras_serializable`).
    """

    def __init__(self, *args, backbone, preprocessor, head=None, fine_tuning="full", head_inputs=None, **kwargs):
        check_sequence_length_fits(getattr(preprocessor, "sequence_length", None), backbone)  # None: Keras-level use
        check_tokenizer_fits(backbone, getattr(preprocessor, "tokenizer", None))
        check_fine_tuning(fine_tuning)
        super().__init__(*args, **kwargs)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.head = head
        self.fine_tuning = fine_tuning
        apply_fine_tuning(self, fine_tuning)
        self.default_compiled = False
        self.inference_function = None
        self.packing_function = None
        self.frozen_features = FrozenFeatureState(head_inputs)
        self.quantization = None

    def call(self, inputs, training=None, mask=None, **kwargs):
        """The functional graph; a training batch that carries cached frozen features runs the head only."""
        if isinstance(inputs, dict) and FROZEN_FEATURES in inputs:
            return call_on_frozen_features(self, inputs, training)
        return super().call(inputs, training=training, mask=mask, **kwargs)

    # === Construction ===

    # The longest packed input `from_preset` gives when not told: None for the backbone's position table.
    default_sequence_length = None

    @classmethod
    def from_preset(cls, preset, load_weights=True, sequence_length=None, allow_pickle=False,
                    backbone_overrides=None, fine_tuning="full", adapter_size=None, lora_rank=None, lora_alpha=None,
                    lora_targets=None, **task_args):
        """Build the task on `preset`'s backbone and tokenizer.

        `preset`: a built-in name, a kerasbert / HF / Google checkpoint folder, or `hf://org/name`.
        `sequence_length`: the longest packed input, at most the backbone's position table (longer
        inputs are truncated; batches are padded dynamically, so short texts cost nothing extra);
        None: `default_sequence_length`, else the whole table. `backbone_overrides` replace
        backbone config values (e.g. `{"dropout": 0.0}`). `task_args` go to the task class; a
        HF checkpoint's own task head is used when it matches (see `heads_from_checkpoint`).
        `fine_tuning`: "full" (default), "frozen", "adapters" (`adapter_size`, default 64) or "lora"
        (`lora_rank` 8, `lora_alpha` 16, `lora_targets` query and value): see
        `kerasbert.fine_tuning.modes`; `layer_mix=True` (a task argument) feeds the head a learned
        mix of every layer.

        Example:
        >>> classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2)
        >>> lora = BertClassifier.from_preset("all_minilm_l6_v2_en", fine_tuning="lora", lora_rank=8)
        """
        if sequence_length is not None:
            check_count("sequence_length", sequence_length, minimum=3)
        check_fine_tuning(fine_tuning)
        checkpoint = load_checkpoint(preset, load_weights, allow_pickle)
        tokenizer = tokenizer_from_preset(preset)  # before any model is built: a missing file is named first
        overrides = {**fine_tuning_overrides(fine_tuning, checkpoint.backbone_config["hidden_dim"], adapter_size,
                                             lora_rank, lora_alpha, lora_targets), **(backbone_overrides or {})}
        if task_args.get("layer_mix"):
            overrides["output_hidden_states"] = True
        backbone = backbone_class_for(checkpoint).from_checkpoint(checkpoint, **overrides)
        if sequence_length is None:
            sequence_length = min(cls.default_sequence_length or longest_input(backbone), longest_input(backbone))
        check_sequence_length_fits(sequence_length, backbone)
        preprocessor = BertPreprocessor(tokenizer, sequence_length=sequence_length, pad_to_sequence_length=False)
        task_args = cls.task_args_from_checkpoint(checkpoint, task_args)
        task = cls(backbone=backbone, preprocessor=preprocessor, fine_tuning=fine_tuning, **task_args)
        task.heads_from_checkpoint(checkpoint)
        return task

    # The HF head a task's default Dense `logits_layer` loads from a fine-tuned checkpoint: (weight-name
    # prefix, HF class or None for any), and for classifiers the argument that counts the labels.
    hf_head = None
    hf_labels_argument = None

    @classmethod
    def task_args_from_checkpoint(cls, checkpoint, task_args):
        """Fill task arguments a checkpoint knows: a fine-tuned HF classifier's labels (`id2label`),
        unless the user gave `labels` or their count."""
        prefix, architecture = cls.hf_head or (None, None)
        if cls.hf_labels_argument and checkpoint.heads(f"{prefix}.", architecture) and checkpoint.id2label \
                and "labels" not in task_args and cls.hf_labels_argument not in task_args:
            id2label = checkpoint.id2label
            return {**task_args, "labels": [id2label[i] for i in sorted(id2label)]}
        return task_args

    def heads_from_checkpoint(self, checkpoint):
        """Load the checkpoint's `hf_head` into the default logits layer when it has one of the same
        size (a user's `head=` loads nothing)."""
        # Not a class attribute: under torch a layer attribute lives in `_modules`, behind any class default.
        logits_layer = getattr(self, "logits_layer", None)
        if self.hf_head is None or logits_layer is None or logits_layer.units is None:
            return
        prefix, architecture = self.hf_head
        weights = checkpoint.heads(f"{prefix}.", architecture)
        if weights and weights[f"{prefix}.weight"].shape[0] == logits_layer.units:
            assign_links(dense_links(logits_layer, prefix), weights, checkpoint.source)

    def check_outputs_known(self):
        """A ValueError when the task has not learned its labels yet (built without them, never fit)."""
        logits_layer = getattr(self, "logits_layer", None)
        if logits_layer is not None and logits_layer.units is None:
            raise ValueError(f"This {type(self).__name__} does not know its labels yet: fit it on labelled data "
                             f"first, or build it with labels=[...].")

    def set_output_count(self, count):
        """Create the deferred logits weights for `count` outputs (the first fit of a task built without labels)."""
        self.logits_layer.set_units(count)

    # === Task weight files ===

    def save_task_weights(self, path):
        """Write only what this task trained (adapters or LoRA factors, trained LayerNorms, the head) and its
        settings (labels, fine-tuning mode) to a `.safetensors` file: see `kerasbert.fine_tuning.task_weights`.

        Example:
        >>> classifier.save_task_weights("sentiment.safetensors")
        """
        return save_task_weights(self, path)

    def load_task_weights(self, path):
        """Load a task weight file into this task (same class, backbone shape, fine-tuning and labels)."""
        return load_task_weights(self, path)

    @classmethod
    def from_task_weights(cls, path, preset, load_weights=True):
        """This task on `preset`, with the settings and trained weights of the task file at `path`.

        Example:
        >>> classifier = BertClassifier.from_task_weights("sentiment.safetensors", "all_minilm_l6_v2_en")
        """
        return task_from_weights(cls, path, preset, load_weights)

    @property
    def tokenizer(self):
        return self.preprocessor.tokenizer

    @property
    def sequence_length(self):
        return self.preprocessor.sequence_length

    # === Hooks for subclasses ===

    def prepare(self, data, with_labels, training=False):
        """Validate and tokenise raw data. `training=True` may also learn label names."""
        raise NotImplementedError

    def default_loss(self):
        raise NotImplementedError

    def balanced_class_weight(self, prepared):
        raise ValueError(f'{type(self).__name__} does not support class_weight="balanced".')

    def class_weight_by_index(self, class_weight):
        """A user's `class_weight` dict as Keras takes it (class index -> weight)."""
        raise ValueError(f"{type(self).__name__} does not support class_weight; weight rows with "
                         "sample weights of a tf.data.Dataset instead.")

    def default_metrics(self):
        return []

    def default_weighted_metrics(self):
        """Metrics that honour sample weights (per-token tasks: only the weighted tokens count)."""
        return None

    def decode(self, outputs, prepared):
        raise NotImplementedError

    def score(self, outputs, prepared):
        raise NotImplementedError

    # === Data ===

    def batches(self, prepared, *, with_labels, training=False, batch_size=DEFAULT_BATCH_SIZE, seed=0,
                group_by_length=True, order=None, epochs=None):
        """`Prepared` data -> `tf.data.Dataset`. Training batches are shuffled and (unless
        `group_by_length=False`) grouped by length, one epoch (reshuffled per iteration) or the numbered
        `epochs` back to back; other batches come in `order`, else the input order. Inference batches in
        a given `order` are `EagerBatches` (no tf.data pipeline to build) unless the task batches its own way."""
        if order is not None and not with_labels and type(self).make_dataset is Task.make_dataset:
            return EagerBatches(prepared.features, order, batch_size,
                                max_length=self.sequence_length or self.backbone.max_sequence_length,
                                pad_token_id=self.tokenizer.pad_token_id)
        return self.make_dataset(
            prepared,
            labels=prepared.labels if with_labels else None,
            sample_weight=prepared.sample_weight if with_labels else None,
            batch_size=batch_size,
            max_length=self.sequence_length or self.backbone.max_sequence_length,
            group_by_length=training and group_by_length,
            shuffle=training,
            seed=seed,
            pad_token_id=self.tokenizer.pad_token_id,
            order=order,
            **({} if epochs is None else {"epochs": epochs}),
        )

    def make_dataset(self, prepared, **options):
        """The task's batching (`make_batched_dataset`; multiple choice keeps an example's choices
        together) with the options `batches` chose."""
        return make_batched_dataset(prepared.features, **options)

    def example_lengths(self, prepared):
        """Tokens per example (a multiple-choice example: its longest choice)."""
        return prepared.features["token_ids"].row_lengths().numpy()

    def length_order(self, prepared):
        """Example indices from shortest to longest: the batching order with the least padding."""
        return np.argsort(self.example_lengths(prepared), kind="stable")

    def pack_texts(self, first, second=None):
        """Tokenise and pack texts (or pairs) into ragged `token_ids`/`segment_ids`, in one traced
        TensorFlow function (run eagerly, the tokenizer's many small ops cost ~90 ms a call)."""
        key = (self.sequence_length, second is None)
        if self.packing_function is None or self.packing_function[0] != key:
            def pack(*texts):
                return ragged_from_padded(self.preprocessor(texts[0] if len(texts) == 1 else texts))

            self.packing_function = (key, tf.function(pack, reduce_retracing=True))
        texts = [first] if second is None else [first, second]
        return self.packing_function[1](*[tf.constant(list(part), tf.string, shape=[len(part)]) for part in texts])

    # === Training ===

    def compile(self, *args, **kwargs):
        """Keras `compile`; a user's compile replaces every kerasbert default."""
        self.default_compiled = False
        super().compile(*args, **kwargs)

    def compile_defaults(self, total_steps, learning_rate=None):
        """AdamW, 10% warmup then linear decay, the task's loss and metrics."""
        learning_rate = learning_rate or default_learning_rate(self.backbone.hidden_dim)
        super().compile(
            optimizer=create_optimizer(total_steps, learning_rate),
            loss=self.default_loss(),
            metrics=self.default_metrics(),
            weighted_metrics=self.default_weighted_metrics(),
        )
        self.default_compiled = True

    def compile_from_config(self, config):
        """Keras calls this when it loads a file saved with its optimizer: compile as saved (the
        default optimizer too, with its schedule) and create the optimizer's variables, so that
        their saved state loads and `fit` continues where it stopped."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.build_optimizer()

    def fit(self, x=None, y=None, batch_size=None, epochs=1, validation_data=None,
            learning_rate=None, seed=0, group_by_length=True, backup_dir=None, cache_features=None, **kwargs):
        """Keras `fit`, also on DataFrames and lists (see the class docstring of each task).

        Unless you called `compile` yourself, each `fit` uses AdamW with `learning_rate`
        (default by model size), 10% warmup and linear decay over this fit's steps. Raw data is
        shuffled with `seed` each epoch and grouped by length (`group_by_length=False`: batches of
        any lengths, about 2x the padding). Keras callbacks (`callbacks=[...]`) pass through.

        `backup_dir`: save the training state there after every epoch; the same call after a crash
        or a kill continues after the last saved epoch and ends with the weights an uninterrupted
        run would have (see `kerasbert.training.backup`). The folder is removed when `fit` completes.

        `cache_features`: with `fine_tuning="frozen"`, run BERT once over the data and train the head on
        the stored vectors every epoch (None: whenever the task can; `kerasbert.fine_tuning.frozen_features`).

        Example:
        >>> classifier.fit(train_df, epochs=3, backup_dir="sentiment_backup")
        """
        check_run_arguments(x, batch_size, epochs)
        check_learning_rate(learning_rate)
        check_seed(seed)
        check_callbacks(kwargs.get("callbacks"))
        check_cache_features(cache_features)
        backup = None if backup_dir is None else TrainingBackup(backup_dir)
        with warnings.catch_warnings():  # heads on token states (QA, MLM, mean pooling) leave the pooler unused
            warnings.filterwarnings("ignore", message=POOLER_ONLY_WITHOUT_GRADIENTS)
            with self.strategy_scope():  # the default optimizer is made in fit, under the model's strategy
                return self.fit_with_defaults(x, y, batch_size, epochs, validation_data, learning_rate,
                                              seed, group_by_length, backup, cache_features, **kwargs)

    def fit_resumable(self, x, backup, **kwargs):
        """Keras `fit`, first restoring `backup`'s state (if any) and starting after its epochs."""
        if backup is not None:
            kwargs["initial_epoch"] = backup.restore(self)
            kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), backup]
        return super().fit(x, **kwargs)

    def fit_with_defaults(self, x, y, batch_size, epochs, validation_data, learning_rate, seed,
                          group_by_length, backup, cache_features, **kwargs):
        check_weights_are_trainable(self)
        if not is_raw(x):
            if cache_features:
                raise ValueError("cache_features=True caches the features of raw data (a DataFrame, texts); "
                                 "for tensors or a tf.data.Dataset compute the features yourself.")
            if isinstance(x, tf.data.Dataset):
                check_dataset_splits_evenly(x)
            elif isinstance(x, dict) or hasattr(x, "shape"):
                check_batches_split_evenly(rows_of(x), batch_size or DEFAULT_BATCH_SIZE, model=self)
            if not self.compiled or self.default_compiled:
                steps = self.steps_of(x, batch_size) * epochs
                self.compile_defaults(steps, learning_rate)
            self.build_optimizer()
            return self.fit_resumable(x, backup, y=y, batch_size=batch_size, epochs=epochs,
                                      validation_data=validation_data, **kwargs)
        if y is not None:
            raise ValueError("With a DataFrame, labels come from its label column; do not pass `y`.")
        batch_size = batch_size or DEFAULT_BATCH_SIZE
        if kwargs.get("validation_split"):
            x, validation_data = split_for_validation(x, kwargs.pop("validation_split"), validation_data)
        prepared = self.prepare(x, with_labels=True, training=True)
        check_batches_split_evenly(len(self.example_lengths(prepared)), batch_size, model=self)
        caching = caches_features(self, cache_features)
        if is_raw(validation_data):
            try:
                validation = self.prepare(validation_data, with_labels=True)
            except (ValueError, TypeError) as error:
                raise type(error)(f"In validation_data: {error}") from None
            check_batches_split_evenly(len(self.example_lengths(validation)), batch_size, "the validation data",
                                       model=self)
            if caching:
                validation = with_frozen_features(self, validation)
            validation_data = self.batches(validation, with_labels=True, batch_size=batch_size,
                                           order=self.length_order(validation))
        if kwargs.get("class_weight") == "balanced":
            kwargs["class_weight"] = self.balanced_class_weight(prepared)
        elif kwargs.get("class_weight") is not None:
            kwargs["class_weight"] = self.class_weight_by_index(kwargs["class_weight"])
        if "steps_per_epoch" in kwargs:
            raise ValueError("With a DataFrame, fit trains on whole epochs: leave out steps_per_epoch, or pass a "
                             "tf.data.Dataset.")
        # The dataset holds every epoch still to run, each in the order its number and `seed` give: a run
        # resumed from `backup` after epoch e trains on what an uninterrupted run trains on.
        initial_epoch = backup.latest()[0] if backup is not None else kwargs.pop("initial_epoch", 0)
        if caching:
            prepared = with_frozen_features(self, prepared)
        train = self.batches(prepared, with_labels=True, training=True, batch_size=batch_size, seed=seed,
                             group_by_length=group_by_length, epochs=range(initial_epoch, epochs))
        batches_per_epoch = -(-len(self.example_lengths(prepared)) // batch_size)
        if not self.compiled or self.default_compiled:
            self.compile_defaults(batches_per_epoch * epochs, learning_rate)
        kwargs.update(steps_per_epoch=batches_per_epoch, initial_epoch=initial_epoch)
        kwargs.setdefault("shuffle", False)  # the dataset is already shuffled with `seed`
        self.build_optimizer()
        return self.fit_resumable(train, backup, epochs=epochs, validation_data=validation_data, **kwargs)

    def strategy_scope(self):
        """TensorFlow: the scope of the `tf.distribute` strategy this model was built under (its
        optimizer's variables must be mirrored too); other backends: no scope."""
        if keras.backend.backend() == "tensorflow":
            return self.distribute_strategy.scope()
        return contextlib.nullcontext()

    def _symbolic_build(self, iterator=None, data_batch=None):
        super()._symbolic_build(data_batch=data_batch if data_batch is not None else batch_spec(iterator))

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):  # TensorFlow under tf.distribute
        super()._maybe_symbolic_build(data_batch=data_batch if data_batch is not None else batch_spec(iterator))

    def build_optimizer(self):
        """Create the optimizer's slot variables before `fit` traces its train function.

        Keras (without a distribution strategy) creates them during that trace, and TensorFlow
        then traces the whole train step a second time: about 5 s lost per `fit` on MiniLM.
        """
        if self.optimizer is not None and not self.optimizer.built:
            self.optimizer.build(self.trainable_variables)

    @staticmethod
    def steps_of(x, batch_size):
        """Batches per epoch of Keras-level data, for the default learning-rate schedule."""
        if isinstance(x, tf.data.Dataset):
            steps = int(x.cardinality())
            if steps < 0:
                raise ValueError(
                    "This tf.data.Dataset has an unknown length, so the default learning-rate "
                    "schedule cannot be sized: call `compile(...)` yourself, or give the dataset a "
                    "known length (e.g. `dataset.apply(tf.data.experimental.assert_cardinality(n))`)."
                )
            return steps
        return int(np.ceil(rows_of(x) / (batch_size or DEFAULT_BATCH_SIZE)))

    # === Inference ===

    def predict_outputs(self, data, batch_size=None, with_labels=False, verbose="auto"):
        """Raw model outputs (numpy) for raw data, in input order, and the `Prepared` data.

        The model sees the examples sorted by length (the least padding: on UCI IMDb 2.4x fewer
        tokens than batches in input order); the outputs are put back in the input order.
        """
        self.check_outputs_known()
        prepared = self.prepare(data, with_labels=with_labels)
        if len(self.example_lengths(prepared)) == 0:
            if with_labels:
                raise ValueError("The data has no rows: there is nothing to evaluate.")
            return keras.tree.map_structure(empty_like_output, self.output), prepared
        order = self.length_order(prepared)
        dataset = self.batches(prepared, with_labels=False, batch_size=batch_size or DEFAULT_BATCH_SIZE,
                               order=order)
        return in_input_order(self.outputs_of(dataset, verbose), order), prepared

    def outputs_of(self, dataset, verbose="auto"):
        """The model's outputs for every batch of `dataset` (inputs only: a `tf.data.Dataset` or
        `EagerBatches`), concatenated as numpy.

        Runs on every backend (a `ModelFunction` traced once for all batch shapes), also for
        per-token outputs whose batches differ in length (padded with zeros to the longest).
        `verbose="auto"` shows a progress bar only for runs of more than `QUIET_BATCHES` batches.
        """
        if self.inference_function is None:
            self.inference_function = ModelFunction(self, lambda x: self(x, training=False))
        self.inference_function.trace(dataset.element_spec)
        steps = len(dataset)
        progress = keras.utils.Progbar(steps, verbose=progress_verbosity(verbose, steps))
        outputs = []
        for step, x in enumerate(dataset):
            outputs.append(self.inference_function(x))
            progress.update(step + 1)
        return concatenate_padded(outputs)

    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        """Decoded predictions as a DataFrame for raw data (one text, a list, a Series or a
        DataFrame; an empty text is predicted too); Keras `predict` otherwise."""
        check_run_arguments(x, batch_size)
        if not is_raw(x):
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        outputs, prepared = self.predict_outputs(x, batch_size, verbose=verbose)
        return self.decode(outputs, prepared)

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", return_errors=False, **kwargs):
        """A dict of the task's metrics for raw data (plus `errors`, a DataFrame of the wrong
        predictions, when `return_errors=True`); Keras `evaluate` otherwise."""
        check_run_arguments(x, batch_size)
        if not is_raw(x):
            return super().evaluate(x, y, batch_size=batch_size, verbose=verbose, **kwargs)
        outputs, prepared = self.predict_outputs(x, batch_size, with_labels=True, verbose=verbose)
        results = self.score(outputs, prepared)
        if not return_errors:
            results.pop("errors", None)
        return results

    # === Serving ===

    def serving_signature(self):
        """`tf.TensorSpec`s of the raw inputs of the exported `serve` function."""
        raise NotImplementedError(f"{type(self).__name__} does not support export() yet.")

    def serve(self, *raw_inputs):
        """Raw string tensors -> a dict of output tensors (TF ops only; runs in the SavedModel)."""
        raise NotImplementedError(f"{type(self).__name__} does not support export() yet.")

    def export(self, path):
        """Write a TF SavedModel whose `serve` signature takes raw strings.

        It loads with plain TensorFlow once `tensorflow_text` is imported (for the WordPiece
        op): `tf.saved_model.load(path).signatures["serve"](text=tf.constant([...]))`. The
        tokeniser is a TensorFlow graph, so under JAX or torch the export runs in a
        TensorFlow-backend subprocess (see `export_under_tensorflow`).

        Example:
        >>> classifier.export("sentiment_savedmodel")
        """
        self.check_outputs_known()
        with atomic_path(path) as temporary:  # a kill mid-export leaves no half-written SavedModel at `path`
            if keras.backend.backend() != "tensorflow":
                export_under_tensorflow(self, temporary)
            else:
                archive = keras.export.ExportArchive()
                archive.track(self)
                archive.add_endpoint("serve", self.serve, input_signature=self.serving_signature())
                archive.write_out(str(temporary), verbose=False)
        return path

    # === Serialisation ===

    def save(self, filepath, overwrite=True, include_optimizer=False, **kwargs):
        """Write a `.keras` file: config, weights and the tokenizer's vocabulary (an asset).

        For deployment, the default leaves out the optimizer and the compile settings: AdamW's
        two moments per weight would triple the file. `include_optimizer=True` keeps both, to
        resume training where it stopped.

        Example:
        >>> classifier.save("sentiment.keras")  # ~ the weights' size; reloads and predicts
        >>> classifier.save("checkpoint.keras", include_optimizer=True)  # to fit further
        """
        if not overwrite and os.path.exists(filepath):
            raise FileExistsError(f"{filepath} exists; pass overwrite=True to replace it, or another path.")
        with atomic_path(filepath) as temporary:  # a kill mid-save leaves the old file (or none), never a torn one
            if include_optimizer or not self.compiled:
                return super().save(str(temporary), **kwargs)
            optimizer = self.optimizer
            self.optimizer, self.compiled = None, False
            try:
                return super().save(str(temporary), **kwargs)
            finally:
                self.optimizer, self.compiled = optimizer, True

    # === int8 ===

    def quantize(self, mode="int8", weight_only=False, config=None, **kwargs):
        """Post-training int8 quantisation (Keras `Model.quantize`): every Dense kernel (the fused QKV kernel
        included) and embedding table becomes int8 with a float scale per output (per row for embeddings);
        LayerNorms, biases and the task's logits layer stay float32. Activations are quantised per token on the
        fly (int8 x int8 products), or with `weight_only=True` kept in float (each kernel is scaled back to float
        before its product: closer to float32, and on CPUs without fast int8 kernels faster). The model saves to
        `.keras` (reloaded quantised) and exports; it is for inference, not for more training.

        Example:
        >>> classifier.quantize("int8")
        >>> classifier.save("sentiment_int8.keras")
        """
        if mode != "int8":
            raise ValueError(f"mode={mode!r}: kerasbert task models quantise to 'int8' (weights and activations, or "
                             "weight_only=True), which their saved files record.")
        if self.quantization is not None:
            raise ValueError(
                f"This {type(self).__name__} is already quantised ({self.quantization}); quantising again would "
                "round the rounded weights. Quantise the float model once (reload it from its float file)."
            )
        if weight_only:  # `config` is the default Keras made of `mode` (Layer's quantize wrapper)
            config = keras.quantizers.Int8QuantizationConfig(activation_quantizer=None)
        super().quantize(None if weight_only else mode, config=config,
                         filters=lambda layer: type(layer) in QUANTIZABLE_LAYERS, **kwargs)
        self.quantization = WEIGHT_ONLY_INT8 if weight_only else mode
        # Compiled functions hold the float variables Keras just replaced.
        self.inference_function = self.packing_function = None
        self.predict_function = self.train_function = self.test_function = None

    # The constructor arguments a task keeps as attributes of the same name: `get_config` saves them.
    config_names = ()

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor),
            "head": None if self.head is None else keras.saving.serialize_keras_object(self.head),
            "fine_tuning": self.fine_tuning,
            **({"quantization": self.quantization} if self.quantization else {}),
            **{name: getattr(self, name) for name in self.config_names},
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        quantization = config.pop("quantization", None)
        for key in ("backbone", "preprocessor", "head"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        task = cls(**config)
        if quantization:  # the int8 variables the saved weights load into
            task.quantize("int8", weight_only=quantization == WEIGHT_ONLY_INT8)
        return task
