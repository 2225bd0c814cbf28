"""Task: the base of every task model: its graph, config, `.keras` files and `from_preset`.

A task model is a plain functional `keras.Model` (backbone -> head) that also owns its preprocessor; the raw-data
`fit`/`evaluate`/`predict` it inherits live in `PipelineModel`. A subclass builds its graph in `__init__` (the
default head: `kerasbert.tasks.heads.task_outputs`), names the constructor arguments `get_config` saves in
`config_names` and the DataFrame columns it reads in `default_columns` (`columns=` renames them; `model.columns`),
and overrides these hooks:

- `prepare(data, with_labels, training=False)` -> `Prepared`: validate and tokenise raw data (may learn labels
  when `training`). Required.
- `default_loss()` -> the Keras loss `fit` compiles with. Required to `fit`.
- `decode(outputs, prepared)` -> DataFrame of predictions, one row per input row. Required to `predict`.
- `score(outputs, prepared)` -> dict of metrics, fractions (plus `errors`, a DataFrame). Required to `evaluate`.
- `default_metrics()` / `default_weighted_metrics()` -> Keras metrics shown during `fit`. Optional.
- `serving_signature()` and `serve(*raw)` -> raw-string `tf.TensorSpec`s and TF-only outputs. Needed to `export`.
- `make_dataset(prepared, **options)` and `example_lengths(prepared)`: a task that batches its own way. Optional.
- `heads_from_checkpoint(checkpoint)`: load the head of a fine-tuned checkpoint. Optional (`hf_head` for a Dense).
- `balanced_class_weight(prepared)` / `class_weight_by_index(class_weight)`: `fit(class_weight=...)`. Optional.
- `upgrade_config(config)` -> the config with keys an earlier kerasbert saved renamed to today's. Optional.

Examples:
    >>> class MyTask(Task):
    ...     def __init__(self, backbone, preprocessor, **kwargs):
    ...         outputs, self.logits_layer, head_inputs = task_outputs(backbone, backbone.input, None, 2,
    ...                                                                "pooled_output", (None, 2), "MyTask")
    ...         super().__init__(inputs=backbone.input, outputs=outputs, backbone=backbone,
    ...                          preprocessor=preprocessor, head_inputs=head_inputs, **kwargs)
"""

import os

import keras

from kerasbert.arguments import check_count
from kerasbert.atomic_files import atomic_path
from kerasbert.deployment.export import export_saved_model
from kerasbert.deployment.onnx_export import export_onnx
from kerasbert.deployment.quantize import WEIGHT_ONLY_INT8, quantize_task
from kerasbert.families.bert.bert_backbone import check_tokenizer_fits
from kerasbert.families.bert_preprocessor import BertPreprocessor
from kerasbert.families.checkpoint_weights import assign_links, dense_links
from kerasbert.families.family import backbone_class_for, tokenizer_from_preset
from kerasbert.families.sequence_length import check_sequence_length_fits, longest_input
from kerasbert.fine_tuning.frozen_features import FROZEN_FEATURES, FrozenFeatureState, call_on_frozen_features
from kerasbert.fine_tuning.modes import FineTuningConfig, apply_fine_tuning, check_fields_given_apart
from kerasbert.fine_tuning.quantization_aware import train_on_int8_grid
from kerasbert.fine_tuning.task_weights import load_task_weights, save_task_weights, task_from_weights
from kerasbert.json_records import as_config
from kerasbert.presets.loading import load_checkpoint
from kerasbert.tasks.columns import resolve_columns
from kerasbert.tasks.earlier_options import check_no_earlier_options, upgraded_task_config
from kerasbert.tasks.heads import TRANSFORM_NAME
from kerasbert.tasks.pipeline_model import PipelineModel

UNBOUNDED_DEFAULT_LENGTH = 512  # `from_preset`'s default for a backbone without a position table (XLNet's)


def check_task_takes(task_class, backbone_class, preset, family):
    """A ValueError when `backbone_class` takes no task models, or not this one (its `task_models`: True for
    all, False for none, or a dict of the task classes it takes), naming the ones it takes and the way out."""
    task_models = getattr(backbone_class, "task_models", True)
    if task_models is True or task_models and task_class.__name__ in task_models:
        return
    name = backbone_class.__name__
    takes = f"it takes {' and '.join(task_models)} only" if task_models else "no task model takes it yet"
    raise ValueError(f"{preset} holds a {family} model: {task_class.__name__} does not take a {name} ({takes}). "
                     f"Build it with {name}.from_preset and put your own head on its outputs.")


def task_settings(backbone_class, task_class):
    """The backbone settings a family gives a task model of `task_class` (or of a class it derives from): its
    backbone class's `task_settings` (Longformer's global `<s>` in classifiers), {} for most families."""
    settings = getattr(backbone_class, "task_settings", {})
    return next((settings[klass.__name__] for klass in task_class.__mro__ if klass.__name__ in settings), {})


class Task(PipelineModel):
    """Base class of the task models; see the module docstring for the hooks. Not used directly.

    `head`: a Keras layer in place of the default head: called on `head_features` (the backbone's outputs and the
    padding mask), it returns the task's logits; saved in the `.keras` file (register its class with Keras).
    """

    default_columns = {}  # the DataFrame columns the task reads: {role: default name}
    nullable_columns = ()  # roles that `columns=` may set to None (never read)

    def __init__(self, *args, backbone, preprocessor, head=None, fine_tuning="full", head_inputs=None, columns=None,
                 **kwargs):
        check_sequence_length_fits(getattr(preprocessor, "sequence_length", None), backbone)  # None: Keras-level use
        check_tokenizer_fits(backbone, getattr(preprocessor, "tokenizer", None))
        check_fields_given_apart(kwargs, fine_tuning)
        check_no_earlier_options(type(self), kwargs)
        fine_tuning = FineTuningConfig.coerce(fine_tuning)  # its sizes are the backbone's
        columns = resolve_columns(self.default_columns, columns, type(self).__name__, self.nullable_columns)
        super().__init__(*args, **kwargs)
        self.backbone, self.preprocessor, self.head, self.columns = backbone, preprocessor, head, columns
        self.fine_tuning, self.layer_mix = fine_tuning.mode, fine_tuning.layer_mix
        apply_fine_tuning(self, self.fine_tuning)
        self.quantization_aware = fine_tuning.quantization_aware
        if self.quantization_aware:
            train_on_int8_grid(self)
        self.frozen_features = FrozenFeatureState(head_inputs)
        self.quantization = None

    def call(self, inputs, training=None, mask=None, **kwargs):
        """The functional graph; a training batch that carries cached frozen features runs the head only."""
        if isinstance(inputs, dict) and FROZEN_FEATURES in inputs:
            return call_on_frozen_features(self, inputs, training)
        return super().call(inputs, training=training, mask=mask, **kwargs)

    # === Construction ===

    default_sequence_length = None  # `from_preset`'s longest packed input when not told (None: the whole table)

    @classmethod
    def from_preset(cls, preset, load_weights=True, sequence_length=None, allow_pickle=False,
                    backbone_overrides=None, fine_tuning="full", **task_args):
        """Build the task on `preset`'s backbone and tokenizer.

        `preset`: a built-in name, a kerasbert / HF / Google checkpoint folder, or `hf://org/name`.
        `sequence_length`: the longest packed input, at most the backbone's position table (longer
        inputs are truncated; batches are padded dynamically, so short texts cost nothing extra);
        None: `default_sequence_length`, else the whole table. `backbone_overrides` replace
        backbone config values (e.g. `{"dropout": 0.0}`). `task_args` go to the task class; a
        HF checkpoint's own task head is used when it matches (see `heads_from_checkpoint`).
        `fine_tuning`: "full" (default), "frozen", "adapters" or "lora", or a `FineTuningConfig` with the
        mode's sizes (adapter width 64; LoRA rank 8, alpha 16, on query and value by default): see
        `kerasbert.fine_tuning.modes`; `FineTuningConfig(mode, layer_mix=True)` feeds the head a learned
        mix of every layer.

        Examples:
            >>> classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2)
            >>> lora = FineTuningConfig("lora", lora_rank=4)
            >>> classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2, fine_tuning=lora)
        """
        if sequence_length is not None:
            check_count("sequence_length", sequence_length, minimum=3)
        check_fields_given_apart(task_args, fine_tuning)
        fine_tuning = FineTuningConfig.coerce(fine_tuning)
        checkpoint = load_checkpoint(preset, load_weights, allow_pickle)
        backbone_class = backbone_class_for(checkpoint)
        check_task_takes(cls, backbone_class, preset, checkpoint.family)
        tokenizer = tokenizer_from_preset(preset)  # before any model is built: a missing file is named first
        overrides = {**task_settings(backbone_class, cls),
                     **fine_tuning.backbone_overrides(checkpoint.backbone_config["hidden_dim"]),
                     **(backbone_overrides or {})}
        backbone = backbone_class.from_checkpoint(checkpoint, **overrides)
        longest = longest_input(backbone)
        if sequence_length is None:
            sequence_length = cls.default_sequence_length or longest or UNBOUNDED_DEFAULT_LENGTH
            sequence_length = sequence_length if longest is None else min(sequence_length, longest)
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
        """Fill task arguments a checkpoint knows: a fine-tuned HF classifier's labels (`id2label`; HF's default
        names `LABEL_i`, one per output of its head, where the config has none: transformers 5 writes none for
        two labels), unless the user gave `labels` or their count."""
        prefix, architecture = cls.hf_head_on(backbone_class_for(checkpoint)) or (None, None)
        head = checkpoint.heads(f"{prefix}.", architecture)
        if cls.hf_labels_argument and f"{prefix}.weight" in head \
                and "labels" not in task_args and cls.hf_labels_argument not in task_args:
            id2label = checkpoint.id2label or {i: f"LABEL_{i}" for i in range(head[f"{prefix}.weight"].shape[0])}
            return {**task_args, "labels": [id2label[i] for i in sorted(id2label)]}
        return task_args

    @classmethod
    def hf_head_on(cls, backbone_class):
        """`hf_head`, or the family's own name for it: `task_models` of a family's backbone (e.g. XLNet's
        `logits_proj`) or its `hf_heads` (e.g. DeBERTa's `classifier` saved by `DebertaV2ForSequenceClassification`)."""
        task_models = getattr(backbone_class, "task_models", True)
        if isinstance(task_models, dict):
            return task_models.get(cls.__name__)
        return getattr(backbone_class, "hf_heads", {}).get(cls.__name__, cls.hf_head)

    def heads_from_checkpoint(self, checkpoint):
        """Load the checkpoint's `hf_head` into the default logits layer when it has one of the same
        size, and the family's transform before it where both have one (ModernBERT's `head.*`, from any of its HF
        task models, the masked LM's too, as HF's `from_pretrained` does); a user's `head=` loads nothing."""
        # Not a class attribute: under torch a layer attribute lives in `_modules`, behind any class default.
        logits_layer = getattr(self, "logits_layer", None)
        hf_head = self.hf_head_on(type(self.backbone))
        if hf_head is None or logits_layer is None:
            return
        if getattr(self.backbone, "task_transform", None) is not None:
            self.transform_from_checkpoint(checkpoint)
        if logits_layer.units is None:
            return
        prefix, architecture = hf_head
        weights = checkpoint.heads(f"{prefix}.", architecture)
        if weights and weights[f"{prefix}.weight"].shape[0] == logits_layer.units:
            assign_links(dense_links(logits_layer, prefix), weights, checkpoint.source)

    def transform_from_checkpoint(self, checkpoint):
        """Load the family's task transform (the layer before the logits: `kerasbert.tasks.heads.family_transform`)
        from the checkpoint's weights of its HF names, when it holds any of them."""
        transform = next((layer for layer in self.layers if layer.name == TRANSFORM_NAME), None)
        links = list(self.backbone.task_transform_links(transform)) if transform is not None else []
        names = {name for _, hf_names, _ in links for name in hf_names}
        if names & set(checkpoint.state_dict or {}):
            assign_links(links, checkpoint.state_dict, checkpoint.source)

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

        Examples:
            >>> classifier.save_task_weights("sentiment.safetensors")
        """
        return save_task_weights(self, path)

    def load_task_weights(self, path):
        """Load a task weight file into this task (same class, backbone shape, fine-tuning and labels)."""
        return load_task_weights(self, path)

    @classmethod
    def from_task_weights(cls, path, preset, load_weights=True):
        """This task on `preset`, with the settings and trained weights of the task file at `path`.

        Examples:
            >>> classifier = BertClassifier.from_task_weights("sentiment.safetensors", "all_minilm_l6_v2_en")
        """
        return task_from_weights(cls, path, preset, load_weights)

    @property
    def tokenizer(self):
        """The preprocessor's tokenizer."""
        return self.preprocessor.tokenizer

    @property
    def sequence_length(self):
        """The longest packed input, special tokens included (the preprocessor's)."""
        return self.preprocessor.sequence_length

    # === Serving ===

    def serving_signature(self):
        """`tf.TensorSpec`s of the raw inputs of the exported `serve` function."""
        raise NotImplementedError(f"{type(self).__name__} does not support export() yet.")

    def serve(self, *raw_inputs):
        """Raw string tensors -> a dict of output tensors (TF ops only; runs in the SavedModel)."""
        raise NotImplementedError(f"{type(self).__name__} does not support export() yet.")

    def export(self, path, format="saved_model", quantize=None):
        """Write the model for deployment: a TF SavedModel (default) or an ONNX folder (`format="onnx"`).

        The SavedModel's `serve` signature takes raw strings (tokenisation in the graph); it loads with plain
        TensorFlow once `tensorflow_text` is imported: `tf.saved_model.load(path).signatures["serve"](text=...)`.
        Under JAX or torch it is written by a TensorFlow-backend subprocess. The ONNX folder holds `model.onnx`
        (token ids in, the task's outputs out; `quantize="int8"` for ONNX Runtime's int8), the tokenizer and the
        config: `load_onnx_task(path)` predicts raw text with it (see `kerasbert.deployment.onnx_export`).

        Examples:
            >>> classifier.export("sentiment_savedmodel")
            >>> classifier.export("sentiment_onnx", format="onnx", quantize="int8")
        """
        if format == "onnx":
            return export_onnx(self, path, quantize)
        if format != "saved_model":
            raise ValueError(f"format={format!r}: export writes 'saved_model' (TensorFlow, raw strings in) or "
                             "'onnx' (ONNX Runtime, token ids in).")
        if quantize is not None:
            raise ValueError("quantize= applies to format='onnx'; for a quantised SavedModel call "
                             "model.quantize('int8') first, then export.")
        return export_saved_model(self, path)

    # === Serialisation ===

    def save(self, filepath, overwrite=True, include_optimizer=False, **kwargs):
        """Write a `.keras` file: config, weights and the tokenizer's vocabulary (an asset).

        For deployment, the default leaves out the optimizer and the compile settings: AdamW's
        two moments per weight would triple the file. `include_optimizer=True` keeps both, to
        resume training where it stopped.

        Examples:
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
        """Post-training int8 quantisation for inference (see `kerasbert.deployment.quantize`): Dense kernels
        and embedding tables int8 with a float scale per output; activations quantised per token, or kept in float
        with `weight_only=True`. The model saves to `.keras` (reloaded quantised) and exports.

        Examples:
            >>> classifier.quantize("int8")
            >>> classifier.save("sentiment_int8.keras")
        """
        self.quantization = quantize_task(self, mode, weight_only, config, **kwargs)
        # Compiled functions hold the float variables Keras just replaced.
        self.inference_function = self.packing_function = None
        self.predict_function = self.train_function = self.test_function = None

    config_names = ()  # the constructor arguments kept as attributes of the same name: `get_config` saves them

    def get_config(self):
        """The Keras config: backbone, preprocessor and head serialised, the task's options as plain values."""
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor),
            "head": None if self.head is None else keras.saving.serialize_keras_object(self.head),
            "fine_tuning": FineTuningConfig(self.fine_tuning, layer_mix=self.layer_mix,
                                            quantization_aware=self.quantization_aware).saved(),
            **({"columns": dict(self.columns)} if self.default_columns else {}),
            **({"quantization": self.quantization} if self.quantization else {}),
            **{name: as_config(getattr(self, name)) for name in self.config_names},
        }

    @classmethod
    def upgrade_config(cls, config):
        """`config` with the keys an earlier kerasbert saved turned into today's (`text_column` -> `columns`,
        `layer_mix` -> `fine_tuning`, `doc_stride` -> `long_inputs`); a task whose options moved adds its own."""
        return upgraded_task_config(config, cls.default_columns, "long_inputs" in cls.config_names)

    @classmethod
    def from_config(cls, config):
        """The task of a Keras config (one an earlier kerasbert saved too), quantised again if it was."""
        config = cls.upgrade_config(dict(config))
        quantization = config.pop("quantization", None)
        for key in ("backbone", "preprocessor", "head"):
            if isinstance(config.get(key), dict):
                config[key] = keras.saving.deserialize_keras_object(config[key])
        task = cls(**config)
        if quantization:  # the int8 variables the saved weights load into
            task.quantize("int8", weight_only=quantization == WEIGHT_ONLY_INT8)
        return task

