"""Knowledge distillation: a student task model learns from a fitted teacher's soft targets and the labels.

The loss of a batch (Hinton et al. 2015; DistilBERT, Sanh et al. 2019; TinyBERT, Jiao et al. 2020):

    alpha * T^2 * KL(softmax(teacher / T) || softmax(student / T))      soft targets, `soft_target_loss`
    + (1 - alpha) * cross-entropy(student, labels)                     hard targets, `hard_target_loss`
    + hidden_weight * MSE(hidden_states_student @ W, hidden_states_teacher)       `hidden_state_loss`
    + attention_weight * squared distance of the attention maps                    `attention_map_loss`

Classification averages over the rows, token classification over the scored tokens (each word's first
piece). Unlabelled rows (`fit(..., unlabelled=...)`) enter the soft targets and the hidden and attention
terms only. `W` is a learned projection from the student's width to the teacher's (TinyBERT's `W_h`; the
identity at the start when the widths are equal), trained with the student and not part of it. Student
layer m learns teacher layer `m * N // M` (TinyBERT's uniform mapping; 0 is the embedding output), block i's
attention the teacher block whose output that mapping pairs with block i's.

The teacher runs in inference mode and never trains; the student is the user's task model, trained in place,
and stays an ordinary task (`predict`, `evaluate`, `.keras`, `export`).
"""


import keras
import numpy as np
import pandas as pd
import tensorflow as tf
from keras import ops

from kerasbert.arguments import check_number
from kerasbert.data.prepared import Prepared
from kerasbert.distillation.student_models import DISTILLABLE_TASKS, distillation_view, with_backbone_outputs
from kerasbert.families.sequence_length import longest_input
from kerasbert.progress import progress_verbosity
from kerasbert.tasks.bert_classifier import BertClassifier
from kerasbert.tasks.bert_token_classifier import BertTokenClassifier
from kerasbert.tasks.run_arguments import DEFAULT_BATCH_SIZE, check_run_arguments
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS
from kerasbert.training.default_optimizer import create_optimizer, default_learning_rate
from kerasbert.training.fit_arguments import check_callbacks, check_learning_rate, check_seed
from kerasbert.training.unused_weights import weights_unused_by_design

HAS_LABEL = "has_label"  # the batch feature that marks labelled rows (1) and unlabelled ones (0)


# === Losses (keras.ops: TensorFlow, JAX and torch) ===

def weighted_mean(values, weight=None):
    """The mean of `values`, or their mean over the entries where the 0/1 `weight` is 1 (0 if there are none)."""
    if weight is None:
        return ops.mean(values)
    weight = ops.cast(weight, values.dtype)
    return ops.sum(values * weight) / ops.maximum(ops.sum(weight), 1.0)


def soft_target_loss(student_logits, teacher_logits, temperature, weight=None):
    """`T^2 * KL(softmax(teacher / T) || softmax(student / T))`, summed over the classes (last axis) and averaged
    over the rows or tokens (where the 0/1 `weight` is 1). The T^2 keeps its gradients at the scale of the
    labels' cross-entropy whatever T (Hinton et al. 2015).

    Examples:
        >>> float(soft_target_loss(np.array([[0.0, 1.0]]), np.array([[0.0, 1.0]]), 2.0))
        0.0
    """
    teacher = ops.log_softmax(ops.cast(teacher_logits, "float32") / temperature, axis=-1)
    student = ops.log_softmax(ops.cast(student_logits, "float32") / temperature, axis=-1)
    divergence = ops.sum(ops.exp(teacher) * (teacher - student), axis=-1)
    return temperature ** 2 * weighted_mean(divergence, weight)


def hard_target_loss(student_logits, labels, weight=None):
    """Cross-entropy of the student's logits on the class ids `labels`, averaged where the 0/1 `weight` is 1
    (as `SparseCategoricalCrossentropy(from_logits=True)` on a task's batches).

    Examples:
        >>> float(hard_target_loss(np.array([[0.0, 0.0]]), np.array([1])))  # log 2
        0.6931...
    """
    losses = ops.sparse_categorical_crossentropy(labels, ops.cast(student_logits, "float32"), from_logits=True)
    return weighted_mean(losses, weight)


def hidden_state_loss(student_states, teacher_states, projection, padding_mask):
    """Mean squared error between the projected student hidden states and the teacher's, over the hidden units
    and the real tokens, averaged over the pairs of layers (each `[batch, T, width]`)."""
    losses = []
    for student, teacher in zip(student_states, teacher_states):
        error = ops.mean(ops.square(projection(student) - ops.cast(teacher, "float32")), axis=-1)
        losses.append(weighted_mean(error, padding_mask))
    return ops.mean(ops.stack(losses))


def attention_map_loss(student_maps, teacher_maps, padding_mask):
    """Squared distance between the student's and the teacher's attention probabilities (each
    `[batch, heads, T, T]`): summed over the keys, averaged over the heads and the real query tokens, then over
    the pairs of layers."""
    losses = []
    for student, teacher in zip(student_maps, teacher_maps):
        distance = ops.sum(ops.square(ops.cast(student, "float32") - ops.cast(teacher, "float32")), axis=-1)
        weight = ops.broadcast_to(ops.expand_dims(padding_mask, 1), ops.shape(distance))
        losses.append(weighted_mean(distance, weight))
    return ops.mean(ops.stack(losses))


def layer_pairs(student_layers, teacher_layers):
    """TinyBERT's uniform mapping: the teacher hidden state (0 = embeddings) each student hidden state learns.

    Examples:
        >>> layer_pairs(3, 6)
        [0, 2, 4, 6]
    """
    return [m * teacher_layers // student_layers for m in range(student_layers + 1)]


# === Checks ===

def labels_of(task):
    """The task's class or tag names in output order (None before it knows them)."""
    labels = task.class_names if isinstance(task, BertClassifier) else task.labels
    return None if labels is None else list(labels)


def check_pair(teacher, student, hidden_weight, attention_weight):
    """ValueError/TypeError for a teacher and student the `Distiller` cannot pair, naming the problem and fix."""
    for role, task in (("teacher", teacher), ("student", student)):
        if not isinstance(task, DISTILLABLE_TASKS):
            raise TypeError(f"The {role} must be a BertClassifier or BertTokenClassifier, got {type(task).__name__}.")
    if type(teacher) is not type(student):
        raise ValueError(f"The teacher is a {type(teacher).__name__} and the student a {type(student).__name__}: "
                         "build the student for the teacher's task (student_from_teacher does).")
    if teacher is student:
        raise ValueError("The teacher and the student are the same model: build a separate student "
                         "(student_from_teacher(teacher) or a task from a preset).")
    teacher_labels, student_labels = labels_of(teacher), labels_of(student)
    if teacher_labels is None:
        raise ValueError("The teacher does not know its labels yet: fit it on labelled data first.")
    if student_labels != teacher_labels:
        raise ValueError(f"The teacher's labels {teacher_labels} and the student's {student_labels} differ; the soft "
                         "targets are read class by class, so build the student with labels=teacher.labels (same "
                         "names, same order).")
    check_single_label(teacher, "teacher")
    check_single_label(student, "student")
    if type(teacher.tokenizer) is not type(student.tokenizer) or \
            teacher.tokenizer.get_vocabulary() != student.tokenizer.get_vocabulary() or \
            without_name(teacher.tokenizer.get_config()) != without_name(student.tokenizer.get_config()):
        raise ValueError("The teacher and the student tokenise differently (tokenizer class, settings or "
                         "vocabulary), but read the same token ids: build the student with the teacher's tokenizer "
                         "(a preset of the same vocabulary, or student_from_teacher).")
    student_length = student.sequence_length or longest_input(student.backbone)
    if student_length > longest_input(teacher.backbone):
        raise ValueError(f"The student reads up to {student_length} tokens, more than the teacher's position table "
                         f"holds ({longest_input(teacher.backbone)}): build the student with "
                         f"sequence_length={longest_input(teacher.backbone)} or less.")
    if hidden_weight and not student.backbone.output_hidden_states:
        raise ValueError("hidden_weight > 0 reads every layer of the student: build it with "
                         "backbone_overrides={'output_hidden_states': True} (from_preset) or "
                         "student_from_teacher(teacher, output_hidden_states=True).")
    if attention_weight:
        if not student.backbone.output_attentions:
            raise ValueError("attention_weight > 0 reads the student's attention maps: build it with "
                             "backbone_overrides={'output_attentions': True} (from_preset) or "
                             "student_from_teacher(teacher, output_attentions=True).")
        if student.backbone.num_heads != teacher.backbone.num_heads:
            raise ValueError(f"attention_weight > 0 compares attention maps head by head, but the teacher has "
                             f"{teacher.backbone.num_heads} heads and the student {student.backbone.num_heads}: use "
                             "attention_weight=0, or a student with the teacher's number of heads.")


def check_single_label(task, role):
    """A ValueError for a classifier that is multi-label or a regression (None: not known before its first fit)."""
    if isinstance(task, BertClassifier) and task.problem_type not in (None, "binary", "multiclass"):
        raise ValueError(f"The {role} has problem_type={task.problem_type!r}; distillation here is for single-label "
                         "classification (binary or multiclass) and token classification.")


def without_name(config):
    return {key: value for key, value in config.items() if key != "name"}


class DistillationViews:
    """What the `Distiller` calls, kept outside Keras' tracking: the teacher (frozen: none of its variables is
    the Distiller's) and the functional views of both models that return logits and, when used, hidden states
    and attention maps."""

    def __init__(self, teacher, student, hidden_states, attentions):
        self.teacher = teacher
        self.teacher_view = distillation_view(with_backbone_outputs(teacher, hidden_states, attentions),
                                              hidden_states, attentions)
        self.student_view = distillation_view(student, hidden_states, attentions)


# === The Distiller ===

class Distiller(keras.Model):
    """Trains `student` (a `BertClassifier` or `BertTokenClassifier`) from a fitted `teacher` of the same task
    and labels: the loss in the module docstring. `fit` takes the task's DataFrames (plus, optionally, unlabelled
    text for the soft targets) and trains the student in place; the teacher never changes.

    Args:
        teacher: a fitted task model (its labels known); it runs in inference mode.
        student: a task of the same class with the teacher's labels and tokenizer, e.g.
            `student_from_teacher(teacher)` (every other block, DistilBERT) or
            `BertClassifier.from_preset("bert_mini_en_uncased", labels=teacher.labels)`.
        alpha: weight of the soft targets, in [0, 1]; `1 - alpha` weighs the labels (0: plain fine-tuning).
        temperature: T > 0, softens both distributions (1: plain softmax; DistilBERT used 2).
        hidden_weight: weight of the hidden-state MSE (>= 0); needs a student built with
            `output_hidden_states=True`.
        attention_weight: weight of the attention-map loss (>= 0); needs a student built with
            `output_attentions=True` and the teacher's number of heads.

    Examples:
        >>> teacher = BertClassifier.from_preset("all_minilm_l6_v2_en", labels=["negative", "positive"])
        >>> teacher.fit(train_df)
        >>> student = student_from_teacher(teacher)                     # blocks 0, 2, 4 of 6
        >>> Distiller(teacher, student, alpha=0.5, temperature=2.0).fit(train_df, epochs=3)
        >>> student.evaluate(test_df); student.save("student.keras")
    """

    def __init__(self, teacher, student, alpha=0.5, temperature=2.0, hidden_weight=0.0, attention_weight=0.0,
                 name="distiller", **kwargs):
        alpha = check_number("alpha", alpha, 0.0, 1.0,
                             hint=" It weighs the teacher's soft targets (1 - alpha the labels), e.g. 0.5.")
        temperature = check_number("temperature", temperature, 0.0, low_open=True,
                                   hint=" It softens both distributions (1: plain softmax), e.g. 2.0.")
        hidden_weight = check_number("hidden_weight", hidden_weight, 0.0, hint=" Use 0 to leave it out.")
        attention_weight = check_number("attention_weight", attention_weight, 0.0, hint=" Use 0 to leave it out.")
        check_pair(teacher, student, hidden_weight, attention_weight)
        super().__init__(name=name, **kwargs)
        self.alpha, self.temperature = alpha, temperature
        self.hidden_weight, self.attention_weight = hidden_weight, attention_weight
        self.student = student
        self.views = DistillationViews(teacher, student, self.hidden_weight > 0, self.attention_weight > 0)
        self.projection = None
        if self.hidden_weight:
            same_width = student.backbone.hidden_dim == teacher.backbone.hidden_dim
            self.projection = keras.layers.Dense(teacher.backbone.hidden_dim, dtype="float32",
                                                 kernel_initializer="identity" if same_width else "glorot_uniform",
                                                 name="hidden_projection")
            self.projection.build((None, None, student.backbone.hidden_dim))
        self.hidden_pairs = layer_pairs(student.backbone.num_layers, teacher.backbone.num_layers)
        self.trackers = {name: keras.metrics.Mean(name=name) for name in self.loss_names()}
        self.accuracy = keras.metrics.SparseCategoricalAccuracy(name="accuracy")
        self.default_compiled = False

    @property
    def teacher(self):
        return self.views.teacher

    def loss_names(self):
        """The parts of the loss logged by `fit` (next to the total `loss` and the student's `accuracy`)."""
        return ["soft_loss", "hard_loss"] + ["hidden_loss"] * (self.hidden_weight > 0) + \
            ["attention_loss"] * (self.attention_weight > 0)

    # === Forward and loss ===

    def call(self, x, training=None):
        """`{"student": ..., "teacher": ...}`: each model's logits (and hidden states / attention maps when used);
        the teacher always in inference mode and without gradients."""
        inputs = {name: x[name] for name in PACKED_INPUTS}
        teacher = keras.tree.map_structure(ops.stop_gradient, self.views.teacher_view(inputs, training=False))
        return {"student": self.views.student_view(inputs, training=training), "teacher": teacher}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The distillation loss of a batch (module docstring), its parts logged by their trackers."""
        student, teacher = y_pred["student"], y_pred["teacher"]
        has_label = ops.cast(x[HAS_LABEL], "float32")
        if isinstance(self.student, BertTokenClassifier):  # the scored tokens: each word's first piece
            soft_weight = sample_weight
            hard_weight = sample_weight * has_label[:, None]
        else:
            soft_weight, hard_weight = None, has_label
        parts = {"soft_loss": soft_target_loss(student["logits"], teacher["logits"], self.temperature, soft_weight),
                 "hard_loss": hard_target_loss(student["logits"], y, hard_weight)}
        total = self.alpha * parts["soft_loss"] + (1.0 - self.alpha) * parts["hard_loss"]
        if self.hidden_weight:
            teacher_states = [teacher["hidden_states"][index] for index in self.hidden_pairs]
            parts["hidden_loss"] = hidden_state_loss(student["hidden_states"], teacher_states, self.projection,
                                                     x["padding_mask"])
            total = total + self.hidden_weight * parts["hidden_loss"]
        if self.attention_weight:
            teacher_maps = [teacher["attentions"][index - 1] for index in self.hidden_pairs[1:]]
            parts["attention_loss"] = attention_map_loss(student["attentions"], teacher_maps, x["padding_mask"])
            total = total + self.attention_weight * parts["attention_loss"]
        for name, value in parts.items():
            self.trackers[name].update_state(value)
        self.accuracy.update_state(y, student["logits"], sample_weight=hard_weight)
        return total

    # === Training ===

    def compile(self, *args, **kwargs):
        """Keras `compile` (an optimizer of your own; the loss is the distillation loss)."""
        self.default_compiled = False
        super().compile(*args, **kwargs)

    def fit(self, x=None, unlabelled=None, epochs=1, batch_size=None, learning_rate=None, validation_data=None,
            seed=0, group_by_length=True, verbose="auto", callbacks=None):
        """Train the student on `x`, the student task's labelled DataFrame (columns as its own `fit` reads them),
        and on `unlabelled` (the same without the label column; soft targets only). Returns the Keras history:
        `loss`, `soft_loss`, `hard_loss` (and `hidden_loss`, `attention_loss`), the student's `accuracy` on the
        labelled rows, with `val_` twins for `validation_data` (labelled).

        As a task's `fit`: batches of `batch_size` shuffled with `seed` and grouped by length, and unless you
        compiled yourself AdamW with `learning_rate` (default by the student's size), 10% warmup and linear decay.

        Examples:
            >>> history = distiller.fit(train_df, unlabelled=more_texts, epochs=3, validation_data=dev_df)
        """
        check_run_arguments(x, batch_size, epochs)
        if unlabelled is not None:
            check_run_arguments(unlabelled, batch_size)
            check_no_labels(unlabelled, self.student)
        check_learning_rate(learning_rate)
        check_seed(seed)
        check_callbacks(callbacks)
        batch_size = batch_size or DEFAULT_BATCH_SIZE
        examples = self.training_examples(x, unlabelled)
        validation = None
        if validation_data is not None:
            try:
                prepared = with_label_flags(self.student.prepare(validation_data, with_labels=True), 1.0)
            except (ValueError, TypeError) as error:
                raise type(error)(f"In validation_data: {error}") from None
            validation = self.student.batches(prepared, with_labels=True, batch_size=batch_size,
                                              order=self.student.length_order(prepared))
        train = self.student.batches(examples, with_labels=True, training=True, batch_size=batch_size, seed=seed,
                                     group_by_length=group_by_length, epochs=range(epochs))
        steps_per_epoch = -(-len(self.student.example_lengths(examples)) // batch_size)
        if not self.compiled or self.default_compiled:
            learning_rate = learning_rate or default_learning_rate(self.student.backbone.hidden_dim)
            super().compile(optimizer=create_optimizer(steps_per_epoch * epochs, learning_rate))
            self.default_compiled = True
        if not self.optimizer.built:
            self.optimizer.build(self.trainable_variables)
        with weights_unused_by_design():  # a token classifier leaves its pooler without gradients
            return super().fit(train, epochs=epochs, steps_per_epoch=steps_per_epoch, validation_data=validation,
                               verbose=progress_verbosity(verbose), callbacks=callbacks, shuffle=False)  # shuffled with `seed` already

    def training_examples(self, labelled, unlabelled):
        """The student's prepared training rows: the labelled ones, then the unlabelled ones (label 0, weight 0 in
        the cross-entropy), each marked in the `has_label` feature."""
        examples = with_label_flags(self.student.prepare(labelled, with_labels=True, training=True), 1.0)
        check_single_label(self.student, "student")  # its problem type is known now
        if unlabelled is None:
            return examples
        try:
            extra = with_label_flags(self.student.prepare(unlabelled, with_labels=False, training=True), 0.0)
        except (ValueError, TypeError) as error:
            raise type(error)(f"In unlabelled: {error}") from None
        return concatenated(examples, extra)


def check_no_labels(unlabelled, student):
    """A ValueError for `unlabelled` data that holds the student's label column (its labels would go unused)."""
    column = student.columns["label" if isinstance(student, BertClassifier) else "tags"]
    if isinstance(unlabelled, pd.DataFrame) and column in unlabelled.columns:
        raise ValueError(f"unlabelled has a {column!r} column, whose labels would go unused: pass labelled rows as "
                         f"the first argument, and as unlabelled only rows without {column!r}.")


def with_label_flags(prepared, flag):
    """`prepared` with the per-row feature `has_label` set to `flag` (1.0 labelled, 0.0 unlabelled)."""
    rows = len(prepared.frame)
    prepared.features = {**prepared.features, HAS_LABEL: np.full(rows, flag, np.float32)}
    return prepared


def concatenated(labelled, unlabelled):
    """Labelled rows followed by unlabelled ones, as one `Prepared`: the unlabelled rows get label 0 (class
    ids; per token for a token classifier), which their `has_label` of 0 keeps out of the cross-entropy."""
    def join(first, second):
        if isinstance(first, tf.RaggedTensor):
            return tf.concat([first, tf.cast(second, first.dtype)], axis=0)
        return np.concatenate([first, np.asarray(second, first.dtype)])

    features = {name: join(labelled.features[name], unlabelled.features[name]) for name in labelled.features}
    if isinstance(labelled.labels, tf.RaggedTensor):
        no_labels = tf.zeros_like(unlabelled.features["token_ids"], labelled.labels.dtype)
    else:
        no_labels = np.zeros((len(unlabelled.frame), *labelled.labels.shape[1:]), labelled.labels.dtype)
    sample_weight = None if labelled.sample_weight is None else join(labelled.sample_weight, unlabelled.sample_weight)
    return Prepared(frame=pd.concat([labelled.frame, unlabelled.frame], ignore_index=True), features=features,
                    labels=join(labelled.labels, no_labels), sample_weight=sample_weight)
