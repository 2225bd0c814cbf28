"""BertCrossEncoder: a reranker, (query, passage) -> one relevance score, as sentence-transformers' CrossEncoder."""

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kerasbert.arguments import check_count
from kerasbert.data.batch_order import training_order
from kerasbert.data.label_validation import validate_label_values
from kerasbert.data.prepared import Prepared
from kerasbert.data.text_tuples import negatives_of
from kerasbert.data.validation import require_columns, to_dataframe, validate_text_columns
from kerasbert.metrics.probabilities import sigmoid
from kerasbert.presets.loading import preset_folder
from kerasbert.presets.registry import PRESETS
from kerasbert.presets.sentence_transformers_format import read_cross_encoder_activation
from kerasbert.tasks.columns import column_argument
from kerasbert.tasks.grouped_rows import GROUP_SIZE, grouped_batches, is_grouped, longest_of_each, outputs_of_rows
from kerasbert.tasks.heads import mixes_layers, task_outputs
from kerasbert.tasks.run_arguments import DEFAULT_BATCH_SIZE
from kerasbert.tasks.task import Task
from kerasbert.training.encoder_losses import ListwiseSoftmaxLoss
from kerasbert.training.fit_arguments import check_rate

ACTIVATIONS = ("sigmoid", "identity")


@keras.saving.register_keras_serializable(package="kerasbert")
class BertCrossEncoder(Task):
    """`[CLS] query [SEP] passage [SEP]` -> backbone -> pooled output -> dropout -> dense(1): one relevance logit per
    pair. The head of a HF `BertForSequenceClassification` with one label (what sentence-transformers saves for a
    `CrossEncoder`) loads with `from_preset`, and so does its activation: scores are `sigmoid(logit)` (the default)
    or the logit (`activation="identity"`, e.g. the MS MARCO cross-encoders), as `CrossEncoder.predict` gives them.

    Data: `query` and `passage` columns. To train (`fit`): pointwise rows with a `label` (1 relevant, 0 not, or a
    score in [0, 1]), trained with binary cross-entropy on the logit; or listwise rows of a `query`, its `positive`
    and its hard negatives (`negative`: a text, or a list of texts per row), trained with softmax cross-entropy of
    the positive among the row's passages.

    Args:
        backbone: a `BertBackbone`. preprocessor: a `BertPreprocessor`.
        dropout: dropout before the dense layer.
        activation: "sigmoid" or "identity", how `predict` and `rank` turn logits into scores.
        columns: `{role: column}` for "query", "passage", "label", "positive" and "negative".

    Examples:
        >>> reranker = BertCrossEncoder.from_preset("ms_marco_cross_encoder_folder")
        >>> reranker.rank("How old is the Earth?", ["Paris is in France.", "The Earth is 4.5 billion years old."])
        >>> reranker.fit(pd.DataFrame({"query": q, "positive": p, "negative": n}), epochs=1)
    """

    hf_head = ("classifier", None)  # HF BertForSequenceClassification with one output
    config_names = ("dropout", "activation")
    default_columns = {role: role for role in ("query", "passage", "label", "positive", "negative")}
    nullable_columns = ("label", "positive", "negative")

    def __init__(self, backbone, preprocessor, dropout=0.1, activation="sigmoid", head=None, **kwargs):
        check_rate("dropout", dropout)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation={activation!r} is not one of {list(ACTIVATIONS)}.")
        inputs = backbone.input
        outputs, logits_layer, head_inputs = task_outputs(backbone, inputs, head, 1, "pooled_output", (None, 1),
                                                          "BertCrossEncoder", dropout=dropout,
                                                          layer_mix=mixes_layers(kwargs))
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor, head=head,
                         head_inputs=head_inputs, **kwargs)
        self.dropout, self.activation, self.logits_layer = dropout, activation, logits_layer
        self.listwise = False  # the layout of the last training rows: listwise or pointwise

    @classmethod
    def from_preset(cls, preset, activation=None, load_weights=True, **kwargs):
        """The reranker of `preset`, with its head and, from sentence-transformers' files, its activation.

        Examples:
            >>> BertCrossEncoder.from_preset("ce_folder").activation
            'sigmoid'
        """
        folder = preset_folder(preset) if load_weights or str(preset) not in PRESETS else None
        activation = activation or read_cross_encoder_activation(folder) or "sigmoid"
        return super().from_preset(preset, load_weights=load_weights, activation=activation, **kwargs)

    # === Data ===

    def prepare(self, data, with_labels, training=False):
        query = self.columns["query"]
        frame = to_dataframe(data, text_column=query)
        listwise = with_labels and self.columns["positive"] in frame.columns
        roles = ("query", "positive") if listwise else ("query", "passage")
        require_columns(frame, {column_argument(role): self.columns[role] for role in roles})
        validate_text_columns(frame, {column_argument(role): self.columns[role] for role in roles})
        if listwise:
            passages = [frame[self.columns["positive"]].tolist(), *negatives_of(frame, self.columns["negative"])]
            if training:
                self.listwise = True
            per_query = len(passages)
            passages = [passage for row in zip(*passages) for passage in row]
            queries = np.repeat(frame[query].to_numpy(object), per_query).tolist()
            return Prepared(frame=frame, features=self.pack_texts(queries, passages),
                            labels=np.zeros(len(frame), np.int32), extras={GROUP_SIZE: per_query})
        labels = None
        if with_labels:
            if training:
                self.listwise = False
            label = self.columns["label"]
            require_columns(frame, {column_argument("label"): label})
            validate_label_values(frame[label], name=label, problem_type="regression")
            labels = frame[label].to_numpy(np.float32)
            if ((labels < 0) | (labels > 1)).any():
                raise ValueError(f"Column {label!r} holds relevance labels for binary cross-entropy: 1 relevant, 0 "
                                 f"not (or a score in [0, 1]); it has values out of [0, 1], e.g. "
                                 f"{labels[(labels < 0) | (labels > 1)][0]}. Rescale them.")
        return Prepared(frame=frame, labels=labels,
                        features=self.pack_texts(frame[query].tolist(), frame[self.columns["passage"]].tolist()))

    def batches(self, prepared, *, with_labels, training=False, batch_size=DEFAULT_BATCH_SIZE, seed=0,
                group_by_length=True, order=None, epochs=None):
        """`Task.batches`; listwise rows come whole, `[queries * passages, tokens]`."""
        if not is_grouped(prepared):
            return super().batches(prepared, with_labels=with_labels, training=training, batch_size=batch_size,
                                   seed=seed, group_by_length=group_by_length, order=order, epochs=epochs)
        return grouped_batches(self, prepared, with_labels=with_labels, batch_size=batch_size,
                               batch_order=training_order(training, seed, group_by_length, order, epochs))

    def example_lengths(self, prepared):
        lengths = super().example_lengths(prepared)
        return longest_of_each(lengths, prepared) if is_grouped(prepared) else lengths

    # === Training ===

    def default_loss(self):
        return ListwiseSoftmaxLoss() if self.listwise else keras.losses.BinaryCrossentropy(from_logits=True)

    # === Inference and metrics ===

    def predict_outputs(self, data, batch_size=None, with_labels=False, verbose="auto"):
        """`Task.predict_outputs`; of listwise rows (to evaluate), the logits `[queries, passages]`."""
        if not with_labels:
            return super().predict_outputs(data, batch_size, verbose=verbose)
        prepared = self.prepare(data, with_labels=True)
        outputs = outputs_of_rows(self, prepared, batch_size or DEFAULT_BATCH_SIZE, verbose)
        return (outputs[..., 0] if is_grouped(prepared) else outputs), prepared

    def warm_up_rows(self):
        return pd.DataFrame({self.columns["query"]: ["a"], self.columns["passage"]: ["a"]})

    def scores_of(self, logits):
        """Logits -> scores, as `activation` says."""
        logits = np.asarray(logits, np.float32).reshape(-1)
        return sigmoid(logits) if self.activation == "sigmoid" else logits

    def decode(self, outputs, prepared):
        return pd.DataFrame({"score": self.scores_of(outputs), "logit": np.asarray(outputs, np.float32).reshape(-1)},
                            index=prepared.frame.index)

    def score(self, outputs, prepared):
        """Listwise rows: `accuracy` (the positive ranks first among its row's passages) and `mrr@10`. Pointwise rows:
        `accuracy` at logit 0 (probability 0.5) against labels >= 0.5."""
        if is_grouped(prepared):
            rank = 1 + np.sum(outputs[:, 1:] > outputs[:, :1], axis=1)
            return {"accuracy": float(np.mean(rank == 1)),
                    "mrr@10": float(np.mean(np.where(rank <= 10, 1 / rank, 0))),
                    "errors": prepared.frame.assign(positive_rank=rank)[rank > 1]}
        predicted, gold = np.asarray(outputs).reshape(-1) > 0, prepared.labels >= 0.5
        return {"accuracy": float(np.mean(predicted == gold)),
                "errors": prepared.frame.assign(predicted_score=self.scores_of(outputs))[predicted != gold]}

    def rank(self, query, passages, top_k=None, batch_size=None):
        """The `passages` sorted by their score for `query`: a DataFrame of `rank` (1 is the best), `passage`,
        `corpus_index` (its position in `passages`) and `score`, the best `top_k` (None: all).

        Examples:
            >>> reranker.rank("How old is the Earth?", ["Paris is in France.", "The Earth is 4.5 billion years old."])
        """
        if not isinstance(query, str):
            raise TypeError(f"rank takes one query (a str); got {type(query).__name__}. For many, call it per query.")
        passages = to_dataframe(passages, text_column="passage")["passage"].tolist()
        if top_k is not None:
            check_count("top_k", top_k)
        pairs = pd.DataFrame({self.columns["query"]: [query] * len(passages), self.columns["passage"]: passages})
        scores = self.predict(pairs, batch_size=batch_size, verbose=0)["score"].to_numpy()
        best = np.argsort(-scores, kind="stable")[:top_k]
        return pd.DataFrame({"rank": np.arange(1, len(best) + 1), "passage": [passages[i] for i in best],
                             "corpus_index": best, "score": scores[best]})

    # === Serving ===

    def serving_signature(self):
        return [tf.TensorSpec([None], tf.string, name="query"), tf.TensorSpec([None], tf.string, name="passage")]

    def serve(self, query, passage):
        logits = self(self.preprocessor((query, passage)), training=False)[:, 0]
        return {"score": tf.sigmoid(logits) if self.activation == "sigmoid" else logits}
