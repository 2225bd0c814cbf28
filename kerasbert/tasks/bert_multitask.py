"""BertMultiTask: one BERT encoder, a head per task, trained on all tasks at once (MT-DNN, Liu et al. 2019)."""

import contextlib

import keras
import pandas as pd
import tensorflow as tf

from kerasbert.data.task_mixing import check_mixing, epochs_needed, mixed_batches, task_order
from kerasbert.layers.task_head import DenseTaskHead
from kerasbert.progress import progress_verbosity
from kerasbert.tasks.bert_classifier import BertClassifier
from kerasbert.tasks.bert_token_classifier import BertTokenClassifier
from kerasbert.tasks.heads import head_features
from kerasbert.tasks.run_arguments import DEFAULT_BATCH_SIZE, check_run_arguments
from kerasbert.tasks.task import Task
from kerasbert.training.default_optimizer import (
    create_optimizer,
    default_learning_rate,
    fit_optimizer_options,
    updates_of,
)
from kerasbert.training.fit_arguments import check_seed

TASK_KINDS = {"classifier": BertClassifier, "token-classifier": BertTokenClassifier}
READS = {"classifier": "pooled_output", "token-classifier": "sequence_output"}


class TaskViews:
    """The single-task models of a `BertMultiTask`, kept outside Keras' tracking (they share its layers)."""

    def __init__(self, views):
        self.views = views


@keras.saving.register_keras_serializable(package="kerasbert")
class BertMultiTask(Task):
    """One backbone with a head per task (classification, regression, multi-label, token classification),
    trained from a dict of DataFrames with batches drawn from the tasks in proportion to their sizes (MT-DNN)
    or in a given mix, evaluated per task, saved as one `.keras` with every head.

    `tasks`: `{name: spec}`. A spec is the training DataFrame itself (the kind and labels are read from its
    columns as `fit(df)` reads them: `tokens`/`tags` make a token classifier, else a classifier of `text`
    (and `text_pair`) by `label`), or a dict `{"kind": "classifier" | "token-classifier", ...}` with the
    arguments of that task class (`labels`, `problem_type`, `num_classes`, column names, `dropout`).
    Each task is also a full single-task model on the shared layers: `multitask.task("mrpc")` predicts,
    evaluates and saves on its own.

    Examples:
        >>> multitask = BertMultiTask.from_preset("all_minilm_l6_v2_en", sequence_length=128,
        ...                                       tasks={"mrpc": mrpc_train, "stsb": stsb_train, "ner": conll_train})
        >>> multitask.fit({"mrpc": mrpc_train, "stsb": stsb_train, "ner": conll_train}, epochs=3)
        >>> multitask.evaluate({"mrpc": mrpc_dev, "stsb": stsb_dev})   # {"mrpc": {...}, "stsb": {...}}
        >>> multitask.predict(["It rains.", "It pours."], task="mrpc")
    """

    def __init__(self, backbone, preprocessor, tasks, **kwargs):
        if not isinstance(tasks, dict) or not tasks:
            raise ValueError("tasks must be a non-empty dict {name: DataFrame or spec dict}, e.g. "
                             "{'mrpc': mrpc_train, 'ner': {'kind': 'token-classifier', 'labels': [...]}}.")
        views = {name: task_view(name, spec, backbone, preprocessor) for name, spec in tasks.items()}
        inputs = backbone.input
        features = head_features(backbone, inputs)
        outputs = {name: view.head(features) for name, view in views.items()}
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor, **kwargs)
        self.task_views = TaskViews(views)

    @property
    def task_names(self):
        return list(self.task_views.views)

    def task(self, name):
        """The single-task model of `name` (it shares the encoder and its head with this model)."""
        if name not in self.task_views.views:
            raise ValueError(f"No task {name!r}; this model has tasks {self.task_names}.")
        return self.task_views.views[name]

    # === Training ===

    def fit(self, x=None, epochs=1, batch_size=None, mixing="proportional", learning_rate=None, seed=0,
            verbose="auto", callbacks=None, optimizer="adamw", gradient_accumulation_steps=None, **kwargs):
        """Train every head and the shared encoder on `x`, a dict `{task: DataFrame}` (any subset of the tasks).

        `mixing`: "proportional" (each epoch holds every task's batches once, shuffled together, as MT-DNN) or
        `{task: weight}` (each step draws a task with these weights; an epoch is as many steps). Unless you
        compiled yourself: AdamW with `learning_rate` (default by model size), 10% warmup and linear decay,
        each task's own loss and metrics (logged as `<task>_<metric>`; `<task>_loss` is averaged over every
        step, counting 0 for the steps of other tasks, while the metrics count only the task's own batches).
        The heads of tasks left out of `x` do not change. A head in `x` gets no gradient from other tasks'
        batches, but, as every Keras optimizer updates every variable each step, AdamW's momentum and weight
        decay still move it a little there (PyTorch skips parameters without a gradient). `optimizer="lamb"` and
        `gradient_accumulation_steps=k` (one update every k steps, whatever their tasks) as in a task's `fit`.

        Examples:
            >>> multitask.fit({"mrpc": mrpc_train, "rte": rte_train}, epochs=3, mixing={"mrpc": 1, "rte": 2})
        """
        if kwargs:
            raise TypeError(f"BertMultiTask.fit got unexpected arguments {sorted(kwargs)}; evaluate each task with "
                            f"evaluate({{task: DataFrame}}) after fit.")
        data = self.checked_task_data(x)
        batch_size = batch_size or DEFAULT_BATCH_SIZE
        for name, frame in data.items():
            check_run_arguments(frame, batch_size, epochs)
        defaults = fit_optimizer_options(learning_rate, optimizer, gradient_accumulation_steps,
                                         own_optimizer=self.compiled and not self.default_compiled)
        check_seed(seed)
        mixing = check_mixing(mixing, list(data))
        prepared = {}
        for name, frame in data.items():
            try:
                prepared[name] = self.task(name).prepare(frame, with_labels=True, training=True)
            except (ValueError, TypeError) as error:
                raise type(error)(f"In task {name!r}: {error}") from None
        batches = [-(-len(self.task(name).example_lengths(prepared[name])) // batch_size) for name in data]
        weights = mixing if mixing == "proportional" else [mixing[name] for name in data]
        order = task_order(batches, epochs, weights, seed)
        datasets = {name: self.task(name).batches(prepared[name], with_labels=True, training=True,
                                                  batch_size=batch_size, seed=seed + index, epochs=range(needed))
                    for index, (name, needed) in enumerate(zip(data, epochs_needed(order, batches)))}
        steps_per_epoch = int(sum(batches))
        label_specs = {name: label_spec(view) for name, view in self.task_views.views.items()}
        with self.heads_fixed(set(self.task_names) - set(data)), self.strategy_scope():
            if not self.compiled or self.default_compiled:
                self.compile_defaults(steps_per_epoch * epochs, **defaults)
            self.build_optimizer()
            return keras.Model.fit(self, mixed_batches(datasets, order, label_specs), epochs=epochs,
                                   steps_per_epoch=steps_per_epoch, verbose=progress_verbosity(verbose), callbacks=callbacks,
                                   shuffle=False)  # the stream is already shuffled with `seed`

    @contextlib.contextmanager
    def heads_fixed(self, names):
        """The heads of tasks not in this fit stay as they are (no weight decay, no optimizer step)."""
        heads = [self.task(name).head for name in names if self.task(name).head.trainable]
        for head in heads:
            head.trainable = False
        try:
            yield
        finally:
            for head in heads:
                head.trainable = True

    def compile_defaults(self, total_steps, learning_rate=None, optimizer="adamw", gradient_accumulation_steps=None):
        """AdamW (or LAMB) with warmup and decay; each task's loss, and its metrics weighted (other tasks' batches
        carry weight 0 for this task's output, so they count in neither its loss nor its metrics)."""
        views = self.task_views.views
        keras.Model.compile(
            self,
            optimizer=create_optimizer(updates_of(total_steps, gradient_accumulation_steps),
                                       learning_rate or default_learning_rate(self.backbone.hidden_dim),
                                       optimizer=optimizer, gradient_accumulation_steps=gradient_accumulation_steps),
            loss={name: view.default_loss() for name, view in views.items()},
            weighted_metrics={name: (view.default_metrics() or []) + (view.default_weighted_metrics() or [])
                              for name, view in views.items()},
        )
        self.default_compiled = True

    def checked_task_data(self, data):
        if not isinstance(data, dict) or not data:
            raise TypeError(f"BertMultiTask takes a dict {{task: DataFrame}} over its tasks {self.task_names}; "
                            f"got {type(data).__name__}.")
        unknown = sorted(set(data) - set(self.task_names))
        if unknown:
            raise ValueError(f"Unknown task(s) {unknown}: this model has tasks {self.task_names}.")
        return data

    # === Evaluation and prediction ===

    def evaluate(self, x=None, batch_size=None, verbose="auto", **kwargs):
        """`{task: that task's evaluate dict}` for a dict `{task: DataFrame}`.

        Examples:
            >>> multitask.evaluate({"mrpc": mrpc_dev})["mrpc"]["f1"]
        """
        return {name: self.task(name).evaluate(frame, batch_size=batch_size, verbose=verbose, **kwargs)
                for name, frame in self.checked_task_data(x).items()}

    def predict(self, x, task=None, batch_size=None, verbose="auto", **kwargs):
        """The predictions of `task` on `x` (anything that task's `predict` takes), as its DataFrame."""
        if task is None:
            raise ValueError(f"Name the task to predict: predict(texts, task=...), one of {self.task_names}.")
        return self.task(task).predict(x, batch_size=batch_size, verbose=verbose, **kwargs)

    def check_outputs_known(self):
        return None

    # === Serialisation ===

    def get_config(self):
        config = super().get_config()
        config.pop("head", None)
        config["tasks"] = {name: {"kind": kind_of(view), "head": keras.saving.serialize_keras_object(view.head),
                                  **view_settings(view)}
                           for name, view in self.task_views.views.items()}
        return config


def label_spec(view):
    """The `tf.TensorSpec` of a task's label batches (per token: `[batch, None]`)."""
    if isinstance(view, BertTokenClassifier):
        return tf.TensorSpec([None, None], tf.int32)
    if view.problem_type == "regression":
        return tf.TensorSpec([None, 1], tf.float32)
    if view.problem_type == "multilabel":
        return tf.TensorSpec([None, view.num_classes], tf.float32)
    return tf.TensorSpec([None], tf.int32)


def kind_of(view):
    return next(kind for kind, view_class in TASK_KINDS.items() if isinstance(view, view_class))


def view_settings(view):
    """A single-task model's own arguments (labels, columns, ...), without what the multi-task model owns."""
    owned = ("backbone", "preprocessor", "head", "name", "trainable", "fine_tuning")
    return {key: value for key, value in view.get_config().items() if key not in owned}


def task_view(name, spec, backbone, preprocessor):
    """The single-task model of `name` on the shared backbone, with its own `DenseTaskHead`."""
    if isinstance(spec, pd.DataFrame):
        spec = spec_from_data(spec, backbone, preprocessor)
    if not isinstance(spec, dict) or spec.get("kind") not in TASK_KINDS:
        raise ValueError(f"Task {name!r}: give its training DataFrame or a dict with kind one of "
                         f"{list(TASK_KINDS)}, got {spec!r}.")
    arguments = dict(spec)
    kind, head = arguments.pop("kind"), arguments.pop("head", None)
    arguments = TASK_KINDS[kind].upgrade_config(arguments)  # a spec saved by an earlier kerasbert
    if isinstance(head, dict):
        head = keras.saving.deserialize_keras_object(head)
    if head is None:
        probe = TASK_KINDS[kind](backbone=backbone, preprocessor=preprocessor, **arguments)
        units = probe.logits_layer.units
        if units is None:
            raise ValueError(f"Task {name!r}: give labels=[...] (or num_classes / problem_type='regression'), or "
                             f"its training DataFrame to learn them from.")
        head = DenseTaskHead(units, reads=READS[kind], dropout=arguments.get("dropout", 0.1),
                             initializer_range=backbone.initializer_range, name=f"{name}_head")
    return TASK_KINDS[kind](backbone=backbone, preprocessor=preprocessor, head=head, name=name, **arguments)


def spec_from_data(frame, backbone, preprocessor):
    """A task spec read from a training DataFrame: its kind from the columns, its labels from the label column."""
    kind = "token-classifier" if {"tokens", "tags"} <= set(frame.columns) else "classifier"
    probe = TASK_KINDS[kind](backbone=backbone, preprocessor=preprocessor)
    probe.prepare(frame, with_labels=True, training=True)  # learns labels, problem type, pairs
    if kind == "token-classifier":
        return {"kind": kind, "labels": probe.labels}
    spec = {"kind": kind, "problem_type": probe.problem_type, "uses_pairs": probe.uses_pairs}
    return spec if probe.class_names is None else {**spec, "labels": list(probe.class_names)}
