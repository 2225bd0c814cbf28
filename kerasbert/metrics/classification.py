"""A classifier's evaluation from its logits: the metrics of its problem type, and which rows it got wrong.

Examples:
    >>> scores, wrong = classification_scores(np.array([[2.0, 0.0], [0.0, 1.0]]), np.array([0, 0]), "binary", 2)
    >>> scores["accuracy"], wrong.tolist()
    (0.5, [False, True])
"""

import numpy as np

from kerasbert.metrics import statistics
from kerasbert.metrics.probabilities import above_threshold, sigmoid, softmax


def classification_scores(logits, gold, problem_type, num_classes, thresholds=None):
    """(metrics, wrong rows) of `logits` against `gold` (class ids; multi-hot rows for "multilabel"; `[n, 1]`
    targets for "regression"). Single-label: loss, accuracy, macro F1, MCC (and the positive class's F1 when
    binary); multi-label: loss, subset accuracy, micro and macro F1 at `thresholds` (0.5 by default); regression:
    MSE, Pearson, Spearman."""
    if problem_type == "regression":
        predicted, gold = logits[:, 0], gold[:, 0]
        results = {"loss": float(np.mean((predicted - gold) ** 2)), "pearson": statistics.pearson(gold, predicted),
                   "spearman": statistics.spearman(gold, predicted)}
        return results, np.zeros(len(gold), bool)
    if problem_type == "multilabel":
        probabilities = sigmoid(logits)
        predicted = above_threshold(probabilities, thresholds or 0.5)
        eps = 1e-7
        loss = -np.mean(gold * np.log(probabilities + eps) + (1 - gold) * np.log(1 - probabilities + eps))
        micro, macro = statistics.multilabel_f1(gold, predicted)
        results = {"loss": float(loss), "subset_accuracy": float(np.mean((predicted == gold).all(1))),
                   "micro_f1": micro, "macro_f1": macro}
        return results, (predicted != gold.astype(bool)).any(1)
    probabilities = softmax(logits)
    predicted = probabilities.argmax(-1)
    results = {
        "loss": float(-np.mean(np.log(probabilities[np.arange(len(gold)), gold] + 1e-12))),
        "accuracy": statistics.accuracy(gold, predicted),
        "macro_f1": statistics.macro_f1(gold, predicted, num_classes),
        "mcc": statistics.matthews_corrcoef(gold, predicted, num_classes),
    }
    if problem_type == "binary":
        results["f1"] = float(statistics.f1_per_class(gold, predicted, 2)[1])
    return results, predicted != gold
