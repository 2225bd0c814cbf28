"""Ranking metrics of a retrieval run against relevance judgements, computed as trec_eval computes them.

A run maps each query id to `{document id: score}`; qrels map each query id to `{document id: relevance}` (an
int; relevant from 1, trec_eval's default level). Documents are ranked by score, ties broken by document id in
descending order, as trec_eval does. Gains are the relevance grades (trec_eval's nDCG, not 2^grade - 1).
Averages are over the queries of the qrels with at least one relevant document; a query the run does not
answer counts 0 (trec_eval `-c`).

Metric names: `ndcg@k` (trec_eval `ndcg_cut.k`), `mrr@k` (`recip_rank` of the run cut at k), `map@k`
(`map_cut.k`), `recall@k` (`recall.k`), `precision@k` (`P.k`).

Examples:
    >>> run = {"q1": {"d1": 0.9, "d2": 0.5}, "q2": {"d3": 0.2, "d4": 0.7}}
    >>> qrels = {"q1": {"d2": 1}, "q2": {"d3": 2}}
    >>> retrieval_scores(run, qrels, ["mrr@10", "recall@1"])
    {'mrr@10': 0.5, 'recall@1': 0.0}
"""

import math

DEFAULT_METRICS = ("ndcg@10", "mrr@10", "map@100", "recall@1", "recall@10", "recall@100")


def ranking(scores):
    """Document ids from the best score down; equal scores by document id as text, descending (trec_eval's order)."""
    return [document for document, _ in sorted(scores.items(), key=lambda item: (item[1], str(item[0])), reverse=True)]


def query_scores(ranked, judged, metrics=DEFAULT_METRICS):
    """`{metric: value}` of one query: `ranked` document ids, `judged` its `{document id: relevance}`."""
    relevant = {document: grade for document, grade in judged.items() if grade >= 1}
    values = {}
    for metric in metrics:
        name, cut = parse_metric(metric)
        top = ranked[:cut]
        hits = [document in relevant for document in top]
        if name == "ndcg":
            gains = sorted(relevant.values(), reverse=True)[:cut]
            ideal = sum(gain / math.log2(rank + 2) for rank, gain in enumerate(gains))
            found = sum(relevant.get(document, 0) / math.log2(rank + 2) for rank, document in enumerate(top))
            values[metric] = found / ideal if ideal else 0.0
        elif name == "mrr":
            values[metric] = next((1 / (rank + 1) for rank, hit in enumerate(hits) if hit), 0.0)
        elif name == "map":
            precisions = [sum(hits[:rank + 1]) / (rank + 1) for rank, hit in enumerate(hits) if hit]
            values[metric] = sum(precisions) / len(relevant) if relevant else 0.0
        elif name == "recall":
            values[metric] = sum(hits) / len(relevant) if relevant else 0.0
        else:
            values[metric] = sum(hits) / cut
    return values


def retrieval_scores(run, qrels, metrics=DEFAULT_METRICS, per_query=False):
    """Mean of each metric over the judged queries (see the module docstring); `per_query=True`: also
    `{"per_query": {query id: {metric: value}}}`."""
    for metric in metrics:
        parse_metric(metric)
    judged = {query: documents for query, documents in qrels.items()
              if any(grade >= 1 for grade in documents.values())}
    if not judged:
        raise ValueError("The qrels judge no document relevant (relevance >= 1): there is nothing to score.")
    each = {query: query_scores(ranking(run.get(query, {})), documents, metrics)
            for query, documents in judged.items()}
    means = {metric: sum(values[metric] for values in each.values()) / len(each) for metric in metrics}
    return {**means, "per_query": each} if per_query else means


def parse_metric(metric):
    """`("ndcg", 10)` for `"ndcg@10"`; an error naming the accepted forms otherwise."""
    name, _, cut = str(metric).partition("@")
    if name not in ("ndcg", "mrr", "map", "recall", "precision") or not cut.isdigit() or int(cut) < 1:
        raise ValueError(f"Unknown retrieval metric {metric!r}: use ndcg@k, mrr@k, map@k, recall@k or precision@k "
                         "with a cut-off k >= 1, e.g. 'ndcg@10'.")
    return name, int(cut)
