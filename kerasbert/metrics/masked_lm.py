"""Masked-LM metrics: the cross-entropy (or perplexity) over the real masked positions only, as a Keras metric
for `fit`, and corpus-level numbers from summed batches for `evaluate` on documents."""

import keras
import numpy as np
from keras import ops

METRIC_SUMS = [f"{task}_{total}" for task in ("mlm", "sbo", "nsp") for total in ("loss", "hits", "weight")]


@keras.saving.register_keras_serializable(package="kerasbert")
class MaskedLMCrossEntropy(keras.metrics.Metric):
    """Mean cross-entropy over the weighted (real) masked positions of all batches seen, or its exp
    (perplexity) with `exponentiate=True`.

    Examples:
        >>> metric = MaskedLMCrossEntropy(exponentiate=True)
        >>> metric.update_state([[3, 0]], logits, sample_weight=[[1.0, 0.0]])   # only position 0 counts
    """

    def __init__(self, name="mlm_cross_entropy", exponentiate=False, **kwargs):
        super().__init__(name=name, **kwargs)
        self.exponentiate = exponentiate
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.weight = self.add_variable(shape=(), initializer="zeros", name="weight")

    def update_state(self, y_true, y_pred, sample_weight=None):
        losses = keras.losses.sparse_categorical_crossentropy(y_true, y_pred, from_logits=True)
        weights = ops.ones_like(losses) if sample_weight is None else ops.cast(sample_weight, losses.dtype)
        self.total.assign_add(ops.sum(losses * weights))
        self.weight.assign_add(ops.sum(weights))

    def result(self):
        mean = ops.divide_no_nan(self.total, self.weight)
        return ops.exp(mean) if self.exponentiate else mean

    def get_config(self):
        return {**super().get_config(), "exponentiate": self.exponentiate}


def metrics_of(sums):
    """Corpus-level metrics from the summed `metric_sums` of every batch."""
    mlm_loss = sums["mlm_loss"] / max(sums["mlm_weight"], 1.0)
    results = {"loss": mlm_loss, "mlm_loss": mlm_loss,
               "mlm_accuracy": sums["mlm_hits"] / max(sums["mlm_weight"], 1.0),
               "mlm_perplexity": float(np.exp(mlm_loss))}
    if sums["sbo_weight"]:
        results["sbo_loss"] = sums["sbo_loss"] / sums["sbo_weight"]
        results["sbo_accuracy"] = sums["sbo_hits"] / sums["sbo_weight"]
        results["loss"] += results["sbo_loss"]
    if sums["nsp_weight"]:
        results["nsp_loss"] = sums["nsp_loss"] / sums["nsp_weight"]
        results["nsp_accuracy"] = sums["nsp_hits"] / sums["nsp_weight"]
        results["loss"] += results["nsp_loss"]
    return results
