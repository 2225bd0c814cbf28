"""Retrieval: an index over encoded passages, runs of queries against it, and their scores against qrels."""

from kerasbert.retrieval.approximate_index import ApproximateIndex
from kerasbert.retrieval.evaluation import evaluate_retrieval, retrieve
from kerasbert.retrieval.exact_index import ExactIndex
from kerasbert.retrieval.vector_index import VectorIndex, load_index

__all__ = ["ApproximateIndex", "ExactIndex", "VectorIndex", "evaluate_retrieval", "load_index", "retrieve"]
