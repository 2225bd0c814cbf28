"""Evaluation metrics computed on whole prediction sets (numpy / pandas), as GLUE reports them."""

import numpy as np
import pandas as pd


def accuracy(gold, predicted):
    """Fraction of exact matches.

    Examples:
        >>> accuracy([0, 1, 1], [0, 1, 0])
        0.6666666666666666
    """
    return float(np.mean(np.asarray(gold) == np.asarray(predicted)))


def f1_per_class(gold, predicted, num_classes):
    """F1 of each class id `0..num_classes-1` (0 where a class is never gold nor predicted)."""
    gold, predicted = np.asarray(gold), np.asarray(predicted)
    scores = []
    for c in range(num_classes):
        true_positive = np.sum((predicted == c) & (gold == c))
        denominator = np.sum(predicted == c) + np.sum(gold == c)
        scores.append(2 * true_positive / denominator if denominator else 0.0)
    return np.asarray(scores, dtype="float64")


def macro_f1(gold, predicted, num_classes):
    """Unweighted mean of the per-class F1 scores.

    Examples:
        >>> macro_f1([0, 0, 1, 1], [0, 1, 1, 1], 2)
        0.7333333333333334
    """
    return float(f1_per_class(gold, predicted, num_classes).mean())


def matthews_corrcoef(gold, predicted, num_classes):
    """Matthews correlation (multi-class form of Gorodkin 2004; CoLA's metric).

    Examples:
        >>> matthews_corrcoef([0, 0, 1, 1], [0, 1, 1, 1], 2)
        0.5773502691896258
    """
    confusion = np.zeros((num_classes, num_classes), dtype="float64")
    np.add.at(confusion, (np.asarray(gold), np.asarray(predicted)), 1)
    correct, total = np.trace(confusion), confusion.sum()
    gold_counts, predicted_counts = confusion.sum(1), confusion.sum(0)
    numerator = correct * total - gold_counts @ predicted_counts
    denominator = np.sqrt(total**2 - predicted_counts @ predicted_counts) * np.sqrt(
        total**2 - gold_counts @ gold_counts
    )
    return float(numerator / denominator) if denominator else 0.0


def pearson(gold, predicted):
    """Pearson correlation (STS-B's main metric)."""
    return float(pd.Series(np.asarray(gold, "float64")).corr(pd.Series(np.asarray(predicted, "float64"))))


def spearman(gold, predicted):
    """Spearman rank correlation: Pearson on average ranks (ties share their mean rank).

    Examples:
        >>> spearman([1, 2, 3, 4], [10, 20, 30, 25])
        0.8
    """
    gold_ranks = pd.Series(np.asarray(gold, "float64")).rank(method="average")
    predicted_ranks = pd.Series(np.asarray(predicted, "float64")).rank(method="average")
    return pearson(gold_ranks, predicted_ranks)


def multilabel_f1(gold, predicted):
    """Micro and macro F1 of multi-hot label matrices `[examples, labels]`."""
    gold, predicted = np.asarray(gold, bool), np.asarray(predicted, bool)
    true_positive = (gold & predicted).sum(0)
    denominators = gold.sum(0) + predicted.sum(0)
    per_label = np.where(denominators > 0, 2 * true_positive / np.maximum(denominators, 1), 0.0)
    micro_denominator = denominators.sum()
    micro = 2 * true_positive.sum() / micro_denominator if micro_denominator else 0.0
    return float(micro), float(per_label.mean())
