"""BertQuestionAnswerer: extractive question answering (SQuAD v1.1 and v2.0): answers are context spans."""

import keras
import numpy as np
import pandas as pd
import tensorflow as tf

from kerasbert.arguments import check_count
from kerasbert.data.answer_spans import OUTSIDE_CONTEXT, best_null_score_threshold, best_spans, prepare_qa_features
from kerasbert.data.prepared import Prepared
from kerasbert.data.question_frames import to_question_frame, validate_answers
from kerasbert.data.validation import require_columns, validate_text_columns
from kerasbert.families.sequence_length import packed_input_length
from kerasbert.layers.question_logits_mask import QuestionLogitsMask
from kerasbert.metrics.squad import evaluate_squad, exact_match, f1
from kerasbert.tasks.columns import column_argument, reads_columns
from kerasbert.tasks.heads import mixes_layers, task_outputs
from kerasbert.tasks.run_arguments import is_raw
from kerasbert.tasks.task import Task
from kerasbert.tokenizers.bert_packer import concat_rows, filled_like, keep_first

DEFAULT_N_BEST = 20
DEFAULT_MAX_ANSWER_LENGTH = 30
DEFAULT_NULL_SCORE_THRESHOLD = 0.0


@keras.saving.register_keras_serializable(package="kerasbert")
class SpanLoss(keras.losses.Loss):
    """The mean of the start and the end cross-entropies, as HF `BertForQuestionAnswering`.

    `y_true`: `(batch, 2)` start and end token positions; `y_pred`: `(batch, tokens, 2)` logits.

    Examples:
        >>> float(SpanLoss()(np.array([[1, 2]]), np.zeros((1, 4, 2))))  # uniform over 4 tokens: log(4)
        1.3862943...
    """

    def __init__(self, name="span_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        y_true = keras.ops.cast(y_true, "int32")
        start = keras.losses.sparse_categorical_crossentropy(y_true[:, 0], y_pred[..., 0], from_logits=True)
        end = keras.losses.sparse_categorical_crossentropy(y_true[:, 1], y_pred[..., 1], from_logits=True)
        return (start + end) / 2


@keras.saving.register_keras_serializable(package="kerasbert")
class BertQuestionAnswerer(Task):
    """Sequence output -> dense(2): start and end logits of the answer span (HF's `qa_outputs`).

    A question and its context are packed `[CLS] question [SEP] context [SEP]` (XLNet: `question <sep> context
    <sep> <cls>`, the null answer at `<cls>`); a context too long
    for one window of `sequence_length` tokens is read in overlapping windows sharing `doc_stride`
    tokens (HF run_qa.py). Training windows that do not hold the whole answer, and questions without
    one, point at `[CLS]`; the loss is the mean of the start and end cross-entropies. Predictions
    take the best span over all of a question's windows (`kerasbert.data.best_spans`).

    SQuAD v2.0 (questions may have no answer): with `allow_no_answer=True` (set by the first `fit`
    on data with unanswerable questions) a question gets no answer when its null score (`[CLS]`
    start + end) beats the best span's score by more than `null_score_threshold` (0.0, as HF);
    `tune_null_score_threshold(held_out)` sets it to the value with the best F1 on held-out data,
    as the official v2.0 evaluation's best-threshold search does.

    Data: a DataFrame with `question` and `context` columns (`kerasbert.data.load_squad` gives them),
    a list of `{"question", "context"}` dicts, or a `(questions, contexts)` tuple. Training and
    `evaluate` also read `answer_texts` and `answer_starts` (lists per question; character offsets
    into the context; an empty list means no answer; the first answer is the training target).

    Args:
        backbone: a `BertBackbone` (its pooler is unused, as in HF's QA model). preprocessor: a
            `BertPreprocessor` (its `sequence_length` is the window length).
        doc_stride: context tokens shared by consecutive windows.
        max_question_length: question tokens kept (longer questions are cut).
        allow_no_answer: SQuAD v2.0 decoding; None lets the first `fit` decide (False until then).
        null_score_threshold: v2.0, answer only if null score <= best span score + this.
        columns: DataFrame column names by role: "question", "context", "answer_texts", "answer_starts" and
            "id" (question ids for error messages, if the data has that column; else the row index); each
            defaults to its role's name.

    Examples:
        >>> qa = BertQuestionAnswerer.from_preset("all_minilm_l6_v2_en", doc_stride=128)
        >>> qa.fit(load_squad("train-v1.1.json"), batch_size=16)
        >>> qa.evaluate(load_squad("dev-v1.1.json"))               # {"exact_match", "f1", "total"}
        >>> qa.predict([{"question": "Who wrote it?", "context": "Ada wrote it in 1843."}])
        ... # DataFrame: answer "Ada", start 0, end 3, score
    """

    default_sequence_length = 384  # windows of HF run_qa's `max_seq_length`
    hf_head = ("qa_outputs", None)  # a fine-tuned HF BertForQuestionAnswering
    config_names = (
        "doc_stride", "max_question_length", "allow_no_answer", "null_score_threshold",
    )
    default_columns = {role: role for role in ("question", "context", "answer_texts", "answer_starts", "id")}

    def __init__(
        self,
        backbone,
        preprocessor,
        doc_stride=128,
        max_question_length=64,
        allow_no_answer=None,
        null_score_threshold=DEFAULT_NULL_SCORE_THRESHOLD,
        head=None,
        **kwargs,
    ):
        check_window_settings(packed_input_length(backbone, preprocessor),
                              doc_stride, max_question_length, 2 + preprocessor.tokenizer.packer_class.pair_separators)

        # === Functional model ===
        inputs = backbone.input
        outputs, logits_layer, _ = task_outputs(backbone, inputs, head, 2, "sequence_output", (None, None, 2),
                                                "BertQuestionAnswerer", layer_name="qa_outputs",
                                                layer_mix=mixes_layers(kwargs))
        if head is None and getattr(backbone, "masks_question_logits", False):  # BigBird's answerer, as HF's
            outputs = QuestionLogitsMask(name="question_mask")(outputs, inputs["segment_ids"], inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor,
                         head=head, **kwargs)

        # === Config ===
        self.doc_stride = doc_stride
        self.max_question_length = max_question_length
        self.allow_no_answer = allow_no_answer
        self.null_score_threshold = decoding_options(1, 1, null_score_threshold)["null_score_threshold"]
        self.logits_layer = logits_layer

    @property
    def window_length(self):
        """Tokens per window, specials included."""
        return packed_input_length(self.backbone, self.preprocessor)

    # === Data ===

    def prepare(self, data, with_labels, training=False):
        columns = self.columns
        frame = to_question_frame(data, columns["question"], columns["context"])
        text_columns = {column_argument(role): columns[role] for role in ("question", "context")}
        answer_columns = {column_argument(role): columns[role] for role in ("answer_texts", "answer_starts")}
        if frame.empty:
            raise ValueError("The data has no rows: give at least one question and its context.")
        require_columns(frame, {**text_columns, **(answer_columns if with_labels else {})})
        validate_text_columns(frame, text_columns)
        ids = frame[columns["id"]].tolist() if columns["id"] in frame.columns else frame.index.tolist()
        texts = starts = None
        if with_labels:
            texts, starts = validate_answers(frame, ids, columns["context"], columns["answer_texts"],
                                             columns["answer_starts"])
            if training and self.allow_no_answer is None:
                self.allow_no_answer = any(len(answers) == 0 for answers in texts)
        features = prepare_qa_features(
            self.tokenizer, frame[columns["question"]], frame[columns["context"]], starts, texts,
            question_ids=ids, max_sequence_length=self.window_length, doc_stride=self.doc_stride,
            max_question_length=self.max_question_length,
        )
        labels = None
        if with_labels:
            labels = np.stack([features.start_positions, features.end_positions], axis=1)
        return Prepared(frame=frame, features=features.inputs, labels=labels,
                        extras={"qa_features": features, "answer_texts": texts})

    # === Training ===

    def default_loss(self):
        return SpanLoss()

    # === Decoding and metrics ===

    @reads_columns
    def predict(self, x, batch_size=None, verbose="auto", n_best=DEFAULT_N_BEST,
                max_answer_length=DEFAULT_MAX_ANSWER_LENGTH,
                null_score_threshold=None, **kwargs):
        """Raw data -> DataFrame (index of the data): `answer`, `start`, `end` (`context[start:end]
        == answer`; -1 when there is none), `score` (start + end logit; the null score when
        unanswered), and with `allow_no_answer` also `has_answer` and `null_score`.

        `n_best`: top starts/ends paired per window. `max_answer_length`: in tokens.
        `null_score_threshold`: v2.0, answer only if null score <= best span score + threshold
        (default: the model's `null_score_threshold`).
        Other inputs (tensors, `tf.data`) go to Keras `predict`.
        """
        if not is_raw(x):
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        decoding = decoding_options(n_best, max_answer_length, null_score_threshold)
        outputs, prepared = self.predict_outputs(x, batch_size, verbose=verbose)
        return self.decode(outputs, prepared, **decoding)

    @reads_columns
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", return_errors=False,
                 n_best=DEFAULT_N_BEST, max_answer_length=DEFAULT_MAX_ANSWER_LENGTH,
                 null_score_threshold=None, **kwargs):
        """Official SQuAD scores (fractions): `exact_match`, `f1`, `total`, and `HasAns_*`/`NoAns_*`
        when the data has unanswerable questions; `errors` (the questions not matched exactly,
        with the prediction and its F1) when `return_errors=True`. Decoding as `predict`."""
        if not is_raw(x):
            return super().evaluate(x, y, batch_size=batch_size, verbose=verbose, **kwargs)
        decoding = decoding_options(n_best, max_answer_length, null_score_threshold)
        outputs, prepared = self.predict_outputs(x, batch_size, with_labels=True, verbose=verbose)
        results = self.score(outputs, prepared, **decoding)
        if not return_errors:
            results.pop("errors")
        return results

    def tune_null_score_threshold(self, x, batch_size=None, verbose="auto", n_best=DEFAULT_N_BEST,
                                  max_answer_length=DEFAULT_MAX_ANSWER_LENGTH):
        """Set `null_score_threshold` to the value with the best F1 on held-out v2.0 questions (with
        `answer_texts`; never the test set) and return `{"null_score_threshold", "f1"}` (F1 there).
        Hold out whole contexts (articles), not just questions: on new questions about paragraphs it
        trained on, a model confidently gives the spans it memorised, and the threshold comes out biased.

        Examples:
            >>> qa.tune_null_score_threshold(held_out)   # {"null_score_threshold": -1.7, "f1": 0.61}
        """
        if not self.allow_no_answer:
            raise ValueError("tune_null_score_threshold is for SQuAD v2.0 models (allow_no_answer=True): "
                             "fit on data with unanswerable questions first, or set allow_no_answer.")
        decoding_options(n_best, max_answer_length, 0.0)
        outputs, prepared = self.predict_outputs(x, batch_size, with_labels=True, verbose=verbose)
        predictions = best_spans(outputs[..., 0], outputs[..., 1], prepared.extras["qa_features"],
                                 n_best=n_best, max_answer_length=max_answer_length)
        threshold, score = best_null_score_threshold(predictions, prepared.extras["answer_texts"])
        self.null_score_threshold = threshold
        return {"null_score_threshold": threshold, "f1": score}

    def answers(self, outputs, prepared, n_best=DEFAULT_N_BEST, max_answer_length=DEFAULT_MAX_ANSWER_LENGTH,
                null_score_threshold=None):
        """One `kerasbert.data.AnswerPrediction` per question, from `(windows, tokens, 2)` logits."""
        return best_spans(outputs[..., 0], outputs[..., 1], prepared.extras["qa_features"], n_best=n_best,
                          max_answer_length=max_answer_length,
                          null_score_threshold=self.threshold_of(null_score_threshold))

    def threshold_of(self, null_score_threshold):
        """The threshold `best_spans` gets: None (always answer) unless v2.0; else the given or own."""
        if not self.allow_no_answer:
            return None
        return self.null_score_threshold if null_score_threshold is None else null_score_threshold

    def decode(self, outputs, prepared, **decoding):
        predictions = self.answers(outputs, prepared, **decoding)
        best = [p.n_best[0] if p.text else None for p in predictions]
        columns = {
            "answer": [p.text for p in predictions],
            "start": [span.char_start if span else -1 for span in best],
            "end": [span.char_end if span else -1 for span in best],
            "score": [span.score if span else p.null_score for span, p in zip(best, predictions)],
        }
        if self.allow_no_answer:
            columns["has_answer"] = [span is not None for span in best]
            columns["null_score"] = [p.null_score for p in predictions]
        return pd.DataFrame(columns, index=prepared.frame.index)

    def score(self, outputs, prepared, **decoding):
        decoded = self.decode(outputs, prepared, **decoding)
        predicted, gold = decoded["answer"].tolist(), prepared.extras["answer_texts"]
        official = evaluate_squad(predicted, gold)
        prefixes = ["", "HasAns_", "NoAns_"] if "NoAns_total" in official else [""]
        results = {}
        for prefix in prefixes:
            results[f"{prefix}exact_match"] = official[f"{prefix}exact"]
            results[f"{prefix}f1"] = official[f"{prefix}f1"]
            results[f"{prefix}total"] = official[f"{prefix}total"]
        wrong = np.array([exact_match(p, g) == 0.0 for p, g in zip(predicted, gold)], dtype=bool)
        errors = prepared.frame.assign(
            **{f"predicted_{name}": decoded[name].to_numpy() for name in decoded},
            f1=[f1(p, g) for p, g in zip(predicted, gold)],
        )
        results["errors"] = errors[wrong]
        return results

    # === Serving ===

    def serving_signature(self):
        return [tf.TensorSpec([None], tf.string, name="question"),
                tf.TensorSpec([None], tf.string, name="context")]

    def serve(self, question, context):
        """Questions and contexts -> `start_logits`, `end_logits` and each token's character span in
        its context, `token_char_starts`/`token_char_ends` (end exclusive, -1 outside the context).

        One window per question: the context is cut to the first window (`sequence_length` tokens),
        as `predict` reads it first; longer contexts need `predict`, which slides windows over them.
        """
        if self.preprocessor.packer.cls_last:
            raise NotImplementedError(f"export() packs BERT's [CLS] Q [SEP] C [SEP]; this {type(self.backbone).__name__} "
                                      "reads Q <sep> C <sep> <cls>. Answer with predict(), which packs it right.")
        question_ids = self.tokenizer.tokenize(question)[:, : self.max_question_length]
        context_ids, char_starts, char_ends = self.tokenizer.tokenize_with_offsets(context)
        packer = self.preprocessor.packer
        room = self.window_length - packer.num_special_tokens(2) - tf.cast(question_ids.row_lengths(), tf.int64)
        context_ids = keep_first(context_ids, room)
        inputs = packer((question_ids, context_ids))
        logits = self(inputs, training=False)

        def token_offsets(offsets):
            packed = concat_rows([OUTSIDE_CONTEXT, filled_like(question_ids, OUTSIDE_CONTEXT),
                                  *[OUTSIDE_CONTEXT] * packer.pair_separators,
                                  tf.cast(keep_first(offsets, room), tf.int32), OUTSIDE_CONTEXT])
            return packed.to_tensor(OUTSIDE_CONTEXT, shape=inputs["token_ids"].shape)

        return {"start_logits": logits[..., 0], "end_logits": logits[..., 1],
                "token_char_starts": token_offsets(char_starts), "token_char_ends": token_offsets(char_ends)}


def check_window_settings(window_length, doc_stride, max_question_length, special_tokens=3):
    """Every window must have more context tokens than `doc_stride`, even after the longest question and the
    `special_tokens` (3 in `[CLS] Q [SEP] C [SEP]`, 4 in RoBERTa's `<s> Q </s></s> C </s>`)."""
    check_count("doc_stride", doc_stride)
    check_count("max_question_length", max_question_length)
    room = window_length - max_question_length - special_tokens
    if doc_stride >= room:
        raise ValueError(
            f"doc_stride={doc_stride} leaves no room to slide: a window of {window_length} tokens "
            f"holds {room} context tokens after a question of max_question_length="
            f"{max_question_length} and {special_tokens} special tokens. Lower doc_stride (e.g. {max(1, room // 2)}) "
            "or max_question_length, or raise sequence_length."
        )


def decoding_options(n_best, max_answer_length, null_score_threshold):
    """The `best_spans` settings, checked before any computation."""
    check_count("n_best", n_best)
    check_count("max_answer_length", max_answer_length)
    if null_score_threshold is not None and (
            not isinstance(null_score_threshold, (int, float, np.number)) or np.isnan(null_score_threshold)):
        raise ValueError(f"null_score_threshold must be a number (or None for the model's own), got "
                         f"{null_score_threshold!r}.")
    return {"n_best": int(n_best), "max_answer_length": int(max_answer_length),
            "null_score_threshold": None if null_score_threshold is None else float(null_score_threshold)}
