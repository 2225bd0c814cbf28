"""PipelineModel: `fit`, `evaluate` and `predict` on raw data, the plumbing under every task model.

Raw data (a DataFrame, Series, list of texts, one text or a dict of columns) is validated and tokenised by the
task's `prepare` hook before any computation, batched with dynamic padding and length buckets, and decoded back
into a DataFrame by its `decode` hook; `evaluate` scores with its `score` hook. Tensors, arrays and `tf.data`
pass straight through to Keras. Unless the user compiles, `fit` compiles AdamW with warmup and linear decay.
keras-hub keeps the same split (`pipeline_model.py` under `task.py`).

Examples:
    >>> classifier.fit(train_df, epochs=2)          # PipelineModel.fit: prepare -> batches -> keras fit
    >>> classifier.predict(["a lovely film"])       # prepare -> outputs_of -> decode
"""

import contextlib

import keras
import numpy as np
import tensorflow as tf

from kerasbert.data.batch_order import training_order
from kerasbert.data.batching import EagerBatches, make_batched_dataset
from kerasbert.data.output_rows import (
    concatenate_padded,
    empty_like_output,
    in_input_order,
    ragged_from_padded,
    traced_with_row_lengths,
)
from kerasbert.data.ragged_rows import row_lengths
from kerasbert.deployment.model_function import ModelFunction
from kerasbert.fine_tuning.frozen_features import caches_features, check_cache_features, with_frozen_features
from kerasbert.progress import progress_verbosity
from kerasbert.tasks.columns import reads_columns, resolve_columns
from kerasbert.tasks.run_arguments import DEFAULT_BATCH_SIZE, check_run_arguments, is_raw, steps_of
from kerasbert.training.backup import TrainingBackup
from kerasbert.training.default_optimizer import (
    create_optimizer,
    default_learning_rate,
    fit_optimizer_options,
    updates_of,
)
from kerasbert.training.distribution import (
    batches_already_per_process,
    check_batches_split_evenly,
    check_dataset_splits_evenly,
    check_weights_are_trainable,
    rows_of,
    this_process_rows,
)
from kerasbert.training.fit_arguments import check_callbacks, check_seed, split_for_validation
from kerasbert.training.unused_weights import weights_unused_by_design


def batch_spec(epoch_iterator):
    """The shapes and dtypes of a batch, for Keras' symbolic build, without reading one.

    Keras reads a batch for it through a fresh iterator (JAX and torch on every first `fit`,
    TensorFlow under a `tf.distribute` strategy): with a dataset that reshuffles each iteration,
    that iterator uses up the first shuffle, so epoch 1 trained on the second order (two
    MirroredStrategy replicas took other steps than one device). The dataset's spec says as much.
    """
    return keras.tree.map_structure(lambda spec: keras.KerasTensor(spec.shape, spec.dtype.name),
                                    epoch_iterator.data_adapter.get_tf_dataset().element_spec)


class PipelineModel(keras.Model):
    """Raw-data `fit`/`evaluate`/`predict` over the hooks a task model implements (listed in `Task`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.default_compiled = False
        self.inference_function = None
        self.packing_function = None
        self.native_reader = None  # a `NativeReader`: texts read in Rust, not TensorFlow (ONNX folders)

    # === Hooks (see Task) ===

    def prepare(self, data, with_labels, training=False):
        """Validate and tokenise raw data. `training=True` may also learn label names."""
        raise NotImplementedError

    def default_loss(self):
        """The Keras loss `fit` compiles with (a hook: see `Task`)."""
        raise NotImplementedError

    def balanced_class_weight(self, prepared):
        """`class_weight="balanced"` as `{class index: weight}`, for the tasks that support it."""
        raise ValueError(f'{type(self).__name__} does not support class_weight="balanced".')

    def class_weight_by_index(self, class_weight):
        """A user's `class_weight` dict as Keras takes it (class index -> weight)."""
        raise ValueError(f"{type(self).__name__} does not support class_weight; weight rows with "
                         "sample weights of a tf.data.Dataset instead.")

    def default_metrics(self):
        """Keras metrics shown during `fit` (a hook: see `Task`)."""
        return []

    def default_weighted_metrics(self):
        """Metrics that honour sample weights (per-token tasks: only the weighted tokens count)."""
        return None

    def decode(self, outputs, prepared):
        """Model outputs -> a DataFrame of predictions, one row per input row (a hook: see `Task`)."""
        raise NotImplementedError

    def score(self, outputs, prepared):
        """Model outputs and labels -> a dict of metrics as fractions, and `errors` (a hook: see `Task`)."""
        raise NotImplementedError

    # === Data ===

    def batches(self, prepared, *, with_labels, training=False, batch_size=DEFAULT_BATCH_SIZE, seed=0,
                group_by_length=True, order=None, epochs=None):
        """`Prepared` data -> `tf.data.Dataset`. Training batches are shuffled and (unless
        `group_by_length=False`) grouped by length, one epoch (reshuffled per iteration) or the numbered
        `epochs` back to back; other batches come in `order`, else the input order. Inference batches in
        a given `order` are `EagerBatches` (no tf.data pipeline to build) unless the task batches its own way."""
        if order is not None and not with_labels and type(self).make_dataset is PipelineModel.make_dataset:
            return EagerBatches(prepared.features, order, batch_size,
                                max_length=self.sequence_length or self.backbone.max_sequence_length,
                                pad_token_id=self.tokenizer.pad_token_id)
        return self.make_dataset(
            prepared,
            labels=prepared.labels if with_labels else None,
            sample_weight=prepared.sample_weight if with_labels else None,
            batch_size=batch_size,
            max_length=self.sequence_length or self.backbone.max_sequence_length,
            pad_token_id=self.tokenizer.pad_token_id,
            batch_order=training_order(training, seed, group_by_length, order, epochs),
        )

    def make_dataset(self, prepared, **options):
        """The task's batching (`make_batched_dataset`; multiple choice keeps an example's choices
        together) with the options `batches` chose."""
        return make_batched_dataset(prepared.features, **options)

    def example_lengths(self, prepared):
        """Tokens per example (a multiple-choice example: its longest choice)."""
        return row_lengths(prepared.features["token_ids"])

    def length_order(self, prepared):
        """Example indices from shortest to longest: the batching order with the least padding."""
        return np.argsort(self.example_lengths(prepared), kind="stable")

    def pack_texts(self, first, second=None):
        """Tokenise and pack texts (or pairs) into ragged `token_ids`/`segment_ids`, in one traced
        TensorFlow function (run eagerly, the tokenizer's many small ops cost ~90 ms a call)."""
        texts = [first] if second is None else [first, second]
        if self.native_reader is not None:
            return self.native_reader(*texts)["features"]
        key = (self.sequence_length, second is None)
        if self.packing_function is None or self.packing_function[0] != key:
            def pack(*texts):
                return ragged_from_padded(self.preprocessor(texts[0] if len(texts) == 1 else texts))

            signature = [tf.TensorSpec([None], tf.string)] * (1 if second is None else 2)  # one trace for any rows
            self.packing_function = (key, traced_with_row_lengths(pack, signature))
        return self.packing_function[1](*[tf.constant(list(part), tf.string, shape=[len(part)]) for part in texts])

    # === Training ===

    def compile(self, *args, **kwargs):
        """Keras `compile`; a user's compile replaces every kerasbert default."""
        self.default_compiled = False
        super().compile(*args, **kwargs)

    def compile_defaults(self, total_steps, learning_rate=None, optimizer="adamw", gradient_accumulation_steps=None):
        """AdamW (or `optimizer="lamb"`), 10% warmup then linear decay over the updates of `total_steps`
        batches (`gradient_accumulation_steps` batches an update), the task's loss and metrics."""
        learning_rate = learning_rate or default_learning_rate(self.backbone.hidden_dim, self.fine_tuning)
        super().compile(
            optimizer=create_optimizer(updates_of(total_steps, gradient_accumulation_steps), learning_rate,
                                       optimizer=optimizer, gradient_accumulation_steps=gradient_accumulation_steps),
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
            learning_rate=None, seed=0, group_by_length=True, backup_dir=None, cache_features=None, columns=None,
            optimizer="adamw", gradient_accumulation_steps=None, **kwargs):
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

        `columns`: `{role: column}` to read from this data, e.g. `{"text": "review"}`; the model keeps them
        (`model.columns`, saved with it), as it does the columns given to its constructor.

        `optimizer="lamb"`: LAMB instead of AdamW (large batches; `kerasbert.training.Lamb`).
        `gradient_accumulation_steps=k`: one update every k batches with their mean gradient, so that batches
        of `batch_size` train as batches of k * `batch_size` (k must divide the batches of the fit).

        Examples:
            >>> classifier.fit(train_df, epochs=3, backup_dir="sentiment_backup")
            >>> classifier.fit(train_df, batch_size=8, gradient_accumulation_steps=4)  # as batches of 32
        """
        check_run_arguments(x, batch_size, epochs)
        check_seed(seed)
        check_callbacks(kwargs.get("callbacks"))
        check_cache_features(cache_features)
        defaults = fit_optimizer_options(learning_rate, optimizer, gradient_accumulation_steps,
                                         own_optimizer=self.compiled and not self.default_compiled)
        kwargs["verbose"] = progress_verbosity(kwargs.get("verbose", "auto"))  # no bar's control codes in logs
        if columns is not None:
            self.columns = resolve_columns(self.columns, columns, type(self).__name__, self.nullable_columns)
        backup = None if backup_dir is None else TrainingBackup(backup_dir)
        with weights_unused_by_design():  # heads on token states (QA, MLM, mean pooling) leave the pooler unused
            with self.strategy_scope():  # the default optimizer is made in fit, under the model's strategy
                return self.fit_with_defaults(x, y, batch_size, epochs, validation_data, defaults,
                                              seed, group_by_length, backup, cache_features, **kwargs)

    def fit_resumable(self, x, backup, **kwargs):
        """Keras `fit`, first restoring `backup`'s state (if any) and starting after its epochs."""
        if backup is not None:
            kwargs["initial_epoch"] = backup.restore(self)
            kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), backup]
        return super().fit(x, **kwargs)

    def fit_with_defaults(self, x, y, batch_size, epochs, validation_data, defaults, seed,
                          group_by_length, backup, cache_features, **kwargs):
        """`fit`'s work once its arguments are checked: raw data prepared and batched, compile defaults (with
        the `defaults` keywords of `compile_defaults`), then Keras' fit."""
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
                steps = (kwargs.get("steps_per_epoch") or steps_of(x, batch_size)) * epochs
                self.compile_defaults(steps, **defaults)
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
            validation_data = this_process_rows(self.batches(validation, with_labels=True, batch_size=batch_size,
                                                             order=self.length_order(validation)))
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
        train = this_process_rows(self.batches(prepared, with_labels=True, training=True, batch_size=batch_size,
                                               seed=seed, group_by_length=group_by_length,
                                               epochs=range(initial_epoch, epochs)))
        batches_per_epoch = -(-len(self.example_lengths(prepared)) // batch_size)
        if not self.compiled or self.default_compiled:
            self.compile_defaults(batches_per_epoch * epochs, **defaults)
        kwargs.update(steps_per_epoch=batches_per_epoch, initial_epoch=initial_epoch)
        kwargs.setdefault("shuffle", False)  # the dataset is already shuffled with `seed`
        self.build_optimizer()
        with batches_already_per_process():  # several processes: each fits its rows of every batch
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
        `verbose="auto"` shows progress only for runs of more than `QUIET_BATCHES` batches (`kerasbert.progress`).
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

    def warm_up_rows(self):
        """The smallest input `predict` takes, to trace it before the first real call (a server's start)."""
        return [""]

    @reads_columns
    def predict(self, x, batch_size=None, verbose="auto", **kwargs):
        """Decoded predictions as a DataFrame for raw data (one text, a list, a Series or a
        DataFrame; an empty text is predicted too); Keras `predict` otherwise. `columns={role: column}`
        reads this data's columns instead of `model.columns`, e.g. `{"text": "review"}`."""
        check_run_arguments(x, batch_size)
        if not is_raw(x):
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        outputs, prepared = self.predict_outputs(x, batch_size, verbose=verbose)
        return self.decode(outputs, prepared)

    @reads_columns
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", return_errors=False, **kwargs):
        """A dict of the task's metrics for raw data (plus `errors`, a DataFrame of the wrong
        predictions, when `return_errors=True`); Keras `evaluate` otherwise. `columns` as in `predict`."""
        check_run_arguments(x, batch_size)
        if not is_raw(x):
            return super().evaluate(x, y, batch_size=batch_size, verbose=verbose, **kwargs)
        outputs, prepared = self.predict_outputs(x, batch_size, with_labels=True, verbose=verbose)
        results = self.score(outputs, prepared)
        if not return_errors:
            results.pop("errors", None)
        return results

