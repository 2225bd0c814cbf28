"""Frozen features computed once: with `fine_tuning="frozen"` the backbone never changes, so `fit` computes
what the head reads (the pooled vector, or every layer's `[CLS]` vector with `layer_mix=True`) once per
example and trains the head on those vectors in every epoch, instead of running BERT again each epoch.

The features are the backbone's inference outputs (no dropout inside BERT), as in BERT's feature-based
experiments; the head's own dropout still applies. The batches keep the order, shuffling and length grouping
of an uncached `fit` (the token ids ride along), so resuming from a backup and callbacks work unchanged.
Tasks whose head reads every token (token classification, QA) or several rows per example (multiple choice)
recompute their frozen backbone each epoch.

Examples:
    >>> mix = FineTuningConfig("frozen", layer_mix=True)
    >>> classifier = BertClassifier.from_preset("all_minilm_l6_v2_en", num_classes=2, fine_tuning=mix)
    >>> classifier.fit(train_df, epochs=20)                       # BERT runs once over train_df
    >>> classifier.fit(train_df, epochs=20, cache_features=False)  # BERT runs 20 times (for comparison)
"""

import keras
import numpy as np

from kerasbert.deployment.model_function import ModelFunction

FROZEN_FEATURES = "frozen_features"  # the batch key of the cached vectors: [batch, head inputs, hidden]
EXTRACTION_BATCH_SIZE = 64


class FrozenFeatureState:
    """What a task keeps for caching: the tensors its default head reads (`head_inputs`, None under a head of
    your own) and, once built, the model from them to the task's outputs. A plain object, so Keras does not
    track that model as a layer of the task (it adds no weights of its own)."""

    def __init__(self, head_inputs):
        self.head_inputs = None if head_inputs is None else list(head_inputs)
        self.head = None


def check_cache_features(cache_features):
    if cache_features not in (None, True, False):
        raise ValueError(f"cache_features must be True, False or None (cache when the task can), got "
                         f"{cache_features!r}.")


def caches_features(task, cache_features):
    """Whether `fit` trains `task` on cached features: `cache_features` True/False, or None for whenever it
    can (a frozen backbone under the task's default per-example head). True where it cannot is a ValueError."""
    check_cache_features(cache_features)
    head_inputs = task.frozen_features.head_inputs
    can = (task.fine_tuning == "frozen" and head_inputs is not None
           and all(len(tensor.shape) == 2 for tensor in head_inputs))
    if cache_features and not can:
        raise ValueError(
            f"cache_features=True needs fine_tuning='frozen' and the default head of a task that reads one vector "
            f"per example (BertClassifier); this {type(task).__name__} has fine_tuning={task.fine_tuning!r}"
            + ("" if head_inputs is not None else " and a head of your own") + ".")
    return can if cache_features is None else cache_features


def with_frozen_features(task, prepared):
    """`prepared` with `features["frozen_features"]`: the head's inputs for every example, float32
    `[examples, head inputs, hidden]`, computed in length-sorted batches (the least padding)."""
    head_on_frozen_features(task)  # built here, not inside a traced training step
    extractor = keras.Model(task.inputs, task.frozen_features.head_inputs, name="frozen_feature_extractor")
    function = ModelFunction(extractor, lambda x: extractor(x, training=False))
    order = task.length_order(prepared)
    batches = task.batches(prepared, with_labels=False, batch_size=EXTRACTION_BATCH_SIZE, order=order)
    function.trace(batches.element_spec)
    vectors = np.concatenate([np.stack(as_list(function(batch)), axis=1) for batch in batches]).astype("float32")
    cached = np.empty_like(vectors)
    cached[order] = vectors
    prepared.features = {**prepared.features, FROZEN_FEATURES: cached}
    return prepared


def as_list(outputs):
    """A model's outputs as a list (Keras returns a one-output model's tensor unwrapped)."""
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]


def head_on_frozen_features(task):
    """A model from the head's inputs to the task's outputs, sharing the task's head layers (built once)."""
    state = task.frozen_features
    if state.head is None:
        state.head = keras.Model(state.head_inputs, task.outputs, name="frozen_feature_head")
    return state.head


def call_on_frozen_features(task, inputs, training):
    """The task's outputs from a batch that carries `frozen_features` (the backbone is not run)."""
    features = inputs[FROZEN_FEATURES]
    head_inputs = [features[:, i] for i in range(len(task.frozen_features.head_inputs))]
    return head_on_frozen_features(task)(head_inputs, training=training)
