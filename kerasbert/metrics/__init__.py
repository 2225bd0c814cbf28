"""Metrics, each defined once, as fractions (a percentage only where printed): classification and correlation
statistics, SQuAD exact match and F1, entity-level scores of tags, ranking metrics of a retrieval run (as
trec_eval), and probabilities from logits."""

from kerasbert.metrics.classification import classification_scores
from kerasbert.metrics.entities import entity_scores, entity_spans
from kerasbert.metrics.probabilities import above_threshold, sigmoid, softmax
from kerasbert.metrics.retrieval import retrieval_scores
from kerasbert.metrics.squad import evaluate_squad, exact_match, normalize_answer
from kerasbert.metrics.statistics import (
    accuracy,
    f1_per_class,
    macro_f1,
    matthews_corrcoef,
    multilabel_f1,
    pearson,
    spearman,
)

__all__ = ["above_threshold", "accuracy", "classification_scores", "entity_scores", "entity_spans", "evaluate_squad",
           "exact_match", "f1_per_class", "macro_f1", "matthews_corrcoef", "multilabel_f1", "normalize_answer",
           "pearson", "retrieval_scores", "sigmoid", "softmax", "spearman"]
