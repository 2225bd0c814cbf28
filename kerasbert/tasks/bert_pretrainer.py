"""BertPretrainer: BERT pre-training from documents, masked LM plus next-sentence (or sentence-order)
prediction, as HF `BertForPreTraining` and Google's `run_pretraining.py`."""

import contextlib

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from kerasbert.data.batch_order import BatchOrder
from kerasbert.data.batching import make_batched_dataset
from kerasbert.data.masking import MaskedLMMasker
from kerasbert.data.masking_config import MaskingConfig, masking_from_legacy_options
from kerasbert.data.pretraining_examples import inputs_and_targets, pretraining_examples
from kerasbert.data.pretraining_shards import is_shard_folder
from kerasbert.data.pretraining_stream import PretrainingStream
from kerasbert.deployment.model_function import ModelFunction
from kerasbert.families.checkpoint_weights import assign_links, dense_links, export_links, masked_lm_head_links
from kerasbert.families.family_heads import masked_lm_sequence
from kerasbert.layers.heads import NSPHead
from kerasbert.layers.span_boundary_head import SpanBoundaryHead
from kerasbert.metrics.masked_lm import METRIC_SUMS, MaskedLMCrossEntropy, metrics_of
from kerasbert.tasks.columns import reads_columns
from kerasbert.tasks.heads import checked_head_outputs
from kerasbert.tasks.masked_lm_common import (
    DOCUMENTS_HINT,
    build_masked_lm_head,
    check_keras_data,
    check_no_custom_head,
    check_options,
    is_documents,
    load_masked_lm_head,
    masked_lm_features,
    masked_lm_inputs,
    write_task_preset,
)
from kerasbert.tasks.run_arguments import DEFAULT_BATCH_SIZE
from kerasbert.tasks.task import Task
from kerasbert.training.backup import TrainingBackup
from kerasbert.training.distribution import (
    batches_already_per_process,
    check_batches_split_evenly,
    process_batch_size,
    process_share,
    this_process_rows,
)

NSP_HEAD_NAME = "cls.seq_relationship"
PRETRAINING_LEARNING_RATE = 1e-4  # the BERT paper's pre-training peak learning rate


@keras.saving.register_keras_serializable(package="kerasbert")
class BertPretrainer(Task):
    """Backbone -> `MaskedLMHead` (tied to the token embedding) at `mask_positions`, and -> `NSPHead` on
    the pooled `[CLS]` output; trained on raw documents.

    `fit(documents)` builds pre-training examples once (`pretraining_examples`: `[CLS] A [SEP] B
    [SEP]` pairs for "nsp"/"sop", single windows for None), then masks them: by default anew each
    time an example is drawn (dynamic masking, RoBERTa), or once up front
    (`masking=MaskingConfig(dynamic=False)`, BERT). Batches are shuffled and padded dynamically. The
    loss is the masked-LM cross-entropy averaged over the real masked positions of a batch only
    (Google BERT's sum(loss * w) / sum(w); HF's -100 labels), plus the NSP cross-entropy. Unless you
    `compile` yourself, each `fit` uses AdamW at peak learning rate 1e-4 (BERT) with 10% warmup and
    linear decay. `fit`/Keras `evaluate` report `loss`, `mlm_loss`, `mlm_accuracy` and
    `mlm_perplexity` (over the weighted positions; perplexity = exp of their mean cross-entropy)
    and, with a next-sentence task, `nsp_loss` and `nsp_accuracy`. `evaluate(documents)` returns the
    same as corpus-level numbers on examples and masks drawn with a fixed `seed`, so two evaluations
    agree.

    Model inputs are the backbone's plus `mask_positions` (int32 `[batch, P]`); outputs a dict:
    `mlm` `[batch, P, vocabulary]` logits and, unless `next_sentence=None`, `nsp` `[batch, 2]`
    logits (index 0: B follows A / in order). Keras-level data is `(inputs, {"mlm": mask_ids,
    "nsp": labels}, {"mlm": mask_weights, "nsp": ones})`; `pretraining_dataset` builds it.

    Args:
        backbone: a `BertBackbone`. preprocessor: a `BertPreprocessor` (its tokenizer is used).
        next_sentence: "nsp" (BERT), "sop" (ALBERT's sentence order, same 2-way head) or None
            (masked LM only, RoBERTa; no NSP head).
        max_sequence_length: the longest example, special tokens included.
        short_seq_prob, dupe_factor: as in `pretraining_examples`.
        masking: a `MaskingConfig` (or a dict of its fields): the rates (BERT's: 15% of the tokens, of which
            80% `[MASK]`, 10% random, 10% kept; at most 20 a sequence), the strategy ("token", "whole_word",
            "span") and whether masks are drawn anew each epoch (`dynamic`, the default) or once per `fit`.
        span_boundary_objective: add SpanBERT's span-boundary head (`SpanBoundaryHead`, output "sbo"): each
            masked token predicted again from the two tokens around its span; loss = MLM + SBO. Pair it with
            `masking=MaskingConfig(strategy="span")` and `next_sentence=None`, as SpanBERT. The head is for
            pre-training only: `.keras` files and backups keep it, presets and HF folders do not.
        columns: `{"text": ..., "units": ...}`: the DataFrame column holding the documents (default "text"), and
            one holding each document's knowledge units (entities, phrases: a list of strings; default None, no
            units). With units and `MaskingConfig(strategy="whole_word")` each unit is masked whole: ERNIE's
            knowledge masking (`kerasbert.data.knowledge_units`).
        head: a layer replacing both heads: called on `{"sequence_output", "pooled_output",
            "padding_mask", "mask_positions"}`, it returns `{"mlm": [batch, P, vocabulary] logits}`
            plus `"nsp": [batch, 2]` logits with a next-sentence task. Saved in `.keras` files; it
            has no HF names, so `save_to_preset` and `export_to_hf` refuse it.

    Examples:
        >>> pretrainer = BertPretrainer.from_preset("bert_mini_en_uncased", load_weights=False)
        >>> chapters = austen.groupby(["book", "chapter"])["text"].agg("\\n".join)
        >>> pretrainer.fit(chapters.tolist(), epochs=3, batch_size=32)
        >>> pretrainer.evaluate(held_out_chapters)   # {"loss", "mlm_loss", "mlm_accuracy", ...}
        >>> pretrainer.save_to_preset("austen_bert")  # then BertClassifier.from_preset("austen_bert", ...)
    """

    default_columns = {"text": "text", "units": None}
    nullable_columns = ("units",)

    def __init__(
        self,
        backbone,
        preprocessor,
        next_sentence="nsp",
        max_sequence_length=128,
        short_seq_prob=0.1,
        dupe_factor=1,
        masking=None,
        span_boundary_objective=False,
        head=None,
        **kwargs,
    ):
        check_options(backbone, next_sentence, max_sequence_length)
        check_span_boundary_option(span_boundary_objective, head)
        masking = MaskingConfig.coerce(masking)

        # === Functional model ===
        inputs = masked_lm_inputs(backbone)
        features = masked_lm_features(backbone, inputs)
        mlm_head = nsp_head = sbo_head = None
        if head is not None:
            expected = {"mlm": (None, None, backbone.vocabulary_size), **({"nsp": (None, 2)} if next_sentence else {})}
            outputs = checked_head_outputs(head, features, expected, "BertPretrainer")
        else:
            mlm_head = build_masked_lm_head(backbone)
            outputs = {"mlm": mlm_head(masked_lm_sequence(features), features["mask_positions"])}
            if span_boundary_objective:
                sbo_head = SpanBoundaryHead(
                    backbone.vocabulary_size, token_embedding=backbone.token_embedding, activation=backbone.activation,
                    layer_norm_epsilon=backbone.layer_norm_epsilon, initializer_range=backbone.initializer_range,
                    dtype=backbone.dtype_policy, name="sbo_head")
                outputs["sbo"] = sbo_head(features["sequence_output"], features["mask_positions"])
            if next_sentence is not None:
                nsp_head = NSPHead(initializer_range=backbone.initializer_range, dtype="float32", name="nsp_head")
                outputs["nsp"] = nsp_head(features["pooled_output"])
        super().__init__(inputs=inputs, outputs=outputs, backbone=backbone, preprocessor=preprocessor,
                         head=head, **kwargs)

        # === Config ===
        self.next_sentence = next_sentence
        self.max_sequence_length = max_sequence_length
        self.short_seq_prob = short_seq_prob
        self.dupe_factor = dupe_factor
        self.masking = masking
        if self.columns["units"] is not None and masking.strategy == "token":
            raise ValueError(f"columns['units']={self.columns['units']!r} asks for knowledge units, which are masked "
                             "whole: pass masking=MaskingConfig(strategy='whole_word') (ERNIE) or 'span'.")
        self.span_boundary_objective = span_boundary_objective
        self.mlm_head = mlm_head
        self.nsp_head = nsp_head
        self.sbo_head = sbo_head
        # Built once, as Keras builds `predict_function`: a new compiled function each call would retrace.
        self.metric_sums_function = ModelFunction(self, self.metric_sums)
        if self.tokenizer.has_vocabulary:  # (from a `.keras` file it comes later, options checked at save)
            self.masker(seed=0)  # checks the masking options now rather than at the first fit

    # === Checkpoint heads and presets ===

    @classmethod
    def task_args_from_checkpoint(cls, checkpoint, task_args):
        """A preset saved by `BertPretrainer.save_to_preset` brings its pre-training options."""
        saved = checkpoint.task_config or {}
        if saved.get("class_name") == keras.saving.get_registered_name(cls):
            return {**cls.upgrade_config(saved["config"]), **task_args}
        return task_args

    @classmethod
    def upgrade_config(cls, config):
        """Files saved with the masking options as separate keys load too."""
        return masking_from_legacy_options(super().upgrade_config(config))

    def heads_from_checkpoint(self, checkpoint):
        """Load `cls.predictions.*` and `cls.seq_relationship.*` (HF `BertForPreTraining`, Google
        checkpoints, kerasbert presets) when the checkpoint has them."""
        if self.mlm_head is None:  # a custom head: nothing of HF's to load
            return
        load_masked_lm_head(self.mlm_head, checkpoint, type(self).__name__, self.backbone.family)
        nsp_weights = checkpoint.heads(NSP_HEAD_NAME + ".")
        if self.nsp_head is not None and nsp_weights:
            assign_links(dense_links(self.nsp_head, NSP_HEAD_NAME), nsp_weights, checkpoint.source)

    def head_weights(self):
        """The MLM (and NSP) head under HF names: `cls.predictions.*`, `cls.seq_relationship.*`."""
        check_no_custom_head(self.head, "be written as a preset or HF folder")
        weights = export_links(masked_lm_head_links(self.mlm_head, self.backbone.family))
        if self.nsp_head is not None:
            weights.update(export_links(dense_links(self.nsp_head, NSP_HEAD_NAME)))
        return weights

    def save_to_preset(self, folder):
        """Write a kerasbert preset: backbone, vocabulary, both heads and the pre-training options.

        Every application's `from_preset(folder)` reads it (a fine-tuning task takes the backbone;
        `BertPretrainer` and `BertMaskedLM` also the heads).

        Examples:
            >>> pretrainer.save_to_preset("austen_bert")
            >>> BertClassifier.from_preset("austen_bert", num_classes=2)
        """
        task_config = {"class_name": keras.saving.get_registered_name(type(self)),
                       "config": self.pretraining_options()}
        return write_task_preset(self, folder, self.head_weights(), task_config)

    def export_to_hf(self, folder, allow_lossy=False):
        """Write a HF folder that `transformers.BertForPreTraining.from_pretrained` loads with both
        heads (`BertForMaskedLM` without a next-sentence task).

        Examples:
            >>> pretrainer.export_to_hf("austen_bert_hf")
        """
        return self.backbone.export_to_hf(folder, self.tokenizer, heads=self.head_weights(),
                                          allow_lossy=allow_lossy)

    # === Data ===

    def masker(self, seed):
        """The `MaskedLMMasker` of this model's masking options, seeded with `seed`."""
        return MaskedLMMasker.from_tokenizer(self.tokenizer, self.masking, seed)

    def pretraining_dataset(self, documents, batch_size=DEFAULT_BATCH_SIZE, seed=0, dynamic=None,
                            shuffle=False, group_by_length=False, fit_role=None, start=0):
        """Documents -> a `tf.data.Dataset` of `(inputs, targets, sample_weights)` batches.

        A shard folder (`kerasbert.data.prepare_pretraining`) gives this process's endless stream
        (`pretraining_stream`) from batch number `start` on.

        Examples are built once with `seed`; masks are drawn with `seed` too: per batch as it is read (a new mask
        each epoch) when `dynamic` (None: the model's `masking.dynamic`), or once here.
        `fit_role` ("the training data", "the validation data"): batches for Keras' steps, which
        under a `keras.distribution` must split over its devices (checked here).

        Examples:
            >>> inputs, targets, weights = next(iter(pretrainer.pretraining_dataset(chapters)))
            >>> sorted(inputs), sorted(targets)
            (['mask_positions', 'padding_mask', 'segment_ids', 'token_ids'], ['mlm', 'nsp'])
        """
        masker = self.masker(seed)
        if is_shard_folder(documents):
            if self.columns["units"] is not None:
                raise ValueError("Knowledge units are read from a DataFrame of documents; a shard folder carries "
                                 "none. Pass the documents as a DataFrame, or columns={'units': None}.")
            return self.with_sbo_targets(self.pretraining_stream(documents, seed).dataset(batch_size, masker, start))
        dynamic = self.masking.dynamic if dynamic is None else dynamic
        examples = pretraining_examples(
            documents, self.tokenizer, max_sequence_length=self.max_sequence_length,
            next_sentence=self.next_sentence, short_seq_prob=self.short_seq_prob,
            dupe_factor=self.dupe_factor, seed=seed, text_column=self.columns["text"],
            units_column=self.columns["units"],
        )
        if fit_role is not None:
            check_batches_split_evenly(int(examples["token_ids"].nrows()), batch_size, fit_role, model=self)
        if not dynamic:
            examples.update(masker(examples["token_ids"], examples.get("joined")))
        dataset = make_batched_dataset(
            examples, batch_size=batch_size, max_length=self.max_sequence_length,
            pad_token_id=self.tokenizer.pad_token_id,
            batch_order=BatchOrder(shuffle=shuffle, seed=seed, group_by_length=group_by_length),
        )
        if dynamic:  # mapped sequentially, so the same seed gives the same masks
            dataset = dataset.map(lambda batch: {**batch, **masker(batch["token_ids"], batch.get("joined"))})
        return self.with_sbo_targets(dataset.map(inputs_and_targets)).prefetch(tf.data.AUTOTUNE)

    def with_sbo_targets(self, dataset):
        """With the span-boundary objective, the masked-LM targets and weights again under "sbo"."""
        if not self.span_boundary_objective:
            return dataset
        return dataset.map(lambda inputs, targets, weights: (
            inputs, {**targets, "sbo": targets["mlm"]}, {**weights, "sbo": weights["mlm"]}))

    def pretraining_stream(self, folder, seed=0):
        """The `PretrainingStream` of this process over a shard folder, with this model's example options and
        the process's share under a multi-process `keras.distribution`."""
        num_processes, process_index = process_share()
        return PretrainingStream(folder, self.tokenizer, self.max_sequence_length, self.next_sentence,
                                 self.short_seq_prob, seed, num_processes, process_index)

    def prepare(self, data, with_labels, training=False):
        raise ValueError(
            "BertPretrainer reads documents in fit and evaluate only; predict takes model inputs "
            "(token_ids, segment_ids, padding_mask, mask_positions). To fill in [MASK] tokens of "
            "texts, save this model with save_to_preset(folder) and use BertMaskedLM.from_preset(folder)."
        )

    # === Training ===

    def default_loss(self):
        masked_outputs = ["mlm", "sbo"] if self.span_boundary_objective else ["mlm"]
        losses = {output: keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                    reduction="mean_with_sample_weight")
                  for output in masked_outputs}
        if self.next_sentence is not None:
            losses["nsp"] = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return losses

    def default_metrics(self):
        if self.next_sentence is None:
            return {}
        return {"nsp": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}

    def default_weighted_metrics(self):
        # With several outputs Keras prefixes metric names with "mlm_" and reports "mlm_loss" itself.
        one_output = self.next_sentence is None and not self.span_boundary_objective
        prefix = "mlm_" if one_output else ""
        metrics = {"mlm": [keras.metrics.SparseCategoricalAccuracy(name=prefix + "accuracy"),
                           MaskedLMCrossEntropy(name=prefix + "perplexity", exponentiate=True)]}
        if one_output:
            metrics["mlm"].append(MaskedLMCrossEntropy(name="mlm_loss"))
        if self.span_boundary_objective:
            metrics["sbo"] = [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
        return metrics

    def compile_defaults(self, total_steps, learning_rate=None, **options):
        """The Task defaults with the pre-training peak learning rate, 1e-4, unless given."""
        super().compile_defaults(total_steps, learning_rate or PRETRAINING_LEARNING_RATE, **options)

    def fit(self, x=None, y=None, batch_size=None, epochs=1, validation_data=None, learning_rate=None,
            seed=0, group_by_length=False, **kwargs):
        """Pre-train on documents (what `pretraining_examples` reads: a DataFrame with a text column,
        a list or Series of document strings, a file or folder path); Keras-level data (a
        `tf.data.Dataset` or dicts of arrays) passes through. `seed` seeds the examples, the masks and
        the shuffle; documents as `validation_data` are masked statically with seed 0.

        A shard folder (`kerasbert prepare-pretraining`) is read as a stream: each epoch is `steps_per_epoch`
        batches (default: about one pass over the corpus), and with `backup_dir` a restarted run continues at the
        batch it had reached (the data position is saved with the weights)."""
        made_here = is_documents(x)
        if is_shard_folder(x):
            batch_size = batch_size or DEFAULT_BATCH_SIZE
            start = TrainingBackup(kwargs["backup_dir"]).batches_read() if kwargs.get("backup_dir") else 0
            local_batch = process_batch_size(batch_size)
            kwargs.setdefault("steps_per_epoch",
                              self.pretraining_stream(x, seed).estimated_batches_per_pass(local_batch))
            x = self.pretraining_dataset(x, local_batch, seed, start=start)  # this process's own shards
            batch_size = None
            kwargs.setdefault("shuffle", False)  # the stream is already shuffled with `seed`
        elif is_documents(x):
            if y is not None:
                raise ValueError("With documents, the targets come from the masking; do not pass `y`.")
            x = this_process_rows(self.pretraining_dataset(x, batch_size or DEFAULT_BATCH_SIZE, seed, shuffle=True,
                                                           group_by_length=group_by_length,
                                                           fit_role="the training data"))
            batch_size = None
            kwargs.setdefault("shuffle", False)  # the dataset is already shuffled with `seed`
        else:
            check_keras_data(x, DOCUMENTS_HINT, "fit")
        if is_documents(validation_data):
            validation_data = this_process_rows(self.pretraining_dataset(
                validation_data, batch_size or DEFAULT_BATCH_SIZE, dynamic=False, fit_role="the validation data"))
        with batches_already_per_process() if made_here else contextlib.nullcontext():
            return super().fit(x, y, batch_size=batch_size, epochs=epochs, validation_data=validation_data,
                               learning_rate=learning_rate, seed=seed, group_by_length=group_by_length, **kwargs)

    @reads_columns
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", seed=0, **kwargs):
        """On documents: a dict of corpus-level `loss`, `mlm_loss`, `mlm_accuracy`, `mlm_perplexity`
        (= exp(mlm_loss)) and with a next-sentence task `nsp_loss`, `nsp_accuracy`, over examples
        and static masks drawn with `seed`. Keras-level data goes to Keras `evaluate`."""
        if not is_documents(x):
            check_keras_data(x, DOCUMENTS_HINT, "evaluate")
            return super().evaluate(x, y, batch_size=batch_size, verbose=verbose, **kwargs)
        if y is not None or kwargs:
            raise TypeError(
                f"evaluate on documents takes batch_size, verbose and seed; got "
                f"{sorted(kwargs) + (['y'] if y is not None else [])}."
            )
        dataset = self.pretraining_dataset(x, batch_size or DEFAULT_BATCH_SIZE, seed, dynamic=False)
        progress = keras.utils.Progbar(int(dataset.cardinality()),
                                       verbose=1 if verbose == "auto" else verbose)
        totals = dict.fromkeys(METRIC_SUMS, 0.0)
        for step, batch in enumerate(dataset):
            for name, value in self.metric_sums_function(*batch).items():
                totals[name] += float(value)
            progress.update(step + 1)
        return metrics_of(totals)

    def metric_sums(self, inputs, targets, weights):
        """One batch's sums of cross-entropy, hits and weights per output (masked LM: over the
        weighted positions), from which `metrics_of` computes corpus-level metrics."""
        outputs = self(inputs, training=False)
        sums = {}
        for task, logits in outputs.items():
            losses = keras.losses.sparse_categorical_crossentropy(targets[task], logits, from_logits=True)
            labels = ops.cast(targets[task], "int32")
            hits = ops.cast(ops.equal(ops.argmax(logits, axis=-1), labels), "float32")
            sums[f"{task}_loss"] = ops.sum(losses * weights[task])
            sums[f"{task}_hits"] = ops.sum(hits * weights[task])
            sums[f"{task}_weight"] = ops.sum(weights[task])
        return sums

    # === Serialisation ===

    def pretraining_options(self):
        """The constructor arguments other than the backbone and preprocessor."""
        return {
            "next_sentence": self.next_sentence,
            "max_sequence_length": self.max_sequence_length,
            "short_seq_prob": self.short_seq_prob,
            "dupe_factor": self.dupe_factor,
            "masking": self.masking.get_config(),
            "span_boundary_objective": self.span_boundary_objective,
            "columns": dict(self.columns),
        }

    def get_config(self):
        return {**super().get_config(), **self.pretraining_options()}


def check_span_boundary_option(span_boundary_objective, head):
    """`span_boundary_objective` is True or False, and the built-in heads are the ones it adds to."""
    if not isinstance(span_boundary_objective, bool):
        raise TypeError(f"span_boundary_objective must be True or False, got {span_boundary_objective!r}.")
    if span_boundary_objective and head is not None:
        raise ValueError("span_boundary_objective adds SpanBERT's head to the built-in ones; a custom `head` replaces "
                         "them: use one or the other.")


def hf_pretraining_batch(inputs, targets, weights):
    """A `pretraining_dataset` batch -> numpy arrays under HF `BertForPreTraining` argument names, the
    MLM labels written as HF's data collator writes them (the original token at each masked position,
    -100 everywhere else), so an HF model can train on kerasbert's examples and masks.

    Examples:
        >>> batch = hf_pretraining_batch(*next(iter(pretrainer.pretraining_dataset(chapters))))
        >>> sorted(batch)
        ['attention_mask', 'input_ids', 'labels', 'next_sentence_label', 'token_type_ids']
    """
    inputs, targets, weights = ({name: np.asarray(value) for name, value in part.items()}
                                for part in (inputs, targets, weights))
    labels = np.full(inputs["token_ids"].shape, -100, np.int64)
    rows, slots = np.nonzero(weights["mlm"])
    labels[rows, inputs["mask_positions"][rows, slots]] = targets["mlm"][rows, slots]
    batch = {"input_ids": inputs["token_ids"], "token_type_ids": inputs["segment_ids"],
             "attention_mask": inputs["padding_mask"], "labels": labels}
    if "nsp" in targets:
        batch["next_sentence_label"] = targets["nsp"]
    return {name: value.astype(np.int64) for name, value in batch.items()}
