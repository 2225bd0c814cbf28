"""Retrieval with an encoder and an index, scored against relevance judgements."""

import numpy as np

from kerasbert.metrics.retrieval import DEFAULT_METRICS, parse_metric, retrieval_scores
from kerasbert.retrieval.exact_index import ExactIndex


def texts_by_id(texts, name):
    """`{id: text}` of a dict or a pandas Series (its index gives the ids), or an error naming the fix."""
    if hasattr(texts, "to_dict") and not hasattr(texts, "columns"):
        texts = texts.to_dict()
    if not isinstance(texts, dict) or not texts:
        raise TypeError(f"{name} must be a non-empty dict {{id: text}} or a pandas Series indexed by id; "
                        f"got {type(texts).__name__}.")
    bad = next((key for key, text in texts.items() if not isinstance(text, str)), None)
    if bad is not None:
        raise TypeError(f"{name}[{bad!r}] is {type(texts[bad]).__name__}, not a text.")
    return texts


def retrieve(encoder, queries, index, top_k=100, batch_size=None):
    """The run `{query id: {document id: score}}`: each query's `top_k` best documents of `index`.

    Examples:
        >>> run = retrieve(encoder, {"q1": "Who wrote Hamlet?"}, index, top_k=10)
    """
    queries = texts_by_id(queries, "queries")
    vectors = encoder.encode(list(queries.values()), batch_size=batch_size, verbose=0)
    scores, ids = index.search(vectors, top_k)
    return {query: {document: float(score) for document, score in zip(row_ids, row_scores)}
            for query, row_ids, row_scores in zip(queries, ids, scores)}


def evaluate_retrieval(encoder, queries, corpus, qrels, metrics=DEFAULT_METRICS, index=None, batch_size=None):
    """Encode `corpus` (`{id: text}`) into an `ExactIndex` (or, with `corpus=None`, search `index`, built before),
    retrieve for each query as deep as the metrics cut, and score the run against `qrels` (`{query id: {document
    id: relevance}}`, as trec_eval; see `kerasbert.metrics.retrieval`).

    Examples:
        >>> evaluate_retrieval(encoder, queries, passages, qrels)
        {'ndcg@10': 0.71, 'mrr@10': 0.66, 'map@100': 0.65, 'recall@1': 0.55, 'recall@10': 0.88, 'recall@100': 0.98}
    """
    depth = max(parse_metric(metric)[1] for metric in metrics)
    if (corpus is None) == (index is None):
        raise ValueError("Give the corpus ({id: text}) to encode, or an index built before with corpus=None.")
    if index is None:
        corpus = texts_by_id(corpus, "corpus")
        index = ExactIndex(encoder.backbone.hidden_dim)
        index.add(np.asarray(encoder.encode(list(corpus.values()), batch_size=batch_size, verbose=0)), ids=list(corpus))
    return retrieval_scores(retrieve(encoder, queries, index, depth, batch_size), qrels, metrics)
