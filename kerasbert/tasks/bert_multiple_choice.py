"""BertMultipleChoice: choose the right ending among N candidates (SWAG), as HF BertForMultipleChoice."""

import keras
import numpy as np
import pandas as pd
import tensorflow as tf
from keras import ops

from kerasbert.data.choice_batching import make_choice_dataset
from kerasbert.data.label_validation import validate_choice_labels
from kerasbert.data.list_validation import validate_endings
from kerasbert.data.prepared import Prepared
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns
from kerasbert.doors import column_hint
from kerasbert.metrics import statistics as metrics
from kerasbert.metrics.probabilities import softmax
from kerasbert.tasks.columns import column_argument
from kerasbert.tasks.heads import mixes_layers, task_outputs
from kerasbert.tasks.task import Task
from kerasbert.tokenizers.bert_packer import PACKED_INPUTS
from kerasbert.training.fit_arguments import check_rate


@keras.saving.register_keras_serializable(package="kerasbert")
class BertMultipleChoice(Task):
    """Each `[CLS] context [SEP] ending [SEP]` -> backbone -> pooled output -> dropout -> dense(1);
    the N scores of an example are its logits, softmax-ed across the candidates.

    Model inputs are the backbone's three inputs with a choices axis, `[batch, choices, tokens]`;
    the backbone runs on `[batch * choices, tokens]`; the output is `[batch, choices]` logits.
    A HF `BertForMultipleChoice` checkpoint's `classifier.*` head is loaded by `from_preset`.

    DataFrame columns (the ones `load_swag` returns): `context` (str), `endings` (a list of N
    candidate str per row, the same N in every row of one call), `label` (int: the index of the
    right ending) and, when the data has it, `question` (SWAG's `sent2`, the start of the ending's
    sentence: the second segment is then `f"{question} {ending}"`, as HF's `run_swag.py` builds it).
    Whether the question is read is decided on the first `fit` and then required.

    Args:
        backbone: a `BertBackbone`. preprocessor: a `BertPreprocessor`.
        num_choices: endings per example; None accepts any N >= 2 (one N per call).
        dropout: dropout before the dense layer.
        columns: DataFrame column names by role, "context", "question", "endings" and "label" (the
            defaults); `{"question": None}`: never read a question.
        uses_question: whether the second segment starts with the question; None decides on the
            first `fit` (the question column present means yes).

    Examples:
        >>> model = BertMultipleChoice.from_preset("all_minilm_l6_v2_en")
        >>> model.fit(load_swag("swagaf/data/train.csv"), epochs=2)
        >>> model.evaluate(load_swag("swagaf/data/val.csv"))    # {"loss", "accuracy"}
        >>> model.predict(load_swag("swagaf/data/test.csv"))    # DataFrame: choice, ending, score, probabilities
    """

    hf_head = ("classifier", None)  # HF BertForMultipleChoice: `classifier.*` with one output
    config_names = (
        "num_choices", "dropout", "uses_question",
    )
    default_columns = {role: role for role in ("context", "question", "endings", "label")}
    nullable_columns = ("question",)

    def __init__(
        self,
        backbone,
        preprocessor,
        num_choices=None,
        dropout=0.1,
        uses_question=None,
        head=None,
        **kwargs,
    ):
        check_rate("dropout", dropout)
        if num_choices is not None and (not isinstance(num_choices, (int, np.integer)) or num_choices < 2):
            raise ValueError(
                f"num_choices must be an int of at least 2, or None for any number; got {num_choices!r}."
            )

        # === Functional model ===
        inputs = {
            name: keras.Input(shape=(num_choices, None), dtype="int32", name=name) for name in PACKED_INPUTS
        }
        flat_inputs = FlattenChoices(name="flatten_choices")(inputs)  # one row per (example, choice)
        scores, logits_layer, _ = task_outputs(backbone, flat_inputs, head, 1, "pooled_output", (None, 1),
                                               "BertMultipleChoice", dropout=dropout, layer_mix=mixes_layers(kwargs))
        outputs = UnflattenChoices(name="choice_logits", dtype="float32")(scores, inputs["token_ids"])
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor,
                         head=head, **kwargs)

        # === Config ===
        self.num_choices = None if num_choices is None else int(num_choices)
        self.dropout = dropout
        self.uses_question = uses_question
        self.logits_layer = logits_layer

    # === Data ===

    def reads_question(self, frame, training):
        """Whether this data's second segments start with its question column."""
        question = self.columns["question"]
        present = question is not None and question in frame.columns
        if self.uses_question is None:
            if training:
                self.uses_question = present
            return present
        if self.uses_question and not present:
            raise ValueError(
                f"This model was trained with questions (column {question!r}), but the "
                f"data has no such column (columns: {list(frame.columns)}). Add it, or name yours: "
                f"{column_hint('question', '...')}."
            )
        if present and not self.uses_question:
            raise ValueError(
                f"The data has a {question!r} column, but this model was trained without "
                f"questions. Drop the column, or build a new model that reads it."
            )
        return self.uses_question

    def prepare(self, data, with_labels, training=False):
        context, question, endings, label = (self.columns[role] for role in ("context", "question", "endings", "label"))
        frame = to_dataframe(data, text_column=context)
        required = ("context", "endings", "label") if with_labels else ("context", "endings")
        require_columns(frame, {column_argument(role): self.columns[role] for role in required})
        validate_text_columns(frame, {column_argument("context"): context})
        uses_question = self.reads_question(frame, training)
        if uses_question:
            validate_text_columns(frame, {column_argument("question"): question}, allow_empty=True)
        num_choices = validate_endings(frame[endings], endings, self.num_choices)
        labels = None
        if with_labels:
            labels = validate_choice_labels(frame[label], label, num_choices)
        endings = [ending for row in frame[endings] for ending in row]
        if uses_question:
            questions = np.repeat(frame[question].to_numpy(object), num_choices)
            endings = [f"{question} {ending}" for question, ending in zip(questions, endings)]
        contexts = np.repeat(frame[context].to_numpy(object), num_choices).tolist()
        features = self.pack_texts(contexts, endings)
        return Prepared(frame=frame, features=features, labels=labels, extras={"num_choices": num_choices})

    def make_dataset(self, prepared, sample_weight=None, **options):
        """`[batch, choices, tokens]` batches: each example's N sequences stay together (no
        per-example weights: `prepare` makes none)."""
        return make_choice_dataset(prepared.features, prepared.extras["num_choices"], **options)

    def example_lengths(self, prepared):
        lengths = prepared.features["token_ids"].row_lengths().numpy()
        return lengths.reshape(-1, prepared.extras["num_choices"]).max(axis=1)

    # === Training ===

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self):
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]

    # === Decoding and metrics ===

    def decode(self, outputs, prepared):
        probabilities = softmax(outputs)
        best = probabilities.argmax(-1)
        endings = prepared.frame[self.columns["endings"]].tolist()
        return pd.DataFrame(
            {
                "choice": best,
                "ending": [row[i] for row, i in zip(endings, best)],
                "score": probabilities.max(-1),
                "probabilities": list(probabilities),
            },
            index=prepared.frame.index,
        )

    def score(self, outputs, prepared):
        gold = prepared.labels
        probabilities = softmax(outputs)
        predicted = probabilities.argmax(-1)
        decoded = self.decode(outputs, prepared)
        return {
            "loss": float(-np.mean(np.log(probabilities[np.arange(len(gold)), gold] + 1e-12))),
            "accuracy": metrics.accuracy(gold, predicted),
            "errors": prepared.frame.join(decoded.add_prefix("predicted_"))[predicted != gold],
        }

    # === Serving ===

    def serving_signature(self):
        specs = [
            tf.TensorSpec([None], tf.string, name="context"),
            tf.TensorSpec([None, self.num_choices], tf.string, name="endings"),
        ]
        if self.uses_question:
            specs.append(tf.TensorSpec([None], tf.string, name="question"))
        return specs

    def serve(self, context, endings, question=None):
        num_choices = tf.shape(endings)[1]
        seconds = tf.reshape(endings, [-1])
        if question is not None:
            seconds = tf.strings.join([tf.repeat(question, num_choices), seconds], separator=" ")
        packed = self.preprocessor((tf.repeat(context, num_choices), seconds))
        inputs = {
            name: tf.reshape(tf.cast(packed[name], tf.int32), [-1, num_choices, tf.shape(packed[name])[-1]])
            for name in PACKED_INPUTS
        }
        logits = self(inputs, training=False)
        best = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits),
            "choice": best,
            "ending": tf.gather(endings, best, batch_dims=1),
        }


@keras.saving.register_keras_serializable(package="kerasbert")
class FlattenChoices(keras.layers.Layer):
    """A dict of `[batch, choices, tokens]` tensors -> the same dict as `[batch * choices, tokens]`.

    Examples:
        >>> tuple(FlattenChoices()({"token_ids": ops.ones((2, 4, 7), "int32")})["token_ids"].shape)
        (8, 7)
    """

    def call(self, inputs):
        return {name: ops.reshape(value, (-1, ops.shape(value)[-1])) for name, value in inputs.items()}


@keras.saving.register_keras_serializable(package="kerasbert")
class UnflattenChoices(keras.layers.Layer):
    """Scores `[batch * choices, 1]` -> logits `[batch, choices]` (the first two axes of `reference`).

    Examples:
        >>> tuple(UnflattenChoices()(ops.zeros((8, 1)), ops.ones((2, 4, 7), "int32")).shape)
        (2, 4)
    """

    def call(self, scores, reference):
        shape = ops.shape(reference)
        return ops.reshape(scores, (shape[0], shape[1]))

    def compute_output_shape(self, scores_shape, reference_shape):
        return tuple(reference_shape[:2])
