"""Retrieval metrics equal trec_eval's (pytrec_eval) on the same run and qrels: a real run (SQuAD v1.1 dev
questions against the paragraphs of their articles, scored by word overlap) and tie-heavy graded runs."""

import os
import re
from pathlib import Path

import numpy as np
import pytest

from kerasbert.data.squad import load_squad
from kerasbert.metrics.retrieval import DEFAULT_METRICS, retrieval_scores

pytrec_eval = pytest.importorskip("pytrec_eval")

SHARED_DATA = Path(os.environ.get("KERASBERT_SHARED_DATA")
                   or Path(__file__).resolve().parents[2].parent / "shared" / "data")
TREC_NAMES = {"ndcg@10": "ndcg_cut_10", "map@100": "map_cut_100", "recall@1": "recall_1", "recall@10": "recall_10",
              "recall@100": "recall_100", "precision@5": "P_5"}
METRICS = (*DEFAULT_METRICS, "precision@5")


def trec_eval(run, qrels):
    """pytrec_eval's per-query values under our names; MRR@10 is `recip_rank` of the run cut at 10."""
    measures = {"ndcg_cut.10", "map_cut.100", "recall.1,10,100", "P.5"}
    full = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    top10 = {query: dict(sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)[:10])
             for query, scores in run.items()}
    cut = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    return {query: {**{ours: values[theirs] for ours, theirs in TREC_NAMES.items()},
                    "mrr@10": cut[query]["recip_rank"]} for query, values in full.items()}


def assert_equal_to_trec_eval(run, qrels):
    ours = retrieval_scores(run, qrels, METRICS, per_query=True)["per_query"]
    theirs = trec_eval(run, qrels)
    judged = {query for query, documents in qrels.items() if max(documents.values()) >= 1}
    assert set(ours) == judged and judged & set(run) <= set(theirs)
    for query, values in theirs.items():
        if query not in judged:  # no relevant document: trec_eval scores it 0, the means leave it out
            assert not any(values.values())
            continue
        for metric, value in values.items():
            assert ours[query][metric] == pytest.approx(value, abs=1e-12), (query, metric)


def words(text):
    return set(re.findall(r"\w+", text.lower()))


def test_a_real_squad_run_scores_as_trec_eval():
    path = SHARED_DATA / "squad" / "dev-v1.1.json"
    if not path.is_file():
        pytest.skip(f"SQuAD not found at {path} (set KERASBERT_SHARED_DATA)")
    dev = load_squad(path)
    dev = dev[dev["title"].isin(dev["title"].unique()[:3])]
    paragraphs = {f"p{i}": text for i, text in enumerate(dev["context"].unique())}
    paragraph_id = {text: key for key, text in paragraphs.items()}
    bags = {key: words(text) for key, text in paragraphs.items()}
    run = {row.id: {key: float(len(words(row.question) & bag)) for key, bag in bags.items()}  # many ties
           for row in dev.itertuples()}
    qrels = {row.id: {paragraph_id[row.context]: 1} for row in dev.itertuples()}
    assert len(run) > 300 and len(paragraphs) > 100
    assert_equal_to_trec_eval(run, qrels)
    means = retrieval_scores(run, qrels)
    assert 0.3 < means["mrr@10"] < 1 and means["recall@1"] <= means["recall@10"] <= means["recall@100"]


@pytest.mark.parametrize("seed", range(5))
def test_graded_runs_with_ties_and_unjudged_documents_score_as_trec_eval(seed):
    rng = np.random.default_rng(seed)
    documents = [f"d{i}" for i in range(150)]
    run = {f"q{q}": {d: float(rng.integers(0, 6)) for d in rng.choice(documents, rng.integers(1, 150), replace=False)}
           for q in range(20)}
    qrels = {f"q{q}": {d: int(rng.integers(0, 4)) for d in rng.choice(documents, rng.integers(1, 30), replace=False)}
             for q in range(20)}
    qrels["q0"]["d_only_judged"] = 2  # a relevant document the run never retrieves
    assert_equal_to_trec_eval(run, qrels)


def test_queries_without_answers_count_zero_and_unjudged_queries_are_left_out():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 0}}
    run = {"q1": {"d1": 1.0}, "q4": {"d1": 1.0}}
    assert retrieval_scores(run, qrels, ["recall@1"]) == {"recall@1": 0.5}


@pytest.mark.parametrize("metric", ["ndcg", "ndcg@0", "mrr@x", "hits@10"])
def test_unknown_metrics_are_named(metric):
    with pytest.raises(ValueError, match="Unknown retrieval metric"):
        retrieval_scores({"q": {"d": 1.0}}, {"q": {"d": 1}}, [metric])


def test_qrels_without_a_relevant_document_are_refused():
    with pytest.raises(ValueError, match="relevant"):
        retrieval_scores({"q": {"d": 1.0}}, {"q": {"d": 0}})
