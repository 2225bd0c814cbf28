"""Retrieval: an index over encoded passages, runs of queries against it, and their scores against qrels."""

from kerasbert.retrieval.evaluation import evaluate_retrieval, retrieve
from kerasbert.retrieval.exact_index import ExactIndex

__all__ = ["ExactIndex", "evaluate_retrieval", "retrieve"]
